"""CoreBridge: the vault's change notifications as Qt signals. Layer: ui. GUI thread.

One path for every change: ``changes_applied(changes, initiator)`` on the GUI thread, which
the window and its pages refresh from (they never poll). Work the window starts through
``ui.tasks.run_op`` is broadcast by ``run_op`` with its initiator; everything else (scheduler
jobs on APScheduler's thread) reaches the bridge through ``Vault.subscribe(bridge.listener)``,
re-emitted on the GUI thread by a queued signal. The vault notifies its listeners of every
change, so the listener skips those made inside a ``run_op``/``run_query`` task: they would
otherwise arrive twice, the second time without their initiator.

Changes from other threads are merged for ``COALESCE_MS`` before they are broadcast: an
assistant writing over the owner socket (issue 14) sends one change per call, and each
would otherwise reload every shown list; its writes still show within a second.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer, Signal, Slot

from app.api import Progress
from app.changes import Changes

if TYPE_CHECKING:
    from app.jobs import JobOutcome

COALESCE_MS = 150


class CoreBridge(QObject):
    changes_applied = Signal(object, object)   # (Changes, initiator)
    job_finished = Signal(object)              # JobOutcome
    job_started = Signal(str, object)          # (job, ProgressBox): a job with progress
    vault_corrupt = Signal()                   # the background self-test failed
    _from_thread = Signal(object)
    _job_from_thread = Signal(object)
    _corrupt_from_thread = Signal()

    def __init__(self) -> None:
        super().__init__()
        self._from_thread.connect(self._on_from_thread)
        self._job_from_thread.connect(self.job_finished)
        self._corrupt_from_thread.connect(self.vault_corrupt)
        # Changes from other threads not yet broadcast (merged).
        self._pending: Changes | None = None
        self._flush_timer = QTimer(self)
        self._flush_timer.setSingleShot(True)
        self._flush_timer.setInterval(COALESCE_MS)
        self._flush_timer.timeout.connect(self._flush)

    def apply_changes(self, changes: Changes, initiator: QObject | None = None) -> None:
        self.changes_applied.emit(changes, initiator)

    def listener(self, changes: Changes) -> None:
        """For ``Vault.subscribe``: callable from any thread."""
        from ui.tasks import in_task
        if in_task():  # run_op reports it, with its initiator
            return
        self._from_thread.emit(changes)

    def corrupt_listener(self) -> None:
        """For ``Vault.watch_integrity``: callable from any thread."""
        self._corrupt_from_thread.emit()

    def job_listener(self, outcome: JobOutcome) -> None:
        self._job_from_thread.emit(outcome)

    def job_progress(self, job: str) -> Progress:
        """For ``Jobs(on_start=...)``, on the scheduler's thread: a progress box the window
        shows (the signal is queued to the GUI thread), its ``report`` for the job."""
        from ui.progress import ProgressBox
        box = ProgressBox()
        self.job_started.emit(job, box)
        return box.report

    @Slot(object)
    def _on_from_thread(self, changes: Changes) -> None:
        self._pending = changes if self._pending is None else self._pending.merge(changes)
        if not self._flush_timer.isActive():
            self._flush_timer.start()

    @Slot()
    def _flush(self) -> None:
        changes, self._pending = self._pending, None
        if changes is not None:
            self.changes_applied.emit(changes, None)
