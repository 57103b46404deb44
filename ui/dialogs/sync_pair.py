"""Pairing a device (issue 29, item 5): on the device that set sync up, the 12-digit code and
a QR code of it, while Kept waits for the new device; on the new device, the folder, a name and
the code. Layer: ui. GUI thread; every step runs through ``ui.tasks`` (each is a few small
reads and writes in the sync folder, ``Vault.sync_pair_step``), on a timer while waiting.

Both the set-up and the join dialog offer an optional step, "Use Syncthing on this computer":
with the other device's Syncthing ID and the API key the person copies from Syncthing, the
folder is shared through Syncthing's REST API (``app/sync/syncthing.py``, the code behind
``kept sync syncthing``) on a worker thread before Kept sets up or joins; a failure (Syncthing
not running, the key refused, an id that is not one) is said in words, the cursor goes to the
field to fix, and Kept's side is not touched. The key is typed hidden and kept nowhere.

The QR code is drawn here with Qt from ``segno``'s module matrix (pure Python, pinned in
pyproject): no image file, no other library. Closing the pairing dialog before the new device
has joined cancels the pairing (``Vault.sync_pair_cancel``).
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QRect, Qt, QTimer, Signal, Slot
from PySide6.QtGui import QColor, QFontDatabase, QPainter, QPaintEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from app import words
from app.api import PairInvite, PairStep, Result, SyncStatus, VaultAPI
from app.errors import ValidationError
from app.sync.syncthing import DEFAULT_ADDRESS
from ui import errors, fit, theme
from ui.bridge import CoreBridge
from ui.tasks import run_op, run_query

QUIET = 4  # modules of white around the code, as the QR standard asks


class QrCode(QWidget):
    """A QR code drawn module by module: black on white whatever the theme (readers need the
    contrast), square, with its quiet zone."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.matrix: tuple[bytearray, ...] = ()
        self.setAccessibleName("QR code of the pairing code")
        self.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        self.set_text(text)

    def set_text(self, text: str) -> None:
        import segno
        self.matrix = tuple(segno.make(text, error="m").matrix) if text else ()
        side = (len(self.matrix) + 2 * QUIET) * 4 if self.matrix else 0
        self.setFixedSize(side, side)
        self.setToolTip("Scan it with the new device's camera, or type the code beside it."
                        if text else "")
        self.update()

    def module_rect(self, row: int, col: int) -> QRect:
        """Where module (row, col) is drawn (tests read the picture back from here)."""
        n = len(self.matrix) + 2 * QUIET
        unit = min(self.width(), self.height()) // n
        return QRect((col + QUIET) * unit, (row + QUIET) * unit, unit, unit)

    def paintEvent(self, _event: QPaintEvent) -> None:  # noqa: N802 (Qt name)
        if not self.matrix:
            return
        p = QPainter(self)
        p.fillRect(self.rect(), QColor("white"))
        black = QColor("black")
        for r, row in enumerate(self.matrix):
            for c, dark in enumerate(row):
                if dark:
                    p.fillRect(self.module_rect(r, c), black)
        p.end()


class _Stepping(QDialog):
    """What both dialogs share: a message line, and the timer that asks for the next step."""

    finished_with = Signal(str)  # a sentence for the Devices section ("desktop joined.")
    POLL_MS = 1000  # how often to look at the folder while waiting

    def __init__(self, vault: VaultAPI, bridge: CoreBridge, parent: QWidget | None) -> None:
        super().__init__(parent)
        self.vault, self.bridge = vault, bridge
        self.step: PairStep | None = None
        self.said = theme.plain(QLabel())
        self.said.setObjectName("pairState")
        self.said.setWordWrap(True)
        self.said.setAccessibleName("Pairing state")
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.timeout.connect(self._on_timer_timeout)
        self.close_btn = QPushButton("Close")
        self.close_btn.clicked.connect(self.reject)
        self.finished.connect(self._on_finished)

    def _say(self, text: str, error: bool = False) -> None:
        self.said.setText(text)
        self.said.setStyleSheet(theme.ERROR_STYLE if error else "")

    def _failed(self, exc: BaseException) -> None:
        errors.report_error(self, exc, lambda t: self._say(t, True))

    def _took(self, step: PairStep) -> None:
        self.step = step
        self._say(step.message, error=step.state in ("refused", "closed"))
        if step.state == "waiting":
            self.timer.start(self.POLL_MS)
        else:
            self._decided(step)

    def _decided(self, step: PairStep) -> None:
        if step.state == "joined":
            self.close_btn.setText("Done")
            self.finished_with.emit(step.message)

    @Slot()
    def _on_timer_timeout(self) -> None:
        vault = self.vault
        run_op(self, vault.sync_pair_step, lambda r: self._took(r.value), self.bridge,
               self._failed)

    @Slot(int)
    def _on_finished(self, _result: int) -> None:
        self.timer.stop()
        if self.step is not None and self.step.state in ("waiting", "refused"):
            vault = self.vault
            run_op(self, vault.sync_pair_cancel, lambda _r: None)


