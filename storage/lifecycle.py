"""SQL for forgetting, correcting, archiving. Layer: storage. Reads run on a reader; the
``execute_forget`` / ``supersede`` / ``set_status`` writes run inside ``Database.write``.

Forget is physical: rows are deleted (FTS5 ``secure-delete=1`` and ``PRAGMA secure_delete``
overwrite the freed bytes), cascades remove side rows, links, history, vectors, mentions,
contradictions, undo logs and LLM-reply sources; entities left with no memory go too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from storage.lexicon import mark_fts
from storage.sqlcipher import Connection

# Tables whose rows go with a memory through ON DELETE CASCADE, with the column that refers
# to it. memory_fts has no foreign key and is deleted explicitly.
CASCADES: tuple[tuple[str, str], ...] = (
    ("episode", "memory_id"), ("fact", "memory_id"), ("procedure", "memory_id"),
    ("statistic", "memory_id"), ("history", "memory_id"), ("vector", "memory_id"),
    ("entity_mention", "memory_id"), ("run_change", "memory_id"),
    ("llm_reply_source", "memory_id"),
)


def _marks(n: int) -> str:
    return ",".join("?" * n)


def _ids(conn: Connection, sql: str, params: Sequence[Any]) -> set[int]:
    return {int(r[0]) for r in conn.execute(sql, params)}


def versions(conn: Connection, ids: Iterable[int]) -> set[int]:
    """Every version connected through SUPERSEDES, in both directions."""
    todo = set(int(i) for i in ids)
    seen: set[int] = set()
    while todo:
        batch = list(todo - seen)
        if not batch:
            break
        seen |= set(batch)
        m = _marks(len(batch))
        found = _ids(conn, f"SELECT dst FROM link WHERE kind='SUPERSEDES' AND src IN ({m}) "
                     f"UNION SELECT src FROM link WHERE kind='SUPERSEDES' AND dst IN ({m})",
                     [*batch, *batch])
        todo = found - seen
    return seen


def ancestors(conn: Connection, ids: Iterable[int]) -> set[int]:
    """Everything the given memories were derived or promoted from, transitively."""
    todo, seen = set(int(i) for i in ids), set()
    while todo:
        batch = list(todo)
        seen |= todo
        m = _marks(len(batch))
        todo = _ids(conn, f"SELECT dst FROM link WHERE kind IN ('DERIVED_FROM','PROMOTED_FROM') "
                    f"AND src IN ({m})", batch) - seen
    return seen - set(int(i) for i in ids)


def derived_only_from(conn: Connection, gone: set[int]) -> set[int]:
    """Memories every one of whose sources is going: they would be left describing nothing."""
    derived: set[int] = set()
    frontier = set(gone)
    while frontier:
        m = _marks(len(frontier))
        children = _ids(conn, f"SELECT src FROM link WHERE kind IN ('DERIVED_FROM',"
                        f"'PROMOTED_FROM') AND dst IN ({m})", list(frontier))
        children -= gone | derived
        new = set()
        for child in children:
            parents = _ids(conn, "SELECT dst FROM link WHERE kind IN ('DERIVED_FROM',"
                           "'PROMOTED_FROM') AND src = ?", [child])
            if parents <= gone | derived:
                new.add(child)
        derived |= new
        frontier = new
    return derived


def match_text(conn: Connection, phrase: str) -> set[int]:
    """Memories containing ``phrase`` in their text, speaker, context, fact subject/object or
    episode actors (case-insensitive), in every status: forgetting by query means every copy,
    archived and superseded ones too."""
    words = phrase.split()
    if not words:
        return set()
    fts = " ".join('"' + w.replace('"', '""') + '"' for w in words)
    cand = _ids(conn, "SELECT rowid FROM memory_fts WHERE memory_fts MATCH ?", [fts])
    needle = phrase.casefold()
    out = set()
    for chunk in _chunked(sorted(cand)):
        for mid, text, speaker, context in conn.execute(
                f"SELECT id, text, speaker, context FROM memory WHERE id IN "
                f"({_marks(len(chunk))})", chunk):
            if any(needle in (x or "").casefold() for x in (text, speaker, context)):
                out.add(int(mid))
    like = f"%{phrase}%"
    out |= _ids(conn, "SELECT id FROM memory WHERE speaker LIKE ? OR context LIKE ?",
                [like, like])
    out |= _ids(conn, "SELECT memory_id FROM fact WHERE subject LIKE ? OR object LIKE ?",
                [like, like])
    out |= _ids(conn, "SELECT memory_id FROM episode WHERE actors LIKE ? OR outcome LIKE ? "
                "OR details LIKE ?", [like, like, like])
    return out


def _chunked(items: list[int], n: int = 500) -> Iterable[list[int]]:
    for i in range(0, len(items), n):
        yield items[i:i + n]


def entity_members(conn: Connection, name: str) -> tuple[set[int], set[int]]:
    """(entity ids named ``name``, memories that mention them or contain the name)."""
    key = name.strip().casefold()
    ents = _ids(conn, "SELECT id FROM entity WHERE name_key = ?", [key])
    mems = set()
    if ents:
        mems = _ids(conn, f"SELECT memory_id FROM entity_mention WHERE entity_id IN "
                    f"({_marks(len(ents))})", list(ents))
    return ents, mems | match_text(conn, name)


def describe(conn: Connection, ids: Iterable[int]) -> list[tuple[int, str, str, str]]:
    """(id, store, status, text) for listing in a plan."""
    out = []
    for chunk in _chunked(sorted(set(ids))):
        out += [(int(r[0]), r[1], r[2], r[3]) for r in conn.execute(
            f"SELECT id, store, status, text FROM memory WHERE id IN ({_marks(len(chunk))}) "
            "ORDER BY id", chunk)]
    return out


def dependent_counts(conn: Connection, ids: set[int], entity_ids: set[int]
                     ) -> dict[str, int]:
    """Rows that go with ``ids`` (and the named entities), per table."""
    counts: dict[str, int] = {"memory": len(ids), "memory_fts": 0}
    for table, _col in CASCADES:
        counts[table] = 0
    counts.update({"link": 0, "contradiction": 0, "llm_reply": 0, "entity": 0})
    if not ids and not entity_ids:
        return counts
    id_list = sorted(ids)
    link_rows: set[tuple[int, int, str]] = set()
    contradictions: set[int] = set()
    replies: set[int] = set()
    for chunk in _chunked(id_list):
        m = _marks(len(chunk))
        counts["memory_fts"] += conn.execute(
            f"SELECT count(*) FROM memory_fts WHERE rowid IN ({m})", chunk).fetchone()[0]
        for table, col in CASCADES:
            counts[table] += conn.execute(
                f"SELECT count(*) FROM {table} WHERE {col} IN ({m})", chunk).fetchone()[0]
        link_rows |= {(r[0], r[1], r[2]) for r in conn.execute(
            f"SELECT src, dst, kind FROM link WHERE src IN ({m}) OR dst IN ({m})",
            [*chunk, *chunk])}
        contradictions |= _ids(conn, f"SELECT id FROM contradiction WHERE a IN ({m}) OR b IN "
                               f"({m})", [*chunk, *chunk])
        replies |= _ids(conn, f"SELECT reply_id FROM llm_reply_source WHERE memory_id IN ({m})",
                        chunk)
    counts["link"] = len(link_rows)
    counts["contradiction"] = len(contradictions)
    # A stored LLM reply goes when every memory it was about goes.
    gone_replies = {r for r in replies if _ids(
        conn, "SELECT memory_id FROM llm_reply_source WHERE reply_id = ?", [r]) <= ids}
    counts["llm_reply"] = len(gone_replies)
    counts["entity"] = len(orphaned_entities(conn, ids) | entity_ids)
    # Mentions of named entities by memories that stay also go with the entity.
    for e in entity_ids:
        counts["entity_mention"] += len(_ids(
            conn, "SELECT memory_id FROM entity_mention WHERE entity_id = ?", [e]) - ids)
    return counts


def orphaned_entities(conn: Connection, ids: set[int]) -> set[int]:
    """Entities mentioned by the going memories and by nothing else."""
    if not ids:
        return set()
    touched: set[int] = set()
    for chunk in _chunked(sorted(ids)):
        touched |= _ids(conn, f"SELECT entity_id FROM entity_mention WHERE memory_id IN "
                        f"({_marks(len(chunk))})", chunk)
    return {e for e in touched if _ids(
        conn, "SELECT memory_id FROM entity_mention WHERE entity_id = ?", [e]) <= ids}


def entities_to_resummarise(conn: Connection, ids: set[int], gone_entities: set[int]) -> set[int]:
    touched: set[int] = set()
    for chunk in _chunked(sorted(ids)):
        touched |= _ids(conn, f"SELECT entity_id FROM entity_mention WHERE memory_id IN "
                        f"({_marks(len(chunk))})", chunk)
    return touched - gone_entities


def execute_forget(conn: Connection, ids: set[int], entity_ids: set[int]) -> dict[str, int]:
    """Delete everything in one transaction (the caller's). Returns rows deleted per table."""
    before = table_counts(conn)
    gone_entities = orphaned_entities(conn, ids) | entity_ids
    resummarise = entities_to_resummarise(conn, ids, gone_entities)
    replies: set[int] = set()
    for chunk in _chunked(sorted(ids)):
        replies |= _ids(conn, f"SELECT reply_id FROM llm_reply_source WHERE memory_id IN "
                        f"({_marks(len(chunk))})", chunk)
    gone_replies = {r for r in replies if _ids(
        conn, "SELECT memory_id FROM llm_reply_source WHERE reply_id = ?", [r]) <= ids}
    for chunk in _chunked(sorted(gone_replies)):
        conn.execute(f"DELETE FROM llm_reply WHERE id IN ({_marks(len(chunk))})", chunk)
    # Neighbours quote a turn in their ``ctx`` full-text column: rewrite them afterwards.
    places: set[tuple[str, str, int]] = set()
    for chunk in _chunked(sorted(ids)):
        places |= {(r[0], r[1], r[2]) for r in conn.execute(
            f"SELECT session, store, seq FROM memory WHERE id IN ({_marks(len(chunk))}) "
            "AND session IS NOT NULL AND seq IS NOT NULL", chunk)}
    for chunk in _chunked(sorted(ids)):
        m = _marks(len(chunk))
        conn.execute(f"DELETE FROM memory_fts WHERE rowid IN ({m})", chunk)
        mark_fts(conn, chunk)
        # Versions that stay must not point at a deleted one.
        conn.execute(f"UPDATE memory SET superseded_by = NULL WHERE superseded_by IN ({m})",
                     chunk)
        conn.execute(f"DELETE FROM memory WHERE id IN ({m})", chunk)
    from storage.repo import refresh_context
    for session, store, seq in sorted(places):
        refresh_context(conn, session, store, seq)
    for chunk in _chunked(sorted(gone_entities)):
        conn.execute(f"DELETE FROM entity WHERE id IN ({_marks(len(chunk))})", chunk)
    # Summaries may quote what went: clear them; the weekly synthesis writes them anew.
    for chunk in _chunked(sorted(resummarise)):
        conn.execute(f"UPDATE entity SET summary = NULL WHERE id IN ({_marks(len(chunk))})",
                     chunk)
    after = table_counts(conn)
    deleted = {t: before[t] - after[t] for t in before if before[t] != after[t]}
    deleted["entity_summaries_cleared"] = len(resummarise)
    return deleted


COUNTED_TABLES = ("memory", "episode", "fact", "procedure", "statistic", "link", "entity",
                  "entity_mention", "contradiction", "history", "vector", "memory_fts",
                  "run_change", "llm_reply", "llm_reply_source")


def table_counts(conn: Connection) -> dict[str, int]:
    return {t: int(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0])
            for t in COUNTED_TABLES}


