"""When a group commit reaches the disk (issue 28): ``write_group`` commits at
``synchronous=NORMAL`` (kill -9 safe once acknowledged: tests/app/test_remember_kill.py), and the
writer fsyncs the WAL within ``sync_within`` of it, under a steady load too, and before it
closes; a plain ``write`` stays FULL; a failing fsync turns every later commit FULL. A real
SQLCipher file; the fsyncs are seen by wrapping ``os.fsync`` (it still runs)."""

from __future__ import annotations

import errno
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from app.domain.memory import Draft, Scores, Store
from storage import repo
from storage.db import Database
from storage.sqlcipher import Connection

KEY = bytes(range(32))


class WalSyncs:
    """Every ``os.fsync`` of the vault's WAL file: when, and an event per sync."""

    def __init__(self, wal: Path) -> None:
        self.wal = wal
        self.times: list[float] = []
        self.fail = False
        self.synced = threading.Event()

    def record(self, real: Callable[[int], None], fd: int) -> None:
        is_wal = self.wal.exists() and os.fstat(fd).st_ino == os.stat(self.wal).st_ino
        if is_wal and self.fail:
            raise OSError(errno.EIO, "I/O error")
        real(fd)
        if is_wal:
            self.times.append(time.monotonic())
            self.synced.set()


@pytest.fixture
def wal_syncs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> WalSyncs:
    seen = WalSyncs(tmp_path / "vault.db-wal")
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: seen.record(real, fd))
    return seen


def _open(tmp_path: Path, within: float) -> Database:
    return Database(tmp_path / "vault.db", KEY, create=True, sync_within=within)


@pytest.fixture
def closing() -> Iterator[list[Database]]:
    opened: list[Database] = []
    yield opened
    for db in opened:
        db.close()


def _level(conn: Connection) -> int:
    return int(conn.execute("PRAGMA synchronous").fetchone()[0])


def _remember(text: str) -> Callable[[Connection], tuple[int, int]]:
    """A memory row, and the ``synchronous`` level its transaction runs at."""
    def run(conn: Connection) -> tuple[int, int]:
        mid = repo.insert_memory(conn, Draft(text=text, store=Store.EPISODIC), now=1.0,
                                 decay_class="episodic", scores=Scores(), confidence=0.5)
        return int(mid), _level(conn)
    return run


def test_a_group_commits_at_normal_and_its_wal_is_fsynced_within_the_window(
        tmp_path: Path, wal_syncs: WalSyncs, closing: list[Database]) -> None:
    db = _open(tmp_path, 0.2)
    closing.append(db)
    assert db.write(_level).result(10) == 2  # FULL: a plain write waits for its fsync
    t0 = time.monotonic()
    mid, level = db.write_group(_remember("a note")).result(10)
    assert level == 1  # NORMAL: the acknowledgement did not wait for the disk
    assert wal_syncs.synced.wait(10), "the WAL was never fsynced after a group commit"
    # Within the window (0.2 s) plus what a loaded 2-core machine adds to a thread's wake-up.
    assert wal_syncs.times[0] - t0 < 1.5
    assert db.write(_level).result(10) == 2  # a plain write is FULL again
    assert db.read(lambda c: c.execute("SELECT text FROM memory WHERE id = ?",
                                       (mid,)).fetchone()) == ("a note",)


def test_closing_fsyncs_what_is_not_on_disk_yet(tmp_path: Path, wal_syncs: WalSyncs) -> None:
    db = _open(tmp_path, 3600)  # the timer would never come: only the close can sync
    mid, level = db.write_group(_remember("written just before lock")).result(10)
    assert level == 1 and not wal_syncs.times
    db.close()
    assert len(wal_syncs.times) == 1
    again = Database(tmp_path / "vault.db", KEY)
    try:
        assert again.read(lambda c: c.execute("SELECT text FROM memory WHERE id = ?",
                                              (mid,)).fetchone()) == ("written just before lock",)
    finally:
        again.close()


def test_a_writer_that_is_never_idle_still_fsyncs_on_time(
        tmp_path: Path, wal_syncs: WalSyncs, closing: list[Database]) -> None:
    """One caller remembering back to back for 1.5 s: the queue is rarely empty when the
    deadline passes, so the deadline is checked between items, not only while waiting."""
    db = _open(tmp_path, 0.2)
    closing.append(db)
    first: float | None = None
    done = time.monotonic() + 1.5
    n = 0
    while time.monotonic() < done:
        db.write_group(_remember(f"busy note {n}")).result(10)
        first = time.monotonic() if first is None else first
        n += 1
    stop = time.monotonic()
    assert first is not None and n > 10
    syncs = [t for t in wal_syncs.times if t <= stop]
    assert len(syncs) >= 2, f"{len(syncs)} fsyncs of the WAL in 1.5 s of group commits"
    gaps = [b - a for a, b in zip([first, *syncs], syncs, strict=False)]
    assert max(gaps) < 1.0, gaps  # 0.2 s asked; a loaded machine's scheduling on top


def test_a_failed_fsync_makes_every_later_commit_full(
        tmp_path: Path, wal_syncs: WalSyncs, closing: list[Database],
        caplog: pytest.LogCaptureFixture) -> None:
    wal_syncs.fail = True
    db = _open(tmp_path, 0.05)
    closing.append(db)
    with caplog.at_level(logging.ERROR, logger="storage.db"):
        _mid, level = db.write_group(_remember("secret kettle words")).result(10)
        assert level == 1
        # The timer's fsync fails (EIO); a plain write behind it runs after that.
        deadline = time.monotonic() + 10
        while db._sync_within != 0.0 and time.monotonic() < deadline:
            db.write(_level).result(10)
        assert db._sync_within == 0.0
    _mid, level = db.write_group(_remember("after the failure")).result(10)
    assert level == 2  # FULL: this commit waited for its own fsync
    assert any("fsync of the WAL failed (OSError)" in r.getMessage() for r in caplog.records)
    assert not any("kettle" in r.getMessage() for r in caplog.records)
