"""SQL for forgetting, correcting, archiving. Layer: storage. Reads run on a reader; the
``execute_forget`` / ``supersede`` / ``set_status`` writes run inside ``Database.write``.

Forget is physical: rows are deleted (FTS5 ``secure-delete=1`` and ``PRAGMA secure_delete``
overwrite the freed bytes), cascades remove side rows, links, history, vectors, mentions,
contradictions, undo logs and LLM-reply sources; entities left with no memory go too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from app.api import HistoryEntry, Version
from app.domain.memory import MemoryId, Status
from app.ports import MemoryBrief
from storage.batching import SQL_VARIABLES
from storage.lexicon import drop_snapshot, mark_fts
from storage.sqlcipher import Connection

# Tables whose rows go with a memory through ON DELETE CASCADE, with the column that refers
# to it. memory_fts has no foreign key and is deleted explicitly.
CASCADES: tuple[tuple[str, str], ...] = (
    ("episode", "memory_id"), ("fact", "memory_id"), ("procedure", "memory_id"),
    ("statistic", "memory_id"), ("history", "memory_id"), ("vector", "memory_id"),
    ("entity_mention", "memory_id"), ("run_change", "memory_id"),
    ("llm_reply_source", "memory_id"), ("routing", "memory_id"),
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
    """Memories every one of whose sources is going: they would be left describing nothing.
    A correction the person typed is its own source and is never among them
    (docs/memory-model.md#correcting)."""
    derived: set[int] = set()
    frontier = set(gone)
    while frontier:
        m = _marks(len(frontier))
        children = _ids(conn, f"SELECT src FROM link WHERE kind IN ('DERIVED_FROM',"
                        f"'PROMOTED_FROM') AND dst IN ({m})", list(frontier))
        children -= gone | derived
        children -= typed_corrections(conn, children)
        new = set()
        for child in children:
            if parents(conn, [child]) <= gone | derived:
                new.add(child)
        derived |= new
        frontier = new
    return derived


def parents(conn: Connection, ids: Iterable[int]) -> set[int]:
    """What ``ids`` were derived or promoted from, one step up."""
    out: set[int] = set()
    for chunk in _chunked(sorted(set(int(i) for i in ids))):
        out |= _ids(conn, f"SELECT dst FROM link WHERE kind IN ('DERIVED_FROM','PROMOTED_FROM') "
                    f"AND src IN ({_marks(len(chunk))})", chunk)
    return out


# ``Vault.correct`` writes these two history entries; they are how a version the person typed
# is told apart from one consolidation or the inbox put in place (both are SUPERSEDES links).
CORRECTED = "corrected"


def typed_corrections(conn: Connection, ids: Iterable[int]) -> set[int]:
    """Those of ``ids`` that the person typed as a correction of an earlier version."""
    out: set[int] = set()
    for chunk in _chunked(sorted(set(int(i) for i in ids))):
        out |= _ids(conn, f"SELECT DISTINCT memory_id FROM history WHERE action = ? AND "
                    f"memory_id IN ({_marks(len(chunk))})", [CORRECTED, *chunk])
    return out


def corrected_versions(conn: Connection, ids: Iterable[int]) -> set[int]:
    """Earlier versions that ``ids`` replaced by the person's correction, transitively: one
    memory's own history, which goes with it. Versions replaced by consolidation or in the
    inbox are other memories with their own sources, and are not followed."""
    seen = set(int(i) for i in ids)
    todo = set(seen)
    found: set[int] = set()
    while todo:
        new: set[int] = set()
        for chunk in _chunked(sorted(todo)):
            m = _marks(len(chunk))
            new |= _ids(conn, f"SELECT l.dst FROM link l JOIN history h ON h.memory_id = l.src "
                        f"AND h.action = ? AND h.detail = 'correction of ' || l.dst "
                        f"WHERE l.kind = 'SUPERSEDES' AND l.src IN ({m})", [CORRECTED, *chunk])
        todo = new - seen
        seen |= new
        found |= todo
    return found


def boundary_links(conn: Connection, gone: set[int]) -> list[tuple[int, int, str]]:
    """(src, dst, kind) of the version, contradiction and provenance links that join a
    memory that goes to one that stays: what a plan lists as staying."""
    out: set[tuple[int, int, str]] = set()
    for chunk in _chunked(sorted(gone)):
        m = _marks(len(chunk))
        out |= {(int(r[0]), int(r[1]), r[2]) for r in conn.execute(
            f"SELECT src, dst, kind FROM link WHERE kind IN ('SUPERSEDES','CONTRADICTS',"
            f"'DERIVED_FROM','PROMOTED_FROM') AND (src IN ({m}) OR dst IN ({m}))",
            [*chunk, *chunk])}
    return sorted(r for r in out if (r[0] in gone) != (r[1] in gone))


def reinstated(conn: Connection, gone: set[int]) -> dict[int, tuple[str, int | None,
                                                                    float | None]]:
    """Memories that stay but were replaced only by versions that go: id -> (status,
    superseded_by, valid_until) they get back. The state before the replacement is read from
    the contradiction that recorded it (its ``prior``); without one, they become active."""
    out: dict[int, tuple[str, int | None, float | None]] = {}
    olds: set[int] = set()
    for chunk in _chunked(sorted(gone)):
        olds |= _ids(conn, f"SELECT dst FROM link WHERE kind = 'SUPERSEDES' AND src IN "
                     f"({_marks(len(chunk))})", chunk)
    for old in sorted(olds - gone):
        by = _ids(conn, "SELECT src FROM link WHERE kind = 'SUPERSEDES' AND dst = ?", [old])
        row = conn.execute("SELECT status, valid_until FROM memory WHERE id = ?",
                           (old,)).fetchone()
        if not by <= gone or row is None or row[0] != "superseded":
            continue
        status, superseded_by, valid_until = "active", None, row[1]
        for (resolution,) in conn.execute(
                "SELECT resolution FROM contradiction WHERE resolution IS NOT NULL AND "
                "((a = ? AND b IN ({m})) OR (b = ? AND a IN ({m}))) ORDER BY id DESC".format(
                    m=_marks(len(by))), [old, *sorted(by), old, *sorted(by)]):
            try:
                prior = json.loads(resolution).get("prior", {}).get(str(old))
            except (ValueError, AttributeError):
                prior = None
            if isinstance(prior, dict) and prior.get("status") in ("active", "archived"):
                status, valid_until = prior["status"], prior.get("valid_until")
                break
        out[old] = (status, superseded_by, valid_until)
    return out


def stale_history(conn: Connection, gone: set[int]) -> set[int]:
    """History rows of memories that stay which record being replaced by one that goes."""
    out: set[int] = set()
    for chunk in _chunked(sorted(gone)):
        m = _marks(len(chunk))
        details = [f"superseded by {g}" for g in chunk] + [f"corrected as {g}" for g in chunk]
        rows = conn.execute(
            f"SELECT h.id, h.memory_id FROM history h WHERE h.action = 'superseded' AND "
            f"h.detail IN ({_marks(len(details))}) AND h.memory_id IN (SELECT dst FROM link "
            f"WHERE kind = 'SUPERSEDES' AND src IN ({m}))", [*details, *chunk]).fetchall()
        out |= {int(r[0]) for r in rows if int(r[1]) not in gone}
    return out


def match_text(conn: Connection, phrase: str) -> set[int]:
    return set(match_fields(conn, phrase))


# Metadata a query is matched against, with the name the plan shows. ``agent`` holds the
# built-in 'global' unless a caller named one: that value is not the person's word, and a
# query such as "glob" must not take every memory.
META_FIELDS = (("speaker", "speaker"), ("context", "context"), ("session", "session name"),
               ("ref", "ref"), ("agent", "agent"))
DEFAULT_AGENT = "global"


def _like(phrase: str) -> str:
    """A LIKE pattern that finds ``phrase`` literally (``%`` and ``_`` are characters)."""
    return "%" + phrase.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _plain(value: object) -> str:
    """A side column as text; JSON lists (episode actors) decoded, so escaped non-ASCII
    names compare as written."""
    text = str(value)
    if text.startswith("["):
        try:
            return " ".join(str(x) for x in json.loads(text))
        except (ValueError, TypeError):
            pass
    return text


def match_fields(conn: Connection, phrase: str) -> dict[int, str]:
    """Memories containing ``phrase`` (case-insensitive) -> the first field it was found in:
    the text, speaker, context, session name, ref or agent, a fact's subject or object, an
    episode's actors, outcome or details. Every status counts: forgetting by query means
    every copy, archived and superseded ones too, and no field may keep the word."""
    words = phrase.split()
    if not words:
        return {}
    needle = phrase.casefold()
    out: dict[int, str] = {}
    fts = " ".join('"' + w.replace('"', '""') + '"' for w in words)
    cand = _ids(conn, "SELECT rowid FROM memory_fts WHERE memory_fts MATCH ?", [fts])
    for chunk in _chunked(sorted(cand)):
        for mid, text in conn.execute(f"SELECT id, text FROM memory WHERE id IN "
                                      f"({_marks(len(chunk))})", chunk):
            if needle in (text or "").casefold():
                out[int(mid)] = "text"
    # Metadata and side columns: the decision is Python's casefold, as for the text. LIKE
    # (with ESCAPE, so "%" and "_" are characters) only narrows the rows for an ASCII phrase:
    # it folds ASCII case only, so for any other phrase ("Zoë" against "ZOË") every row is
    # read (100k memories here: about 0.1 s narrowed, 0.7 s read whole).
    narrow = phrase.isascii() and not set(phrase) & set('"\\')  # as JSON stores them
    like = _like(phrase)
    cols = [c for c, _label in META_FIELDS]
    where = " OR ".join(f"{c} LIKE ? ESCAPE '\\'" for c in cols) if narrow else \
        " OR ".join(f"{c} IS NOT NULL" for c in cols)
    for row in conn.execute(f"SELECT id, {', '.join(cols)} FROM memory WHERE {where}",
                            [like] * len(cols) if narrow else []):
        mid = int(row[0])
        if mid in out:
            continue
        for (col, label), value in zip(META_FIELDS, row[1:], strict=True):
            if value and not (col == "agent" and value == DEFAULT_AGENT) \
                    and needle in value.casefold():
                out[mid] = label
                break
    for table, side, label in (("fact", ("subject", "object"), "fact subject or object"),
                               ("episode", ("actors", "outcome", "details"), "episode details")):
        where = " OR ".join(f"{c} LIKE ? ESCAPE '\\'" for c in side) if narrow else "1"
        for row in conn.execute(f"SELECT memory_id, {', '.join(side)} FROM {table} "
                                f"WHERE {where}", [like] * len(side) if narrow else []):
            mid = int(row[0])
            if mid not in out and any(needle in _plain(v).casefold() for v in row[1:] if v):
                out[mid] = label
    return out


def _chunked(items: list[int], n: int = SQL_VARIABLES) -> Iterable[list[int]]:
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


def describe(conn: Connection, ids: Iterable[int]) -> list[MemoryBrief]:
    """(id, store, status, text) for listing in a plan, by id."""
    out = []
    for chunk in _chunked(sorted(set(ids))):
        out += [MemoryBrief(int(r[0]), r[1], r[2], r[3]) for r in conn.execute(
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
    counts["history"] += len(stale_history(conn, ids))
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
    # Versions that stay and were replaced only by what goes are current again; the history
    # entries saying what replaced them go (they would name a forgotten memory).
    back = reinstated(conn, ids)
    for chunk in _chunked(sorted(stale_history(conn, ids))):
        conn.execute(f"DELETE FROM history WHERE id IN ({_marks(len(chunk))})", chunk)
    # Neighbours quote a turn in their ``ctx`` full-text column: rewrite them afterwards.
    places: set[tuple[str, str, int]] = set()
    for chunk in _chunked(sorted(ids | set(back))):
        places |= {(r[0], r[1], r[2]) for r in conn.execute(
            f"SELECT session, store, seq FROM memory WHERE id IN ({_marks(len(chunk))}) "
            "AND session IS NOT NULL AND seq IS NOT NULL", chunk)}
    for chunk in _chunked(sorted(ids)):
        m = _marks(len(chunk))
        conn.execute(f"DELETE FROM memory_fts WHERE rowid IN ({m})", chunk)
        mark_fts(conn, chunk)
        drop_snapshot(conn)  # the saved RAM lexicon holds its terms (migration 0032)
        # Versions that stay must not point at a deleted one.
        conn.execute(f"UPDATE memory SET superseded_by = NULL WHERE superseded_by IN ({m})",
                     chunk)
        conn.execute(f"DELETE FROM memory WHERE id IN ({m})", chunk)
    for mid, (status, superseded_by, valid_until) in sorted(back.items()):
        conn.execute("UPDATE memory SET status = ?, superseded_by = ?, valid_until = ? "
                     "WHERE id = ?", (status, superseded_by, valid_until, mid))
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
                  "run_change", "llm_reply", "llm_reply_source", "routing")


def table_counts(conn: Connection) -> dict[str, int]:
    return {t: int(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0])
            for t in COUNTED_TABLES}


def statistic_count(conn: Connection) -> int:
    """Implicit statistics (a forget plan says they will be recomputed)."""
    return int(conn.execute("SELECT count(*) FROM statistic").fetchone()[0])


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


def set_agent(conn: Connection, mid: int, agent: str) -> None:
    """Whose scope the memory is in: "global" (every assistant and the person) or one
    assistant's (``Vault.share`` / ``unshare``; issue 26)."""
    conn.execute("UPDATE memory SET agent = ? WHERE id = ?", (agent, mid))


def confirm(conn: Connection, mid: int) -> None:
    """The person says the memory is right: user-validated, confidence 1.0."""
    conn.execute("UPDATE memory SET user_validated = 1, confidence = 1.0 WHERE id = ?", (mid,))


# --- history ---------------------------------------------------------------------------------

def version_rows(conn: Connection, ids: Iterable[int]) -> list[Version]:
    """The versions ``ids`` (one memory's chain, ``versions``), oldest first."""
    ids = sorted(set(ids))
    if not ids:
        return []
    rows = conn.execute(
        "SELECT id, text, status, created_at, user_validated, confidence FROM memory "
        f"WHERE id IN ({_marks(len(ids))}) ORDER BY created_at, id", ids)
    return [Version(MemoryId(r[0]), r[1], Status(r[2]), r[3], bool(r[4]), r[5]) for r in rows]


def history_rows(conn: Connection, ids: Iterable[int]) -> list[HistoryEntry]:
    ids = sorted(set(ids))
    if not ids:
        return []
    return [HistoryEntry(MemoryId(r[0]), r[1], r[2], r[3], r[4]) for r in conn.execute(
        f"SELECT h.memory_id, h.at, h.action, h.text, h.detail FROM history h "
        f"WHERE h.memory_id IN ({_marks(len(ids))}) ORDER BY h.at, h.id", ids)]
