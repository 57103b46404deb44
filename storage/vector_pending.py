"""Memories whose vector is still to be made (issue 28; migration 0027). Layer: storage.
Runs on: the db-writer thread (writes) and the vector follower's thread (reads).

``remember`` commits the memory and its ``vector_pending`` row in one transaction and is
acknowledged; ``settle_vectors`` writes the vectors and deletes the rows in another. Ids
only, no text (docs/security.md#13-forget-leaves-no-trace): a forgotten memory's row goes by
ON DELETE CASCADE.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from app.domain.memory import Store
from storage import batching
from storage.repo import put_vectors
from storage.sqlcipher import Connection


def mark_pending(conn: Connection, mid: int) -> None:
    conn.execute("INSERT OR IGNORE INTO vector_pending (memory_id) VALUES (?)", (int(mid),))


def pending(conn: Connection, limit: int | None = None
            ) -> list[tuple[int, Store, str, str | None, float | None]]:
    """The pending memories, oldest first (at most ``limit``): (id, store, text, speaker,
    occurred_at or None when it was not given, which ``insert_memory`` records as the creation
    time)."""
    rows = conn.execute(
        "SELECT m.id, m.store, m.text, m.speaker, m.occurred_at, m.created_at "
        "FROM vector_pending p JOIN memory m ON m.id = p.memory_id "
        "ORDER BY p.memory_id LIMIT ?", (-1 if limit is None else int(limit),)).fetchall()
    return [(int(r[0]), Store(r[1]), str(r[2]), r[3], None if r[4] == r[5] else float(r[4]))
            for r in rows]


def count(conn: Connection) -> int:
    """How many memories wait for their vector (the ``kept status`` line, the follower's
    progress)."""
    return int(conn.execute("SELECT count(*) FROM vector_pending").fetchone()[0])


def first(conn: Connection) -> int | None:
    """The lowest memory id still waiting for its vector, or None (consolidation extracts only
    below it: ``ConsolidationPipeline._episodes_todo``)."""
    row = conn.execute("SELECT min(memory_id) FROM vector_pending").fetchone()
    return None if row is None or row[0] is None else int(row[0])


def settle_vectors(conn: Connection, ids: Sequence[int], vecs: np.ndarray, model: str
                   ) -> list[int]:
    """Vectors for those of ``ids`` still pending (a memory forgotten meanwhile has none);
    their pending rows go. Returns the ids written."""
    still: set[int] = set()
    for chunk in batching.chunks([int(i) for i in ids]):
        still |= {int(r[0]) for r in conn.execute(
            f"SELECT memory_id FROM vector_pending WHERE memory_id IN "
            f"({batching.marks(len(chunk))})", chunk)}
    keep = [n for n, i in enumerate(ids) if int(i) in still]
    if not keep:
        return []
    written = [int(ids[n]) for n in keep]
    put_vectors(conn, written, vecs[keep], model)
    conn.executemany("DELETE FROM vector_pending WHERE memory_id = ?", [(i,) for i in written])
    return written


def existing(conn: Connection, ids: Sequence[int]) -> set[int]:
    """Those of ``ids`` that are still memories."""
    found: set[int] = set()
    for chunk in batching.chunks([int(i) for i in ids]):
        found |= {int(r[0]) for r in conn.execute(
            f"SELECT id FROM memory WHERE id IN ({batching.marks(len(chunk))})", chunk)}
    return found
