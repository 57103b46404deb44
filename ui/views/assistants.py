"""Settings > Assistants: the paired assistants (name, paired since, last seen, blocked or
not), a Block button for each, and "Pair an assistant…" (``ui/dialogs/pair.py``). Layer: ui.
GUI thread; reads and writes go through ``ui.tasks``.

A section of the Settings page (owned by it), a ``Page`` of its own so it follows the bridge:
it reloads on ``Changes.agents`` (one query, ``Vault.agents``) and redraws only when a row
changed (reads by assistants send that flag too).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Slot
from PySide6.QtWidgets import (
    QCheckBox,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app import words
from app.api import AgentRow, Result, VaultAPI
from app.changes import Changes
from ui import errors, theme
from ui.bridge import CoreBridge
from ui.dialogs import confirm
from ui.tasks import run_op
from ui.views.page import Page
from ui.views.workspace import WorkspacePanel

if TYPE_CHECKING:
    from ui.dialogs.pair import PairDialog

HEADERS = ("Assistant", "Paired since", "Last seen", "State", "")
_AGENT = "kept_agent"  # the property a Block… button carries: its assistant's name


def when(ts: float | None) -> str:
    return words.when(ts or None, never="never")


class AssistantsPanel(Page):
    """Owned by ``SettingsView``; lives on the GUI thread."""

    def __init__(self, vault: VaultAPI, bridge: CoreBridge, parent: QWidget | None = None
                 ) -> None:
        super().__init__(vault, bridge, parent)
        self.rows: list[AgentRow] = []
        self.block_buttons: dict[str, QPushButton] = {}
        self.pair_dialog: PairDialog | None = None
        note = QLabel("Assistants (Claude, Cursor, VS Code, LM Studio…) use Kept through "
                      "<code>kept mcp</code> while Kept is unlocked. Each is paired under its "
                      "own name and key: it writes under that name and reads only your "
                      "memories and its own. A blocked assistant is refused at its next call; "
                      "what it wrote stays.")
        note.setWordWrap(True)
        self.table = QWidget()
        self.grid = QGridLayout(self.table)
        self.grid.setContentsMargins(0, 0, 0, 0)
        self.empty = QLabel("No assistant is paired yet.")
        self.empty.setObjectName("noAssistants")
        theme.set_muted(self.empty)
        self.message = theme.plain(QLabel())
        self.message.setObjectName("assistantsMessage")
        self.message.setWordWrap(True)
        self.message.hide()
        self.pair_btn = QPushButton("Pair an assistant…")
        self.strict = QCheckBox("Strict mode: programs on this computer read nothing without "
                                "my password")
        self.strict.setObjectName("strictMode")
        self.strict.setToolTip(
            "An assistant with a shell (Claude Code, agent modes) can run programs as you. "
            "In strict mode such a program, kept included, must be given your password in its "
            "terminal first; the password then serves that terminal for a few minutes (like "
            "sudo; `kept logout` ends it). Assistants paired here are not affected: their key "
            "lets them read your memories and their own.")
        pair_row = QHBoxLayout()
        pair_row.addWidget(self.pair_btn)
        pair_row.addStretch(1)
        group = QGroupBox("Assistants")
        gl = QVBoxLayout(group)
        gl.addWidget(note)
        gl.addWidget(self.table)
        gl.addWidget(self.empty)
        gl.addWidget(self.message)
        gl.addLayout(pair_row)
        gl.addWidget(self.strict)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(group)
        self.workspace = WorkspacePanel(vault, bridge)  # issue 27 item 10; follows the bridge
        lay.addWidget(self.workspace)
        self.pair_btn.clicked.connect(self._on_pair_btn_clicked)
        self.strict.toggled.connect(self._on_strict_toggled)
        self.refresh()

    # --- loading ------------------------------------------------------------------------
    def refresh(self) -> None:
        vault = self.vault
        self.load(lambda: (vault.agents(), bool(vault.setting("owner.strict"))), self._fill_all)

    def wants(self, changes: Changes) -> bool:
        return changes.agents or changes.settings

    def _fill_all(self, result: tuple[list[AgentRow], bool]) -> None:
        rows, strict = result
        self.strict.blockSignals(True)
        self.strict.setChecked(strict)
        self.strict.blockSignals(False)
        self._fill(rows)

    @Slot(bool)
    def _on_strict_toggled(self, on: bool) -> None:
        vault = self.vault

        def done(_result: Result[None]) -> None:
            self._say("Strict mode is on: a program asks for your password in its terminal "
                      "first." if on else "Strict mode is off.")
        def failed(exc: BaseException) -> None:
            # An AppError is said here with its hint, anything else pops up too (this called
            # ``error_text``, which takes an AppError only).
            errors.report_error(self, exc, self._say, hint=True)
        run_op(self, lambda: vault.set_setting("owner.strict", on), done, self.bridge, failed)

    def _fill(self, rows: list[AgentRow]) -> None:
        if rows == self.rows and self.grid.count():
            return
        self.rows = list(rows)
        while self.grid.count():
            item = self.grid.takeAt(0)
            w = item.widget() if item is not None else None
            if w is not None:
                w.hide()
                w.deleteLater()
        self.block_buttons = {}
        for col, text in enumerate(HEADERS):
            if text:
                self.grid.addWidget(QLabel(f"<b>{text}</b>"), 0, col)
        for r, row in enumerate(self.rows, start=1):
            blocked = row.revoked_at is not None
            state = f"blocked {when(row.revoked_at)}" if blocked else "can connect"
            for col, text in enumerate((row.name, when(row.created_at),
                                        when(row.last_seen_at), state)):
                self.grid.addWidget(theme.plain(QLabel(text)), r, col)
            if not blocked:
                btn = QPushButton("Block…")
                btn.setToolTip(f"Refuse {row.name} from its next call on (pair it again "
                               "for a new key).")
                # A slot of this page, the name on the button: a lambda over ``self``
                # would keep the page alive from its own button (ui.views.devices).
                btn.setProperty(_AGENT, row.name)
                btn.clicked.connect(self._on_block_btn_clicked)
                self.grid.addWidget(btn, r, len(HEADERS) - 1)
                self.block_buttons[row.name] = btn
        self.grid.setColumnStretch(0, 1)
        self.table.setVisible(bool(self.rows))
        self.empty.setVisible(not self.rows)

    def _say(self, text: str) -> None:
        self.message.setText(text)
        self.message.setVisible(bool(text))

    # --- actions ------------------------------------------------------------------------
    def block(self, name: str) -> None:
        """Ask first, then revoke the assistant's key (``Vault.revoke_agent``)."""
        confirm.ask(self, "Block assistant",
                    f"Block {name}? Kept refuses it from its next call on.",
                    detail="What it wrote stays; you can pair it again later, with a new "
                    "key.", action="&Block", then=lambda: self._block_now(name))

    @Slot()
    def _on_block_btn_clicked(self) -> None:
        btn = self.sender()
        if btn is not None:
            self.block(str(btn.property(_AGENT)))

    def _block_now(self, name: str) -> None:
        btn = self.block_buttons.get(name)
        if btn is not None:
            btn.setEnabled(False)
        vault = self.vault

        def done(_result: Result[None]) -> None:
            self._say(f"{name} is blocked.")

        def failed(exc: BaseException) -> None:
            if btn is not None:
                btn.setEnabled(True)
            errors.report_error(self, exc, self._say, prefix="Not blocked: ")
        run_op(self, lambda: vault.revoke_agent(name), done, self.bridge, failed)

    @Slot()
    def _on_pair_btn_clicked(self) -> None:
        from ui.dialogs.pair import PairDialog
        known = tuple(r.name for r in self.rows if r.revoked_at is None)
        dlg = PairDialog(self.vault, self.bridge, self.window(), known=known)
        dlg.paired.connect(self._on_pair_dialog_paired)
        self.pair_dialog = dlg
        dlg.show()

    @Slot(str)
    def _on_pair_dialog_paired(self, name: str) -> None:
        self._say(f"{name} is paired.")
