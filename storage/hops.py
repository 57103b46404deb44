"""What recall's second hop reads (``app.services.hops``): the memories linked to the best
hits, and those that mention the same people or topics. Layer: storage."""

from __future__ import annotations

from collections.abc import Sequence

from storage.batching import SQL_VARIABLES
from storage.sqlcipher import Connection


def linked(conn: Connection, ids: Sequence[int], kinds: Sequence[str]
           ) -> dict[int, set[int]]:
    """id -> the memories linked to it by one of ``kinds``, either direction (FOLLOWED_BY is
    PRECEDED_BY read backwards)."""
    out: dict[int, set[int]] = {int(i): set() for i in ids}
    if not ids or not kinds:
        return out
    ks = ",".join("?" * len(kinds))
    step = max(1, (SQL_VARIABLES - len(kinds)) // 2)
    chunk_ids = [int(i) for i in ids]
    for n in range(0, len(chunk_ids), step):
        chunk = chunk_ids[n:n + step]
        marks = ",".join("?" * len(chunk))
        for a, b in conn.execute(
                f"SELECT src, dst FROM link WHERE kind IN ({ks}) AND src IN ({marks}) "
                f"UNION SELECT dst, src FROM link WHERE kind IN ({ks}) AND dst IN ({marks})",
                [*kinds, *chunk, *kinds, *chunk]):
            if a != b:
                out[a].add(b)
    return out


def sharing_entities(conn: Connection, ids: Sequence[int], *, broad: int,
                     skip: Sequence[str] = ()) -> dict[int, set[int]]:
    """id -> the memories that mention a person or topic it mentions, through entities that
    at most ``broad`` memories mention (one named everywhere, like a speaker, joins nothing)
    and whose name is not in ``skip`` (case-insensitive)."""
    out: dict[int, set[int]] = {int(i): set() for i in ids}
    if not ids:
        return out
    skipped = {s.casefold() for s in skip}
    chunk_ids = [int(i) for i in ids]
    step = SQL_VARIABLES - 1
    for n in range(0, len(chunk_ids), step):
        chunk = chunk_ids[n:n + step]
        marks = ",".join("?" * len(chunk))
        rows = conn.execute(
            "WITH seed(mid, eid) AS (SELECT memory_id, entity_id FROM entity_mention "
            f"WHERE memory_id IN ({marks})), "
            "narrow(eid) AS (SELECT m.entity_id FROM entity_mention m "
            "WHERE m.entity_id IN (SELECT eid FROM seed) GROUP BY m.entity_id "
            "HAVING count(*) <= ?) "
            "SELECT s.mid, m.memory_id, e.name FROM seed s JOIN narrow n ON n.eid = s.eid "
            "JOIN entity e ON e.id = s.eid JOIN entity_mention m ON m.entity_id = s.eid "
            "WHERE m.memory_id != s.mid", [*chunk, broad]).fetchall()
        for mid, other, name in rows:
            if str(name).casefold() not in skipped:
                out[int(mid)].add(int(other))
    return out