# --- correct / archive -----------------------------------------------------------------------

def copy_links(conn: Connection, old: int, new: int, now: float) -> None:
    """The new version keeps the old one's provenance (so its refs stay the same)."""
    conn.execute(
        "INSERT OR IGNORE INTO link (src, dst, kind, weight, created_at) "
        "SELECT ?, dst, kind, weight, ? FROM link WHERE src = ? AND kind IN "
        "('DERIVED_FROM','PROMOTED_FROM','MENTIONS','RELATES_TO')", (new, now, old))
    conn.execute("INSERT OR IGNORE INTO entity_mention (entity_id, memory_id) "
                 "SELECT entity_id, ? FROM entity_mention WHERE memory_id = ?", (new, old))


def supersede(conn: Connection, old: int, new: int, now: float) -> None:
    conn.execute("UPDATE memory SET status = 'superseded', superseded_by = ? WHERE id = ?",
                 (new, old))
    conn.execute("INSERT OR IGNORE INTO link (src, dst, kind, weight, created_at) "
                 "VALUES (?, ?, 'SUPERSEDES', 1.0, ?)", (new, old, now))


def set_status(conn: Connection, mid: int, status: str) -> None:
    conn.execute("UPDATE memory SET status = ? WHERE id = ?", (status, mid))


def history_rows(conn: Connection, ids: Iterable[int]) -> list[tuple[Any, ...]]:
    ids = sorted(set(ids))
    if not ids:
        return []
    return conn.execute(
        f"SELECT h.memory_id, h.at, h.action, h.text, h.detail FROM history h "
        f"WHERE h.memory_id IN ({_marks(len(ids))}) ORDER BY h.at, h.id", ids).fetchall()
