"""The File menu's dialogs (issue 16): Export, Back up now, Restore. Layer: ui. GUI thread.

Each dialog only gathers and checks what the person chose; the work runs in the window
(``ui.file_menu``) on a worker with progress, while the dialog stays open saying so. It closes
when the work succeeded; a refusal or failure is said in it and nothing typed is lost
(``WorkDialog``). The export dialog states that the files are
plaintext and where they go, warns visibly about a cloud-synced folder and needs an explicit
tick before its button works, as ``kept export`` needs a typed 'export'.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Slot
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.errors import ValidationError
from ui import choosers, fit, theme
from ui.dialogs.work import WorkDialog

FORMATS = {"markdown": "Markdown folder (people, projects, areas, days…)",
           "json": "JSON file (everything, one documented schema)"}


def _path_row(edit: QLineEdit, browse: QPushButton, name: str) -> QWidget:
    """A path field with its Choose… button; ``name``, the form row's label, names both for
    a screen reader (the row's label belongs to the row, not to the field in it)."""
    edit.setAccessibleName(name)
    browse.setAccessibleName(f"Choose the {name[0].lower()}{name[1:]}…")
    row = QWidget()
    lay = QHBoxLayout(row)
    lay.setContentsMargins(0, 0, 0, 0)
    lay.addWidget(edit, 1)
    lay.addWidget(browse)
    browse.setAutoDefault(False)  # Enter in a field does the dialog's action, never "Choose…"
    return row


class ExportDialog(WorkDialog):
    """Format and target; ``target()`` and ``fmt()`` once accepted."""

    def __init__(self, vault_folder: Path | None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.vault_folder = vault_folder
        self.setWindowTitle(f"Export {theme.vault_name(vault_folder)}" if vault_folder
                            else "Export")
        self.resize(620, 300)
        self.format = QComboBox()
        for key, label in FORMATS.items():
            self.format.addItem(label, key)
        self.path = QLineEdit()
        self.path.setPlaceholderText("a new or empty folder")
        browse = QPushButton("Choose…")
        browse.clicked.connect(self._on_browse_clicked)
        form = QFormLayout()
        form.addRow("Format", self.format)
        form.addRow("Write to", _path_row(self.path, browse, "Export folder"))
        self.warning = theme.plain(QLabel())
        self.warning.setWordWrap(True)
        self.cloud = theme.plain(QLabel())
        self.cloud.setObjectName("cloudWarning")
        self.cloud.setWordWrap(True)
        self.cloud.setStyleSheet(theme.BANNER_STYLE)
        self.cloud.hide()
        self.understood = QCheckBox("I understand: these files are not encrypted")
        lay = QVBoxLayout(self)
        lay.addLayout(form)
        lay.addWidget(self.warning)
        lay.addWidget(self.cloud)
        lay.addWidget(self.understood)
        lay.addStretch(1)
        self._finish(lay, "Export")
        self.format.currentIndexChanged.connect(self._on_changed)
        self.path.textChanged.connect(self._on_changed)
        self.understood.toggled.connect(self._on_changed)
        self._on_changed()
        fit.fit_to_text(self)

    def fmt(self) -> str:
        return str(self.format.currentData())

    def target(self) -> Path:
        return Path(self.path.text().strip()).expanduser()

    @Slot()
    def _on_browse_clicked(self) -> None:
        if self.fmt() == "markdown":
            chosen = choosers.new_folder(self, "Export to a new or empty folder",
                                         "Kept export", self.vault_folder)
        else:
            chosen = choosers.new_file(self, "Export to a new file", "kept.json",
                                       "JSON (*.json)", self.vault_folder)
        if chosen is not None:
            self.path.setText(str(chosen))

    @Slot()
    def _on_changed(self, *_a: object) -> None:
        from app.transfer import cloud_service
        where = self.path.text().strip()
        what = "folder" if self.fmt() == "markdown" else "file"
        self.path.setPlaceholderText("a new or empty folder" if what == "folder"
                                     else "a new file, e.g. kept.json")
        self.warning.setText(
            f"This writes everything Kept holds about you, UNENCRYPTED, to the {what} "
            f"{fit.breakable(where) or '(choose one)'}: readable by your user account, and by anything that "
            "reads or backs up your files.")
        cloud = cloud_service(self.target()) if where else None
        self.cloud.setVisible(bool(cloud))
        if cloud:
            self.cloud.setText(f"Warning: {fit.breakable(where)} is inside a {cloud} folder. The export will "
                               f"be uploaded to {cloud} and stored there in plaintext.")
        self.go.setEnabled(bool(where) and self.understood.isChecked())

    def _after_busy(self) -> None:
        self._on_changed()

    def checked_target(self) -> Path:
        """The absolute target, or ``ValidationError`` (the same checks as ``kept export``)."""
        from app.transfer import export_target
        return export_target(self.target(), self.fmt(), self.vault_folder)


class BackupDialog(WorkDialog):
    """A new backup file, and whose password opens it. ``vault_folder``: the vault backed up,
    named in the title."""

    def __init__(self, folder: str = "", parent: QWidget | None = None, *,
                 vault_folder: Path | None = None) -> None:
        super().__init__(parent)
        from app.clock import SystemClock
        from app.transfer import backup_name
        self.setWindowTitle(f"Back up {theme.vault_name(vault_folder)} now" if vault_folder
                            else "Back up now")
        self.resize(600, 260)
        start = Path(folder) / backup_name(SystemClock().now()) if folder else Path()
        self.path = QLineEdit(str(start) if folder else "")
        self.path.setPlaceholderText("a new file, e.g. kept.keptbackup")
        browse = QPushButton("Choose…")
        browse.clicked.connect(self._on_browse_clicked)
        self.own = QCheckBox("Give the backup a password of its own (else: the vault's "
                             "password as it is now)")
        self.pw1 = QLineEdit()
        self.pw2 = QLineEdit()
        for e in (self.pw1, self.pw2):
            e.setEchoMode(QLineEdit.EchoMode.Password)
            e.setEnabled(False)
        self.own.toggled.connect(self.pw1.setEnabled)
        self.own.toggled.connect(self.pw2.setEnabled)
        form = QFormLayout()
        form.addRow("Backup file", _path_row(self.path, browse, "Backup file"))
        form.addRow("", self.own)
        form.addRow("Password", self.pw1)
        form.addRow("Repeat", self.pw2)
        note = QLabel("One encrypted file, read back and checked after writing. Keep it on "
                      "another disk.")
        note.setWordWrap(True)
        lay = QVBoxLayout(self)
        lay.addLayout(form)
        lay.addWidget(note)
        lay.addStretch(1)
        self._finish(lay, "Back up")
        fit.fit_to_text(self)

    def _after_busy(self) -> None:
        self.pw1.setEnabled(self.own.isChecked())
        self.pw2.setEnabled(self.own.isChecked())

    @Slot()
    def _on_browse_clicked(self) -> None:
        chosen = choosers.new_file(self, "Back up to a new file",
                                   self.path.text() or "kept.keptbackup",
                                   "Kept backups (*.keptbackup);;All files (*)")
        if chosen is not None:
            self.path.setText(str(chosen))

    def checked(self) -> tuple[Path, str | None]:
        """(new file, its own password or None), or ``ValidationError``."""
        text = self.path.text().strip()
        if not text:
            raise ValidationError("Choose a file for the backup.")
        path = Path(text).expanduser().absolute()
        if path.exists() or path.is_symlink():
            raise ValidationError(f"{path} already exists; Kept does not overwrite a file with "
                                  "a backup. Choose a new name.")
        if not path.parent.is_dir():
            raise ValidationError(f"The folder {path.parent} does not exist.")
        if not self.own.isChecked():
            return path, None
        if not self.pw1.text():
            raise ValidationError("The backup password is empty; nothing was written.")
        if self.pw1.text() != self.pw2.text():
            raise ValidationError("The two passwords differ; nothing was written.")
        return path, self.pw1.text()


class RestoreDialog(WorkDialog):
    """A backup file, a new folder and the backup's password."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Restore a backup")
        self.resize(620, 240)
        self.file = QLineEdit()
        self.file.setPlaceholderText("a .keptbackup file")
        pick_file = QPushButton("Choose…")
        pick_file.clicked.connect(self._on_pick_file_clicked)
        self.folder = QLineEdit()
        self.folder.setPlaceholderText("a new or empty folder: restoring never overwrites")
        pick_folder = QPushButton("Choose…")
        pick_folder.clicked.connect(self._on_pick_folder_clicked)
        self.password = QLineEdit()
        self.password.setEchoMode(QLineEdit.EchoMode.Password)
        form = QFormLayout()
        form.addRow("Backup file", _path_row(self.file, pick_file, "Backup file"))
        form.addRow("New vault folder", _path_row(self.folder, pick_folder,
                                                    "New vault folder"))
        form.addRow("Backup password", self.password)
        note = QLabel("The backup becomes a new vault in that folder, opened with the "
                      "backup's password. The vault open now stays as it is.")
        note.setWordWrap(True)
        lay = QVBoxLayout(self)
        lay.addLayout(form)
        lay.addWidget(note)
        lay.addStretch(1)
        self._finish(lay, "Restore")
        fit.fit_to_text(self)

    @Slot()
    def _on_pick_file_clicked(self) -> None:
        chosen = choosers.open_file(self, "A Kept backup",
                                    "Kept backups (*.keptbackup);;All files (*)")
        if chosen is not None:
            self.file.setText(str(chosen))

    @Slot()
    def _on_pick_folder_clicked(self) -> None:
        chosen = choosers.new_folder(self, "A name for the restored vault's folder",
                                     "Restored vault")
        if chosen is not None:
            self.folder.setText(str(chosen))

    def checked(self) -> tuple[Path, Path, str]:
        """(backup file, new vault folder, password), or an ``AppError`` before anything is
        written: an existing vault there is refused, as ``kept backup restore`` does."""
        from app import bootstrap
        from app.errors import VaultExists
        if not self.file.text().strip() or not self.folder.text().strip():
            raise ValidationError("Choose the backup file and a new folder for the vault.")
        path = Path(self.file.text().strip()).expanduser().absolute()
        if not path.is_file():
            raise ValidationError(f"No backup file at {path}.")
        folder = Path(self.folder.text().strip()).expanduser().absolute()
        if bootstrap.vault_exists(folder):
            raise VaultExists("A vault already exists there; restoring never overwrites one. "
                              "Name a new or empty folder.")
        bootstrap.check_new_vault_folder(folder)
        if not self.password.text():
            raise ValidationError("Type the backup's password.")
        return path, folder, self.password.text()
