"""Scheduled jobs (docs/architecture.md#consolidation-and-jobs): heartbeat, consolidation, daily
decay, weekly synthesis, and sync's tick. Layer: app. Runs on: the single ``apscheduler``
worker thread (sync: a second one of its own); never touches Qt.

APScheduler 3 ``BackgroundScheduler`` with a one-thread executor, ``coalesce``,
``max_instances=1`` and a misfire grace, so two jobs never run at once and a sleeping laptop
runs a missed job once, not many times. The sync job is the exception on purpose: it runs on
its own one-thread executor every ``policy.SYNC_TICK_S`` (and sooner after a local change,
``sync_soon``), so a consolidation of minutes does not hold the other devices' changes back; a
tick goes through the vault's services as the person's own acts do, which already run beside a
consolidation. Jobs are plain functions taking the vault, a clock and
a cancel token; they log and skip a failing batch instead of stopping (the pipeline does this
per batch; the wrapper here catches whatever escapes, so the scheduler itself never stops).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from app.api import CancelToken, Progress, RunReport, SettingValue, VaultAPI
from app.clock import Clock
from app.errors import AppError
from app.policy import SYNC_SOON_S, SYNC_TICK_S

if TYPE_CHECKING:  # apscheduler 3 has no type hints: mypy sees Any, readers see the class
    from apscheduler.schedulers.background import BackgroundScheduler

Settings = Callable[[str], SettingValue | None]  # VaultAPI.setting

log = logging.getLogger(__name__)



@dataclass(frozen=True, slots=True)
class JobOutcome:
    job: str
    ok: bool
    report: RunReport | None = None
    error: str | None = None
    detail: str | None = None  # what a job other than consolidation did, in words


class Jobs:
    """The job functions, bound to a vault. Owner: whoever owns the scheduler."""

    def __init__(self, vault: VaultAPI, clock: Clock, on_done: Callable[[JobOutcome], None] | None
                 = None, on_start: Callable[[str], Progress | None] | None = None) -> None:
        self.vault = vault
        self.clock = clock
        self.cancel = CancelToken()
        self.on_done = on_done
        self.on_start = on_start  # a job's progress callback (the window shows a bar), or None
        self._running = threading.Lock()  # belt and braces on top of max_instances=1
        self.sync_pool: Any = None  # the scheduler's sync executor (build_scheduler)

    def _run(self, job: str) -> JobOutcome:
        """Job ``job``: the consolidation steps that carry it in their schedule
        (``pipeline.STEP_LIST``)."""
        from app.services.consolidation.pipeline import job_steps
        steps = job_steps(job)
        if self.cancel.cancelled or self.vault.locked:
            return JobOutcome(job, False, error="skipped: locked or cancelled")
        with self._running:
            try:
                report = self.vault.consolidate(now=self.clock.now(), cancel=self.cancel,
                                                kind=job, steps=steps).value
                outcome = JobOutcome(job, report.failed_batches == 0, report,
                                     report.failure_text or None)
            except Exception as exc:  # the scheduler must never stop on a failing job
                log.error("job %s failed: %s", job, type(exc).__name__)
                outcome = JobOutcome(job, False, error=type(exc).__name__)
        if self.on_done is not None:
            self.on_done(outcome)
        return outcome

    def heartbeat(self) -> JobOutcome:
        return self._run("heartbeat")

    def consolidation(self) -> JobOutcome:
        return self._run("consolidation")

    def decay(self) -> JobOutcome:
        return self._run("decay")

    def synthesis(self) -> JobOutcome:
        return self._run("synthesis")

    def backup(self) -> JobOutcome:
        """A scheduled backup into ``backup.folder``, keeping the last ``backup.keep``
        (issue 16). Nothing happens while ``backup.schedule`` is off or no folder is set."""
        from pathlib import Path

        from app.services.backup import backup_to_folder
        if self.cancel.cancelled or self.vault.locked:
            return JobOutcome("backup", False, error="skipped: locked or cancelled")
        folder = str(self.vault.setting("backup.folder") or "")
        if self.vault.setting("backup.schedule") in (None, "", "off") or not folder:
            return JobOutcome("backup", True, error=None)
        with self._running:
            try:
                progress = self.on_start("backup") if self.on_start is not None else None
                done = backup_to_folder(self.vault, Path(folder),
                                        int(self.vault.setting("backup.keep") or 1),
                                        now=self.clock.now(), progress=progress)
                outcome = JobOutcome("backup", True, detail=(
                    f"{done.record.memories:,} memories to {Path(done.record.path).name}"
                    + (f"; {len(done.removed)} older removed" if done.removed else "")))
            except AppError as exc:
                log.error("job backup failed: %s", type(exc).__name__)
                outcome = JobOutcome("backup", False, error=exc.user_message)
            except Exception as exc:  # the scheduler must never stop on a failing job
                log.error("job backup failed: %s", type(exc).__name__)
                outcome = JobOutcome("backup", False, error=type(exc).__name__)
        if self.on_done is not None:
            self.on_done(outcome)
        return outcome

    def sync(self) -> bool:
        """One sync tick (issue 29; ``app/sync/runner.py``): nothing while this device does
        not sync. Runs on the scheduler's own ``sync`` thread, so a consolidation of minutes
        does not hold sync back; the runner lets one tick run at a time. Never raises (the
        runner turns a failure into its status) and tells ``on_done`` nothing: it runs every
        few seconds, and the window reads ``sync_activity``."""
        if self.cancel.cancelled or self.vault.locked:
            return False
        try:
            self.vault.sync_tick()
        except Exception as exc:  # a vault locked between the check and the call, say
            log.info("job sync skipped: %s", type(exc).__name__)
            return False
        return True


SYNC_JOB = "sync"  # the job's id and its executor's alias


def build_scheduler(jobs: Jobs, settings: Settings) -> BackgroundScheduler:
    """A configured, not yet started, BackgroundScheduler. Intervals come from settings."""
    from apscheduler.executors.pool import ThreadPoolExecutor
    from apscheduler.schedulers.background import BackgroundScheduler
    jobs.sync_pool = ThreadPoolExecutor(1)
    sched = BackgroundScheduler(
        executors={"default": ThreadPoolExecutor(1), SYNC_JOB: jobs.sync_pool},
        job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": 3600})
    # No ``timezone``: APScheduler takes the computer's own zone (tzlocal), so "daily decay at
    # 03:00" is three at night where the person is, as Settings says it (issue 25: schedules
    # in local time; they ran at 03:00 UTC before).
    sched.add_job(jobs.heartbeat, "interval", id="heartbeat", name="heartbeat",
                  minutes=_int(settings, "consolidation.heartbeat_minutes"))
    sched.add_job(jobs.consolidation, "interval", id="consolidation", name="consolidation",
                  minutes=_int(settings, "consolidation.interval_minutes"))
    sched.add_job(jobs.decay, "cron", id="decay", name="decay",
                  hour=_int(settings, "consolidation.decay_hour"), minute=0)
    sched.add_job(jobs.synthesis, "cron", id="synthesis", name="synthesis",
                  day_of_week=_int(settings, "consolidation.synthesis_weekday"), hour=0, minute=0)
    sched.add_job(jobs.backup, "interval", id="backup", name="backup",
                  hours=_backup_hours(settings))
    if not _backup_on(settings):
        sched.pause_job("backup")
    # Sync on a thread of its own: a tick with nothing new takes milliseconds, and must not
    # wait behind a consolidation. A missed tick is not worth running late (grace 1 s).
    sched.add_job(jobs.sync, "interval", id=SYNC_JOB, name=SYNC_JOB, executor=SYNC_JOB,
                  seconds=SYNC_TICK_S, misfire_grace_time=1)
    return sched


def sync_soon(sched: BackgroundScheduler, delay: float = SYNC_SOON_S) -> None:
    """Tick within ``delay`` (``SYNC_SOON_S``: a local change was recorded; ``SYNC_LANDED_S``:
    another device's file landed): the sync job's next run moves earlier, never later, so a
    burst of writes (an import) makes one tick, not none. Called on the vault's writer thread
    or the folder watch's: it only moves a time and wakes the scheduler."""
    from datetime import datetime
    job = sched.get_job(SYNC_JOB)
    if job is None or job.next_run_time is None:
        return
    soon = datetime.now(job.next_run_time.tzinfo) + timedelta(seconds=delay)
    if soon < job.next_run_time:
        job.modify(next_run_time=soon)


def _backup_hours(settings: Settings) -> int:
    from app.services.backup import SCHEDULES
    return SCHEDULES.get(str(settings("backup.schedule") or "off"), 0) or 24


def _backup_on(settings: Settings) -> bool:
    from app.services.backup import SCHEDULES
    return bool(SCHEDULES.get(str(settings("backup.schedule") or "off"))) \
        and bool(settings("backup.folder"))


def reschedule(sched: BackgroundScheduler, settings: Settings) -> None:
    """Apply changed intervals to a running scheduler at once (no restart, no waiting)."""
    sched.reschedule_job("heartbeat", trigger="interval",
                         minutes=_int(settings, "consolidation.heartbeat_minutes"))
    sched.reschedule_job("consolidation", trigger="interval",
                         minutes=_int(settings, "consolidation.interval_minutes"))
    sched.reschedule_job("decay", trigger="cron", hour=_int(settings, "consolidation.decay_hour"),
                         minute=0)
    sched.reschedule_job("synthesis", trigger="cron",
                         day_of_week=_int(settings, "consolidation.synthesis_weekday"), hour=0,
                         minute=0)
    # The interval restarts only when it changed (re-saving other settings must not push a
    # daily backup back by a day each time).
    hours = _backup_hours(settings)
    job = sched.get_job("backup")
    if job is not None and getattr(job.trigger, "interval", None) != timedelta(hours=hours):
        sched.reschedule_job("backup", trigger="interval", hours=hours)
    if _backup_on(settings):
        sched.resume_job("backup")
    else:
        sched.pause_job("backup")


def shutdown(sched: BackgroundScheduler, jobs: Jobs) -> None:
    """Cancel the running job at its next batch boundary and wait for it
    docs/architecture.md#lock-order."""
    jobs.cancel.cancel()
    if sched.running:
        # The sync thread is not waited for here: the vault's lock gives a tick under way
        # SYNC_STOP_WAIT_S, then closes under it (app/sync/runner.py).
        if sched.get_job(SYNC_JOB) is not None:
            sched.remove_job(SYNC_JOB)
        if jobs.sync_pool is not None:
            sched.remove_executor(SYNC_JOB, shutdown=False)
            jobs.sync_pool.shutdown(wait=False)
        sched.shutdown(wait=True)


def _int(settings: Settings, key: str) -> int:
    """A number setting (``app/settings.py`` declares each with a default, so it is never
    unset)."""
    value = settings(key)
    if value is None:
        raise TypeError(f"setting {key} is unset")
    return int(value)
