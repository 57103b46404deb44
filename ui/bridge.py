"""CoreBridge: the vault's change notifications as Qt signals. Layer: ui. GUI thread.

Scheduler jobs report through ``Vault.subscribe`` on their own thread; the bridge re-emits on
the GUI thread (a queued signal), so views refresh from change flags and never poll.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, Signal, Slot


class CoreBridge(QObject):
    changes_applied = Signal(object, object)   # (Changes, initiator)
    job_finished = Signal(object)              # JobOutcome
    vault_corrupt = Signal()                   # the background self-test failed
    _from_thread = Signal(object)
    _job_from_thread = Signal(object)
    _corrupt_from_thread = Signal()

    def __init__(self) -> None:
        super().__init__()
        self._from_thread.connect(self._on_from_thread)
        self._job_from_thread.connect(self.job_finished)
        self._corrupt_from_thread.connect(self.vault_corrupt)

    def apply_changes(self, changes: Any, initiator: Any = None) -> None:
        self.changes_applied.emit(changes, initiator)

    def listener(self, changes: Any) -> None:
        """For ``Vault.subscribe``: callable from any thread."""
        self._from_thread.emit(changes)

    def corrupt_listener(self) -> None:
        """For ``Vault.watch_integrity``: callable from any thread."""
        self._corrupt_from_thread.emit()

    def job_listener(self, outcome: Any) -> None:
        self._job_from_thread.emit(outcome)

    @Slot(object)
    def _on_from_thread(self, changes: Any) -> None:
        self.changes_applied.emit(changes, None)
