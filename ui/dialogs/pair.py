"""Pair an assistant: a name, then its key (shown once, with a copy button) and the exact
entry for the client it runs in (``app.mcp_install``, the same as ``kept mcp install``).
Layer: ui. GUI thread; the pairing runs through ``ui.tasks``, the name is checked inline.

The key lives in this dialog only while it is open: closing it clears the fields (Kept keeps
only a hash of the key; pairing the same name again issues a new one).
"""

from __future__ import annotations

from PySide6.QtCore import Signal, Slot
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app import mcp_install
from app.agent_scope import check_agent_name
from app.api import Result, VaultAPI
from app.errors import AppError, ValidationError
from ui import errors, fit, theme
from ui.bridge import CoreBridge
from ui.tasks import run_op

CLIENT_LABELS = {"claude-desktop": "Claude Desktop", "claude-code": "Claude Code",
                 "cursor": "Cursor", "vscode": "VS Code (Copilot agent mode)",
                 "lm-studio": "LM Studio"}


class PairDialog(QDialog):
    """Owned by the Assistants section of Settings; GUI thread. ``known``: names already
    paired and not blocked (pairing one again replaces its key)."""

    paired = Signal(str)  # the assistant's name

    def __init__(self, vault: VaultAPI, bridge: CoreBridge, parent: QWidget | None = None, *,
                 known: tuple[str, ...] = ()) -> None:
        super().__init__(parent)
        self.vault = vault
        self.bridge = bridge
        self.known = known
        self.key = ""
        self.agent = ""
        self.setWindowTitle(f"Pair an assistant with {theme.vault_name(vault.folder)}")
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        self.name = QLineEdit()
        self.name.setPlaceholderText("e.g. claude-desktop")
        self.client = QComboBox()
        for client in mcp_install.CLIENTS:
            self.client.addItem(CLIENT_LABELS.get(client, client), client)
        self.pair_btn = QPushButton("Pair")
        self.pair_btn.setDefault(True)
        self.name_note = QLabel("Lower-case letters, digits, '-', '_' or '.'. The assistant "
                                "writes under this name and reads only its own and your "
                                "memories.")
        self.name_note.setWordWrap(True)
        theme.set_muted(self.name_note)
        self.error = theme.plain(QLabel())
        self.error.setObjectName("pairError")
        self.error.setWordWrap(True)
        self.error.setStyleSheet(theme.ERROR_STYLE)
        self.error.hide()
        self.key_field = QLineEdit()
        self.key_field.setObjectName("agentKey")
        self.key_field.setReadOnly(True)
        self.key_field.setFont(mono)
        self.copy_key_btn = QPushButton("Copy key")
        self.key_note = QLabel("<b>Shown only now.</b> Kept keeps only a hash of it; pair "
                               "the assistant again for a new key.")
        self.key_note.setWordWrap(True)
        self.snippet = QPlainTextEdit()
        self.snippet.setTabChangesFocus(True)  # Tab moves on; it never types a tab
        self.snippet.setObjectName("configEntry")
        self.snippet.setReadOnly(True)
        self.snippet.setFont(mono)
        self.copy_snippet_btn = QPushButton("Copy entry")
        self.where = theme.plain(QLabel())
        self.where.setObjectName("configWhere")
        self.where.setWordWrap(True)
        self.close_btn = QPushButton("Close")
        self.result_box = self._build_result()
        self.result_box.hide()
        form = QFormLayout()
        form.addRow("Name", self.name)
        form.addRow("", self.name_note)
        form.addRow("Client", self.client)
        # One row of buttons: Pair (gone once paired) beside Close, under whatever is shown.
        bottom = QHBoxLayout()
        bottom.addStretch(1)
        bottom.addWidget(self.pair_btn)
        bottom.addWidget(self.close_btn)
        lay = QVBoxLayout(self)
        lay.addLayout(form)
        lay.addWidget(self.error)
        lay.addWidget(self.result_box, 1)
        lay.addLayout(bottom)
        fit.fit_to_text(self, min_chars=72)  # the key and the config paths are long
        self.pair_btn.clicked.connect(self._on_pair_btn_clicked)
        self.name.returnPressed.connect(self._on_pair_btn_clicked)
        self.name.textChanged.connect(self._on_name_text_changed)
        self.client.currentIndexChanged.connect(self._on_client_current_index_changed)
        self.copy_key_btn.clicked.connect(self._on_copy_key_btn_clicked)
        self.copy_snippet_btn.clicked.connect(self._on_copy_snippet_btn_clicked)
        self.close_btn.clicked.connect(self.accept)
        self.finished.connect(self._on_finished)

    def _build_result(self) -> QWidget:
        box = QWidget()
        key_row = QHBoxLayout()
        key_row.addWidget(self.key_field, 1)
        key_row.addWidget(self.copy_key_btn)
        entry_row = QHBoxLayout()
        entry_row.addWidget(QLabel("The entry for the client:"))
        entry_row.addStretch(1)
        entry_row.addWidget(self.copy_snippet_btn)
        lay = QVBoxLayout(box)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(QLabel("Its key:"))
        lay.addLayout(key_row)
        lay.addWidget(self.key_note)
        lay.addLayout(entry_row)
        lay.addWidget(self.snippet, 1)
        lay.addWidget(self.where)
        return box

    def _say_error(self, text: str) -> None:
        self.error.setText(text)
        self.error.setVisible(bool(text))

    @Slot(str)
    def _on_name_text_changed(self, text: str) -> None:
        again = text.strip() in self.known
        self.pair_btn.setText("Pair again (new key)" if again else "Pair")
        self._say_error(f"{text.strip()} is paired already: pairing it again replaces its key, "
                        "and the old one stops working." if again else "")

    @Slot()
    def _on_pair_btn_clicked(self) -> None:
        name = self.name.text().strip()
        try:  # pure validation inline (docs/architecture.md#errors)
            check_agent_name(name)
        except ValidationError as exc:
            self._say_error(exc.user_message)
            self.name.setFocus()
            return
        self._say_error("")
        self.pair_btn.setEnabled(False)
        self.name.setEnabled(False)
        vault = self.vault

        def done(result: Result[str]) -> None:
            self.agent, self.key = name, str(result.value)
            self.key_field.setText(self.key)
            self.pair_btn.hide()
            self.result_box.show()
            self.show_entry()
            fit.grow_to_hint(self)  # room for the key and the entry, below the name
            self.paired.emit(name)

        def failed(exc: BaseException) -> None:
            self.pair_btn.setEnabled(True)
            self.name.setEnabled(True)
            errors.report_error(self, exc, self._say_error, prefix="Not paired: ")
        run_op(self, lambda: vault.pair_agent(name), done, self.bridge, failed)

    def show_entry(self) -> None:
        """The exact entry for the chosen client, with this vault's folder and the key."""
        if not self.key:
            return
        client = str(self.client.currentData())
        try:
            inst = mcp_install.install(client, self.agent, self.key, vault=self.vault.folder)
        except AppError as exc:  # e.g. no installed `kept` command found
            self.snippet.setPlainText("")
            self.where.setText(errors.error_text(exc))
            return
        self.snippet.setPlainText(mcp_install.snippet(inst))
        if inst.path is not None:
            self.where.setText(f"Add it to {fit.breakable(str(inst.path))} (under "
                               f"\"{inst.wrapper}\", next to any "
                               f"servers already there). {inst.after}")
        else:
            self.where.setText(inst.after)

    @Slot(int)
    def _on_client_current_index_changed(self, _i: int) -> None:
        self.show_entry()

    @Slot()
    def _on_copy_key_btn_clicked(self) -> None:
        QApplication.clipboard().setText(self.key)

    @Slot()
    def _on_copy_snippet_btn_clicked(self) -> None:
        QApplication.clipboard().setText(self.snippet.toPlainText())

    @Slot(int)
    def _on_finished(self, _result: int) -> None:
        """The key is not kept once the dialog closes."""
        self.key = ""
        self.key_field.clear()
        self.snippet.clear()
