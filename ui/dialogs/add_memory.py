"""Edit > Add a memory: the person writes one down by hand. Layer: ui. GUI thread; the write
runs through ``ui.tasks``.

What the person writes is theirs: confirmed (``user_validated``, confidence 1.0), never a guess
to be checked. They say what kind of memory it is, in words: a fact that is true now, something
that happened (and when), or a habit. Ctrl+Enter adds it (Enter starts a new line in the text).
"""

from __future__ import annotations

from PySide6.QtCore import QDateTime, QEvent, QObject, Qt, Signal, Slot
from PySide6.QtGui import QKeyEvent, QShowEvent
from PySide6.QtWidgets import (
    QComboBox,
    QDateTimeEdit,
    QFormLayout,
    QLabel,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)

from app.api import MemoryId, Result, Store, VaultAPI
from app.domain.memory import Draft
from app.errors import ValidationError
from ui.bridge import CoreBridge
from ui.dialogs.work import WorkDialog
from ui.tasks import run_op

KINDS: tuple[tuple[str, Store], ...] = (
    ("A fact, true now (“my sister Ana lives in Porto”)", Store.SEMANTIC),
    ("Something that happened (“we moved on 3 May”)", Store.EPISODIC),
    ("A habit (“I run before work on weekdays”)", Store.PROCEDURAL))


class AddMemoryDialog(WorkDialog):
    """Emits ``added`` with the new memory's id, then closes."""

    added = Signal(int)

    def __init__(self, vault: VaultAPI, bridge: CoreBridge, vault_name: str = "",
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.vault = vault
        self.bridge = bridge
        self.setWindowTitle(f"Add a memory to “{vault_name}”" if vault_name
                            else "Add a memory")
        self.text = QPlainTextEdit()
        self.text.setObjectName("memoryText")
        self.text.setPlaceholderText("What should Kept remember?")
        self.text.setTabChangesFocus(True)  # Tab leaves the text; it never types a tab
        self.kind = QComboBox()
        for label, store in KINDS:
            self.kind.addItem(label, store)
        self.when = QDateTimeEdit(QDateTime.currentDateTime())
        self.when.setCalendarPopup(True)
        self.when.setDisplayFormat("d MMMM yyyy, HH:mm")
        self.when_label = QLabel("When")
        form = QFormLayout()
        form.addRow("Memory", self.text)
        form.addRow("It is", self.kind)
        form.addRow(self.when_label, self.when)
        note = QLabel("Written by you, so Kept takes it as confirmed. Ctrl+Enter adds it.")
        note.setWordWrap(True)
        lay = QVBoxLayout(self)
        lay.addLayout(form)
        lay.addWidget(note)
        self._finish(lay, "Add")
        self.submitted.connect(self._on_submitted)
        self.kind.currentIndexChanged.connect(self._on_kind_changed)
        self.text.installEventFilter(self)  # Ctrl+Enter in the text adds (see eventFilter)
        self._on_kind_changed()

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt name)
        """Ctrl+Enter in the text adds the memory (Enter alone starts a new line there)."""
        if (obj is self.text and event.type() == QEvent.Type.KeyPress
                and isinstance(event, QKeyEvent)
                and event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
                and event.modifiers() & Qt.KeyboardModifier.ControlModifier):
            self.go.click()
            return True
        return super().eventFilter(obj, event)

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 (Qt name)
        super().showEvent(event)
        self.text.setFocus()

    def store(self) -> Store:
        return Store(self.kind.currentData())

    @Slot()
    def _on_kind_changed(self, *_a: object) -> None:
        happened = self.store() is Store.EPISODIC
        self.when.setVisible(happened)
        self.when_label.setVisible(happened)

    def draft(self) -> Draft:
        """What was written, checked as ``Vault.validate_draft`` checks it (no I/O)."""
        text = self.text.toPlainText().strip()
        if not text:
            raise ValidationError("Write the memory first.")
        store = self.store()
        at = (self.when.dateTime().toSecsSinceEpoch() if store is Store.EPISODIC else None)
        draft = Draft(text=text, store=store, occurred_at=float(at) if at else None,
                      user_validated=True, confidence=1.0)
        self.vault.validate_draft(draft)
        return draft

    @Slot()
    def _on_submitted(self) -> None:
        try:
            draft = self.draft()
        except ValidationError as exc:
            self.refuse(exc, self.text)
            return
        self.set_busy("Adding…")
        vault = self.vault

        def done(result: Result[MemoryId]) -> None:
            self.set_busy("")
            self.added.emit(int(result.value))
            self.accept()
        run_op(self, lambda: vault.remember(draft), done, self.bridge,
               lambda exc: self.refuse(exc, self.text))
