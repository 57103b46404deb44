"""Unlock and create dialogs, the strength meter and the one-time recovery code.
Layer: ui. GUI thread; Argon2id, the database and the keyring run through ``ui.tasks``.

"Use recovery code…" (unlock only) swaps the password field for the recovery code and a new
password: the code opens the vault and the new password replaces the forgotten one."""

from __future__ import annotations

import math
import string
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import (
    QApplication,
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app import bootstrap, validation
from app.api import VaultAPI
from ui import errors, theme
from ui.tasks import run_query

COMMON = {"password", "123456", "12345678", "qwerty", "letmein", "welcome", "iloveyou",
          "admin", "monkey", "dragon", "football", "abc123"}


def strength(password: str) -> tuple[int, str]:
    """A rough entropy estimate in bits, and a word for it. Honest about its limits: it only
    rewards length and variety and punishes the commonest passwords."""
    if not password:
        return 0, ""
    if password.lower() in COMMON:
        return 5, "very weak (a very common password)"
    pool = 0
    for chars in (string.ascii_lowercase, string.ascii_uppercase, string.digits,
                  string.punctuation):
        if any(c in chars for c in password):
            pool += len(chars)
    if any(ord(c) > 127 for c in password):
        pool += 100
    if " " in password:
        pool += 1
    distinct = len(set(password))
    bits = int(len(password) * math.log2(max(pool, 2)) * min(1.0, distinct / max(4, len(password) / 2)))
    word = ("very weak" if bits < 28 else "weak" if bits < 45 else "fair" if bits < 60
            else "strong" if bits < 80 else "very strong")
    return bits, word


def too_short() -> str:
    """The length rule of ``app.validation``, as the dialog says it."""
    return (f"Use at least {validation.MIN_PASSWORD_LENGTH} characters; a few words are "
            "easiest.")


# (folder, password, create, make a recovery code) -> (the open vault, its recovery code)
VaultFactory = Callable[[Path, str, bool, bool], tuple[VaultAPI, str | None]]

RECOVERED_NOTICE = ("New password set with the recovery code; use it from now on. The "
                    "recovery code still opens the vault: make a new one in Settings if "
                    "anyone may have seen it.")


class UnlockDialog(QDialog):
    """Unlocks ``folder`` (or creates a vault there when ``create``; ``creating`` says which
    after construction: ``QDialog.create`` is Qt's). Emits ``unlocked`` with the open Vault;
    wrong passwords show inline and change nothing. ``notice``: a sentence for the window
    after a recovery-code unlock."""

    unlocked = Signal(object)

    def __init__(self, folder: Path, *, create: bool = False, parent: QWidget | None = None,
                 vault_factory: VaultFactory | None = None) -> None:
        super().__init__(parent)
        self.folder = folder
        self.creating = create
        self.vault_factory = vault_factory
        self.recovery_code: str | None = None
        self.recovering = False
        self.notice = ""
        self.folder_problem = ""  # create: why this folder cannot take a vault
        self.setWindowTitle("Create your vault" if create else "Unlock Kept")
        self.setModal(True)
        self.password = QLineEdit()
        self.password.setEchoMode(QLineEdit.EchoMode.Password)
        self.password.setObjectName("password")
        self.repeat = QLineEdit()
        self.repeat.setEchoMode(QLineEdit.EchoMode.Password)
        self.meter = QProgressBar()
        self.meter.setRange(0, 100)
        self.meter.setTextVisible(True)
        self.meter.setFormat("")
        self.recovery = QCheckBox("Make a recovery code (shown once; print it)")
        self.recovery.setChecked(True)
        self.remember = QCheckBox("Remember on this device (system keychain)")
        self.remember.setVisible(False)
        self.remember_note = QLabel()
        self.remember_note.setWordWrap(True)
        self.error = theme.plain(QLabel())
        self.error.setObjectName("error")
        self.error.setStyleSheet(theme.ERROR_STYLE)
        self.error.setWordWrap(True)
        self.busy = QLabel()
        form = QFormLayout()
        form.addRow("Password", self.password)
        if create:
            form.addRow("Repeat", self.repeat)
            form.addRow("Strength", self.meter)
            form.addRow(self.recovery)
            warn = QLabel("Kept cannot reset your password. Without it or a recovery code, "
                          "the vault is lost for good.")
            warn.setWordWrap(True)
            form.addRow(warn)
        form.addRow(self.remember)
        form.addRow(self.remember_note)
        form.setContentsMargins(0, 0, 0, 0)  # laid out as before, inside a page
        self.password_page = QWidget()
        self.password_page.setLayout(form)
        self.recovery_page = self._build_recovery_page()
        self.use_code = QPushButton("Use recovery code…")
        self.use_code.setFlat(True)
        self.use_code.setAutoDefault(False)  # Enter unlocks; it never opens the recovery page
        self.use_code.setVisible(not create)
        self.buttons = QDialogButtonBox()
        self.ok = QPushButton("Create vault" if create else "Unlock")
        self.ok.setDefault(True)
        self.buttons.addButton(self.ok, QDialogButtonBox.ButtonRole.AcceptRole)
        self.buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        lay = QVBoxLayout(self)
        lay.addWidget(self.password_page)
        lay.addWidget(self.recovery_page)
        lay.addWidget(self.use_code, 0, Qt.AlignmentFlag.AlignLeft)
        lay.addWidget(self.error)
        lay.addWidget(self.busy)
        lay.addWidget(self.buttons)
        self.ok.setDefault(True)  # again, now that the button is in the dialog
        self.ok.clicked.connect(self._on_ok_clicked)
        self.buttons.rejected.connect(self.reject)
        self.password.textChanged.connect(self._on_password_text_changed)
        self.use_code.clicked.connect(self._on_use_code_clicked)
        self._probe_keyring()
        if create:
            self._check_folder()

    def _build_recovery_page(self) -> QWidget:
        self.code = QLineEdit()
        self.code.setObjectName("recoveryCode")
        self.code.setPlaceholderText("XXXX-XXXX-XXXX-XXXX-XXXX-XXXX-XXXX-XXXX")
        self.new_password = QLineEdit()
        self.new_password.setEchoMode(QLineEdit.EchoMode.Password)
        self.new_repeat = QLineEdit()
        self.new_repeat.setEchoMode(QLineEdit.EchoMode.Password)
        self.new_meter = QProgressBar()
        self.new_meter.setRange(0, 100)
        self.new_meter.setFormat("")
        self.new_password.textChanged.connect(self._on_new_password_text_changed)
        self.code.textChanged.connect(self.error.clear)
        note = QLabel("Forgot your password? The recovery code you saved when the vault was "
                      "made opens it; then choose a new password. The code keeps working.")
        note.setWordWrap(True)
        form = QFormLayout()
        form.addRow(note)
        form.addRow("Recovery code", self.code)
        form.addRow("New password", self.new_password)
        form.addRow("Repeat", self.new_repeat)
        form.addRow("Strength", self.new_meter)
        form.setContentsMargins(0, 0, 0, 0)
        page = QWidget()
        page.setLayout(form)
        page.setVisible(False)
        return page

    def _check_folder(self) -> None:
        """A vault is made only in a new or empty folder: said before any password is typed."""
        folder = self.folder

        def refused(exc: BaseException) -> None:
            from app.errors import AppError
            if isinstance(exc, AppError):
                self.folder_problem = exc.user_message
                self.error.setText(exc.user_message)
                self.ok.setEnabled(False)
        run_query(self, lambda: bootstrap.check_new_vault_folder(folder), lambda _r: None,
                  refused)

    @Slot()
    def _on_use_code_clicked(self) -> None:
        self.recovering = not self.recovering
        self.error.clear()
        self.password_page.setVisible(not self.recovering)
        self.recovery_page.setVisible(self.recovering)
        self.use_code.setText("Use password instead" if self.recovering
                              else "Use recovery code…")
        self.ok.setText("Unlock and set password" if self.recovering else "Unlock")
        self.setWindowTitle("Unlock with your recovery code" if self.recovering
                            else "Unlock Kept")
        (self.code if self.recovering else self.password).setFocus()

    @Slot(str)
    def _on_new_password_text_changed(self, text: str) -> None:
        self.error.clear()
        bits, word = strength(text)
        self.new_meter.setValue(min(100, bits))
        self.new_meter.setFormat(word)

    def _probe_keyring(self) -> None:
        """Only offer the keychain where a real, allowlisted OS keychain exists."""
        def done(ok: bool) -> None:
            self.remember.setVisible(ok)
            if not ok:
                self.remember_note.setText("Remember on this device is not available: no "
                                           "secure system keychain was found.")
        run_query(self, bootstrap.keyring_available, done, lambda _e: done(False))

    @Slot(str)
    def _on_password_text_changed(self, text: str) -> None:
        if self.folder_problem:
            return  # the folder cannot take a vault: that message stays
        self.error.clear()
        if self.creating:
            bits, word = strength(text)
            self.meter.setValue(min(100, bits))
            self.meter.setFormat(word)

    @Slot()
    def _on_ok_clicked(self) -> None:
        if self.recovering:
            self._recover()
            return
        pw = self.password.text()
        if self.creating:
            if validation.password_too_short(pw):
                self.error.setText(too_short())
                return
            if pw != self.repeat.text():
                self.error.setText("The two passwords differ.")
                return
        elif not pw:
            self.error.setText("Type your password.")
            return
        self.ok.setEnabled(False)
        self.busy.setText("Creating…" if self.creating else "Unlocking…")
        QApplication.setOverrideCursor(Qt.CursorShape.BusyCursor)
        folder, create, recovery = self.folder, self.creating, self.recovery.isChecked()
        remember = self.remember.isVisible() and self.remember.isChecked()
        factory = self.vault_factory

        def work() -> tuple[VaultAPI, str | None]:
            from app.facade import Vault
            vault: VaultAPI
            if factory is not None:
                return factory(folder, pw, create, recovery)
            if create:
                res = Vault.create(folder, pw, recovery=recovery)
                vault, code = res.vault, res.recovery_code
            else:
                vault, code = Vault.open(folder, pw), None
            if remember:
                vault.remember_device()
            return vault, code
        run_query(self, work, self._on_done, self._on_failed)

    def _recover(self) -> None:
        code, new = self.code.text(), self.new_password.text()
        if not code.strip():
            self.error.setText("Type your recovery code.")
            return
        if validation.password_too_short(new):
            self.error.setText(too_short())
            return
        if new != self.new_repeat.text():
            self.error.setText("The two passwords differ.")
            return
        self.ok.setEnabled(False)
        self.use_code.setEnabled(False)
        self.busy.setText("Unlocking…")
        QApplication.setOverrideCursor(Qt.CursorShape.BusyCursor)
        folder = self.folder

        def work() -> tuple[VaultAPI, str | None]:
            from app.facade import Vault
            return Vault.open(folder, recovery_code=code, new_password=new), None
        run_query(self, work, self._on_done, self._on_failed)

    def _on_done(self, result: tuple[VaultAPI, str | None]) -> None:
        QApplication.restoreOverrideCursor()
        vault, code = result
        if self.recovering:
            self.notice = RECOVERED_NOTICE
        for field in (self.password, self.repeat, self.code, self.new_password,
                      self.new_repeat):
            field.clear()
        self.recovery_code = code
        if code:
            RecoveryCodeDialog(code, self).exec()
            self.recovery_code = None
        self.unlocked.emit(vault)
        self.accept()

    def _on_failed(self, exc: BaseException) -> None:
        QApplication.restoreOverrideCursor()
        self.ok.setEnabled(True)
        self.use_code.setEnabled(True)
        self.busy.clear()
        retry = self.code if self.recovering else self.password
        retry.selectAll()
        retry.setFocus()
        errors.report_error(self, exc, self.error.setText, hint=True)


class RecoveryCodeDialog(QDialog):
    """Shows the recovery code once. It is never stored anywhere readable."""

    def __init__(self, code: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Your recovery code")
        label = QLabel("Write this down or print it, and keep it somewhere safe. If you forget "
                       "your password, choose \"Use recovery code…\" when unlocking (or run "
                       "kept passwd --recovery-code) and set a new one. Kept will not show it "
                       "again; any earlier recovery code no longer works.")
        label.setWordWrap(True)
        self.code = QLabel(code)
        self.code.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.code.setStyleSheet(theme.CODE_STYLE)
        done = QPushButton("I have saved it")
        done.clicked.connect(self.accept)
        lay = QVBoxLayout(self)
        lay.addWidget(label)
        lay.addWidget(self.code)
        lay.addWidget(done)
