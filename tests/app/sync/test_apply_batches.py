"""Catching up in batches (issue 29): another device's new memories are applied a batch per
transaction with one statement per table (``storage/bulk_insert.py``). A failure in the middle
of a batch leaves the vault as it was before that batch, every memory shown with its name, and
the next tick completes it: each memory once, on the same merged state."""

from __future__ import annotations

from typing import Any

import pytest

from app.sync import apply
from tests.app.conftest import remember
from tests.app.sync.fleet import Fleet
from tests.inside import inside


def _consistent(vault: Any) -> dict[str, int]:
    """Counts that must agree after any commit: every memory has its name, the version it
    shows, its full-text row, its "created" history row and its vector (made or pending)."""
    def run(c: Any) -> dict[str, int]:
        one = {
            "memory": "SELECT count(*) FROM memory",
            "named": "SELECT count(*) FROM sync_gids JOIN memory ON memory.id = memory_id",
            "heads": "SELECT count(*) FROM sync_heads JOIN sync_gids USING (gid)",
            "fts": "SELECT count(*) FROM memory_fts WHERE rowid IN (SELECT id FROM memory)",
            "created": "SELECT count(*) FROM history WHERE action = 'created'",
            "vectors": "SELECT (SELECT count(*) FROM vector) + "
                       "(SELECT count(*) FROM vector_pending)",
        }
        return {k: int(c.execute(q).fetchone()[0]) for k, q in one.items()}
    counts: dict[str, int] = inside(vault).db.read(run)
    assert len(set(counts.values())) == 1, counts
    return counts


def test_a_failure_in_the_middle_of_a_batch_leaves_it_out_and_the_next_tick_completes_it(
        two: Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = two.members
    texts = [f"Catch-up note {i}: the boiler service is on day {i + 1}" for i in range(8)]
    for t in texts:
        remember(a.vault, t)
    a.tick()
    monkeypatch.setattr(apply, "BATCH", 3)  # batches of 3, 3 and 2
    rows = b.sync().rows
    real = rows.set_head
    calls = {"n": 0}

    def dies_in_batch_two(conn: Any, gid: str, version: str) -> None:
        calls["n"] += 1
        if calls["n"] == 5:  # inside the second batch's transaction, its rows written
            raise OSError("killed in the middle of a batch")
        real(conn, gid, version)
    monkeypatch.setattr(rows, "set_head", dies_in_batch_two)
    with pytest.raises(OSError):
        b.tick()
    counts = _consistent(b.vault)
    assert counts["memory"] == 3  # the first batch committed, the second rolled back whole
    # The CHECK constraints are SQLite's again on the writer's connection after the failure.
    with pytest.raises(Exception, match="CHECK constraint failed"):
        inside(b.vault).db.write_sync(lambda c: c.execute(
            "UPDATE memory SET status = 'lost' WHERE id = (SELECT min(id) FROM memory)"))

    monkeypatch.setattr(rows, "set_head", real)
    b.tick()  # the same engine: the rest is still to do
    assert _consistent(b.vault)["memory"] == 8
    listed = inside(b.vault).db.read(lambda c: sorted(r[0] for r in c.execute(
        "SELECT text FROM memory WHERE status = 'active'")))
    assert listed == sorted(texts)
    assert a.hash() == b.hash()
    # Found by its words on B (the full-text rows of the batches).
    hits = b.vault.recall("when is the boiler service")
    assert any("boiler" in h.text for h in hits)
    # A restart compares everything once more and writes nothing twice.
    b.restart()
    b.tick()
    assert _consistent(b.vault)["memory"] == 8


def test_edits_of_memories_shown_here_go_in_batches_and_survive_a_failure(
        two: Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    """Edits made on A of memories B already shows: corrections on B a batch per transaction;
    a failure inside the second batch keeps the first, writes nothing of the second, and the
    next tick completes it. The old texts stay in B's history; B finds the new ones by
    meaning (their vectors were made after the commit)."""
    a, b = two.members
    ids = [remember(a.vault, f"Plant number {i} needs water on Mondays") for i in range(5)]
    a.tick()
    b.tick()
    assert _consistent(b.vault)["memory"] == 5
    for i, mid in enumerate(ids):
        a.vault.correct(mid, f"Plant number {i} needs water on Fridays")
    a.tick()
    monkeypatch.setattr(apply, "BATCH", 2)  # edit batches of 2, 2 and 1
    rows = b.sync().rows
    real = rows.move_gid
    calls = {"n": 0}

    def dies_in_batch_two(conn: Any, gid: str, memory_id: int) -> None:
        calls["n"] += 1
        if calls["n"] == 4:
            raise OSError("killed in the middle of an edit batch")
        real(conn, gid, memory_id)
    monkeypatch.setattr(rows, "move_gid", dies_in_batch_two)
    with pytest.raises(OSError):
        b.tick()

    def shown(v: Any) -> list[str]:
        return sorted(inside(v).db.read(lambda c: [r[0] for r in c.execute(
            "SELECT text FROM memory WHERE status = 'active'")]))
    after_crash = shown(b.vault)
    assert sum("Fridays" in t for t in after_crash) == 2 and len(after_crash) == 5
    named = inside(b.vault).db.read(lambda c: c.execute(
        "SELECT count(*) FROM sync_gids JOIN memory ON memory.id = memory_id "
        "WHERE memory.status = 'active'").fetchone()[0])
    assert named == 5  # every shown memory keeps its name; none of batch two moved

    monkeypatch.setattr(rows, "move_gid", real)
    b.tick()
    assert shown(b.vault) == sorted(f"Plant number {i} needs water on Fridays"
                                    for i in range(5))
    assert a.hash() == b.hash()
    old = inside(b.vault).db.read(lambda c: sorted(r[0] for r in c.execute(
        "SELECT text FROM history WHERE action = 'superseded'")))
    assert old == sorted(f"Plant number {i} needs water on Mondays" for i in range(5))
    vectors = inside(b.vault).db.read(lambda c: c.execute(
        "SELECT (SELECT count(*) FROM vector) + (SELECT count(*) FROM vector_pending)"
        ).fetchone()[0])
    assert vectors == 10  # both versions of each: the old one's and the correction's
    hits = b.vault.recall("which day do the plants need water")
    assert any("Fridays" in h.text for h in hits)
    b.restart()
    b.tick()
    assert len(shown(b.vault)) == 5
