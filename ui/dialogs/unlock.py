"""Unlock and create dialogs, the strength meter and the one-time recovery code.
Layer: ui. GUI thread; Argon2id, the database and the keyring run through ``ui.tasks``.

"Use recovery code…" (unlock only) swaps the password field for the recovery code and a new
password: the code opens the vault and the new password replaces the forgotten one."""

from __future__ import annotations

import math
import re
import string
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Signal, Slot
from PySide6.QtWidgets import (
    QApplication,
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app import bootstrap, validation
from app.api import VaultAPI
from ui import errors, fit, theme
from ui.tasks import run_query

# The commonest passwords, lower-case (lists of leaked passwords start with these). A password
# that is one of them with digits or symbols added ("password1", "Dragon!") is no stronger.
COMMON = {"password", "passw0rd", "123456", "12345678", "123456789", "qwerty", "qwertyuiop",
          "letmein", "welcome", "iloveyou", "admin", "monkey", "dragon", "football",
          "baseball", "abc123", "sunshine", "princess", "master", "shadow", "superman",
          "starwars", "trustno1", "whatever", "freedom", "secret", "hello", "login"}

# What an attacker's word list plus rules costs for one dictionary word (about 100,000 words
# in several spellings): a word counts as this many bits, however long it is.
WORD_BITS = 17
COMMON_BITS = 10          # one of the commonest passwords, as a part of a longer one
SEPARATOR_BITS = 2        # a space or '-' between words: attackers try the usual few
_AFFIX = re.compile(r"^[\d\W_]*(.*?)[\d\W_]*$", re.DOTALL)
_SEPARATORS = re.compile(r"[\s\-_.,+/]+")
_WORDLIKE = re.compile(r"[a-z]{3,12}")  # most dictionary words; longer runs are valued as letters
_VOWELS = set("aeiouy")
# Letters written as digits or symbols ("p4ssw0rd"): word-list rules undo these first.
_LEET = str.maketrans({"0": "o", "1": "l", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a",
                       "$": "s", "!": "i"})
_CLASSES = (string.ascii_lowercase, string.ascii_uppercase, string.digits, string.punctuation)


def _wordlike(letters: str) -> bool:
    """A run of letters an English (or similar) dictionary could hold: lower case (or
    capitalised), with vowels as a word has them and no long run of consonants. Random
    letters ("xkqzwv") are not word-like and are valued as random."""
    word = letters[:1].lower() + letters[1:]
    if not _WORDLIKE.fullmatch(word):
        return False
    vowels = sum(c in _VOWELS for c in word)
    longest_consonants = max(len(run) for run in re.split("[aeiouy]", word))
    return vowels / len(word) >= 0.25 and longest_consonants <= 3


def _affix_bits(affix: str) -> float:
    """Digits and symbols put before or after a word: tried by attackers first, so each
    digit is worth a digit's worth (3.3 bits) and each symbol about 5 bits, no more."""
    return sum(math.log2(10) if c.isdigit() else 5.0 for c in affix)


def _brute_bits(password: str) -> float:
    """Trying every string of this length over the kinds of characters it uses, discounted
    for repeated characters."""
    pool = sum(len(chars) for chars in _CLASSES if any(c in chars for c in password))
    if any(ord(c) > 127 for c in password):
        pool += 100
    if " " in password:
        pool += 1
    distinct = len(set(password))
    return (len(password) * math.log2(max(pool, 2))
            * min(1.0, distinct / max(4, len(password) / 2)))


def _word_bits(password: str) -> tuple[float, str]:
    """Guessing from a word list with the usual rules: words (common passwords cheapest,
    capitals and digits for letters a bit more) joined by separators, with digits or
    symbols before and after. Returns the bits and why, when one word makes the password."""
    core = _AFFIX.match(password)
    base = core.group(1) if core else password
    bits = _affix_bits(password.replace(base, "", 1) if base else password)
    parts = [p for p in _SEPARATORS.split(base) if p]
    bits += SEPARATOR_BITS * (len(parts) - 1)
    why = ""
    for part in parts:
        plain = part.translate(_LEET)
        swaps = sum(a != b for a, b in zip(part, plain, strict=True))  # ~1 bit each
        if plain.lower() in COMMON:
            bits += COMMON_BITS + swaps
            why = "a common password with digits or symbols"
        elif _wordlike(plain):
            bits += WORD_BITS + plain[0].isupper() + swaps
            why = "one word" + (" with digits or symbols" if swaps or base != password else "")
        else:
            bits += _brute_bits(part)
    return bits, why if len(parts) == 1 else ""


def strength(password: str) -> tuple[int, str]:
    """A rough entropy estimate in bits, and a word for it: the cheaper of two attacks,
    trying every string over the characters used, or a word list with rules (``_word_bits``).
    Honest about its limits: it knows the commonest passwords, and takes any word-like run
    of letters for a dictionary word, but knows no names, dates or keyboard patterns."""
    if not password:
        return 0, ""
    if password.lower() in COMMON:
        return 5, "very weak (a very common password)"
    brute = _brute_bits(password)
    words, why = _word_bits(password)
    bits = int(min(brute, words))
    word = ("very weak" if bits < 28 else "weak" if bits < 45 else "fair" if bits < 60
            else "strong" if bits < 80 else "very strong")
    if why and words < brute and bits < 45:
        word = f"{word} ({why})"
    return bits, word


def strength_color(bits: int) -> str:
    """Red below 45 bits (weak), amber below 60 (fair), green from there."""
    return (theme.STRENGTH_WEAK if bits < 45 else theme.STRENGTH_FAIR if bits < 60
            else theme.STRENGTH_GOOD)


def strength_meter() -> tuple[QProgressBar, QLabel]:
    """A strength bar and the note under it that says why a password is weak."""
    meter = QProgressBar()
    meter.setRange(0, 100)
    meter.setTextVisible(True)
    meter.setFormat("")
    note = QLabel()  # one short line: a wrapped label in a form row gets too much room
    theme.set_muted(note)
    note.hide()
    return meter, note


def show_strength(meter: QProgressBar, note: QLabel, password: str) -> None:
    """``password``'s strength on ``meter``: its bits as the bar, red, amber or green by
    strength, with the word on it; the reason, if there is one, in ``note``."""
    bits, word = strength(password)
    short, _, why = word.partition(" (")
    meter.setValue(min(100, bits))
    meter.setFormat(short)
    theme.set_meter_color(meter, strength_color(bits))
    note.setText(why.rstrip(")").capitalize() + "." if why else "")
    note.setVisible(bool(why))


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
        self.setWindowTitle(self._title())
        self.setModal(True)
        self.password = QLineEdit()
        self.password.setEchoMode(QLineEdit.EchoMode.Password)
        self.password.setObjectName("password")
        self.repeat = QLineEdit()
        self.repeat.setEchoMode(QLineEdit.EchoMode.Password)
        self.meter, self.meter_note = strength_meter()
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
            form.addRow("", self.meter_note)
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
        bottom = QHBoxLayout()  # "Unlocking…" beside the buttons, not on a line of its own
        bottom.addWidget(self.busy, 1)
        bottom.addWidget(self.buttons)
        lay.addLayout(bottom)
        self.ok.setDefault(True)  # again, now that the button is in the dialog
        self.ok.clicked.connect(self._on_ok_clicked)
        self.buttons.rejected.connect(self.reject)
        self.password.textChanged.connect(self._on_password_text_changed)
        self.use_code.clicked.connect(self._on_use_code_clicked)
        fit.fit_to_text(self)  # notes and errors arrive after it is shown
        self._probe_keyring()
        if create:
            self._check_folder()

    def _title(self) -> str:
        name = theme.vault_name(self.folder)
        if self.creating:
            return f"Create the vault {name}"
        return f"Unlock {name} with the recovery code" if self.recovering else f"Unlock {name}"

    def _build_recovery_page(self) -> QWidget:
        self.code = QLineEdit()
        self.code.setObjectName("recoveryCode")
        self.code.setPlaceholderText("XXXX-XXXX-XXXX-XXXX-XXXX-XXXX-XXXX-XXXX")
        self.new_password = QLineEdit()
        self.new_password.setEchoMode(QLineEdit.EchoMode.Password)
        self.new_repeat = QLineEdit()
        self.new_repeat.setEchoMode(QLineEdit.EchoMode.Password)
        self.new_meter, self.new_meter_note = strength_meter()
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
        form.addRow("", self.new_meter_note)
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
        self.setWindowTitle(self._title())
        (self.code if self.recovering else self.password).setFocus()

    @Slot(str)
    def _on_new_password_text_changed(self, text: str) -> None:
        self.error.clear()
        show_strength(self.new_meter, self.new_meter_note, text)

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
            show_strength(self.meter, self.meter_note, text)

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
            RecoveryCodeDialog(code, self, folder=self.folder).exec()
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
    """Shows the recovery code once. It is never stored anywhere readable. ``folder``: the
    vault it opens, named in the title."""

    def __init__(self, code: str, parent: QWidget | None = None, *,
                 folder: Path | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"Recovery code for {theme.vault_name(folder)}" if folder
                            else "Your recovery code")
        label = QLabel("Write this down, print it or copy it into your password manager, and "
                       "keep it somewhere safe. If you forget your password, choose \"Use "
                       "recovery code…\" when unlocking (or run kept passwd --recovery-code) "
                       "and set a new one. Kept will not show it again; any earlier recovery "
                       "code no longer works.")
        label.setWordWrap(True)
        self._code = code
        self.code = QLabel(code)
        self.code.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.code.setStyleSheet(theme.CODE_STYLE)
        self.code.setAccessibleName("Recovery code")
        self.copy_btn = QPushButton("&Copy")
        self.copy_btn.setAutoDefault(False)
        self.copy_btn.clicked.connect(self._on_copy_btn_clicked)
        self.print_btn = QPushButton("&Print…")
        self.print_btn.setAutoDefault(False)
        self.print_btn.clicked.connect(self._on_print_btn_clicked)
        self.copied = QLabel()
        self.copied.setWordWrap(True)
        theme.set_muted(self.copied)
        self.copied.hide()  # no blank line until there is something to say
        done = QPushButton("I have saved it")
        done.setDefault(True)
        done.clicked.connect(self.accept)
        row = QHBoxLayout()
        row.addWidget(self.copy_btn)
        row.addWidget(self.print_btn)
        row.addStretch(1)
        row.addWidget(done)
        lay = QVBoxLayout(self)
        lay.addWidget(label)
        lay.addWidget(self.code)
        lay.addWidget(self.copied)
        lay.addLayout(row)
        # A copied code leaves the clipboard after a minute (if nothing else was copied since).
        self._clear = QTimer(self)
        self._clear.setSingleShot(True)
        self._clear.setInterval(self.CLIPBOARD_SECONDS * 1000)
        self._clear.timeout.connect(self._clear_clipboard)
        fit.fit_to_text(self)

    CLIPBOARD_SECONDS = 60

    @Slot()
    def _on_copy_btn_clicked(self) -> None:
        QApplication.clipboard().setText(self._code)
        self._clear.start()
        self.copied.setText(f"Copied. Paste it into your password manager now: Kept clears the "
                            f"clipboard in {self.CLIPBOARD_SECONDS} seconds, or when this "
                            "closes.")
        self.copied.show()

    @Slot()
    def _clear_clipboard(self) -> None:
        clip = QApplication.clipboard()
        if clip.text() == self._code:
            clip.clear()

    @Slot()
    def _on_print_btn_clicked(self) -> None:
        """The system's print dialog; the page holds the code and how to use it, nothing
        else (never written to a file by Kept)."""
        from PySide6.QtGui import QTextDocument
        from PySide6.QtPrintSupport import QPrintDialog, QPrinter
        printer = QPrinter()
        dlg = QPrintDialog(printer, self)
        dlg.setObjectName("printRecoveryCode")

        def go() -> None:
            doc = QTextDocument()
            doc.setPlainText(f"Kept recovery code\n\n{self._code}\n\nIf you forget your "
                             "password, choose \"Use recovery code…\" when unlocking.")
            doc.print_(printer)
        dlg.accepted.connect(go)
        dlg.setWindowModality(Qt.WindowModality.WindowModal)
        dlg.show()

    def done(self, result: int) -> None:
        self._clear_clipboard()  # the code leaves the clipboard with the dialog
        super().done(result)