class SyncPairDialog(_Stepping):
    """On the device that set sync up: opens a pairing at once and shows its code."""

    def __init__(self, vault: VaultAPI, bridge: CoreBridge, parent: QWidget | None = None
                 ) -> None:
        super().__init__(vault, bridge, parent)
        self.setWindowTitle(f"Pair a new device with {theme.vault_name(vault.folder)}")
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        mono.setPointSizeF(mono.pointSizeF() * 1.6)
        how = QLabel("On the new device, open Kept, then Settings > Devices > Join with a "
                     "code. Pick the folder your sync tool shares, and type this code (or "
                     "scan the QR code):")
        how.setWordWrap(True)
        self.code = theme.plain(QLabel("…"))
        self.code.setObjectName("pairCode")
        self.code.setFont(mono)
        self.code.setAccessibleName("Pairing code")
        self.code.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.qr = QrCode()
        self.expiry = QLabel()
        theme.set_muted(self.expiry)
        self.expiry.setWordWrap(True)
        row = QHBoxLayout()
        row.addWidget(self.qr)
        row.addWidget(self.code, 1)
        bottom = QHBoxLayout()
        bottom.addStretch(1)
        bottom.addWidget(self.close_btn)
        lay = QVBoxLayout(self)
        lay.addWidget(how)
        lay.addLayout(row)
        lay.addWidget(self.expiry)
        lay.addWidget(self.said)
        lay.addLayout(bottom)
        fit.fit_to_text(self, min_chars=60)
        self._say("Opening a pairing…")
        run_op(self, vault.sync_invite, self._on_invited, bridge, self._failed)

    def _on_invited(self, result: Result[PairInvite]) -> None:
        inv = result.value
        self.code.setText(inv.code)
        self.qr.set_text(inv.qr_text)
        self.expiry.setText(f"The code works until {words.when(inv.expires_at)}, for "
                            f"{inv.tries} tries. Anyone who sees it can join while it works: "
                            "show it only to yourself.")
        self._took(PairStep("waiting", "Waiting for the new device…", tries_left=inv.tries))
        fit.grow_to_hint(self)

    def _took(self, step: PairStep) -> None:
        super()._took(step)
        if step.state == "closed":
            self.code.setText("—")
            self.qr.set_text("")


