"""Settings: extraction provider and cloud consent, redaction, the job schedule, auto-lock,
password change, "Remember on this device" and the paired assistants (``ui/views/assistants.py``).
Layer: ui. GUI thread; reads and writes go through ``ui.tasks`` (``Vault.set_setting``,
``change_password``, the keychain), validation is pure and inline (docs/architecture.md#errors: no
popups for expected failures).

Consent (docs/security.md#19-cloud-llm-consent): an endpoint outside this computer is
used only when ``extraction.cloud_consent`` holds exactly that (normalised) URL, so consent
given for one endpoint never carries over to another: changing the URL unticks the box.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Slot
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app import bootstrap, validation, words
from app.api import BackupRecord, SettingValue, VaultAPI
from app.changes import Changes, Result
from app.errors import ValidationError
from app.settings import BY_KEY
from ui import errors, fit, theme
from ui.bridge import CoreBridge
from ui.tasks import run_op, run_query
from ui.views.assistants import AssistantsPanel
from ui.views.page import Page, setting_int

log = logging.getLogger(__name__)

WEEKDAYS = words.WEEKDAYS
FORM_KEYS = ("extraction.provider", "extraction.llm_base_url", "extraction.llm_model",
             "extraction.cloud_consent", "extraction.redact",
             "consolidation.heartbeat_minutes", "consolidation.interval_minutes",
             "consolidation.decay_hour", "consolidation.synthesis_weekday", "lock.idle_minutes",
             "backup.folder", "backup.schedule", "backup.keep", "forget.request_days")
BACKUP_SCHEDULES = {"off": "Off", "daily": "Daily", "weekly": "Weekly"}

ASSISTANT_UNLOCK_NOTE = (
    "When `kept serve` has locked itself after its idle time, a paired assistant's call opens "
    "the vault again from this device's keychain, without your password. Anyone who can run "
    "programs as you on this computer can then read the vault through a paired assistant "
    "while you are logged in. Only on this device; needs \"Remember on this device\". "
    "Off by default.")

# What the form was filled from: the stored values of FORM_KEYS, the newest backup, and
# whether this device is remembered.
Stored = tuple[dict[str, SettingValue | None], BackupRecord | None, bool]


def _spin(lo: int, hi: int, suffix: str) -> QSpinBox:
    box = QSpinBox()
    box.setRange(lo, hi)
    box.setSuffix(suffix)
    box.setAccelerated(True)
    box.setMaximumWidth(fit.chars(box, 26))
    return box


class SettingsView(Page):
    """Owned by the main window's page stack; lives on the GUI thread."""

    def __init__(self, vault: VaultAPI, bridge: CoreBridge, parent: QWidget | None = None
                 ) -> None:
        super().__init__(vault, bridge, parent)
        self._loaded: dict[str, SettingValue] | None = None
        self._stored_consent = ""
        self.keychain_available: bool | None = None  # None until probed
        content = QWidget()
        cl = QVBoxLayout(content)
        cl.addWidget(QLabel("<h2>Settings</h2>"))
        for group in (self._build_extraction(), self._build_schedule(), self._build_lock(),
                      self._build_backups(), self._build_requests()):
            cl.addWidget(group)
        cl.addLayout(self._build_save_row())
        cl.addWidget(self._build_password())
        cl.addWidget(self._build_device())
        self.assistants = AssistantsPanel(vault, bridge)  # follows the bridge itself
        cl.addWidget(self.assistants)
        from ui.views.devices import DevicesPanel
        self.devices = DevicesPanel(vault, bridge)  # issue 29; follows the bridge itself
        cl.addWidget(self.devices)
        cl.addStretch(1)
        content.setMaximumWidth(fit.chars(content, 110))
        self.fill_scrolled(content)

        self.provider.currentIndexChanged.connect(self._on_provider_current_index_changed)
        self.base_url.textChanged.connect(self._on_base_url_text_changed)
        self.save_btn.clicked.connect(self._on_save_btn_clicked)
        self.revert_btn.clicked.connect(self._on_revert_btn_clicked)
        self.new_pw.textChanged.connect(self._on_new_pw_text_changed)
        self.pw_btn.clicked.connect(self._on_pw_btn_clicked)
        self.recovery_btn.clicked.connect(self._on_recovery_btn_clicked)
        self.remember.clicked.connect(self._on_remember_clicked)
        self._update_endpoint()
        self.refresh()
        self._probe_keychain()

    def _build_extraction(self) -> QGroupBox:
        """Provider, endpoint, model, the consent box and redaction."""
        self.provider = QComboBox()
        self.provider.addItem("Rules, on this computer (default)", "rules")
        self.provider.addItem("An LLM (OpenAI-compatible endpoint)", "llm")
        self.base_url = QLineEdit()
        self.base_url.setPlaceholderText("http://localhost:11434/v1  (Ollama, llama.cpp, "
                                         "LM Studio…)")
        self.model_name = QLineEdit()
        self.model_name.setPlaceholderText("e.g. llama3.1:8b")
        self.redact = QCheckBox("Replace names, amounts, health and other private details "
                                "before sending")
        self.redact.setToolTip("Names, emails, phone numbers, money amounts, health "
                               "conditions, addresses, ids and passwords become placeholders; "
                               "the real values are put back in what comes back.")
        self.endpoint_note = theme.plain(QLabel())
        self.endpoint_note.setObjectName("endpointNote")
        self.endpoint_note.setWordWrap(True)
        self.endpoint_note.setStyleSheet(theme.NOTE_STYLE)
        self.consent_warning = theme.plain(QLabel())
        self.consent_warning.setObjectName("consentWarning")
        self.consent_warning.setWordWrap(True)
        self.consent_warning.setStyleSheet(theme.WARNING_STYLE)
        self.consent = QCheckBox("I agree to send memory snippets to this endpoint")
        self.consent.setObjectName("consent")
        extraction = QGroupBox("Fact extraction")
        ef = QFormLayout(extraction)
        ef.addRow("Provider", self.provider)
        ef.addRow("Endpoint (base URL)", self.base_url)
        ef.addRow("Model", self.model_name)
        ef.addRow(self.endpoint_note)
        ef.addRow(self.consent_warning)
        ef.addRow(self.consent)
        ef.addRow(self.redact)
        return extraction

    def _build_schedule(self) -> QGroupBox:
        self.heartbeat = _spin(1, 1440, " min")
        self.interval = _spin(5, 10_080, " min")
        self.decay_hour = _spin(0, 23, ":00")  # the computer's local time (app/jobs.py)
        self.weekday = QComboBox()
        for day in WEEKDAYS:
            self.weekday.addItem(day)
        self.weekday.setMaximumWidth(fit.chars(self.weekday, 26))
        schedule = QGroupBox("Schedule")
        sf = QFormLayout(schedule)
        sf.addRow("Heartbeat (new conversation → facts) every", self.heartbeat)
        sf.addRow("Consolidation every", self.interval)
        sf.addRow("Daily decay and archival at", self.decay_hour)
        sf.addRow("Weekly synthesis on (at midnight)", self.weekday)
        sched_note = QLabel("A changed schedule takes effect as soon as you save it.")
        sched_note.setStyleSheet(theme.NOTE_STYLE)
        sf.addRow(sched_note)
        return schedule

    def _build_lock(self) -> QGroupBox:
        self.idle_minutes = _spin(1, 1440, " min")
        lock = QGroupBox("Auto-lock")
        lf = QFormLayout(lock)
        lf.addRow("Lock after this long without input", self.idle_minutes)
        return lock

    def _build_requests(self) -> QGroupBox:
        """How long an assistant's forget request waits for an answer (issue 26)."""
        self.request_days = _spin(1, 3650, " days")
        box = QGroupBox("Assistants' forget requests")
        form = QFormLayout(box)
        form.addRow("Unanswered requests expire after", self.request_days)
        note = QLabel("An expired request leaves the Inbox and nothing is forgotten; the "
                      "assistant learns it expired.")
        note.setWordWrap(True)
        note.setStyleSheet(theme.NOTE_STYLE)
        form.addRow(note)
        return box

    def _build_backups(self) -> QGroupBox:
        self.backup_folder = QLineEdit()
        self.backup_folder.setPlaceholderText("a folder on another disk, e.g. an external drive")
        self.backup_folder.setAccessibleName("Backup folder")
        pick = QPushButton("Choose…")
        pick.clicked.connect(self._on_backup_pick_clicked)
        row = QWidget()
        rl = QHBoxLayout(row)
        rl.setContentsMargins(0, 0, 0, 0)
        rl.addWidget(self.backup_folder, 1)
        rl.addWidget(pick)
        self.backup_schedule = QComboBox()
        for key, label in BACKUP_SCHEDULES.items():
            self.backup_schedule.addItem(label, key)
        self.backup_schedule.setMaximumWidth(fit.chars(self.backup_schedule, 26))
        self.backup_keep = _spin(1, 365, " backups")
        self.last_backup = theme.plain(QLabel())
        self.last_backup.setObjectName("lastBackup")
        self.last_backup.setWordWrap(True)
        self.last_backup.setStyleSheet(theme.NOTE_STYLE)
        box = QGroupBox("Backups")
        bf = QFormLayout(box)
        bf.addRow("Back up to", row)
        bf.addRow("Scheduled", self.backup_schedule)
        bf.addRow("Keep the last", self.backup_keep)
        bf.addRow(self.last_backup)
        note = QLabel("Encrypted, opened with the vault's password. Older scheduled backups in "
                      "that folder are deleted beyond the number kept; other files never are. "
                      "File > Back up now makes one at any time.")
        note.setWordWrap(True)
        note.setStyleSheet(theme.NOTE_STYLE)
        bf.addRow(note)
        return box

    @Slot()
    def _on_backup_pick_clicked(self) -> None:
        from PySide6.QtWidgets import QFileDialog
        chosen = QFileDialog.getExistingDirectory(self, "A folder for scheduled backups",
                                                  self.backup_folder.text())
        if chosen:
            self.backup_folder.setText(chosen)

    def _build_save_row(self) -> QHBoxLayout:
        self.save_btn = QPushButton("Save")
        self.save_btn.setDefault(True)
        self.save_btn.setEnabled(False)  # until the stored values are in the form
        self.revert_btn = QPushButton("Revert")
        self.save_status = QLabel()
        self.save_status.setObjectName("saveStatus")
        self.save_status.setWordWrap(True)
        save_row = QHBoxLayout()
        save_row.addWidget(self.save_btn)
        save_row.addWidget(self.revert_btn)
        save_row.addWidget(self.save_status, 1)
        return save_row

    def _build_password(self) -> QGroupBox:
        """Change the password, or make a new recovery code (both after the current one)."""
        self.old_pw = QLineEdit()
        self.new_pw = QLineEdit()
        self.repeat_pw = QLineEdit()
        for w in (self.old_pw, self.new_pw, self.repeat_pw):
            w.setEchoMode(QLineEdit.EchoMode.Password)
        self.pw_strength = QLabel()
        self.pw_strength.setStyleSheet(theme.NOTE_STYLE)
        self.pw_btn = QPushButton("Change password")
        self.pw_status = QLabel()
        self.pw_status.setObjectName("passwordStatus")
        self.pw_status.setWordWrap(True)
        password = QGroupBox("Password")
        pf = QFormLayout(password)
        pf.addRow("Current password", self.old_pw)
        pf.addRow("New password", self.new_pw)
        pf.addRow("", self.pw_strength)
        pf.addRow("Repeat new password", self.repeat_pw)
        # A recovery code needs the current password too: an unlocked window left alone
        # must not hand out a lasting way in.
        self.recovery_btn = QPushButton("New recovery code…")
        self.recovery_btn.setToolTip("Make a recovery code (after the current password): it "
                                     "sets a new password if you forget yours. Any earlier "
                                     "code stops working.")
        pw_row = QHBoxLayout()
        pw_row.addWidget(self.pw_btn)
        pw_row.addWidget(self.recovery_btn)
        pw_row.addWidget(self.pw_status, 1)
        pf.addRow(pw_row)
        return password

    def _build_device(self) -> QGroupBox:
        """Remember on this device: shown only once a real OS keychain is confirmed."""
        self.remember = QCheckBox("Remember on this device")
        self.remember.setObjectName("remember")
        self.remember.hide()
        self.keychain_note = QLabel("Checking for a system keychain…")
        self.keychain_note.setObjectName("keychainNote")
        self.keychain_note.setWordWrap(True)
        self.keychain_note.setStyleSheet(theme.NOTE_STYLE)
        self.keychain_status = QLabel()
        self.keychain_status.setWordWrap(True)
        device = QGroupBox("This device")
        dl = QVBoxLayout(device)
        dl.addWidget(self.remember)
        dl.addWidget(self.keychain_note)
        dl.addWidget(self.keychain_status)
        self._build_assistant_unlock(dl)
        return device

    def _build_assistant_unlock(self, dl: QVBoxLayout) -> None:
        """Assistants may unlock an idle-locked ``kept serve`` from this device's keychain:
        off by default, shown with the keychain, usable once this device is remembered."""
        self.assistant_unlock = QCheckBox("Let assistants unlock Kept with this device's "
                                          "keychain")
        self.assistant_unlock.setObjectName("assistantUnlock")
        self.assistant_unlock.hide()
        self.assistant_unlock_note = QLabel(ASSISTANT_UNLOCK_NOTE)
        self.assistant_unlock_note.setObjectName("assistantUnlockNote")
        self.assistant_unlock_note.setWordWrap(True)
        self.assistant_unlock_note.setStyleSheet(theme.WARNING_STYLE)
        self.assistant_unlock_note.hide()
        dl.addWidget(self.assistant_unlock)
        dl.addWidget(self.assistant_unlock_note)
        self.assistant_unlock.clicked.connect(self._on_assistant_unlock_clicked)
        self.remember.toggled.connect(self._on_remember_toggled)

    # --- loading ------------------------------------------------------------------------
    def refresh(self) -> None:
        vault = self.vault

        def load() -> Stored:
            values = {k: vault.setting(k) for k in FORM_KEYS}
            backups = vault.backups()
            return values, backups[0] if backups else None, bool(vault.status().remember_device)
        self.load(load, self._fill)

    def _probe_keychain(self) -> None:
        """Separate from the form: the first keyring import can take seconds (backend
        discovery), and it may block or prompt, so it never delays the settings."""
        def probe() -> bool:
            return bool(bootstrap.keyring_available())
        run_query(self, probe, self._fill_keychain, lambda _exc: self._fill_keychain(False))

    def wants(self, changes: Changes) -> bool:
        # Never overwrite edits the person has not saved yet.
        return changes.settings and not self.dirty()

    def _fill(self, result: Stored) -> None:
        values, last, remembered = result
        self._stored_consent = str(values["extraction.cloud_consent"] or "")
        i = self.provider.findData(values["extraction.provider"])
        self.provider.setCurrentIndex(max(i, 0))
        self.base_url.setText(str(values["extraction.llm_base_url"] or ""))
        self.model_name.setText(str(values["extraction.llm_model"] or ""))
        self.redact.setChecked(bool(values["extraction.redact"]))
        self.heartbeat.setValue(setting_int(values["consolidation.heartbeat_minutes"]))
        self.interval.setValue(setting_int(values["consolidation.interval_minutes"]))
        self.decay_hour.setValue(setting_int(values["consolidation.decay_hour"]))
        self.weekday.setCurrentIndex(setting_int(values["consolidation.synthesis_weekday"]) % 7)
        self.idle_minutes.setValue(setting_int(values["lock.idle_minutes"]))
        self.backup_folder.setText(str(values["backup.folder"] or ""))
        self.backup_schedule.setCurrentIndex(
            max(self.backup_schedule.findData(values["backup.schedule"] or "off"), 0))
        self.backup_keep.setValue(int(values["backup.keep"] or 1))
        self.request_days.setValue(setting_int(values["forget.request_days"]) or 30)
        if last is None:
            self.last_backup.setText("Last backup: none yet.")
        else:

            self.last_backup.setText(
                f"Last backup: {words.when(last.created_at)} (every memory and version, the "
                f"Archive too), {last.path}" + ("" if last.exists else
                                                 " (gone or replaced since)"))
        self._update_endpoint()
        self._loaded = self.form_values()
        self.save_btn.setEnabled(True)
        self.remember.setChecked(remembered)

    def _fill_keychain(self, available: bool) -> None:
        self.keychain_available = available
        self.remember.setVisible(available)
        self.remember.setEnabled(available)
        self.assistant_unlock.setVisible(available)
        self.assistant_unlock_note.setVisible(available)
        self._on_remember_toggled(self.remember.isChecked())
        if available:
            vault = self.vault
            run_query(self, vault.assistant_unlock, self._fill_assistant_unlock,
                      lambda _exc: self._fill_assistant_unlock(False))
            self.keychain_note.setText(
                "Unlock on this computer without typing the password: a device key is kept in "
                "the system keychain. Anyone who can use your account here can then open the "
                "vault. Off by default.")
        else:
            self.keychain_note.setText(
                "Remember on this device is not available: this computer has no secure system "
                "keychain that Kept trusts, so the password is always needed to unlock.")

    # --- the form -----------------------------------------------------------------------
    def _normalised(self, url: str) -> str | None:
        """The endpoint as consent records it, or None if it is not a usable URL."""
        try:
            return str(self.vault.check_endpoint(url))
        except ValidationError:
            return None

    def _remote(self, normalised: str) -> bool:
        """Outside this computer: snippets go there only with consent for exactly it."""
        return self.vault.consent_text(normalised) is not None

    def form_values(self) -> dict[str, SettingValue]:
        url = self.base_url.text().strip()
        normalised = self._normalised(url)
        consent = ""
        if normalised and self._remote(normalised) and self.consent.isChecked():
            consent = normalised
        return {
            "extraction.provider": self.provider.currentData(),
            "extraction.llm_base_url": url,
            "extraction.llm_model": self.model_name.text().strip(),
            "extraction.cloud_consent": consent,
            "extraction.redact": self.redact.isChecked(),
            "consolidation.heartbeat_minutes": self.heartbeat.value(),
            "consolidation.interval_minutes": self.interval.value(),
            "consolidation.decay_hour": self.decay_hour.value(),
            "consolidation.synthesis_weekday": self.weekday.currentIndex(),
            "lock.idle_minutes": self.idle_minutes.value(),
            "backup.folder": self.backup_folder.text().strip(),
            "backup.schedule": self.backup_schedule.currentData(),
            "backup.keep": self.backup_keep.value(),
            "forget.request_days": self.request_days.value(),
        }

    def dirty(self) -> bool:
        return self._loaded is not None and self.form_values() != self._loaded

    def _update_endpoint(self, *, url_changed: bool = True) -> None:
        """Show the loopback note, or the consent warning and box, for the URL as typed."""
        llm = self.provider.currentData() == "llm"
        for w in (self.base_url, self.model_name, self.redact, self.consent):
            w.setEnabled(llm)
        url = self.base_url.text().strip()
        normalised = self._normalised(url)
        remote = normalised is not None and self._remote(normalised)
        if not url:
            note = "Used only when the provider is an LLM." if not llm else \
                "Give the endpoint's base URL."
        elif normalised is None:
            note = "Not an http:// or https:// URL with a host."
        elif remote:
            note = ""
        else:
            note = "This endpoint is on this computer: nothing leaves it."
        self.endpoint_note.setText(note)
        self.endpoint_note.setVisible(bool(note))
        self.consent_warning.setVisible(remote)
        self.consent.setVisible(remote)
        if remote:
            assert normalised is not None
            self.consent_warning.setText(self.vault.consent_text(normalised) or "")
        if url_changed:
            # Consent belongs to exactly one endpoint: another URL starts unticked.
            self.consent.setChecked(remote and normalised == self._normalised(self._stored_consent))

    @Slot(int)
    def _on_provider_current_index_changed(self, _i: int) -> None:
        self._update_endpoint(url_changed=False)

    @Slot(str)
    def _on_base_url_text_changed(self, _text: str) -> None:
        self._update_endpoint()

    def validate(self, values: dict[str, SettingValue]) -> tuple[str, QWidget | None] | None:
        """(message, widget to focus) or None when the form may be saved (no I/O but a
        look at whether the backup folder exists)."""
        folder = str(values["backup.folder"])
        if folder and not Path(folder).expanduser().is_dir():
            return f"The backup folder {folder} does not exist.", self.backup_folder
        if values["backup.schedule"] != "off" and not folder:
            return "Choose a folder for scheduled backups, or turn them off.", self.backup_folder
        url = str(values["extraction.llm_base_url"])
        normalised = self._normalised(url) if url else None
        if url and normalised is None:
            return ("The endpoint must be an http:// or https:// URL with a host, without a "
                    "user name or password.", self.base_url)
        if values["extraction.provider"] == "llm":
            if not url:
                return "Give the LLM endpoint's base URL, or choose rules.", self.base_url
            if not values["extraction.llm_model"]:
                return "Give the model name at that endpoint.", self.model_name
            assert normalised is not None
            if self._remote(normalised) and values["extraction.cloud_consent"] != normalised:
                return ("This endpoint is outside this computer: tick the consent box to send "
                        "memories to it, or use a local endpoint.", self.consent)
        return None

    def _status(self, label: QLabel, text: str, *, error: bool = False) -> None:
        label.setStyleSheet(theme.ERROR_STYLE if error else theme.OK_STYLE)
        label.setText(text)

    def _error(self, label: QLabel) -> Callable[[str], None]:
        """Says a failure on ``label`` (for ``errors.report_error``)."""
        return lambda text: self._status(label, text, error=True)

    @Slot()
    def _on_revert_btn_clicked(self) -> None:
        self._status(self.save_status, "")
        self.refresh()

    @Slot()
    def _on_save_btn_clicked(self) -> None:
        values = self.form_values()
        problem = self.validate(values)
        if problem is not None:
            message, widget = problem
            self._status(self.save_status, message, error=True)
            if widget is not None:
                widget.setFocus()
            return
        loaded = self._loaded or {}
        changed = {k: v for k, v in values.items() if loaded.get(k) != v}
        if not changed:
            self._status(self.save_status, "Nothing changed.")
            return
        self.save_btn.setEnabled(False)
        self._status(self.save_status, "Saving…")
        vault = self.vault

        def save() -> Result[None]:
            from app.changes import NO_CHANGES
            changes = NO_CHANGES
            for key, value in changed.items():
                changes = changes.merge(vault.set_setting(key, value).changes)
            return Result(None, changes)

        def done(_result: Result[None]) -> None:
            self.save_btn.setEnabled(True)
            self._loaded = values
            self._stored_consent = str(values["extraction.cloud_consent"])
            if "lock.idle_minutes" in changed:
                self.idle_minutes_changed.emit(float(values["lock.idle_minutes"]))
            names = ", ".join(BY_KEY[k].label.split(" (")[0].lower() for k in changed
                              if k in BY_KEY)
            self._status(self.save_status, f"Saved: {names}.")

        def failed(exc: BaseException) -> None:
            self.save_btn.setEnabled(True)
            errors.report_error(self, exc, self._error(self.save_status), otherwise="Not saved.")
        run_op(self, save, done, self.bridge, failed)

    # --- password -----------------------------------------------------------------------
    @Slot(str)
    def _on_new_pw_text_changed(self, text: str) -> None:
        from ui.dialogs.unlock import strength
        self._status(self.pw_status, "")
        _bits, word = strength(text)
        self.pw_strength.setText(f"Strength: {word}" if word else "")

    def validate_password(self) -> tuple[str, QLineEdit] | None:
        old, new, repeat = self.old_pw.text(), self.new_pw.text(), self.repeat_pw.text()
        if not old:
            return "Type your current password.", self.old_pw
        if validation.password_too_short(new):
            return (f"Use at least {validation.MIN_PASSWORD_LENGTH} characters for the new "
                    "password; a few words are easiest."), self.new_pw
        if new != repeat:
            return "The two new passwords differ.", self.repeat_pw
        if new == old:
            return "The new password is the same as the current one.", self.new_pw
        return None

    @Slot()
    def _on_pw_btn_clicked(self) -> None:
        problem = self.validate_password()
        if problem is not None:
            message, widget = problem
            self._status(self.pw_status, message, error=True)
            widget.setFocus()
            return
        old, new = self.old_pw.text(), self.new_pw.text()
        for w in (self.pw_btn, self.old_pw, self.new_pw, self.repeat_pw):
            w.setEnabled(False)
        self._status(self.pw_status, "Changing the password…")
        vault = self.vault

        def enable() -> None:
            for w in (self.pw_btn, self.old_pw, self.new_pw, self.repeat_pw):
                w.setEnabled(True)

        def done(_result: Result[None]) -> None:
            enable()
            for w in (self.old_pw, self.new_pw, self.repeat_pw):
                w.clear()
            self._status(self.pw_status, "Password changed. Use the new one from now on.")

        def failed(exc: BaseException) -> None:
            enable()
            if errors.report_error(self, exc, self._error(self.pw_status),
                                   otherwise="The password was not changed."):
                self.old_pw.selectAll()  # WrongKey: nothing was changed
                self.old_pw.setFocus()
        run_op(self, lambda: vault.change_password(old, new), done, self.bridge, failed)

    @Slot()
    def _on_recovery_btn_clicked(self) -> None:
        old = self.old_pw.text()
        if not old:
            self._status(self.pw_status, "Type your current password.", error=True)
            self.old_pw.setFocus()
            return
        self.recovery_btn.setEnabled(False)
        self._status(self.pw_status, "Making a recovery code…")
        vault = self.vault

        def done(code: str) -> None:
            from ui.dialogs.unlock import RecoveryCodeDialog
            self.recovery_btn.setEnabled(True)
            self.old_pw.clear()
            self._status(self.pw_status, "A new recovery code was made; any earlier one no "
                         "longer works.")
            RecoveryCodeDialog(code, self, folder=self.vault.folder).exec()

        def failed(exc: BaseException) -> None:
            self.recovery_btn.setEnabled(True)
            if errors.report_error(self, exc, self._error(self.pw_status),
                                   otherwise="No recovery code was made."):
                self.old_pw.selectAll()  # WrongKey: nothing was changed
                self.old_pw.setFocus()
        run_query(self, lambda: vault.add_recovery_code(old), done, failed)

    # --- keychain -----------------------------------------------------------------------
    @Slot(bool)
    def _on_remember_clicked(self, on: bool) -> None:
        self.remember.setEnabled(False)
        self.keychain_status.setStyleSheet(theme.NOTE_STYLE)
        self.keychain_status.setText("Asking the system keychain…")
        vault = self.vault
        fn = vault.remember_device if on else vault.forget_device

        def done(_result: Result[None]) -> None:
            self.remember.setEnabled(True)
            self._status(self.keychain_status, "This device now unlocks without the password."
                         if on else "This device no longer remembers the vault.")
            if not on:  # the device key is gone: so is what let assistants unlock with it
                self._fill_assistant_unlock(False)

        def failed(exc: BaseException) -> None:
            self.remember.setEnabled(True)
            self.remember.setChecked(not on)
            errors.report_error(self, exc, self._error(self.keychain_status),
                                otherwise="Nothing was changed.")
        run_op(self, fn, done, self.bridge, failed)

    def _fill_assistant_unlock(self, on: bool) -> None:
        self.assistant_unlock.setChecked(on)

    @Slot(bool)
    def _on_remember_toggled(self, on: bool) -> None:
        self.assistant_unlock.setEnabled(on and bool(self.keychain_available))

    @Slot(bool)
    def _on_assistant_unlock_clicked(self, on: bool) -> None:
        self.assistant_unlock.setEnabled(False)
        vault = self.vault

        def done(_result: Result[None]) -> None:
            self.assistant_unlock.setEnabled(self.remember.isChecked())
            self._status(self.keychain_status,
                         "Assistants may now unlock Kept from this device's keychain." if on
                         else "Assistants can no longer unlock Kept: it waits for you.")

        def failed(exc: BaseException) -> None:
            self.assistant_unlock.setEnabled(self.remember.isChecked())
            self.assistant_unlock.setChecked(not on)
            errors.report_error(self, exc, self._error(self.keychain_status),
                                otherwise="Nothing was changed.")
        run_op(self, lambda: vault.set_assistant_unlock(on), done, self.bridge, failed)
