"""The owner's sync job: tick this vault's ``SyncEngine`` and keep what the last tick did
(issue 29 items 1 and 6; docs/sync.md#the-owners-sync-job). Layer: app (no Qt). Runs on: the
owner's scheduler thread for ``tick``; ``activity`` and ``close`` on any thread.

``SyncRunner`` belongs to one unlocked ``Vault`` (the facade makes it on the first
``sync_tick``) and is what every tick goes through:

- **only when sync is set up**: the setting ``sync.folder`` and this device's identity (from
  pairing); else a tick does nothing and the activity says ``running=False``;
- **never two ticks at once**: a tick that finds another under way returns at once (the
  engine's ``tick`` is not reentrant);
- **never after close**: ``close`` (the vault's ``lock``) stops new ticks, gives a tick under
  way ``policy.SYNC_STOP_WAIT_S`` to finish and then lets it be: the vault closes under it, each
  of its transactions is whole or absent as after a crash, and it ends quietly;
- **a file landed, a tick soon**: after its first tick the runner watches the folder
  (``app/sync/watch.py``: a ``stat`` poll every 500 ms of the directories the other devices
  write, nothing read) and calls ``landed`` when another device's file appears; the owner then
  moves its next tick to ``policy.SYNC_LANDED_S`` from now instead of waiting for the interval.
  The watch stops at ``close`` and follows the folder when the setting changes;
- **errors are words**: a folder missing or full, a file or key refused, is one ``problem``
  ("Sync folder missing"), logged once when it changes, by class only; the engine is dropped
  and built again from what the vault holds on the next tick (a restart's path, which compares
  every item once), which is the retry.

Nothing here reads a memory: the activity holds times, counts, device ids and names.
"""

from __future__ import annotations

import errno
import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.api import ForgetLine, SyncActivity
from app.errors import AppError
from app.policy import SYNC_STOP_WAIT_S
from app.sync.device_words import FOLDER_MISSING
from app.sync.folder import FORMAT
from app.sync.watch import FolderWatch

if TYPE_CHECKING:
    from app.sync.engine import SyncEngine

log = logging.getLogger(__name__)

FOLDER_FULL = "Sync folder full: no space left on its disk"
FOLDER_DENIED = "Sync folder not writable: check its permissions"


def problem_words(exc: BaseException) -> str:
    """A tick's failure in a few plain words (never the exception's message: it could quote a
    file name or a memory)."""
    from app.sync.keys import SyncRefused
    if isinstance(exc, FileNotFoundError | NotADirectoryError):
        return FOLDER_MISSING
    if isinstance(exc, PermissionError):
        return FOLDER_DENIED
    if isinstance(exc, OSError):
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return FOLDER_FULL
        return f"Sync folder cannot be used ({type(exc).__name__}); trying again"
    if isinstance(exc, SyncRefused):
        return f"Sync stopped: {exc.reason}"
    if isinstance(exc, AppError):
        return f"Sync stopped: {exc.user_message}"
    return f"Sync stopped on an error ({type(exc).__name__}); trying again"


def forget_lines(progress: Sequence[Any]) -> tuple[ForgetLine, ...]:
    """``app.sync.epochs.ForgetProgress`` items (``words()``, ``to_dict()``) as contract
    values."""
    out = []
    for p in progress:
        d = p.to_dict()
        out.append(ForgetLine(words=str(p.words()), done=int(d["done"]), total=int(d["total"]),
                              waiting=tuple(str(w) for w in d["waiting"]),
                              closed=bool(d["closed"])))
    return tuple(out)


