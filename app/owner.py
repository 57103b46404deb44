"""The owner of an unlocked vault: unlock, serve, schedule, idle, lock, in one place.
Layer: app (no Qt). Runs on: the thread that made it (the window's GUI thread, or ``kept
serve``'s main thread); the socket and the scheduler run on their own threads.

Two front ends own a vault: the window (``ui/main.py``) and ``kept serve``
(``app/cli/serve.py``). Both do the same through ``OwnerSession``:

1. unlock (``OwnerSession.open``; the window unlocks in its dialog and hands the vault over);
2. serve the vault on its socket (``app.ipc.server.OwnerServer``) to the CLI and assistants;
   when the socket cannot be made, the session goes on without it (``serve_error`` says why);
3. run the consolidation and backup schedule (``app.jobs``), rescheduled when settings change,
   and the sync job while this device syncs (a tick every few seconds, and about a second
   after a local change: ``app/sync/runner.py``);
4. notice idleness: ``idle_for`` counts from the last request over the socket (the window also
   counts the person's own input);
5. lock, always in this order: the socket goes first (a client never meets a half-locked
   vault), then the jobs (the running one is cancelled at its next batch and waited for), then
   the keys (``VaultAPI.lock``). ``before_keys`` lets the window let go of what it shows
   between the last two.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from app.api import Progress, VaultAPI
from app.clock import Clock, SystemClock

if TYPE_CHECKING:
    from apscheduler.schedulers.background import BackgroundScheduler

    from app.ipc.server import OwnerServer
    from app.jobs import JobOutcome, Jobs

log = logging.getLogger(__name__)


def idle_minutes(vault: VaultAPI) -> float:
    """Minutes without use before the vault locks: ``KEPT_IDLE_MINUTES``, else the setting."""
    env = os.environ.get("KEPT_IDLE_MINUTES")
    value = env if env else vault.setting("lock.idle_minutes")
    return float(value if isinstance(value, int | float | str) and value != "" else 5)


class OwnerSession:
    """One unlocked vault and what serves it. ``start`` once; ``lock`` once (again is a no-op).
    """

    def __init__(self, vault: VaultAPI, *, clock: Clock | None = None,
                 strict: bool | None = None, schedule: bool = True,
                 on_job_done: Callable[[JobOutcome], None] | None = None,
                 on_job_start: Callable[[str], Progress | None] | None = None) -> None:
        self.vault = vault
        self.clock = clock or SystemClock()
        self.strict = strict
        self.schedule = schedule
        self.on_job_done, self.on_job_start = on_job_done, on_job_start
        self.server: OwnerServer | None = None
        self.serve_error: str | None = None  # why the socket could not be made, if it could not
        self.jobs: Jobs | None = None
        self.scheduler: BackgroundScheduler | None = None
        self._locked = False
        self._guard = threading.Lock()

    @classmethod
    def open(cls, folder: Path, password: str | None = None, *, device: bool = False,
             strict: bool | None = None, schedule: bool = True) -> OwnerSession:
        """Unlock the vault in ``folder`` (with its password, or this device's keychain) for
        this process to own (``kept serve``)."""
        from app.facade import Vault
        vault = Vault.open(folder, use_device=True) if device else Vault.open(folder, password)
        return cls(vault, strict=strict, schedule=schedule)

    # --- start -----------------------------------------------------------------------------
    def start(self) -> None:
        """Serve the socket, then start the schedule. A socket that cannot be made (a folder
        path too long, no permission) leaves ``serve_error`` set; everything else works."""
        from app.ipc.server import OwnerServer
        server = OwnerServer(self.vault, strict=self.strict)
        try:
            server.start()
            self.server = server
        except OSError as exc:
            log.warning("not serving assistants (%s)", type(exc).__name__)
            self.serve_error = type(exc).__name__
        self._start_jobs()

    def _start_jobs(self) -> None:
        """The jobs and, unless ``schedule`` is off, the scheduler; with it the sync job,
        told by the vault when a local change was recorded and when another device's file
        landed in the folder (``Vault.watch_sync``)."""
        from app.jobs import Jobs, build_scheduler, sync_soon
        from app.policy import SYNC_LANDED_S
        self.jobs = Jobs(self.vault, self.clock, on_done=self.on_job_done,
                         on_start=self.on_job_start)
        if self.schedule:
            scheduler: BackgroundScheduler = build_scheduler(self.jobs, self.vault.setting)
            self.scheduler = scheduler
            scheduler.start()

            def soon() -> None:
                if scheduler.running and self.scheduler is scheduler:
                    sync_soon(scheduler)

            def landed() -> None:
                if scheduler.running and self.scheduler is scheduler:
                    sync_soon(scheduler, SYNC_LANDED_S)
            self.vault.watch_sync(soon, landed)

    def reschedule(self) -> None:
        """Changed schedule settings apply at once (blocks on the settings: off the GUI
        thread)."""
        if self.scheduler is not None:
            from app.jobs import reschedule
            reschedule(self.scheduler, self.vault.setting)

    # --- idle --------------------------------------------------------------------------------
    def idle_for(self) -> float:
        """Seconds since the last request over the socket (since start without a socket)."""
        server = self.server
        return time.monotonic() - server.last_request if server is not None else 0.0

    def serve_until(self, stop: threading.Event, idle_seconds: float
                    ) -> Literal["stopped", "idle"]:
        """Block until ``stop`` is set ("stopped") or no request came for ``idle_seconds``
        ("idle"). The caller locks."""
        if self.server is None:
            stop.wait()
            return "stopped"
        started = time.monotonic()
        while not stop.wait(min(1.0, idle_seconds / 4)):
            if min(self.idle_for(), time.monotonic() - started) >= idle_seconds:
                return "idle"
        return "stopped"

    # --- lock --------------------------------------------------------------------------------
    @property
    def locked(self) -> bool:
        return self._locked

    def stop_serving(self) -> None:
        """The socket goes: clients see it close, never a half-locked vault."""
        server, self.server = self.server, None
        if server is not None:
            server.stop()

    def stop_jobs(self) -> None:
        """Cancel the running job at its next batch boundary and wait for it."""
        from app.jobs import shutdown
        scheduler, jobs = self.scheduler, self.jobs
        self.scheduler = None
        if jobs is not None:
            if scheduler is not None:
                shutdown(scheduler, jobs)
            else:
                jobs.cancel.cancel()

    def lock(self, before_keys: Callable[[], None] | None = None) -> None:
        """Socket, then jobs, then keys. ``before_keys`` runs after the jobs stopped and
        before the keys go (the window drops its pages there)."""
        with self._guard:
            if self._locked:
                return
            self._locked = True
        try:
            self.stop_serving()
            self.stop_jobs()
            if before_keys is not None:
                before_keys()
        finally:
            self.vault.lock()
