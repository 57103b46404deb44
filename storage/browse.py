"""SQL for browsing: keyset pages (never OFFSET), counts, entities, timeline, insights.
Layer: storage. Runs on: a reader connection.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from app import api
from app.api import EntityRow, StatisticRow
from app.domain.memory import EntityId, LinkKind, Store
from app.ports import BrowseRow, NamedEntity, ScopedRow, TierInput
from storage import repo
from storage.batching import chunks, marks
from storage.sqlcipher import Connection

# A status filter of "live": every memory the person has not forgotten or replaced, that is
# active or archived (decay puts memories aside; they stay on the Timeline).
LIVE = api.LIVE

ROW_COLS = ("m.id, m.store, substr(m.text, 1, 300), m.occurred_at, m.speaker, m.status, "
            "m.composite, m.confidence, m.user_validated, m.access_count, m.last_accessed_at, "
            "m.agent, m.created_at")


def _status_clause(alias: str, status: str | None) -> tuple[str, list[object]]:
    if status == LIVE:
        return f"{alias}.status IN ('active', 'archived')", []
    if status:
        return f"{alias}.status = ?", [status]
    return "", []


# A conversation turn kept as an event is listed once, as the event (issue 25: "every turn
# shown twice"), when that event is in the same listing (its status passes the same filter).
# The event points at its turn (DERIVED_FROM, ``link_dst`` index): one lookup per turn.
# CROSS JOIN keeps that order (SQLite never reorders it): left free, the planner walked every
# active event for each turn through ``memory_store_order`` (100k memories: 2 s a page).
_FOLDED_TURN = ("m.store = 'short_term' AND EXISTS (SELECT 1 FROM link l CROSS JOIN memory e "
                "ON e.id = l.src WHERE l.dst = m.id AND l.kind = 'DERIVED_FROM' "
                "AND e.store = 'episodic'{status})")

# What each order sorts by (the first key is the keyset cursor's), newest first by default.
ORDERS = {"newest": ("m.occurred_at", "DESC"), "oldest": ("m.occurred_at", "ASC"),
          "strongest": ("m.composite", "DESC"), "weakest": ("m.composite", "ASC")}


def _where(store: str | None, status: str | None, entity_id: int | None, day: tuple[float, float]
           | None, *, fold: bool = False, session_of: int | None = None,
           ids: tuple[int, ...] | None = None) -> tuple[str, list[Any], str]:
    clauses: list[str] = []
    params: list[object] = []
    join = ""
    if ids is not None:  # a search's hits (at most a page: within SQLite's variable limit)
        clauses.append(f"m.id IN ({marks(len(ids))})" if ids else "0")
        params += [int(i) for i in ids]
    if store:
        clauses.append("m.store = ?")
        params.append(store)
    clause, args = _status_clause("m", status)
    if clause:
        clauses.append(clause)
        params += args
    if entity_id is not None:
        join = " JOIN entity_mention em ON em.memory_id = m.id AND em.entity_id = ?"
        params.insert(0, entity_id)
    if day is not None:
        clauses.append("m.occurred_at >= ? AND m.occurred_at < ?")
        params += [day[0], day[1]]
    if session_of is not None:
        # The conversation a memory was said in: its session's turns and events.
        clauses.append("m.session = (SELECT session FROM memory WHERE id = ?) "
                       "AND m.store IN ('short_term', 'episodic')")
        params.append(session_of)
    if fold:
        # Behaviour statistics are Insights' (and their own store's), not things said.
        clauses.append("m.store != 'implicit'")
        e_clause, e_args = _status_clause("e", status)
        clauses.append("NOT (" + _FOLDED_TURN.format(
            status=f" AND {e_clause}" if e_clause else "") + ")")
        params += e_args
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params, join


def page(conn: Connection, *, store: str | None, status: str | None, entity_id: int | None,
         day: tuple[float, float] | None, after: tuple[float, int] | None, limit: int,
         fold: bool = False, session_of: int | None = None, order: str = "newest",
         ids: tuple[int, ...] | None = None) -> list[BrowseRow]:
    """In ``order`` (``ORDERS``), ties by id the same way; ``after`` is the (sort key, id) of
    the last row already shown (keyset paging, never OFFSET)."""
    where, params, join = _where(store, status, entity_id, day, fold=fold,
                                 session_of=session_of, ids=ids)
    key, direction = ORDERS[order]
    if after is not None:
        cmp = "<" if direction == "DESC" else ">"
        where += (" AND " if where else " WHERE ") + f"({key}, m.id) {cmp} (?, ?)"
        params += [after[0], after[1]]
    sql = (f"SELECT {ROW_COLS} FROM memory m{join}{where} "
           f"ORDER BY {key} {direction}, m.id {direction} LIMIT ?")
    return [BrowseRow._make(r) for r in conn.execute(sql, [*params, limit])]


def count(conn: Connection, *, store: str | None, status: str | None, entity_id: int | None,
          day: tuple[float, float] | None, fold: bool = False, session_of: int | None = None,
          ids: tuple[int, ...] | None = None) -> int:
    where, params, join = _where(store, status, entity_id, day, fold=fold,
                                 session_of=session_of, ids=ids)
    return int(conn.execute(f"SELECT count(*) FROM memory m{join}{where}", params).fetchone()[0])


def entities(conn: Connection, kinds: tuple[str, ...]) -> list[EntityRow]:
    """Each entity with the number of memories its list shows (``listed_clause``: the window
    opens an entity as ``MemoryQuery(entity_id=..., fold=True)``): "Sam (person, 20)" beside
    "Sam: 20 memories" (issue 25; it counted every mention, copies and archived ones too)."""
    marks = ",".join("?" * len(kinds))
    listed, params = listed_clause()
    return [EntityRow(EntityId(r[0]), r[1], r[2], r[3], r[4], r[5], r[6], r[7])
            for r in conn.execute(
        "SELECT e.id, e.kind, e.name, e.summary, count(m.id) AS n, e.was_kind, e.ended_at, "
        "e.ended_how FROM entity e "
        "LEFT JOIN entity_mention em ON em.entity_id = e.id "
        f"LEFT JOIN memory m ON m.id = em.memory_id AND {listed} "
        f"WHERE e.kind IN ({marks}) AND e.status != 'merged' GROUP BY e.id ORDER BY n DESC, e.name",
        [*params, *kinds])]


def entity_names(conn: Connection, ids: Sequence[int]) -> dict[int, str]:
    """Entity id -> name for ``ids``, merged ones included."""
    if not ids:
        return {}
    return {int(r[0]): str(r[1]) for r in conn.execute(
        f"SELECT id, name FROM entity WHERE id IN ({','.join('?' * len(ids))})", list(ids))}


def timeline_days(conn: Connection, limit: int) -> list[tuple[str, int]]:
    """Days with memories, newest first, each with the count its list shows (the window's
    Timeline opens a day as ``MemoryQuery(day=..., status=LIVE, fold=True)``): one per thing
    said, not forgotten or replaced (archived ones too: decay sets them aside, it does not
    take them off the Timeline). A day that said "(2)" used to open 6. Days are the person's
    (this computer's time zone), as ``MemoryQuery.day_range`` reads them."""
    where, params, join = _where(None, LIVE, None, None, fold=True)
    return [(r[0], r[1]) for r in conn.execute(
        f"SELECT date(m.occurred_at, 'unixepoch', 'localtime') AS d, count(*) "
        f"FROM memory m{join}{where} "
        "GROUP BY d ORDER BY d DESC LIMIT ?", [*params, limit])]


def listed_clause() -> tuple[str, list[object]]:
    """The one definition of "a memory" as the window's lists count it (issue 25: counts that
    disagreed): active, one row per thing said (a turn kept as an event is the event), no
    behaviour statistics. The list, the status bar, Insights and People & Projects all count
    with it. On ``memory m``."""
    where, params, _join = _where(None, "active", None, None, fold=True)
    return where.removeprefix(" WHERE "), params


def tier_inputs(conn: Connection) -> list[TierInput]:
    """Insights' rows: what the lists hold (``listed_clause``) plus the active behaviour
    statistics (their own store, Patterns), so its "N memories" is the list's N."""
    listed, params = listed_clause()
    return [TierInput._make(r) for r in conn.execute(
        "SELECT store, occurred_at, last_accessed_at, access_count, created_at FROM memory m "
        f"WHERE ({listed}) OR (m.store = 'implicit' AND m.status = 'active')", params)]


def health(conn: Connection) -> dict[str, float]:
    r = conn.execute("SELECT avg(composite), avg(confidence), "
                     "sum(status = 'archived'), sum(status = 'superseded'), count(*), "
                     "sum(user_validated) FROM memory").fetchone()
    open_c = conn.execute("SELECT count(*) FROM contradiction WHERE status = 'open'"
                          ).fetchone()[0]
    total = r[4] or 0
    return {"avg_composite": round(r[0] or 0.0, 3), "avg_confidence": round(r[1] or 0.0, 3),
            "archived": int(r[2] or 0), "superseded": int(r[3] or 0), "total": int(total),
            "confirmed": int(r[5] or 0), "open_contradictions": int(open_c)}


def statistics(conn: Connection) -> list[StatisticRow]:
    return [StatisticRow._make(r) for r in conn.execute(
        "SELECT s.metric, s.value, s.sample_size, m.text FROM statistic s "
        "JOIN memory m ON m.id = s.memory_id ORDER BY s.metric")]


def export_page(conn: Connection, *, store: str | None, status: str | None,
                entity_id: int | None, day: tuple[float, float] | None, after: int, limit: int,
                budget: int = api.EXPORT_PAGE_JSON) -> list[api.MemoryRecord]:
    """Every field of the memories matching the filters with an id above ``after``, oldest
    id first, with their refs, links (from them), history, entity mentions and reads (issue
    16: ``kept export``). A page ends early once its texts pass ``budget`` characters of JSON
    (it holds at least one memory), so it fits in one message of the owner's socket."""
    where, params, join = _where(store, status, entity_id, day)
    where += (" AND " if where else " WHERE ") + "m.id > ?"
    ids: list[int] = []
    used = 0
    for mid, size in conn.execute(
            f"SELECT m.id, length(m.text) FROM memory m{join}{where} ORDER BY m.id LIMIT ?",
            [*params, after, limit]):
        if ids and used + size > budget:
            break
        ids.append(int(mid))
        used += int(size)
    if not ids:
        return []
    rows: dict[int, Any] = {}
    extra: dict[int, dict[str, object]] = {}
    links: dict[int, list[api.LinkRecord]] = {}
    history: dict[int, list[api.HistoryEntry]] = {}
    mentions: dict[int, list[EntityId]] = {}
    reads: dict[int, list[api.MemoryRead]] = {}
    for part in chunks(ids):
        q = marks(len(part))
        for r in conn.execute(f"SELECT {repo.MEMORY_COLUMNS} FROM memory WHERE id IN ({q})",
                              part):
            rows[int(r[0])] = r
        for table, cols in repo.SIDE_COLUMNS.items():
            for r in conn.execute(f"SELECT memory_id, {', '.join(cols)} FROM {table} "
                                  f"WHERE memory_id IN ({q})", part):
                extra[int(r[0])] = {c: v for c, v in zip(cols, r[1:], strict=True)
                                    if v is not None}
        for r in conn.execute(
                "SELECT l.src, l.dst, l.kind, l.weight, l.created_at, d.store, d.occurred_at "
                f"FROM link l JOIN memory d ON d.id = l.dst WHERE l.src IN ({q}) "
                "ORDER BY l.src, l.dst, l.kind", part):
            links.setdefault(int(r[0]), []).append(api.LinkRecord(
                api.MemoryId(r[0]), api.MemoryId(r[1]), LinkKind(r[2]), float(r[3]),
                float(r[4]), Store(r[5]), float(r[6])))
        for r in conn.execute("SELECT memory_id, at, action, text, detail FROM history "
                              f"WHERE memory_id IN ({q}) ORDER BY memory_id, id", part):
            history.setdefault(int(r[0]), []).append(
                api.HistoryEntry(api.MemoryId(r[0]), float(r[1]), str(r[2]), r[3], r[4]))
        for r in conn.execute("SELECT memory_id, entity_id FROM entity_mention "
                              f"WHERE memory_id IN ({q}) ORDER BY memory_id, entity_id", part):
            mentions.setdefault(int(r[0]), []).append(EntityId(r[1]))
        for r in conn.execute("SELECT memory_id, agent, via, at FROM memory_read "
                              f"WHERE memory_id IN ({q}) ORDER BY memory_id, at, id", part):
            reads.setdefault(int(r[0]), []).append(
                api.MemoryRead(str(r[1]), r[2], float(r[3])))
    refs = repo.refs_of(conn, ids)
    out: list[api.MemoryRecord] = []
    used = 0
    for mid in ids:
        r = rows[mid]
        hist = tuple(history.get(mid, ()))
        # The page's size on the wire: texts as JSON (escapes included), history's too.
        used += len(json.dumps(r[2], ensure_ascii=False)) + sum(
            len(json.dumps(h.text, ensure_ascii=False)) for h in hist if h.text)
        if out and used > budget:
            break
        out.append(api.MemoryRecord(
            repo.row_to_memory(r, extra.get(mid)), tuple(refs.get(mid, ())),
            tuple(links.get(mid, ())), hist, tuple(mentions.get(mid, ())),
            tuple(reads.get(mid, ()))))
    return out


# --- assistants' browsing (issue 26) -------------------------------------------------------------
# ``agent`` None: every scope (the person); else what that assistant sees, global + its own.

def _scope(agent: str | None) -> tuple[str, list[object]]:
    return ("", []) if agent is None else (" AND m.agent IN ('global', ?)", [agent])


def _scoped(conn: Connection, sql: str, params: list[object]) -> list[ScopedRow]:
    return [ScopedRow(BrowseRow._make(r[:-2]), r[-2], r[-1]) for r in conn.execute(sql, params)]


def recent(conn: Connection, *, agent: str | None, store: str | None, limit: int
           ) -> list[ScopedRow]:
    """The newest active memories (by when they happened), one row per thing said (a turn
    kept as an event is its event; no behaviour statistics), as the window's list folds."""
    where, params, join = _where(store, "active", None, None, fold=True)
    scope, args = _scope(agent)
    return _scoped(conn, f"SELECT {ROW_COLS}, m.valid_until, m.superseded_by FROM memory m"
                   f"{join}{where}{scope} ORDER BY m.occurred_at DESC, m.id DESC LIMIT ?",
                   [*params, *args, limit])


def entities_named(conn: Connection, name_key: str, agent: str | None) -> list[NamedEntity]:
    """The entities with this name (``name_key``: the name casefolded, as consolidation keys
    them), global ones first."""
    scope = "" if agent is None else " AND agent IN ('global', ?)"
    return [NamedEntity._make(r) for r in conn.execute(
        "SELECT id, kind, name, summary, agent FROM entity WHERE (name_key = ? OR id IN "
        "(SELECT merged_into FROM entity WHERE name_key = ? AND status = 'merged')) AND "
        f"status != 'merged'{scope} ORDER BY agent != 'global', id",
        [name_key, name_key] + ([] if agent is None else [agent]))]


def entity_facts(conn: Connection, name_key: str, agent: str | None, limit: int
                 ) -> list[ScopedRow]:
    """Facts and procedures (active or superseded) that mention an entity of this
    name (in any scope: the memory's own scope decides who sees it), have it as their subject
    or say it (a phrase of the full-text index), newest first."""
    scope, args = _scope(agent)
    return _scoped(conn, f"SELECT {ROW_COLS}, m.valid_until, m.superseded_by FROM memory m "
                   "WHERE m.store IN ('semantic', 'procedural') "
                   "AND m.status IN ('active', 'superseded') AND (m.id IN ("
                   "SELECT em.memory_id FROM entity_mention em JOIN entity e "
                   "ON e.id = em.entity_id WHERE e.name_key = ?) OR m.id IN ("
                   "SELECT memory_id FROM fact WHERE lower(subject) = ?) OR m.id IN ("
                   "SELECT rowid FROM memory_fts WHERE memory_fts MATCH ?))"
                   f"{scope} ORDER BY m.occurred_at DESC, m.id DESC LIMIT ?",
                   [name_key, name_key, _phrase(name_key), *args, limit])


def _phrase(name: str) -> str:
    """An FTS5 query for the name as a phrase in the text column (quotes doubled: it is
    never read as query syntax)."""
    return 'text : "' + name.replace('"', '""') + '"'


# --- 002's monitoring (issue 27 item 9): raw counts; app/services/monitoring.py says them ---

def monitoring(conn: Connection, since: float, used_within: float, quality: float
               ) -> dict[str, Any]:
    """Counts since ``since``: assistants' recalls (one per assistant and moment), the
    memories they returned and how many of those the same assistant then explained or got in
    a context within ``used_within`` seconds; reads by store; PROMOTED_FROM links made;
    memories archived (by the person, from the history, and by decay, from runs not undone);
    and the memories the lists show (``listed_clause``), with those whose composite passes
    ``quality``."""
    recalls, recalled = conn.execute(
        "SELECT count(DISTINCT agent || '|' || at), count(*) FROM memory_read "
        "WHERE via = 'recall' AND at >= ?", (since,)).fetchone()
    used = conn.execute(
        "SELECT count(*) FROM memory_read r WHERE r.via = 'recall' AND r.at >= ? AND EXISTS "
        "(SELECT 1 FROM memory_read u WHERE u.memory_id = r.memory_id AND u.agent = r.agent "
        "AND u.via IN ('explain', 'context') AND u.at >= r.at AND u.at <= r.at + ?)",
        (since, used_within)).fetchone()[0]
    by_store = {str(s): int(n) for s, n in conn.execute(
        "SELECT m.store, count(*) FROM memory_read r JOIN memory m ON m.id = r.memory_id "
        "WHERE r.at >= ? GROUP BY m.store", (since,))}
    promoted = conn.execute("SELECT count(*) FROM link WHERE kind = 'PROMOTED_FROM' AND "
                            "created_at >= ?", (since,)).fetchone()[0]
    by_person = conn.execute("SELECT count(*) FROM history WHERE action = 'archive' AND at >= ?",
                             (since,)).fetchone()[0]
    by_decay = conn.execute(
        "SELECT count(DISTINCT c.memory_id) FROM run_change c JOIN run r ON r.id = c.run_id "
        "JOIN memory m ON m.id = c.memory_id WHERE c.kind = 'status' AND r.undone_at IS NULL "
        "AND r.started_at >= ? AND m.status = 'archived' "
        "AND json_extract(c.payload, '$.status') = 'active'", (since,)).fetchone()[0]
    listed, params = listed_clause()  # the memories the lists show, as Insights' heading
    active, high = conn.execute(
        f"SELECT count(*), coalesce(sum(m.composite > ?), 0) FROM memory m WHERE {listed}",
        (quality, *params)).fetchone()
    return {"recalls": int(recalls), "recalled": int(recalled), "used": int(used),
            "reads_by_store": by_store, "promoted": int(promoted),
            "archived": int(by_person) + int(by_decay), "active": int(active),
            "high_quality": int(high)}


# --- an assistant's workspace (issue 27 item 10) ---------------------------------------------

def agent_page(conn: Connection, agent: str, after: tuple[float, int] | None, limit: int
               ) -> list[BrowseRow]:
    """Memories in ``agent``'s own scope (``memory.agent``), active or archived, one row per
    thing said (as the window's list folds), newest first, whole texts; keyset after
    ``after`` = (occurred_at, id)."""
    where, params, join = _where(None, LIVE, None, None, fold=True)
    where += (" AND " if where else " WHERE ") + "m.agent = ?"
    params.append(agent)
    if after is not None:
        where += " AND (m.occurred_at, m.id) < (?, ?)"
        params += [after[0], after[1]]
    cols = ROW_COLS.replace("substr(m.text, 1, 300)", "m.text")
    return [BrowseRow._make(r) for r in conn.execute(
        f"SELECT {cols} FROM memory m{join}{where} ORDER BY m.occurred_at DESC, m.id DESC "
        "LIMIT ?", [*params, limit])]
