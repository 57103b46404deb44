"""Many new memories in one statement per table (issue 29: catching up 10k ops). Layer: storage.
Runs on: the db-writer thread, inside the caller's transaction.

``insert_memories`` writes the same rows as ``repo.insert_memory(..., index_text=False)`` once
per draft (the memory, its side row, its DERIVED_FROM links, its "created" history row), but
with one ``executemany`` per table, and with SQLite's CHECK constraints checked here instead of
by SQLite.

Why the checks move to Python: a CHECK with an ``IN`` list of more than two values
(``memory.store``, ``memory.status``, ``memory.decay_class``, ``episode.rating``,
``procedure.kind``) is compiled into an ephemeral table built on every execution of the
INSERT, and with ``cipher_memory_security`` on every allocation of that table is an ``mlock``,
a wipe with random bytes and a ``munlock``. Measured (dev, 500-row batches, load 12-15 on 2
cores, CPU time of the writer thread): a memory row 262-269 us with the checks, 18 us without;
an episode row 79-80 us against 1 us; the rest of the statement is the same. So for the batch
the writer sets ``PRAGMA ignore_check_constraints`` around these statements only, after every
value of a checked column was compared with ``CHECKED`` (a test holds ``CHECKED`` equal to the
schema's own lists). NOT NULL, UNIQUE and foreign keys stay SQLite's. The pragma is switched
off again before the function returns or raises (it expires the prepared statements, so the
next ones are compiled with the checks again).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from app.domain.memory import Draft, LinkKind, MemoryId, Scores
from storage.sqlcipher import Connection, IntegrityError

# Every CHECK (col IN (...)) of the tables written here, as in the schema (migrations 0001,
# 0024); NULL passes a CHECK as it does in SQLite (NOT NULL is a separate constraint).
CHECKED: dict[tuple[str, str], frozenset[object]] = {
    ("memory", "store"): frozenset({"short_term", "episodic", "semantic", "procedural",
                                    "implicit"}),
    ("memory", "status"): frozenset({"active", "superseded", "archived"}),
    ("memory", "decay_class"): frozenset({"working", "episodic", "semantic", "social",
                                          "emotional"}),
    ("episode", "rating"): frozenset({-1, 0, 1}),
    ("episode", "outcome_by"): frozenset({"person", "inferred"}),
    ("procedure", "kind"): frozenset({"procedure", "preference"}),
}

_MEMORY_INSERT = (
    "INSERT INTO memory (id, store, text, created_at, occurred_at, agent, context, importance, "
    "recency, frequency, emotional, social, composite, confidence, decay_class, valid_from, "
    "valid_until, user_validated, session, speaker, seq, ref) "
    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")

New = tuple[Draft, Scores, str, float]  # draft, scores, decay class, confidence


def _check(table: str, column: str, value: object) -> None:
    allowed = CHECKED.get((table, column))
    if allowed is not None and value is not None and value not in allowed:
        # The error class SQLite raises for a failed CHECK, before anything is written.
        raise IntegrityError(f"CHECK constraint failed: {table}.{column}")


@contextmanager
def checks_here(conn: Connection) -> Iterator[None]:
    """SQLite's CHECK constraints off for the statements inside (the caller has checked the
    values against ``CHECKED``); on again whatever happens."""
    conn.execute("PRAGMA ignore_check_constraints = ON")
    try:
        yield
    finally:
        conn.execute("PRAGMA ignore_check_constraints = OFF")


def insert_memories(conn: Connection, new: Sequence[New], *, now: float) -> list[MemoryId]:
    """Insert ``new`` in order; their ids, ascending (AUTOINCREMENT: above every id ever used,
    a forgotten one included). No full-text rows: the caller passes the memories to
    ``repo.index_texts`` before its transaction ends, as an import does."""
    from storage.repo import SIDE_COLUMNS, SIDE_TABLES, _side_value
    if not new:
        return []
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'memory'").fetchone()
    top = conn.execute("SELECT coalesce(max(id), 0) FROM memory").fetchone()[0]
    base = max(int(row[0]) if row else 0, int(top))
    ids = [MemoryId(base + 1 + i) for i in range(len(new))]
    memories = []
    sides: dict[tuple[str, tuple[str, ...]], list[tuple[object, ...]]] = {}
    links = []
    for mid, (d, scores, decay_class, confidence) in zip(ids, new, strict=True):
        _check("memory", "store", d.store.value)
        _check("memory", "decay_class", decay_class)
        occurred = d.occurred_at if d.occurred_at is not None else now
        memories.append((
            mid, d.store.value, d.text, now, occurred, d.agent, d.context, scores.importance,
            scores.recency, scores.frequency, scores.emotional, scores.social, scores.composite,
            confidence, decay_class, d.valid_from, d.valid_until, int(d.user_validated),
            d.session, d.speaker, d.seq, d.ref))
        table = SIDE_TABLES.get(d.store)
        cols = tuple(c for c in SIDE_COLUMNS[table] if c in d.extra) if table else ()
        # Statistics have required columns; the other side tables accept a bare row.
        if table and (cols or table != "statistic"):
            values = tuple(_side_value(d.extra[c]) for c in cols)
            for c, v in zip(cols, values, strict=True):
                _check(table, c, v)
            sides.setdefault((table, cols), []).append((mid, *values))
        links += [(mid, int(src), LinkKind.DERIVED_FROM.value, 1.0, now)
                  for src in d.derived_from]
    with checks_here(conn):
        conn.executemany(_MEMORY_INSERT, memories)
        for (table, cols), rows in sides.items():
            names = ", ".join(("memory_id", *cols))
            marks = ", ".join("?" * (len(cols) + 1))
            conn.executemany(f"INSERT INTO {table} ({names}) VALUES ({marks})", rows)
    if links:
        conn.executemany("INSERT OR IGNORE INTO link (src, dst, kind, weight, created_at) "
                         "VALUES (?,?,?,?,?)", links)
    conn.executemany("INSERT INTO history (memory_id, at, action, text, detail) "
                     "VALUES (?,?,?,?,?)", [(mid, now, "created", None, None) for mid in ids])
    return ids