class SyncJoinDialog(_Stepping):
    """On the new device (``set_up=False``): folder, name and code, then wait for the answer.
    With ``set_up=True`` it sets sync up in the folder instead (no code: this device becomes
    the one that pairs the others)."""

    def __init__(self, vault: VaultAPI, bridge: CoreBridge, parent: QWidget | None = None, *,
                 set_up: bool = False) -> None:
        super().__init__(vault, bridge, parent)
        self.set_up = set_up
        name = theme.vault_name(vault.folder)
        self.setWindowTitle(f"Set up sync for {name}" if set_up else f"Join {name} to a synced vault")
        self.folder = QLineEdit()
        self.folder.setAccessibleName("Sync folder")
        self.folder.setPlaceholderText("the folder your sync tool shares, e.g. ~/Sync/kept")
        # Wide enough for the placeholder: a cut hint is no hint (issue 25, item 2).
        self.folder.setMinimumWidth(fit.text_width(self.folder, [self.folder.placeholderText()])
                                    + 4 * theme.S)
        pick = QPushButton("Choose…")
        pick.setAccessibleName("Choose the sync folder")
        pick.clicked.connect(self._on_pick_clicked)
        folder_row = QHBoxLayout()
        folder_row.addWidget(self.folder, 1)
        folder_row.addWidget(pick)
        self.name = QLineEdit("computer 1" if set_up else "")
        self.name.setAccessibleName("This device's name")
        self.name.setPlaceholderText("e.g. laptop (readable by the folder's host)")
        self.code = QLineEdit()
        self.code.setAccessibleName("Pairing code")
        self.code.setPlaceholderText("1234-5678-9012")
        self.go_btn = QPushButton("Set up" if set_up else "Join")
        self.go_btn.setDefault(True)
        # The optional Syncthing step (docs/sync.md#syncthing-through-its-rest-api): share the
        # folder through this computer's Syncthing first, with the key the person copies.
        self.use_syncthing = QCheckBox("Use &Syncthing on this computer")
        self.use_syncthing.setToolTip("Kept shares the folder in Syncthing for you, through "
                                      "its REST API on this computer (optional).")
        self.st_device = QLineEdit()
        self.st_device.setAccessibleName("The other device's Syncthing ID")
        self.st_device.setPlaceholderText("the other device's Actions > Show ID")
        self.st_key = QLineEdit()
        self.st_key.setAccessibleName("Syncthing API key")
        self.st_key.setEchoMode(QLineEdit.EchoMode.Password)
        self.st_key.setPlaceholderText("Actions > Settings > GUI > API Key")
        self.st_address = QLineEdit(DEFAULT_ADDRESS)
        self.st_address.setAccessibleName("Syncthing's address on this computer")
        self.st_fields = (self.st_device, self.st_key, self.st_address)
        self.use_syncthing.toggled.connect(self._on_use_syncthing_toggled)
        form = QFormLayout()
        form.addRow("Folder", folder_row)
        form.addRow("Name", self.name)
        if not set_up:
            form.addRow("Code", self.code)
        else:
            self.code.hide()
        form.addRow("", self.use_syncthing)
        for label, field in zip(("Other device's ID", "API key", "Address"), self.st_fields,
                                strict=True):
            form.addRow(label, field)
            form.setRowVisible(field, False)
        self.form = form
        bottom = QHBoxLayout()
        bottom.addStretch(1)
        bottom.addWidget(self.go_btn)
        bottom.addWidget(self.close_btn)
        lay = QVBoxLayout(self)
        if set_up:
            note = QLabel("This device will hold the vault's keys to its other devices: pair "
                          "them from here (Settings > Devices > Pair a new device).")
            note.setWordWrap(True)
            lay.addWidget(note)
        lay.addLayout(form)
        lay.addWidget(self.said)
        lay.addLayout(bottom)
        fit.fit_to_text(self, min_chars=60)
        self.go_btn.clicked.connect(self._on_go_btn_clicked)
        self.code.returnPressed.connect(self._on_go_btn_clicked)
        chain = [self.folder, pick, self.name, *([] if set_up else [self.code]),
                 self.use_syncthing, self.st_device, self.st_key, self.st_address,
                 self.go_btn, self.close_btn]
        for first, second in zip(chain, chain[1:], strict=False):
            QWidget.setTabOrder(first, second)
        self.syncthing_done = False  # set up once: a retried Join does not ask again
        self.syncthing_lines: tuple[str, ...] = ()

    @Slot(bool)
    def _on_use_syncthing_toggled(self, on: bool) -> None:
        for field in self.st_fields:
            self.form.setRowVisible(field, on)
        if on:
            self.st_device.setFocus(Qt.FocusReason.OtherFocusReason)
        fit.grow_to_hint(self)

    @Slot()
    def _on_pick_clicked(self) -> None:
        chosen = QFileDialog.getExistingDirectory(self, "The folder your sync tool shares",
                                                  self.folder.text())
        if chosen:
            self.folder.setText(chosen)

    @Slot()
    def _on_go_btn_clicked(self) -> None:
        folder, name, code = (self.folder.text().strip(), self.name.text().strip(),
                              self.code.text().strip())
        try:  # pure checks inline (docs/architecture.md#errors)
            if not folder:
                raise ValidationError("Pick the folder your sync tool shares.")
            if not self.set_up:
                from app.sync.pairing import Code
                Code.parse(code)
            if self.use_syncthing.isChecked() and not self.syncthing_done:
                if not self.st_device.text().strip():
                    raise ValidationError("Type the other device's Syncthing ID (Actions > "
                                          "Show ID there), or untick Use Syncthing.")
                if not self.st_key.text().strip():
                    raise ValidationError("Paste Syncthing's API key (Actions > Settings > "
                                          "GUI > API Key), or untick Use Syncthing.")
        except ValidationError as exc:
            self._say(exc.user_message, error=True)
            return
        self.go_btn.setEnabled(False)
        if self.use_syncthing.isChecked() and not self.syncthing_done:
            self._syncthing_first(Path(folder))
            return
        self._go(folder, name, code)

    def _syncthing_first(self, folder: Path) -> None:
        """Share the folder in this computer's Syncthing (a worker thread: up to a few REST
        calls), then go on; on failure say why in words and change nothing of Kept's."""
        address, key, device = (self.st_address.text().strip(), self.st_key.text(),
                                self.st_device.text().strip())
        self._say("Setting the folder up in Syncthing…")

        def share() -> tuple[str, ...]:
            from app.sync.syncthing import SyncthingApi, set_up_folder
            if not folder.is_dir():
                raise ValidationError(f"No folder at {folder}. Make it first, or pick "
                                      "another.")
            return set_up_folder(SyncthingApi(address, key), folder, device).lines

        def done(lines: tuple[str, ...]) -> None:
            self.syncthing_done = True
            self.syncthing_lines = lines
            self.use_syncthing.setEnabled(False)
            for field in self.st_fields:
                field.setEnabled(False)
            self._go(str(folder), self.name.text().strip(), self.code.text().strip())

        def failed(exc: BaseException) -> None:
            from app.sync.syncthing import SyncthingError
            self.go_btn.setEnabled(True)
            errors.report_error(self, exc, lambda t: self._say(t, True),
                                prefix="Syncthing not set up: ")
            field = exc.field if isinstance(exc, SyncthingError) else ""
            widget = {"key": self.st_key, "address": self.st_address,
                      "device": self.st_device}.get(field)
            if widget is not None:
                widget.setFocus(Qt.FocusReason.OtherFocusReason)
                widget.selectAll()
        run_query(self, share, done, failed)

    def _go(self, folder: str, name: str, code: str) -> None:
        vault = self.vault
        shared = " ".join(self.syncthing_lines[:2])
        waits = (" Syncthing shares the folder now: once the other device's files have "
                 "arrived in it, press Join again." if self.syncthing_done and not self.set_up
                 else "")

        def failed(exc: BaseException) -> None:
            self.go_btn.setEnabled(True)
            errors.report_error(self, exc, lambda t: self._say(t + waits, True))
        if self.set_up:
            def done(result: Result[SyncStatus]) -> None:
                self._say(("Syncthing: " + shared + " " if shared else "")
                          + "Sync is set up. Pair your other devices from Settings > Devices.")
                self.go_btn.hide()
                self.close_btn.setText("Done")
                self.finished_with.emit("Sync is set up in " + result.value.folder + ".")
            run_op(self, lambda: vault.sync_set_up(Path(folder), name), done, self.bridge,
                   failed)
            return
        self._say("Answering the pairing…")
        run_op(self, lambda: vault.sync_join(Path(folder), code, name),
               lambda r: self._took(r.value), self.bridge, failed)

    def _took(self, step: PairStep) -> None:
        super()._took(step)
        if step.state == "refused":  # a typing mistake: the person may try again
            self.go_btn.setEnabled(True)
            self.code.selectAll()
            self.code.setFocus()
        elif step.state == "joined":
            self.go_btn.hide()