class SyncRunner:
    """Ticks one vault's engine; see the module's note. ``folder`` and ``set_up`` are read at
    every tick (pairing may set sync up while the owner runs); ``make_engine`` builds the
    engine over a folder; ``sending`` counts this device's unsent changes; ``landed`` (if
    given) is called, on the watch's thread, when another device's file lands in the folder."""

    def __init__(self, *, folder: Callable[[], str], set_up: Callable[[], bool],
                 make_engine: Callable[[Path], SyncEngine], sending: Callable[[], int],
                 now: Callable[[], float], landed: Callable[[], None] | None = None) -> None:
        self._folder, self._set_up = folder, set_up
        self._make_engine, self._sending, self._now = make_engine, sending, now
        self._landed = landed
        self.watch: FolderWatch | None = None  # the folder's watch once a tick ran
        self._ticking = threading.Lock()   # one tick at a time
        self._state = threading.Lock()     # guards the fields below
        self._closed = False
        self._engine: SyncEngine | None = None
        self._running = False
        self._last_sync: float | None = None
        self._last_try: float | None = None
        self._problem = ""
        self._received = 0
        self._findings: tuple[str, ...] = ()
        self._forgets: tuple[ForgetLine, ...] = ()
        self.ticks = 0  # ticks that ran (tests, the bench)

    @property
    def closed(self) -> bool:
        return self._closed

    # --- the tick -----------------------------------------------------------------------------
    def tick(self) -> bool:
        """One round if sync is set up. False when it did not run: closed, another tick under
        way, or sync not set up."""
        if self._closed or not self._ticking.acquire(blocking=False):
            return False
        try:
            if self._closed:
                return False
            return self._tick()
        finally:
            self._ticking.release()

    def _tick(self) -> bool:
        try:
            folder = self._folder()
            if not folder or not self._set_up():
                with self._state:
                    self._running, self._engine = False, None
                self._unwatch()
                return False
            path = Path(folder)
            with self._state:
                self._running = True
                self._last_try = self._now()
            if not path.is_dir():
                raise FileNotFoundError(errno.ENOENT, "sync folder missing")
            engine = self._engine
            if engine is None or engine.folder != path:
                engine = self._engine = self._make_engine(path)
            report = engine.tick()
        except Exception as exc:  # the boundary of the job: every failure is one status
            if self._closed:
                log.info("sync: a tick under way at lock ended (%s)", type(exc).__name__)
                return False
            self._engine = None  # built again from the vault on the next tick
            self._fail(exc)
            return False
        try:
            self._watch(engine)
        except Exception as exc:  # the watch only hastens ticks: the interval still runs
            log.warning("sync: folder watch not started (%s)", type(exc).__name__)
        forgets = self._progress(engine)
        with self._state:
            if self._problem:
                log.info("sync: working again")
            self._last_sync = self._now()
            self._problem = ""
            self._received = report.received
            self._findings = tuple(report.findings)
            if forgets is not None:
                self._forgets = forgets
            self.ticks += 1
        return True

    def _watch(self, engine: SyncEngine) -> None:
        """Watch ``engine``'s folder (once; again when the folder changed)."""
        if self._landed is None or self._closed:
            return
        base = engine.folder / FORMAT
        watch = self.watch
        if watch is not None and watch.base == base and watch.me == engine.me:
            return
        self._unwatch()
        watch = FolderWatch(base, engine.me, self._landed)
        watch.start()
        self.watch = watch

    def _unwatch(self) -> None:
        watch, self.watch = self.watch, None
        if watch is not None:
            watch.stop(wait=0)

    def _fail(self, exc: BaseException) -> None:
        words = problem_words(exc)
        with self._state:
            changed = words != self._problem
            self._problem = words
        if changed:  # once per problem, by class: no traceback every few seconds
            log.warning("sync: %s (%s)", words, type(exc).__name__)

    def _progress(self, engine: SyncEngine) -> tuple[ForgetLine, ...] | None:
        """Recent forgets' progress from the engine (``SyncEngine.forget_progress``: issue 29
        item 4: "Forgotten on 2 of 3 devices")."""
        try:
            return forget_lines(engine.forget_progress())
        except Exception as exc:  # a display only: sync itself went fine
            log.warning("sync: forget progress unreadable (%s)", type(exc).__name__)
            return None

    # --- what it did --------------------------------------------------------------------------
    def activity(self) -> SyncActivity:
        """What the last tick did (``sending`` is read now: one count in the vault)."""
        with self._state:
            running = self._running and not self._closed
            shown = SyncActivity(running, self._last_sync, self._last_try, self._problem, 0,
                                 self._received, self._findings, self._forgets)
        if not running:
            return SyncActivity(forgets=shown.forgets, at=self._now())
        return SyncActivity(shown.running, shown.last_sync, shown.last_try, shown.problem,
                            self._sending(), shown.received, shown.findings, shown.forgets,
                            self._now())

    # --- close --------------------------------------------------------------------------------
    def close(self, wait: float | None = None) -> bool:
        """No tick starts from now on; a tick under way gets ``wait`` seconds (else
        ``policy.SYNC_STOP_WAIT_S``). True if none was left running."""
        self._closed = True
        self._unwatch()
        wait = SYNC_STOP_WAIT_S if wait is None else wait
        finished = self._ticking.acquire(timeout=max(0.0, wait))
        if finished:
            self._ticking.release()
        else:
            log.info("sync: a tick still under way at lock is abandoned")
        with self._state:
            self._engine = None
            self._running = False
        self._unwatch()  # a tick under way may have started one
        return finished
