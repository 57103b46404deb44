"""Settings > Devices (issue 29, item 6): this device, the others, when each last wrote to the
sync folder, what waits, "Remove…" for a lost device (asked first, in words), who the founder
is and who takes over if it is lost, "Take over as founder…" on that successor (asked first;
docs/sync.md#a-successor-founder), and the buttons that set sync up, pair a new device (``ui/dialogs/sync_pair.py``, code and QR code) or join
with a code. Layer: ui. GUI thread; reads and writes go through ``ui.tasks``.

A section of the Settings page (owned by it), a ``Page`` of its own so it follows the bridge:
it reloads on ``Changes.settings`` (one query: ``Vault.sync_status``, which lists a few folders,
and ``Vault.sync_activity``, the owner's sync job), and every ``REFRESH_MS`` while shown and
syncing. Recent forgets show how far each went ("Forgotten on 2 of 3 devices; waiting for
phone."), and each device what it has not acknowledged yet.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QTimer, Slot
from PySide6.QtWidgets import (
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.api import Result, SyncActivity, SyncDeviceRow, SyncStatus, VaultAPI
from app.changes import Changes
from app.sync import device_words
from ui import errors, fit, theme
from ui.bridge import CoreBridge
from ui.dialogs import confirm
from ui.tasks import run_op
from ui.views.page import Page

if TYPE_CHECKING:
    from ui.dialogs.sync_pair import SyncJoinDialog, SyncPairDialog

HEADERS = ("Device", "", "Last wrote to the folder", "Waiting", "")
_DEVICE_ID = "kept_device_id"  # the property a Remove… button carries
REFRESH_MS = 10_000  # while shown and syncing: last seen, what waits, forgets' progress
NOTE = ("Kept can keep this vault on your other computers through a folder your sync tool "
        "already shares (Syncthing, Dropbox, Nextcloud, OneDrive, iCloud Drive). Everything "
        "in that folder is encrypted for your devices only; Kept runs no server. Device names "
        "are readable by whoever hosts the folder: pick names like \"laptop\".")


class DevicesPanel(Page):
    """Owned by ``SettingsView``; lives on the GUI thread."""

    def __init__(self, vault: VaultAPI, bridge: CoreBridge, parent: QWidget | None = None
                 ) -> None:
        super().__init__(vault, bridge, parent)
        self.status: SyncStatus | None = None
        self.activity = SyncActivity()
        self.remove_buttons: dict[str, QPushButton] = {}
        self.dialog: SyncPairDialog | SyncJoinDialog | None = None
        note = QLabel(NOTE)
        note.setWordWrap(True)
        self.state = theme.plain(QLabel())  # may name a folder
        self.state.setObjectName("syncState")
        self.state.setWordWrap(True)
        self.table = QWidget()
        self.grid = QGridLayout(self.table)
        self.grid.setContentsMargins(0, 0, 0, 0)
        self.forgets = theme.plain(QLabel())  # device names only, never a memory
        self.forgets.setObjectName("syncForgets")
        self.forgets.setWordWrap(True)
        self.forgets.hide()
        self.message = theme.plain(QLabel())
        self.message.setObjectName("devicesMessage")
        self.message.setWordWrap(True)
        self.message.hide()
        self.set_up_btn = QPushButton("Set up sync…")
        self.set_up_btn.setAccessibleName("Set up sync in a shared folder")
        self.pair_btn = QPushButton("Pair a new device…")
        self.pair_btn.setAccessibleName("Pair a new device")
        self.join_btn = QPushButton("Join with a code…")
        self.join_btn.setAccessibleName("Join another device's vault with a code")
        self.take_over_btn = QPushButton("Take over as founder…")
        self.take_over_btn.setAccessibleName("Take over as founder: the founder is lost")
        self.take_over_btn.setToolTip("Only if the founder is lost for good: this device "
                                      "then pairs and removes devices.")
        buttons = QHBoxLayout()
        for b in (self.set_up_btn, self.pair_btn, self.join_btn, self.take_over_btn):
            buttons.addWidget(b)
        buttons.addStretch(1)
        group = QGroupBox("Devices")
        gl = QVBoxLayout(group)
        gl.addWidget(note)
        gl.addWidget(self.state)
        gl.addWidget(self.table)
        gl.addWidget(self.forgets)
        gl.addWidget(self.message)
        gl.addLayout(buttons)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(group)
        self.set_up_btn.clicked.connect(self._on_set_up_btn_clicked)
        self.pair_btn.clicked.connect(self._on_pair_btn_clicked)
        self.join_btn.clicked.connect(self._on_join_btn_clicked)
        self.take_over_btn.clicked.connect(self._on_take_over_btn_clicked)
        self._timer = QTimer(self)
        self._timer.setInterval(REFRESH_MS)
        self._timer.timeout.connect(self._on_timer_timeout)
        self._fill(SyncStatus(set_up=False))
        self.refresh()

    # --- loading ------------------------------------------------------------------------
    def refresh(self) -> None:
        vault = self.vault
        self.load(lambda: (vault.sync_status(), vault.sync_activity()), self._fill_both)

    def wants(self, changes: Changes) -> bool:
        return changes.settings

    @Slot()
    def _on_timer_timeout(self) -> None:
        if self.isVisible() and not self.vault.locked:
            self.refresh()

    def _fill_both(self, got: tuple[SyncStatus, SyncActivity]) -> None:
        st, act = got
        if st.set_up and not self._timer.isActive():
            self._timer.start()
        elif not st.set_up:
            self._timer.stop()
        if act != self.activity:
            self.activity = act
            self.status = None  # the per-device lines name what each has not acknowledged
        self._fill(st)
        lines = [f.words for f in act.forgets] if st.set_up else []
        self.forgets.setText("Recent forgets:\n" + "\n".join(lines) if lines else "")
        self.forgets.setVisible(bool(lines))

    def _fill(self, st: SyncStatus) -> None:
        if st == self.status:
            return
        self.status = st
        while self.grid.count():
            item = self.grid.takeAt(0)
            w = item.widget() if item is not None else None
            if w is not None:
                w.hide()
                w.deleteLater()
        self.remove_buttons = {}
        if not st.set_up:
            self.state.setText("This device does not sync. Set sync up here to share this "
                               "vault, or join a vault another device shares.")
        else:
            where = fit.breakable(st.folder)
            self.state.setText(f"Sync folder: {where}" + (
                "" if st.folder_found else ". The folder is missing or holds another vault: "
                "check that your sync tool still shares it.") + ". "
                + device_words.founder_line(st))
        for col, text in enumerate(HEADERS):
            if text:
                self.grid.addWidget(QLabel(f"<b>{text}</b>"), 0, col)
        for r, row in enumerate(st.devices, start=1):
            waits = "; ".join(w for w in (device_words.waiting(row),
                                           device_words.waiting_acks(row.name, self.activity))
                              if w)
            for col, text in enumerate((row.name, device_words.role(row),
                                        device_words.last_seen(row), waits or "nothing")):
                self.grid.addWidget(theme.plain(QLabel(text)), r, col)
            if st.founder and not row.this_device and not row.revoked:
                btn = QPushButton("Remove…")
                btn.setAccessibleName(f"Remove {row.name}")
                btn.setToolTip(f"{row.name} will no longer receive your memories.")
                # The button carries its device's id and calls a slot of this panel: a
                # lambda over ``self`` held by the button would be the panel's last Python
                # reference once a test drops its own, and the button's deferred deletion
                # (below, on the next fill) would then delete the panel from inside the
                # button's destructor, which deletes the button a second time (heap
                # corruption; ``ui.tasks._Receiver._finish`` guards the same case).
                btn.setProperty(_DEVICE_ID, row.device_id)
                btn.clicked.connect(self._on_remove_btn_clicked)
                self.grid.addWidget(btn, r, len(HEADERS) - 1)
                self.remove_buttons[row.device_id] = btn
        self.grid.setColumnStretch(0, 1)
        self.table.setVisible(bool(st.devices))
        self.set_up_btn.setVisible(not st.set_up)
        self.join_btn.setVisible(not st.set_up)
        self.pair_btn.setVisible(st.set_up and st.founder)
        self.take_over_btn.setVisible(st.set_up and st.successor and not st.founder)

    def _say(self, text: str) -> None:
        self.message.setText(text)
        self.message.setVisible(bool(text))

    # --- actions ------------------------------------------------------------------------
    def remove(self, row: SyncDeviceRow) -> None:
        """Ask first, saying what happens, then revoke (``Vault.sync_revoke``)."""
        text = device_words.revoke_consequence(row.name)
        question, _, detail = text.partition("? ")
        confirm.ask(self, "Remove device", question + "?", detail=detail,
                    action="&Remove device", then=lambda: self._remove_now(row))

    @Slot()
    def _on_remove_btn_clicked(self) -> None:
        device_id = self.sender().property(_DEVICE_ID) if self.sender() is not None else None
        row = next((d for d in (self.status.devices if self.status is not None else ())
                    if d.device_id == device_id), None)
        if row is not None:
            self.remove(row)

    def _remove_now(self, row: SyncDeviceRow) -> None:
        btn = self.remove_buttons.get(row.device_id)
        if btn is not None:
            btn.setEnabled(False)
        vault = self.vault

        def done(_result: Result[SyncStatus]) -> None:
            self._say(f"{row.name} is removed.")

        def failed(exc: BaseException) -> None:
            if btn is not None:
                btn.setEnabled(True)
            errors.report_error(self, exc, self._say, prefix="Not removed: ")
        run_op(self, lambda: vault.sync_revoke(row.device_id), done, self.bridge, failed)

    def take_over(self) -> None:
        """Ask first, saying what happens (Escape and Enter cancel), then take over
        (``Vault.sync_take_over``)."""
        if self.status is None:
            return
        text = device_words.take_over_consequence(self.status)
        question, _, detail = text.partition("? ")
        confirm.ask(self, "Take over as founder", question + "?", detail=detail,
                    action="&Take over", then=self._take_over_now)

    def _take_over_now(self) -> None:
        self.take_over_btn.setEnabled(False)
        vault = self.vault

        def done(_result: Result[SyncStatus]) -> None:
            self.take_over_btn.setEnabled(True)
            self._say("This device is the founder now: pair new devices from here.")

        def failed(exc: BaseException) -> None:
            self.take_over_btn.setEnabled(True)
            errors.report_error(self, exc, self._say, prefix="Not taken over: ")
        run_op(self, vault.sync_take_over, done, self.bridge, failed)

    @Slot()
    def _on_take_over_btn_clicked(self) -> None:
        self.take_over()

    def _open(self, dialog: SyncPairDialog | SyncJoinDialog) -> None:
        dialog.finished_with.connect(self._say)
        self.dialog = dialog
        dialog.show()

    @Slot()
    def _on_set_up_btn_clicked(self) -> None:
        from ui.dialogs.sync_pair import SyncJoinDialog
        self._open(SyncJoinDialog(self.vault, self.bridge, self.window(), set_up=True))

    @Slot()
    def _on_join_btn_clicked(self) -> None:
        from ui.dialogs.sync_pair import SyncJoinDialog
        self._open(SyncJoinDialog(self.vault, self.bridge, self.window()))

    @Slot()
    def _on_pair_btn_clicked(self) -> None:
        from ui.dialogs.sync_pair import SyncPairDialog
        self._open(SyncPairDialog(self.vault, self.bridge, self.window()))
