"""A dialog that stays open while its work runs. Layer: ui. GUI thread.

Its action button does not close it: the window (or the dialog's owner) checks what was chosen,
does the work, and closes the dialog only once the work succeeded; a refusal or a failure is
said in it, and nothing typed is lost. Enter in a field does the action; Cancel and any
"Choose…" button never become the default.
"""

from __future__ import annotations

from PySide6.QtCore import Signal, Slot
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from ui import errors, theme


class WorkDialog(QDialog):
    """A dialog whose action button does not close it: it emits ``submitted``, the window
    checks what was chosen and does the work, and closes the dialog (``accept``) only once the
    work succeeded. A refusal or a failure (a wrong backup password, a file that exists) is
    said inline by ``refuse``, and everything typed stays, ready to correct."""

    submitted = Signal()

    def _finish(self, lay: QVBoxLayout, label: str) -> None:
        """The problem line, the busy line and Cancel + ``label`` (the default button: Enter
        in a field does the action) at the bottom of ``lay``."""
        self.problem = theme.plain(QLabel())
        self.problem.setObjectName("problem")
        self.problem.setStyleSheet(theme.ERROR_STYLE)
        self.problem.setWordWrap(True)
        self.problem.hide()
        self.busy = QLabel()
        self.busy.hide()
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.go = self.buttons.addButton(label, QDialogButtonBox.ButtonRole.AcceptRole)
        self.go.setDefault(True)
        self.buttons.accepted.connect(self._on_go)
        self.buttons.rejected.connect(self.reject)
        lay.addWidget(self.problem)
        lay.addWidget(self.busy)
        lay.addWidget(self.buttons)
        cancel = self.buttons.button(QDialogButtonBox.StandardButton.Cancel)
        cancel.setAutoDefault(False)  # else showing the dialog makes Cancel the default

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 (Qt name)
        super().showEvent(event)
        self.go.setDefault(True)  # Enter in any field does the action, once shown too

    @Slot()
    def _on_go(self) -> None:
        self.problem.hide()
        self.submitted.emit()

    def set_busy(self, text: str) -> None:
        """While the work runs: the fields and the action wait; "" when it ended."""
        for child in self.findChildren(QWidget):
            if isinstance(child, QLineEdit | QPlainTextEdit | QCheckBox | QComboBox | QPushButton) \
                    and child is not self.buttons.button(QDialogButtonBox.StandardButton.Cancel):
                child.setEnabled(not text)
        self.busy.setText(text)
        self.busy.setVisible(bool(text))
        if not text:
            self._after_busy()

    def _after_busy(self) -> None:
        """Controls a dialog enables by its own rules, put back after the work ended."""

    def refuse(self, exc: BaseException, field: QLineEdit | QPlainTextEdit | None = None
               ) -> None:
        """Say why inline (an unexpected error also gets the popup with details); the person's
        input stays; ``field`` (else the first empty one) gets the focus, its text selected."""
        self.set_busy("")

        def say(text: str) -> None:
            self.problem.setText(text)
            self.problem.setVisible(bool(text))
        errors.report_error(self, exc, say)
        if field is not None:
            field.selectAll()
            field.setFocus()
