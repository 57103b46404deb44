"""All SQL over memories. Layer: storage. Functions take a prepared connection; writes are
called from inside ``Database.write`` (one transaction), reads from ``Database.read``.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from app.api import LinkView
from app.domain.memory import Draft, LinkKind, Memory, MemoryId, Scores, Status, Store
from app.ports import EntitySummary, Json, RecallMeta, Reinforcement
from storage import scores as _scores
from storage.batching import SQL_VARIABLES
from storage.bulk_insert import insert_memories as insert_memories  # sync's batches (issue 29)
from storage.embedder import EMBED_DIM
from storage.hops import linked as linked  # recall's second hop (re-exported)
from storage.hops import sharing_entities as sharing_entities
from storage.lexicon import drop_snapshot, mark_fts
from storage.sqlcipher import Connection

log = logging.getLogger(__name__)

# This module's part of the port lives in storage/scores.py (issue 27).
factor_rows = _scores.factor_rows
set_confidence_factors = _scores.set_confidence_factors

MEMORY_COLUMNS = (
    "id, store, text, created_at, occurred_at, agent, context, importance, recency, frequency, "
    "emotional, social, composite, confidence, access_count, last_accessed_at, status, "
    "superseded_by, decay_class, valid_from, valid_until, user_validated, session, speaker, seq, ref"
)
SIDE_TABLES = {Store.EPISODIC: "episode", Store.SEMANTIC: "fact", Store.PROCEDURAL: "procedure",
               Store.IMPLICIT: "statistic"}
SIDE_COLUMNS = {
    "episode": ("event_type", "actors", "outcome", "details", "rating", "outcome_by"),
    "fact": ("subject", "predicate", "object", "category"),
    "procedure": ("kind", "trigger", "actions", "success_count", "failure_count"),
    "statistic": ("metric", "value", "sample_size", "computed_at"),
}


def row_to_memory(row: Sequence[Any], extra: dict[str, object] | None = None) -> Memory:
    return Memory(
        id=MemoryId(row[0]), store=Store(row[1]), text=row[2], created_at=row[3],
        occurred_at=row[4], agent=row[5], context=row[6],
        scores=Scores(importance=row[7], recency=row[8], frequency=row[9], emotional=row[10],
                      social=row[11], composite=row[12]),
        confidence=row[13], access_count=row[14], last_accessed_at=row[15],
        status=Status(row[16]), superseded_by=MemoryId(row[17]) if row[17] else None,
        decay_class=row[18], valid_from=row[19], valid_until=row[20],
        user_validated=bool(row[21]), session=row[22], speaker=row[23], seq=row[24], ref=row[25],
        extra=extra or {},
    )


def insert_memory(conn: Connection, d: Draft, *, now: float, decay_class: str, scores: Scores,
                  confidence: float, fts_keys: str = "", index_text: bool = True) -> MemoryId:
    """``index_text=False``: no full-text row yet; the caller passes the memory to
    ``index_texts`` before the transaction ends (batch imports)."""
    occurred = d.occurred_at if d.occurred_at is not None else now
    cur = conn.execute(
        "INSERT INTO memory (store, text, created_at, occurred_at, agent, context, importance, "
        "recency, frequency, emotional, social, composite, confidence, decay_class, valid_from, "
        "valid_until, user_validated, session, speaker, seq, ref) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (d.store.value, d.text, now, occurred, d.agent, d.context, scores.importance,
         scores.recency, scores.frequency, scores.emotional, scores.social, scores.composite,
         confidence, decay_class, d.valid_from, d.valid_until, int(d.user_validated), d.session,
         d.speaker, d.seq, d.ref))
    mid = MemoryId(int(cur.lastrowid or 0))
    if index_text:
        conn.execute("INSERT INTO memory_fts (rowid, text, keys, ctx) VALUES (?, ?, ?, ?)",
                     (mid, d.text, fts_keys, ""))
        mark_fts(conn, (mid,))
        if d.session is not None and d.seq is not None:
            refresh_context(conn, d.session, d.store.value, d.seq)
    table = SIDE_TABLES.get(d.store)
    cols = [c for c in SIDE_COLUMNS[table] if c in d.extra] if table else []
    # Statistics have required columns; the other side tables accept a bare row.
    if table and (cols or table != "statistic"):
        names = ", ".join(("memory_id", *cols))
        marks = ", ".join("?" * (len(cols) + 1))
        conn.execute(f"INSERT INTO {table} ({names}) VALUES ({marks})",
                     (mid, *(_side_value(d.extra[c]) for c in cols)))
    for src in d.derived_from:
        add_link(conn, mid, src, LinkKind.DERIVED_FROM, now)
    add_history(conn, mid, now, "created", None, None)
    return mid


CTX_RADIUS = 2  # +-2 same-session turns: .807 R@10 on LoCoMo dev vs .778 for +-1


def refresh_context(conn: Connection, session: str, store: str, seq: int) -> None:
    """Rewrite the ``ctx`` column of the turns within reach of ``seq`` (the new one and its
    neighbours), from the texts of their same-session neighbours."""
    rows = conn.execute(
        "SELECT id, seq, text FROM memory WHERE session = ? AND store = ? AND seq BETWEEN ? AND ?"
        " AND status != 'superseded' ORDER BY seq, id",
        (session, store, seq - 2 * CTX_RADIUS, seq + 2 * CTX_RADIUS)).fetchall()
    by_seq = {r[1]: r[2] for r in rows}
    for mid, s, _text in rows:
        if abs(s - seq) > CTX_RADIUS:
            continue
        ctx = " ".join(by_seq[j] for j in range(s - CTX_RADIUS, s + CTX_RADIUS + 1)
                       if j != s and j in by_seq)
        conn.execute("UPDATE memory_fts SET ctx = ? WHERE rowid = ?", (ctx, mid))
        mark_fts(conn, (mid,))


def index_texts(conn: Connection,
                rows: Sequence[tuple[int, str, str, str | None, str, int | None]]) -> None:
    """Full-text rows for memories inserted with ``index_text=False``: (id, text, keys,
    session, store, seq). Gives every row, and every older neighbour, the ``ctx`` it would have
    after ``refresh_context`` ran once per insert in id order, but writes each row once: one
    INSERT per new memory and one UPDATE per older neighbour within reach. (Per insert,
    refresh_context rewrites up to three FTS5 rows, each an FTS5 secure delete plus insert:
    ~10 ms apiece, which made it the whole cost of an import.)"""
    new = {int(r[0]): r for r in rows}
    inserts: dict[int, tuple[int, str, str, str]] = {}
    updates: list[tuple[str, int]] = []
    groups: dict[tuple[str, str], set[int]] = {}
    for mid, text, keys, session, store, seq in rows:
        if session is None or seq is None:
            inserts[int(mid)] = (int(mid), text, keys, "")
        else:
            groups.setdefault((session, store), set()).add(int(seq))
    for (session, store), seqs in groups.items():
        touched = {q + d for q in seqs for d in range(-CTX_RADIUS, CTX_RADIUS + 1)}
        found = conn.execute(
            "SELECT id, seq, text FROM memory WHERE session = ? AND store = ? AND seq BETWEEN ? "
            "AND ? AND status != 'superseded' ORDER BY seq, id",
            (session, store, min(seqs) - 2 * CTX_RADIUS, max(seqs) + 2 * CTX_RADIUS)).fetchall()
        by_seq = {r[1]: r[2] for r in found}
        for mid, s, _text in found:
            if s not in touched:
                continue
            ctx = " ".join(by_seq[j] for j in range(s - CTX_RADIUS, s + CTX_RADIUS + 1)
                           if j != s and j in by_seq)
            if mid in new:
                inserts[mid] = (mid, new[mid][1], new[mid][2], ctx)
            else:
                updates.append((ctx, mid))
    missing = set(new) - set(inserts)  # e.g. superseded before this call: as refresh would
    for mid in missing:
        inserts[mid] = (mid, new[mid][1], new[mid][2], "")
    conn.executemany("INSERT INTO memory_fts (rowid, text, keys, ctx) VALUES (?, ?, ?, ?)",
                     [inserts[m] for m in sorted(inserts)])
    if updates:
        conn.executemany("UPDATE memory_fts SET ctx = ? WHERE rowid = ?", updates)
    mark_fts(conn, [*inserts, *(u[1] for u in updates)])


def replace_fts_row(conn: Connection, mid: int, text: str, keys: str = "", ctx: str = "") -> None:
    conn.execute("DELETE FROM memory_fts WHERE rowid = ?", (mid,))
    conn.execute("INSERT INTO memory_fts (rowid, text, keys, ctx) VALUES (?, ?, ?, ?)",
                 (mid, text, keys, ctx))
    mark_fts(conn, (mid,))
    drop_snapshot(conn)  # the old words leave the saved RAM lexicon too (migration 0032)


def _side_value(value: object) -> object:
    return json.dumps(value) if isinstance(value, (list, dict)) else value


def add_link(conn: Connection, src: int, dst: int, kind: LinkKind, now: float,
             weight: float = 1.0) -> None:
    conn.execute("INSERT OR IGNORE INTO link (src, dst, kind, weight, created_at) "
                 "VALUES (?,?,?,?,?)", (src, dst, kind.value, weight, now))


def add_history(conn: Connection, mid: int, now: float, action: str, text: str | None,
                detail: str | None) -> None:
    conn.execute("INSERT INTO history (memory_id, at, action, text, detail) VALUES (?,?,?,?,?)",
                 (mid, now, action, text, detail))


def find_ref(conn: Connection, session: str | None, ref: str, store: Store) -> MemoryId | None:
    row = conn.execute(
        "SELECT id FROM memory WHERE session IS ? AND ref = ? AND store = ? LIMIT 1",
        (session, ref, store.value)).fetchone()
    return MemoryId(row[0]) if row else None


def find_own_ref(conn: Connection, session: str | None, ref: str, store: Store, agent: str
                 ) -> MemoryId | None:
    """The memory ``agent`` already saved for (session, ref) in ``store`` (issue 26: a
    resent turn is not saved twice)."""
    row = conn.execute(
        "SELECT id FROM memory WHERE session IS ? AND ref = ? AND store = ? AND agent = ? "
        "ORDER BY id LIMIT 1", (session, ref, store.value, agent)).fetchone()
    return MemoryId(row[0]) if row else None


def get_memories(conn: Connection, ids: Iterable[int]) -> dict[MemoryId, Memory]:
    ids = list(dict.fromkeys(int(i) for i in ids))
    out: dict[MemoryId, Memory] = {}
    for chunk in _chunks(ids, SQL_VARIABLES):
        marks = ",".join("?" * len(chunk))
        for row in conn.execute(f"SELECT {MEMORY_COLUMNS} FROM memory WHERE id IN ({marks})",
                                chunk):
            out[MemoryId(row[0])] = row_to_memory(row)
    return out


def texts(conn: Connection, ids: Sequence[int]) -> dict[int, str]:
    out: dict[int, str] = {}
    for chunk in _chunks([int(i) for i in ids], SQL_VARIABLES):
        marks = ",".join("?" * len(chunk))
        out.update(conn.execute(f"SELECT id, text FROM memory WHERE id IN ({marks})", chunk))
    return out


def get_memory(conn: Connection, mid: int) -> Memory | None:
    row = conn.execute(f"SELECT {MEMORY_COLUMNS} FROM memory WHERE id = ?", (mid,)).fetchone()
    if row is None:
        return None
    m = row_to_memory(row)
    table = SIDE_TABLES.get(m.store)
    if table:
        cols = SIDE_COLUMNS[table]
        side = conn.execute(f"SELECT {', '.join(cols)} FROM {table} WHERE memory_id = ?",
                            (mid,)).fetchone()
        if side:
            extra = {c: v for c, v in zip(cols, side, strict=True) if v is not None}
            m = row_to_memory(row, extra)
    return m


def put_routing(conn: Connection,
                rows: Sequence[tuple[int, float, Sequence[str], str, str]]) -> None:
    """Routing decisions (issue 27 item 1): (memory id, salience, stores, reason, by)."""
    conn.executemany(
        "INSERT OR REPLACE INTO routing (memory_id, salience, stores, reason, by) "
        "VALUES (?, ?, ?, ?, ?)",
        [(int(m), float(s), json.dumps(list(st)), r, b) for m, s, st, r, b in rows])


def routing_of(conn: Connection, mid: int) -> tuple[float, tuple[str, ...], str, str] | None:
    """(salience, stores, reason, by) of a turn, or of the turn an episode comes from."""
    row = conn.execute("SELECT salience, stores, reason, by FROM routing WHERE memory_id = ?",
                       (mid,)).fetchone()
    if row is None:
        row = conn.execute(
            "SELECT r.salience, r.stores, r.reason, r.by FROM link l "
            "JOIN routing r ON r.memory_id = l.dst "
            "WHERE l.src = ? AND l.kind = 'DERIVED_FROM' ORDER BY l.dst LIMIT 1",
            (mid,)).fetchone()
    if row is None:
        return None
    return float(row[0]), tuple(str(x) for x in json.loads(row[1])), str(row[2]), str(row[3])


def _chunks(items: list[int], n: int) -> Iterable[list[int]]:
    for i in range(0, len(items), n):
        yield items[i:i + n]


# --- vectors ---------------------------------------------------------------------------------

def put_vectors(conn: Connection, ids: Sequence[int], vecs: np.ndarray, model: str) -> None:
    conn.executemany(
        "INSERT OR REPLACE INTO vector (memory_id, model, dim, vec) VALUES (?,?,?,?)",
        [(int(i), model, int(v.shape[0]), np.asarray(v, dtype=np.float32).tobytes())
         for i, v in zip(ids, vecs, strict=True)])


def load_vectors(conn: Connection, model: str | Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """All vectors of ``model`` (one id, or several ids of one vector space): (ids int64,
    matrix float32 n x dim)."""
    models = [model] if isinstance(model, str) else list(model)
    # ``+model``: a scan in memory_id order, not the vector_model index and a sort.
    rows = conn.execute("SELECT memory_id, vec FROM vector WHERE +model IN "
                        f"({','.join('?' * len(models))}) ORDER BY memory_id",
                        models).fetchall()
    if not rows:
        return np.zeros(0, dtype=np.int64), np.zeros((0, EMBED_DIM), dtype=np.float32)
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    mat = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    return ids, mat.copy()



def vector_models(conn: Connection) -> dict[str, int]:
    """How many vectors each model id made (reads the vector_model index)."""
    rows = conn.execute("SELECT model, count(*) FROM vector GROUP BY model ORDER BY model")
    return {str(m): int(n) for m, n in rows.fetchall()}


# --- full text -------------------------------------------------------------------------------

_TOKEN = re.compile(r"[\w']+", re.UNICODE)


def fts_query(tokens: Iterable[str]) -> str:
    """An FTS5 OR query of quoted tokens (quoting makes any word safe, even 'AND' or 'NEAR')."""
    quoted = ['"' + t.replace('"', '""') + '"' for t in tokens if t]
    return " OR ".join(dict.fromkeys(quoted))


# bm25 column weights: text, keys (speaker, date), ctx (neighbours count half: 0 -> -.094 R@10).
FTS_WEIGHTS = (1.0, 1.0, 0.5)


def fts_search(conn: Connection, match: str, limit: int,
               weights: tuple[float, float, float] = FTS_WEIGHTS
               ) -> list[tuple[MemoryId, float]]:
    """BM25 hits, best first, as (id, positive score)."""
    if not match:
        return []
    rows = conn.execute(
        "SELECT rowid, -bm25(memory_fts, ?, ?, ?) FROM memory_fts WHERE memory_fts MATCH ? "
        "ORDER BY bm25(memory_fts, ?, ?, ?) LIMIT ?",
        (*weights, match, *weights, limit)).fetchall()
    return [(MemoryId(r[0]), float(r[1])) for r in rows]


# --- meta for recall -------------------------------------------------------------------------

_RECALL_META = ("SELECT m.id, m.store, m.status, m.occurred_at, m.created_at, m.composite, "
                "m.importance, m.emotional, m.social, m.access_count, m.last_accessed_at, "
                "m.decay_class, m.agent, m.context, m.valid_from, m.valid_until, m.speaker, "
                "m.session, m.seq, m.user_validated, s.created_at, m.superseded_by FROM memory m "
                "LEFT JOIN memory s ON s.id = m.superseded_by ")


def recall_meta(conn: Connection, ids: Sequence[int]) -> dict[int, RecallMeta]:
    """id -> what recall filters and ranks it by. ``superseded_at`` is when the version that
    replaced it was learned (time travel)."""
    make = RecallMeta._make
    out: dict[int, RecallMeta] = {}
    for chunk in _chunks([int(i) for i in ids], SQL_VARIABLES):
        marks = ",".join("?" * len(chunk))
        for row in conn.execute(_RECALL_META + f"WHERE m.id IN ({marks})", chunk):
            out[row[0]] = make(row[1:])
    return out


def recall_meta_after(conn: Connection, after: int, limit: int) -> dict[int, RecallMeta]:
    """``recall_meta`` of the ``limit`` memories with the lowest ids above ``after`` (a scan
    in id order, for ``storage.recall_cache``)."""
    make = RecallMeta._make
    return {row[0]: make(row[1:]) for row in conn.execute(
        _RECALL_META + "WHERE m.id > ? ORDER BY m.id LIMIT ?", (int(after), int(limit)))}


def fact_keys(conn: Connection, ids: Sequence[int]) -> dict[int, tuple[str, str, str | None]]:
    """id -> (subject, predicate, category) of the facts among ``ids``."""
    out: dict[int, tuple[str, str, str | None]] = {}
    for chunk in _chunks([int(i) for i in ids], SQL_VARIABLES):
        marks = ",".join("?" * len(chunk))
        for mid, subject, predicate, category in conn.execute(
                f"SELECT memory_id, subject, predicate, category FROM fact WHERE memory_id IN "
                f"({marks}) AND subject IS NOT NULL AND predicate IS NOT NULL", chunk):
            out[int(mid)] = (str(subject), str(predicate), category)
    return out


def known_people(conn: Connection) -> list[str]:
    """Speakers, then person entities, each once: the names a query can mention."""
    # A skip-scan over the memory_speaker index: one seek per distinct speaker, where
    # SELECT DISTINCT read every row (212 ms at 100k memories).
    rows = conn.execute(
        "WITH RECURSIVE s(name, n) AS (SELECT (SELECT min(speaker) FROM memory), 0 "
        "UNION ALL SELECT (SELECT min(speaker) FROM memory WHERE speaker > s.name), n + 1 "
        "FROM s WHERE s.name IS NOT NULL AND n < 500) "
        "SELECT name FROM s WHERE name IS NOT NULL").fetchall()
    names = [r[0] for r in rows if r[0]]
    ents = conn.execute("SELECT name FROM entity WHERE kind = 'person' LIMIT 2000").fetchall()
    return list(dict.fromkeys(names + [r[0] for r in ents]))


def entity_summaries(conn: Connection, ids: Sequence[int], limit: int) -> list[EntitySummary]:
    """Entities mentioned by ``ids`` that have a summary (at most ``limit``)."""
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    return [EntitySummary._make(r) for r in conn.execute(
        "SELECT DISTINCT e.id, e.name, e.summary, e.kind FROM entity e JOIN entity_mention em "
        f"ON em.entity_id = e.id WHERE em.memory_id IN ({marks}) AND e.summary IS NOT NULL "
        "AND e.status != 'merged' LIMIT ?", [*ids, limit])]


def links_of(conn: Connection, mid: int) -> list[LinkView]:
    """Every link from or to ``mid``."""
    rows = conn.execute("SELECT src, dst, kind, weight FROM link WHERE src = ? OR dst = ?",
                        (mid, mid))
    return [LinkView(MemoryId(r[0]), MemoryId(r[1]), LinkKind(r[2]), float(r[3])) for r in rows]


def provenance(conn: Connection, ids: Sequence[int]) -> dict[int, list[int]]:
    """id -> every memory it was derived from, transitively (DERIVED_FROM, PROMOTED_FROM)."""
    out: dict[int, list[int]] = {}
    for mid in ids:
        rows = conn.execute(
            "WITH RECURSIVE up(id) AS (SELECT ? UNION SELECT l.dst FROM link l JOIN up "
            "ON l.src = up.id WHERE l.kind IN ('DERIVED_FROM','PROMOTED_FROM')) "
            "SELECT id FROM up WHERE id != ?", (mid, mid)).fetchall()
        out[int(mid)] = [r[0] for r in rows]
    return out


def ancestors(conn: Connection, ids: Sequence[int]) -> dict[int, list[int]]:
    """id -> everything it was derived from, transitively, nearest first (ids without
    sources are left out)."""
    # ``provenance`` for many ids in one recursive query per chunk (recall asks for ~40 ids per
    # query; one CTE each cost ~0.6 ms apiece). The queue is FIFO, so each root's chain comes
    # out in the same order as its own query would give.
    prov: dict[int, list[int]] = {}
    for chunk in _chunks(list(dict.fromkeys(int(i) for i in ids)), SQL_VARIABLES):
        marks = ",".join(["(?)"] * len(chunk))
        for root, anc in conn.execute(
                f"WITH RECURSIVE up(root, id) AS (SELECT column1, column1 FROM (VALUES {marks}) "
                "UNION SELECT up.root, l.dst FROM link l JOIN up ON l.src = up.id "
                "WHERE l.kind IN ('DERIVED_FROM','PROMOTED_FROM')) "
                "SELECT root, id FROM up WHERE id != root", chunk):
            prov.setdefault(int(root), []).append(anc)
    return prov


def archived_by_person(conn: Connection, ids: Sequence[int]) -> set[int]:
    """The ids among ``ids`` whose latest archive-or-restore in the history is the person's
    own "archive" (decay archives without a history entry, and a restore undoes either)."""
    out: set[int] = set()
    for chunk in _chunks([int(i) for i in ids], SQL_VARIABLES):
        marks = ",".join("?" * len(chunk))
        out.update(r[0] for r in conn.execute(
            "SELECT h.memory_id FROM history h WHERE h.memory_id IN "
            f"({marks}) AND h.action IN ('archive', 'restore') AND h.id = (SELECT max(h2.id) "
            "FROM history h2 WHERE h2.memory_id = h.memory_id AND h2.action IN "
            "('archive', 'restore')) AND h.action = 'archive'", chunk))
    return out


def mentioning(conn: Connection, entity_id: int, ids: Sequence[int]) -> set[int]:
    """The ids among ``ids`` that mention entity ``entity_id``."""
    out: set[int] = set()
    for chunk in _chunks([int(i) for i in ids], SQL_VARIABLES - 1):
        marks = ",".join("?" * len(chunk))
        out.update(r[0] for r in conn.execute(
            f"SELECT memory_id FROM entity_mention WHERE entity_id = ? AND memory_id IN "
            f"({marks})", [entity_id, *chunk]))
    return out


def refs_of(conn: Connection, ids: Sequence[int]) -> dict[int, list[str]]:
    """id -> its own ref and the refs of everything it was derived from, in that order."""
    prov = ancestors(conn, ids)
    everything = set(int(i) for i in ids) | {a for v in prov.values() for a in v}
    refs: dict[int, str] = {}
    for chunk in _chunks(sorted(everything), SQL_VARIABLES):
        marks = ",".join("?" * len(chunk))
        for row in conn.execute(f"SELECT id, ref FROM memory WHERE id IN ({marks}) "
                                "AND ref IS NOT NULL", chunk):
            refs[row[0]] = row[1]
    # A conversation's summary (issue 27 item 2) names no one place where something was said:
    # its own refs only (none), while explain still lists every turn it covers. With the
    # turns' refs, a summary hit filled a top 10 with its conversation (LoCoMo dev R@10 .81
    # -> .78, bench/locomo_recall.py --summaries).
    summaries: set[int] = set()
    for chunk in _chunks(sorted({int(i) for i in ids}), SQL_VARIABLES):
        marks = ",".join("?" * len(chunk))
        summaries |= {int(r[0]) for r in conn.execute(
            f"SELECT memory_id FROM episode WHERE event_type = 'summary' AND memory_id IN "
            f"({marks})", chunk)}
    out: dict[int, list[str]] = {}
    for mid in ids:
        chain = [int(mid)] if int(mid) in summaries else [int(mid), *prov.get(int(mid), [])]
        out[int(mid)] = list(dict.fromkeys(refs[c] for c in chain if c in refs))
    return out


def touch(conn: Connection, updates: Sequence[tuple[float, float | None, float | None, float,
                                                   float, int]]) -> None:
    """Apply access bookkeeping: (importance, reinforced_at, emotional_reinforced_at,
    last_accessed_at, frequency, id)."""
    conn.executemany(
        "UPDATE memory SET importance = ?, reinforced_at = ?, emotional_reinforced_at = ?, "
        "last_accessed_at = ?, frequency = ?, access_count = access_count + 1 WHERE id = ?",
        updates)


def reinforcement_state(conn: Connection, ids: Sequence[int]) -> dict[int, Reinforcement]:
    out = {}
    for chunk in _chunks([int(i) for i in ids], SQL_VARIABLES):
        marks = ",".join("?" * len(chunk))
        for r in conn.execute(
                "SELECT id, importance, emotional, access_count, last_accessed_at, "
                f"reinforced_at, emotional_reinforced_at FROM memory WHERE id IN ({marks})",
                chunk):
            out[r[0]] = Reinforcement._make(r[1:])
    return out


# --- status ----------------------------------------------------------------------------------

def memory_count(conn: Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM memory").fetchone()[0])


def next_seq(conn: Connection, sessions: Iterable[str]) -> dict[str, int]:
    """The next free turn number of each session (0 for a new one)."""
    return {s: int(conn.execute("SELECT coalesce(max(seq), -1) FROM memory WHERE session = ?",
                                (s,)).fetchone()[0]) + 1 for s in sessions}


def counts(conn: Connection, agent: str | None = None) -> dict[str, dict[str, int]]:
    """Memories by store and status: all of them, or what ``agent`` sees (global and its
    own)."""
    out: dict[str, dict[str, int]] = {s.value: {} for s in Store if s is not Store.WORKING}
    where, args = ("", ()) if agent is None else (" WHERE agent IN ('global', ?)", (agent,))
    for store, status, n in conn.execute(
            f"SELECT store, status, count(*) FROM memory{where} GROUP BY store, status", args):
        out.setdefault(store, {})[status] = n
    return out


def open_contradictions(conn: Connection, agent: str | None = None) -> int:
    """Open Inbox contradictions: all, or those whose both sides ``agent`` sees."""
    if agent is None:
        row = conn.execute("SELECT count(*) FROM contradiction WHERE status = 'open'"
                           ).fetchone()
    else:
        row = conn.execute(
            "SELECT count(*) FROM contradiction c JOIN memory a ON a.id = c.a "
            "JOIN memory b ON b.id = c.b WHERE c.status = 'open' "
            "AND a.agent IN ('global', ?) AND b.agent IN ('global', ?)", (agent, agent)
        ).fetchone()
    return int(row[0])


def get_setting(conn: Connection, key: str) -> Json:
    row = conn.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
    return json.loads(row[0]) if row else None


def put_setting(conn: Connection, key: str, value: Json) -> None:
    conn.execute("INSERT OR REPLACE INTO settings (key, value) VALUES (?, ?)",
                 (key, json.dumps(value)))


# --- what a result says of a memory (issue 26): who wrote it, a change waiting for it ---------

def derived_ids(conn: Connection, ids: Sequence[int]) -> set[int]:
    """The ids among ``ids`` that consolidation derived from other memories (they have a
    DERIVED_FROM link)."""
    out: set[int] = set()
    for chunk in _chunks([int(i) for i in ids], SQL_VARIABLES):
        marks = ",".join("?" * len(chunk))
        out.update(int(r[0]) for r in conn.execute(
            f"SELECT DISTINCT src FROM link WHERE src IN ({marks}) AND kind = 'DERIVED_FROM'",
            chunk))
    return out


def open_changes(conn: Connection, ids: Sequence[int]
                 ) -> list[tuple[int, int, int, str, str, float | None, str, str | None]]:
    """Open contradiction-kind Inbox items with one of ``ids`` on a side: (item id, a, b,
    reason, b's agent, b's valid_from, b's text, b's fact object)."""
    out: list[tuple[int, int, int, str, str, float | None, str, str | None]] = []
    seen: set[int] = set()
    for chunk in _chunks([int(i) for i in ids], SQL_VARIABLES // 2):
        marks = ",".join("?" * len(chunk))
        for r in conn.execute(
                "SELECT c.id, c.a, c.b, c.reason, m.agent, m.valid_from, m.text, f.object "
                "FROM contradiction c JOIN memory m ON m.id = c.b "
                "LEFT JOIN fact f ON f.memory_id = c.b WHERE c.status = 'open' "
                f"AND c.kind = 'contradiction' AND (c.a IN ({marks}) OR c.b IN ({marks}))",
                [*chunk, *chunk]):
            if int(r[0]) not in seen:
                seen.add(int(r[0]))
                out.append((int(r[0]), int(r[1]), int(r[2]), str(r[3]), str(r[4]), r[5],
                            str(r[6]), r[7]))
    return out


# An episode's outcome and rating (issue 27 item 8): the facade's ``rate_episode``.
from storage.episodes import episode_outcome as episode_outcome  # noqa: E402
from storage.episodes import set_episode_outcome as set_episode_outcome  # noqa: E402
