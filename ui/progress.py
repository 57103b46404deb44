"""Progress of long work (import, consolidation): one helper for every progress bar.
Layer: ui. ``ProgressBox.report`` runs on the worker thread; everything else on the GUI thread.

docs/architecture.md#background-work-and-progress and Anki's timings: the worker's progress callback
only stores the latest value under a lock; a 100 ms timer on the GUI thread reads it and paints. The
bar appears only once the work has taken ``SHOW_AFTER_MS``, so quick work never flashes one; until
then the caller's own busy state (a disabled button, "Running…") says that something is happening.
"""

from __future__ import annotations

import threading

from PySide6.QtCore import QObject, QTimer, Signal, Slot
from PySide6.QtWidgets import QProgressBar

SHOW_AFTER_MS = 600
POLL_MS = 100


class ProgressBox:
    """The latest (done, total) of one piece of work. Thread-safe: the worker writes, the
    GUI's poll reads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._done = self._total = 0
        self._changed = False

    def report(self, done: int, total: int) -> None:  # worker thread: store only
        with self._lock:
            self._done, self._total, self._changed = done, total, True

    def take(self) -> tuple[int, int, bool]:
        """(done, total, whether a report came since the last take)."""
        with self._lock:
            changed, self._changed = self._changed, False
            return self._done, self._total, changed


class DelayedProgress(QObject):
    """Drives one ``QProgressBar`` for one piece of work at a time. GUI thread.

    ``start()`` returns the box to hand to the worker; the bar is busy (no range) until the
    first report and hidden until ``SHOW_AFTER_MS`` have passed; ``stop()`` hides it.
    ``polled(done, total, changed)`` fires on every poll, for a caller that also says the
    numbers elsewhere (the status bar)."""

    polled = Signal(int, int, bool)

    def __init__(self, bar: QProgressBar, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.bar = bar
        self.box: ProgressBox | None = None
        self.poll = QTimer(self)
        self.poll.setInterval(POLL_MS)
        self.poll.timeout.connect(self._on_poll_timeout)
        self._reveal = QTimer(self)
        self._reveal.setSingleShot(True)
        self._reveal.timeout.connect(self._on_reveal_timeout)
        bar.hide()

    @property
    def active(self) -> bool:
        return self.box is not None

    def start(self, box: ProgressBox | None = None) -> ProgressBox:
        """``box``: one a worker already reports into (a scheduled job's), else a new one."""
        self.box = box if box is not None else ProgressBox()
        self.bar.setRange(0, 0)  # busy until the first report
        self.bar.hide()
        self._reveal.start(SHOW_AFTER_MS)
        self.poll.start()
        return self.box

    def stop(self) -> None:
        self.box = None
        self.poll.stop()
        self._reveal.stop()
        self.bar.hide()

    @Slot()
    def _on_reveal_timeout(self) -> None:
        if self.box is not None:
            self.bar.show()

    @Slot()
    def _on_poll_timeout(self) -> None:
        if self.box is None:
            return
        done, total, changed = self.box.take()
        if total:
            self.bar.setRange(0, max(total, 1))
            self.bar.setValue(done)
        self.polled.emit(done, total, changed)
