"""The window's status bar. Layer: ui. GUI thread.

Qt's own status bar paints a passing message under its permanent widgets, so a long message
ran into the vault's figures ("…encrypted; re41 memories"). Here a passing message is a label
laid out beside them: it takes the room left, ends in "…" when it does not fit (the whole text
in its tooltip), and a gap always separates it from the figures on the right.

Sync's few words ("Synced 12 s ago", "Sync folder missing", "Sending 3 changes") are a flat
button of their own (``SyncButton``), so Tab reaches them, a screen reader reads them, and Space
or Enter opens Settings > Devices, where the whole story is.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QLabel, QSizePolicy, QStatusBar, QToolButton, QWidget

from ui import theme


class _Elided(QLabel):
    """One line that ends in "…" rather than running under what is beside it."""

    def __init__(self) -> None:
        super().__init__()
        self.full = ""
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setMinimumWidth(0)

    def set_full(self, text: str) -> None:
        self.full = text
        self.setToolTip(text if text else "")
        self._fit()

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt name)
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        room = max(0, self.contentsRect().width())
        self.setText(self.fontMetrics().elidedText(self.full, Qt.TextElideMode.ElideRight, room))


class StatusBar(QStatusBar):
    """``showMessage`` / ``clearMessage`` / ``currentMessage`` as Qt's, shown in a label of
    their own (see the module's note)."""

    GAP = theme.L  # between a message and the permanent figures

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._message = _Elided()
        theme.plain(self._message)  # a message may name a file
        self._message.setObjectName("statusMessage")
        self._message.setContentsMargins(0, 0, self.GAP, 0)
        self.addWidget(self._message, 1)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.clearMessage)

    def showMessage(self, text: str, timeout: int | None = 0) -> None:  # noqa: N802 (Qt name)
        self._message.set_full(text)
        self._timer.stop()
        if timeout:
            self._timer.start(timeout)
        self.messageChanged.emit(text)

    def clearMessage(self) -> None:  # noqa: N802 (Qt name)
        self._timer.stop()
        if self._message.full:
            self._message.set_full("")
            self.messageChanged.emit("")

    def currentMessage(self) -> str:  # noqa: N802 (Qt name)
        return self._message.full


class SyncButton(QToolButton):
    """The status bar's sync words, as a flat button (hidden while this device does not sync).
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("syncStatus")
        self.setAutoRaise(True)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.hide()

    def say(self, words: str, detail: str = "") -> None:
        """Show ``words`` (hide on ""); ``detail`` in the tooltip and for screen readers."""
        if not words:
            self.hide()
            return
        self.setText(words)
        self.setAccessibleName(f"Sync status: {words}")
        tip = (detail + "\n" if detail else "") + "Open Settings > Devices"
        self.setToolTip(tip)
        self.setAccessibleDescription(tip)
        self.show()
