"""Group commit in the writer (issue 28): ``Database.write_group`` calls queued together share
one transaction (one fsync); one that raises is undone alone; the queue's order holds."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest

from app.domain.memory import Draft, Scores, Store
from storage import repo
from storage.crypto import KdfParams
from storage.db import Database
from storage.sqlcipher import Connection
from storage.unlock import OpenVault

PW = "group-commit-password"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    """One vault for the module (a create costs a derive); each test counts its own rows."""
    opened = OpenVault.create(tmp_path_factory.mktemp("group") / "v", PW,
                              kdf=KdfParams(m=65_536, t=3, p=4))
    yield opened.db
    opened.lock()


def _count(db: Database, text: str) -> int:
    return int(db.read(lambda conn: conn.execute(
        "SELECT count(*) FROM memory WHERE text = ?", (text,)).fetchone()[0]))


def _insert(text: str) -> Callable[[Connection], int]:
    def run(conn: Connection) -> int:
        return int(repo.insert_memory(conn, Draft(text=text, store=Store.EPISODIC), now=1.0,
                                      decay_class="episodic", scores=Scores(), confidence=0.5))
    return run


def test_queued_writes_share_one_commit_and_a_failing_one_fails_alone(db: Database) -> None:
    commits: list[int] = []
    db.after_write.append(lambda conn: commits.append(1))
    try:
        started, gate = threading.Event(), threading.Event()

        def hold(conn: Connection) -> None:  # keeps the writer busy while the rest queue
            started.set()
            gate.wait(10)
        held = db.write(hold)
        assert started.wait(10)

        def bad(conn: Connection) -> None:
            _insert("half-written note")(conn)
            raise ValueError("this write is refused")
        first = [db.write_group(_insert(f"note {n}")) for n in range(5)]
        refused = db.write_group(bad)
        second = [db.write_group(_insert(f"note {n}")) for n in range(5, 8)]
        # A plain write queued behind them runs after the group, and sees it committed.
        seen = db.write(lambda conn: [r[0] for r in conn.execute(
            "SELECT text FROM memory WHERE text LIKE 'note %' ORDER BY id")])
        gate.set()
        held.result(10)
        ids = [f.result(10) for f in first + second]
        with pytest.raises(ValueError, match="refused"):
            refused.result(10)
        assert seen.result(10) == [f"note {n}" for n in range(8)]
        assert ids == sorted(ids) and len(set(ids)) == 8
        # The held write; the group's first try, rolled back when the refused one raised; one
        # transaction for the eight (the refused one undone in its SAVEPOINT); the plain read.
        assert len(commits) == 4
        assert _count(db, "half-written note") == 0
    finally:
        db.after_write.pop()


def test_a_group_whose_commit_fails_fails_every_caller(db: Database) -> None:
    """When SQLite rolled the whole transaction back, no caller of the group is told "saved"."""
    started, gate = threading.Event(), threading.Event()

    def hold(conn: Connection) -> None:
        started.set()
        gate.wait(10)
    held = db.write(hold)
    assert started.wait(10)

    def ends_it(conn: Connection) -> None:
        conn.execute("ROLLBACK")  # what SQLITE_FULL does to the transaction
        raise OSError("disk gone")
    good = db.write_group(_insert("written first"))
    broken = db.write_group(ends_it)
    gate.set()
    held.result(10)
    for fut in (good, broken):
        with pytest.raises(OSError, match="disk gone"):
            fut.result(10)
    assert _count(db, "written first") == 0
    assert db.write_group(_insert("after")).result(10) > 0  # the writer goes on


def test_a_group_that_does_not_fail_is_one_transaction_and_each_write_runs_once(
        db: Database) -> None:
    """The common case runs without a SAVEPOINT per write: one try, one commit."""
    commits: list[int] = []
    runs: list[str] = []
    db.after_write.append(lambda conn: commits.append(1))
    try:
        started, gate = threading.Event(), threading.Event()

        def hold(conn: Connection) -> None:
            started.set()
            gate.wait(10)
        statements: list[str] = []
        db.write(lambda conn: conn.set_trace_callback(statements.append)).result(10)
        held = db.write(hold)
        assert started.wait(10)

        def counted(text: str) -> Callable[[Connection], int]:
            def run(conn: Connection) -> int:
                runs.append(text)
                return _insert(text)(conn)
            return run
        futs = [db.write_group(counted(f"together {n}")) for n in range(6)]
        gate.set()
        held.result(10)
        ids = [f.result(10) for f in futs]
        assert len(set(ids)) == 6
        assert runs == [f"together {n}" for n in range(6)]
        db.write(lambda conn: conn.set_trace_callback(None)).result(10)
        assert len(commits) == 4  # the trace on, the held write, the group, the trace off
        assert sum(sql.startswith("INSERT INTO memory ") for sql in statements) == 6
        assert not any("SAVEPOINT" in sql for sql in statements)
        assert all(_count(db, f"together {n}") == 1 for n in range(6))
    finally:
        db.after_write.pop()


def test_a_lone_write_that_fails_leaves_nothing_and_runs_once(db: Database) -> None:
    runs: list[int] = []

    def bad(conn: Connection) -> None:
        runs.append(1)
        _insert("a lone half-written note")(conn)
        raise ValueError("refused alone")
    with pytest.raises(ValueError, match="refused alone"):
        db.write_group(bad).result(10)
    assert runs == [1]
    assert _count(db, "a lone half-written note") == 0
