"""Database: one writer thread plus per-thread readers (Datasette's pattern).
Layer: storage. Runs on: callers' threads; writes run on the ``db-writer`` thread.

``write(fn)`` queues ``fn(conn)`` for the writer, which wraps it in ``BEGIN IMMEDIATE`` ...
``COMMIT`` (``ROLLBACK`` on any exception) and returns a Future. ``read(fn)`` runs ``fn`` on
the calling thread's own ``query_only`` connection. ``Database(threaded=False)`` runs both on
the caller's thread with one connection (unit tests and one-shot CLI commands).

Reader connections are opened with ``check_same_thread=False`` only so that ``close()`` (lock)
can close every one of them from the locking thread:
docs/security.md#20-auto-lock-and-memory-hygiene wants zero open connections after lock. Each is
still used by exactly one thread.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

from app.errors import StorageFull, VaultCorrupt, VaultLocked
from storage import sqlcipher
from storage.migrations import migrate, pending_migrations

log = logging.getLogger(__name__)

T = TypeVar("T")
_STOP = object()


class Database:
    """Owner: the unlocked vault. Thread affinity: see module docstring."""

    def __init__(self, path: Path, key: bytes | bytearray, *, create: bool = False,
                 threaded: bool = True, verify: str = "sync") -> None:
        """``verify``: the self-test of every page's HMAC at open
        (docs/security.md#2-the-database-is-encrypted and
        docs/security.md#24-never-recreate-on-failure). ``"sync"`` runs it before returning.
        ``"background"`` (threaded only, and only when no migration or crash-left WAL needs writing
        first) runs it on its own thread and its own connection while reads go ahead; the writer
        holds every write until it has passed, so a damaged file is never written. On failure every
        queued and later write fails with ``VaultCorrupt`` and ``on_corrupt`` callbacks run (on the
        check's thread). ``wait_verified()`` waits for the outcome."""
        self.path = path
        self._key = bytearray(key)
        self.threaded = threaded
        self._closed = False
        self._readers: list[sqlcipher.Connection] = []
        self._readers_lock = threading.Lock()
        # One reader per OS thread, keyed by thread id rather than threading.local(): a
        # QThreadPool thread gets a fresh Python thread state (and so fresh thread-locals)
        # for every task, which opened and leaked a connection per task.
        self._by_thread: dict[int, sqlcipher.Connection] = {}
        # Called on the writer thread with the write connection after every write transaction.
        self.after_write: list[Callable[[sqlcipher.Connection], None]] = []
        self.on_corrupt: list[Callable[[], None]] = []
        self._verified = threading.Event()
        self._verify_state = "pending"  # -> passed | failed | aborted (locked during the check)
        self._verify_conn: sqlcipher.Connection | None = None
        self._verify_thread: threading.Thread | None = None
        # The write connection is opened here first so a wrong key or damage fails fast,
        # on the caller's thread, before any thread starts.
        wal = path.with_name(path.name + "-wal")
        wal_pending = not create and wal.exists() and wal.stat().st_size > 0
        conn = sqlcipher.open_connection(path, self._key, create=create,
                                         check_same_thread=not threaded)
        try:
            background = (verify == "background" and threaded and not create
                          and not wal_pending and not pending_migrations(conn))
            if not create and not wal_pending and not background:
                # Self-test (docs/security.md#2-the-database-is-encrypted and
                # docs/security.md#24-never-recreate-on-failure): the HMAC of every page, so a
                # damaged file fails here, before migrate() could write (~5 ms per MB). It reads the
                # file, not the WAL, so it is skipped when a crash left a WAL with newer pages.
                if conn.execute("PRAGMA cipher_integrity_check").fetchall():
                    raise VaultCorrupt()
            migrate(conn)
        except sqlcipher.DatabaseError as exc:
            conn.close()
            if sqlcipher.is_corrupt(exc):
                raise VaultCorrupt() from exc
            raise
        except BaseException:
            conn.close()
            raise
        self._write_conn: sqlcipher.Connection | None = conn
        self._queue: queue.Queue[Any] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._verify_start_lock = threading.Lock()
        self._verify_go = threading.Event()
        if background:
            self._verify_conn = sqlcipher.open_connection(path, self._key, query_only=True,
                                                          check_same_thread=False)
            # Started by start_verification() (the vault calls it once its index is in
            # RAM, so the check does not compete with the unlock for the CPU), or by the
            # first write, whichever comes first.
        else:
            self._verify_state = "passed"
            self._verified.set()
        if threaded:
            self._thread = threading.Thread(target=self._writer_loop, name="db-writer",
                                            daemon=True)
            self._thread.start()

    # --- the self-test in the background -------------------------------------------------
    def start_verification(self, delay: float = 0.0) -> None:
        """Start the background self-test, after ``delay`` seconds (cut short by the first
        write, ``wait_verified`` or close)."""
        with self._verify_start_lock:
            if delay <= 0:
                self._verify_go.set()
            if self._verify_conn is None or self._verify_thread is not None or self._closed:
                return
            self._verify_thread = threading.Thread(target=self._verify, args=(delay,),
                                                   name="db-verify", daemon=True)
            self._verify_thread.start()

    def _verify(self, delay: float) -> None:
        conn = self._verify_conn
        assert conn is not None
        self._verify_go.wait(delay)
        state = "aborted"
        try:
            if self._closed:  # locked during the grace: nothing to check, nothing written
                return
            state = "failed" if conn.execute("PRAGMA cipher_integrity_check").fetchall() \
                else "passed"
        except sqlcipher.DatabaseError as exc:
            # Interrupted by close() (lock during the check) is not damage; anything else
            # that stops the check is treated as damage: nothing gets written.
            state = "aborted" if self._closed else "failed"
            if not self._closed:
                log.warning("integrity check stopped: %s", type(exc).__name__)
        finally:
            self._verify_conn = None
            try:
                conn.close()
            except Exception:
                pass
            self._verify_state = state
            self._verified.set()
        if state == "failed":
            log.error("integrity check failed: every write is refused")
            for cb in list(self.on_corrupt):
                try:
                    cb()
                except Exception:
                    log.exception("on_corrupt callback failed")

    def wait_verified(self, timeout: float | None = None) -> bool:
        """True once the self-test passed; raises ``VaultCorrupt`` if it failed; False on
        timeout."""
        self.start_verification()
        if not self._verified.wait(timeout):
            return False
        if self._verify_state == "failed":
            raise VaultCorrupt()
        return self._verify_state == "passed"

    @property
    def verified(self) -> bool:
        return self._verify_state == "passed"

    @property
    def integrity(self) -> str:
        """pending | passed | failed | aborted"""
        return self._verify_state

    # --- writes ------------------------------------------------------------------------
    def _run_write(self, fn: Callable[[sqlcipher.Connection], T]) -> T:
        conn = self._write_conn
        if conn is None:
            raise VaultLocked()
        conn.execute("BEGIN IMMEDIATE")
        try:
            try:
                result = fn(conn)
            except BaseException:
                # SQLite rolls back on its own after some errors (SQLITE_FULL, SQLITE_IOERR,
                # SQLITE_NOMEM); a second ROLLBACK would then hide the real error.
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            try:
                conn.execute("COMMIT")
            except sqlcipher.DatabaseError as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise sqlcipher.translate(exc) from exc
        finally:
            # Committed or rolled back: in-RAM mirrors re-read what the transaction touched
            # before the caller sees the result (so a recall after a write finds it).
            for hook in self.after_write:
                try:
                    hook(conn)
                except Exception:
                    log.exception("after-write hook failed")
        return result

    def _writer_loop(self) -> None:
        carry: Any = None  # an item the group commit took from the queue and did not run
        while True:
            item, carry = (carry, None) if carry is not None else (self._queue.get(), None)
            if item is _STOP:
                break
            fn, fut = item
            if not fut.set_running_or_notify_cancel():
                continue
            if isinstance(fn, _Setup):  # changes no page: need not wait for the self-test
                try:
                    fut.set_result(fn.fn(self._writer_conn()))
                except BaseException as exc:
                    fut.set_exception(exc)
                continue
            self.start_verification()
            self._verified.wait()  # no write before the self-test passed
            if self._verify_state != "passed":
                fut.set_exception(VaultCorrupt() if self._verify_state == "failed"
                                  else VaultLocked())
                continue
            try:
                if isinstance(fn, _DirectCall):
                    fut.set_result(fn.fn())
                elif isinstance(fn, _Grouped):
                    carry = self._run_group([(fn, fut)])
                else:
                    fut.set_result(self._run_write(fn))
            except BaseException as exc:  # delivered to the caller through the future
                if isinstance(exc, sqlcipher.DatabaseError) and sqlcipher.is_disk_full(exc):
                    exc = StorageFull()
                fut.set_exception(exc)
        if self._write_conn is not None:
            self._write_conn.close()
            self._write_conn = None

    def write(self, fn: Callable[[sqlcipher.Connection], T]) -> Future[T]:
        if self._closed:
            raise VaultLocked()
        fut: Future[T] = Future()
        if not self.threaded:
            try:
                fut.set_result(self._run_write(fn))
            except BaseException as exc:
                if isinstance(exc, sqlcipher.DatabaseError) and sqlcipher.is_disk_full(exc):
                    exc = StorageFull()
                fut.set_exception(exc)
            return fut
        self._queue.put((fn, fut))
        return fut

    def write_sync(self, fn: Callable[[sqlcipher.Connection], T]) -> T:
        return self.write(fn).result()

    def on_writer(self, fn: Callable[[sqlcipher.Connection], T]) -> Future[T]:
        """Run ``fn`` on the write connection, outside any transaction, ahead of every write
        queued after it and without waiting for the background self-test: for what changes
        no page of the file (TEMP triggers, SQL functions: ``storage/recall_cache.py``)."""
        if self._closed:
            raise VaultLocked()
        fut: Future[T] = Future()
        if not self.threaded:
            try:
                fut.set_result(fn(self._writer_conn()))
            except BaseException as exc:
                fut.set_exception(exc)
            return fut
        self._queue.put((_Setup(fn), fut))
        return fut

    def _writer_conn(self) -> sqlcipher.Connection:
        if self._write_conn is None:
            raise VaultLocked()
        return self._write_conn

    # --- group commit (issue 28) ---------------------------------------------------------
    def write_group(self, fn: Callable[[sqlcipher.Connection], T]) -> Future[T]:
        """Like ``write(fn)``, but the writer commits ``fn`` together with the other
        ``write_group`` calls queued behind it: one transaction, so one fsync of the WAL
        (``synchronous=FULL``), for all of them. One that raises is undone alone and fails alone
        (the others run again, each in its own SAVEPOINT); a failed COMMIT fails them all (none of
        them was acknowledged). Every future is resolved only after the COMMIT returned, so an
        acknowledged write is as durable as with ``write``. For short writes of independent
        callers (``remember``): a long ``fn`` would hold back the others' acknowledgement.
        ``fn`` may run twice (see ``_run_group``): it must change nothing but the database."""
        if self._closed:
            raise VaultLocked()
        if not self.threaded:
            return self.write(fn)
        fut: Future[T] = Future()
        self._queue.put((_Grouped(fn), fut))
        return fut

    def _run_group(self, batch: list[tuple[_Grouped, Future[Any]]]) -> Any:
        """Writer thread: ``batch`` plus every ``write_group`` item queued right behind it (up
        to ``GROUP_MAX``), in one transaction. Returns the first queued item that is not part
        of a group (or ``_STOP``), for the loop to run next, so the queue's order holds."""
        other: Any = None
        while len(batch) < GROUP_MAX:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is _STOP or not isinstance(item[0], _Grouped):
                other = item
                break
            if item[1].set_running_or_notify_cancel():
                batch.append(item)

        def each(conn: sqlcipher.Connection) -> list[tuple[bool, Any]]:
            outcomes: list[tuple[bool, Any]] = []
            for g, _fut in batch:
                conn.execute("SAVEPOINT kept_group")
                try:
                    outcomes.append((True, g.fn(conn)))
                except BaseException as exc:
                    if not conn.in_transaction:  # SQLite rolled back everything: all fail
                        raise
                    conn.execute("ROLLBACK TO kept_group")
                    outcomes.append((False, _translated(exc)))
                conn.execute("RELEASE kept_group")
            return outcomes

        def together(conn: sqlcipher.Connection) -> list[tuple[bool, Any]]:
            outcomes: list[tuple[bool, Any]] = []
            for g, _fut in batch:
                try:
                    outcomes.append((True, g.fn(conn)))
                except BaseException as exc:
                    if len(batch) == 1 or not conn.in_transaction:
                        raise  # alone, or SQLite rolled everything back: all fail
                    raise _TryApart() from exc
            return outcomes
        # Without a SAVEPOINT first: each one costs ~0.3 ms of CPU, the sub-journal's page
        # copies and their release (bench/remember_profile.py, dev), as much as a remember's
        # memory row. Writes rarely fail (they are validated before), so the group runs
        # together and, only when one fails, again, each in its SAVEPOINT (``each``).
        try:
            try:
                outcomes = self._run_write(together)
            except _TryApart:
                outcomes = self._run_write(each)
        except BaseException as exc:
            for _g, fut in batch:
                fut.set_exception(_translated(exc))
            return other
        for (_g, fut), (ok, value) in zip(batch, outcomes, strict=True):
            if ok:
                fut.set_result(value)
            else:
                fut.set_exception(value)
        return other

    # --- reads -------------------------------------------------------------------------
    def _reader(self) -> sqlcipher.Connection:
        if self._closed:
            raise VaultLocked()
        if not self.threaded:
            assert self._write_conn is not None
            return self._write_conn
        ident = threading.get_ident()
        with self._readers_lock:
            conn: sqlcipher.Connection | None = self._by_thread.get(ident)
        if conn is None:
            conn = sqlcipher.open_connection(self.path, self._key, query_only=True,
                                             check_same_thread=False)
            with self._readers_lock:
                self._by_thread[ident] = conn
                self._readers.append(conn)
        return conn

    def read(self, fn: Callable[[sqlcipher.Connection], T]) -> T:
        return fn(self._reader())

    # --- maintenance -------------------------------------------------------------------
    def checkpoint(self) -> tuple[int, int, int]:
        """``wal_checkpoint(TRUNCATE)`` on the writer; returns (busy, log, checkpointed)."""
        def run() -> tuple[int, int, int]:
            assert self._write_conn is not None
            row = self._write_conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            return int(row[0]), int(row[1]), int(row[2])
        return self._outside_transaction(run)

    def rekey(self, new_key: bytes | bytearray) -> None:
        def run() -> None:
            assert self._write_conn is not None
            # no key text (docs/security.md#20-auto-lock-and-memory-hygiene)
            sqlcipher.rekey_connection(self._write_conn, new_key)
            # The rekeyed pages sit in the WAL until checkpointed; until then the database file
            # still opens with the old key (docs/security.md#9-data-key-rotation). Write them back
            # now.
            busy = self._write_conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            if busy:
                log.warning("checkpoint after rekey was blocked by a reader")
        self._close_readers()
        self._outside_transaction(run)
        self._key[:] = new_key  # in place, no immutable copy

    def _outside_transaction(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the writer thread but outside BEGIN/COMMIT (checkpoint, rekey)."""
        if self._closed:
            raise VaultLocked()
        if not self.threaded:
            return fn()
        fut: Future[T] = Future()
        self._queue.put((_DirectCall(fn), fut))
        return fut.result()

    def _close_readers(self) -> None:
        with self._readers_lock:
            for conn in self._readers:
                try:
                    conn.close()
                except sqlcipher.DatabaseError:
                    log.warning("reader close failed")
            self._readers.clear()
            self._by_thread.clear()

    def close(self) -> None:
        """Drain the writer queue, close every connection (this checkpoints the WAL), wipe the
        key."""
        if self._closed:
            return
        self._closed = True
        self._verify_go.set()
        with self._verify_start_lock:
            if self._verify_thread is None and self._verify_conn is not None:
                self._verify_conn.close()  # never started: nothing was verified
                self._verify_conn = None
                self._verify_state = "aborted"
                self._verified.set()
        if self._verify_thread is not None:
            conn = self._verify_conn
            if conn is not None:
                try:
                    conn.interrupt()
                except Exception:  # already closed by the check's own thread
                    pass
            self._verify_thread.join()
            self._verify_thread = None
        if self.threaded and self._thread is not None:
            self._queue.put(_STOP)
            self._thread.join()
        elif self._write_conn is not None:
            self._write_conn.close()
            self._write_conn = None
        self._close_readers()
        for i in range(len(self._key)):
            self._key[i] = 0

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def open_connection_count(self) -> int:
        with self._readers_lock:
            n = len(self._readers)
        return n + (1 if self._write_conn is not None else 0)


# Most writes one group commit takes: 64 remembers in one transaction is ~2 ms of SQL
# (measured, bench/remember_rate.py) against ~4 ms for the fsync they share on this disk.
GROUP_MAX = 64


def _translated(exc: BaseException) -> BaseException:
    if isinstance(exc, sqlcipher.DatabaseError) and sqlcipher.is_disk_full(exc):
        return StorageFull()
    return exc


class _TryApart(Exception):
    """A write of a group failed in the group's first try: run the group again, apart."""


class _Grouped:
    """A queued ``write_group`` item: the writer may commit it with its neighbours."""

    def __init__(self, fn: Callable[[sqlcipher.Connection], Any]) -> None:
        self.fn = fn


class _Setup:
    """A queued item the writer runs on its connection, outside a transaction, before the
    self-test has passed (``on_writer``)."""

    def __init__(self, fn: Callable[[sqlcipher.Connection], Any]) -> None:
        self.fn = fn


class _DirectCall:
    """A queued item the writer runs without a transaction around it."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn
