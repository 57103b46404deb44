"""The window's File menu (issue 16): New vault, Open vault, Import, Export, Back up now,
Restore, Quit. Layer: ui. GUI thread; the work runs through ``ui.tasks`` with the window's
progress bar (``MainWindow._begin_work``), the same services as ``kept import``, ``kept export``
and ``kept backup``.

Switching vaults is the controller's (``ui.main``): the menu emits ``vault_requested`` with
the folder, and the controller locks this vault (socket, scheduler, keys) and asks for the
other one's password, or creates it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar, cast

from PySide6.QtCore import QObject, Qt, Signal, Slot
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QApplication, QLineEdit

from app import words
from app.api import BackupCheck, BackupRecord
from app.changes import Changes, Result
from app.errors import AppError, ValidationError
from ui import choosers, errors
from ui.dialogs import confirm
from ui.tasks import run_op, run_query
from ui.work_window import WorkWindow

if TYPE_CHECKING:
    from app.transfer import FileImport
    from ui.dialogs.files import BackupDialog, ExportDialog, RestoreDialog
    from ui.dialogs.work import WorkDialog

D = TypeVar("D", bound="WorkDialog")

IMPORT_FILTER = ("Chats and notes (*.json *.jsonl *.md *.markdown *.txt *.zip);;"
                 "ChatGPT or Claude export (conversations.json) (*.json);;"
                 "Kept JSON Lines (*.jsonl);;Markdown or text notes (*.md *.markdown *.txt);;"
                 "All files (*)")


class FileMenu(QObject):
    """Owner: the main window. ``folder``: the open vault's folder (None: unknown)."""

    vault_requested = Signal(object)  # Path: lock this vault, then open or create that one

    def __init__(self, window: WorkWindow, folder: Path | None) -> None:
        super().__init__(window)  # no Python reference back to the window: no cycle for
        self.folder = folder      # the GC to break on a worker thread (Qt objects die there)
        self.last_message = ""  # the latest outcome said in the status bar (tests read it)
        menu = window.menuBar().addMenu("&File")

        from ui.menus import add_action

        def act(label: str, slot: Callable[[], None], key: str | None = None) -> QAction:
            return add_action(menu, window, label, slot, key)
        self.new_action = act("New vault…", self._on_new_triggered, "Ctrl+Shift+N")
        self.open_action = act("Open vault…", self._on_open_triggered,
                               "Ctrl+O")
        self.recent_menu = menu.addMenu("Open &recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent)
        self._fill_recent()
        menu.addSeparator()
        self.import_action = act("Import…", self._on_import_triggered, "Ctrl+I")
        self.export_action = act("Export…", self._on_export_triggered, "Ctrl+E")
        menu.addSeparator()
        self.backup_action = act("Back up now…", self._on_backup_triggered, "Ctrl+B")
        self.restore_action = act("Restore…", self._on_restore_triggered)
        menu.addSeparator()
        self.quit_action = act("Quit", self._on_quit_triggered, "Ctrl+Q")
        self.menu = menu

    @property
    def window(self) -> WorkWindow:
        # Made with the window as its Qt parent, and no Python reference back (see __init__).
        return cast(WorkWindow, self.parent())

    def _say(self, text: str) -> None:
        self.last_message = text
        self.window.statusBar().showMessage(text, 20_000)

    def _fail(self, exc: BaseException, dlg: WorkDialog | None = None,
              field: QLineEdit | None = None) -> None:
        self.window._end_work()
        self.window.statusBar().clearMessage()
        self._refuse(exc, dlg, field)

    def _refuse(self, exc: BaseException, dlg: WorkDialog | None = None,
                field: QLineEdit | None = None) -> None:
        """Say why: in ``dlg`` when the work came from one (it stays open, ``field`` gets the
        focus), else in a popup."""
        self.last_message = exc.user_message if isinstance(exc, AppError) else type(exc).__name__
        if dlg is None:
            errors.show_error(self.window, exc)
        else:
            dlg.refuse(exc, field)

    # --- vaults -----------------------------------------------------------------------------
    @Slot()
    def _on_new_triggered(self) -> None:
        chosen = choosers.new_folder(self.window, "A name for the new vault's folder",
                                     "Kept vault", self.folder)
        if chosen is not None:
            self.new_vault(chosen)

    def new_vault(self, folder: Path) -> bool:
        """Checked here, before this vault locks: a folder holding a vault or other files is
        refused with one message."""
        from app import bootstrap
        try:
            if bootstrap.vault_exists(folder):
                raise ValidationError(f"{folder} already holds a vault: use Open vault.")
            bootstrap.check_new_vault_folder(folder)
        except AppError as exc:
            self._refuse(exc)
            return False
        self.vault_requested.emit(folder)
        return True

    @Slot()
    def _on_open_triggered(self) -> None:
        chosen = choosers.existing_folder(self.window, "A vault folder", self.folder)
        if chosen is not None:
            self.open_vault(chosen)

    @Slot()
    def _fill_recent(self) -> None:
        """The vaults opened lately that still exist, the open one left out."""
        from app import bootstrap
        from app.prefs import Prefs
        self.recent_menu.clear()
        here = str(self.folder.expanduser().absolute()) if self.folder is not None else None
        shown = 0
        for text in Prefs.load().recent:
            folder = Path(text)
            if text == here or not bootstrap.vault_exists(folder):
                continue
            shown += 1
            action = self.recent_menu.addAction(f"&{shown} {folder.name} ({folder.parent})")
            action.setToolTip(text)
            action.triggered.connect(lambda _c=False, f=folder: self.open_vault(f))
        if not shown:
            none = self.recent_menu.addAction("No other vault opened lately")
            none.setEnabled(False)

    def open_vault(self, folder: Path) -> bool:
        from app import bootstrap
        if not bootstrap.vault_exists(folder):
            self._refuse(ValidationError(f"There is no Kept vault in {folder}."))
            return False
        self.vault_requested.emit(folder)
        return True

    # --- import ---------------------------------------------------------------------------
    @Slot()
    def _on_import_triggered(self) -> None:
        path = choosers.open_file(self.window, "Import chats or notes", IMPORT_FILTER)
        if path is not None:
            self.import_file(path)

    def import_file(self, path: Path) -> None:
        """Any format ``kept import`` reads, detected by content: first the whole file is
        checked (a malformed one is refused, nothing written), then imported in batches with
        progress; turns show up in the list while it runs."""
        from app.transfer import import_file
        vault = self.window.vault
        box, cancel = self.window._begin_import_work()

        def run() -> Result[FileImport]:
            # An import's outcome as a ``Result``: ``run_op`` broadcasts its changes.
            return Result(import_file(vault, path, progress=box.report, cancel=cancel),
                          Changes(memories=True))

        def done(result: Result[FileImport]) -> None:
            self.window._end_work()
            self.window.watch_background()  # the vectors follow: "finding meaning" (issue 28)
            r, fmt = result.value.report, result.value.format_name
            if result.value.cancelled:
                self._say(f"Import cancelled: {words.count(r.added, 'turn', 'turns')} imported "
                          f"and kept ({r.turns:,} of the {result.value.total:,} in {path.name} "
                          "read); import the same file again to add the rest")
                return
            self._say(f"Imported {words.count(r.added, 'turn', 'turns')} of "
                      f"{words.count(r.sessions, 'conversation', 'conversations')} from "
                      f"{path.name} (read as {fmt})"
                      + (f"; {r.skipped_duplicates:,} were already there"
                         if r.skipped_duplicates else "")
                      + "".join(f"; {s}" for s in r.skipped))
        run_op(self.window, run, done, self.window.bridge, self._fail)

    # --- export ---------------------------------------------------------------------------
    @Slot()
    def _on_export_triggered(self) -> None:
        from ui.dialogs.files import ExportDialog
        self._open(ExportDialog(self.folder, self.window), self.export_from)

    def _open(self, dlg: D, submit: Callable[[D], bool]) -> None:
        """Show ``dlg`` window-modal; its action calls ``submit(dlg)``, which closes it once
        the work succeeded."""
        dlg.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dlg.submitted.connect(lambda: submit(dlg))
        dlg.open()

    def export_from(self, dlg: ExportDialog) -> bool:
        try:
            target = dlg.checked_target()
        except AppError as exc:
            self._fail(exc, dlg, dlg.path)
            return False
        dlg.set_busy("Exporting…")
        self.export(dlg.fmt(), target, dlg)
        return True

    def export(self, fmt: str, target: Path, dlg: ExportDialog | None = None) -> None:
        from app.transfer import export
        vault = self.window.vault
        box = self.window._begin_work("Exporting", "memories")

        def done(written: tuple[int, int, str]) -> None:
            self.window._end_work()
            memories, files, where = written
            in_files = f"{files:,} files in " if fmt == "markdown" else ""
            self._say(f"Exported {memories:,} memories to {in_files}{where} (plaintext)")
            if dlg is not None:
                dlg.accept()
        run_query(self.window, lambda: export(vault, fmt, target, now=time.time(),
                                              progress=box.report), done,
                  lambda exc: self._fail(exc, dlg, dlg.path if dlg is not None else None))

    # --- backups --------------------------------------------------------------------------
    @Slot()
    def _on_backup_triggered(self) -> None:
        from ui.dialogs.files import BackupDialog
        folder = str(self.window.vault.setting("backup.folder") or "")
        self._open(BackupDialog(folder, self.window, vault_folder=self.folder),
                   self.backup_from)

    def backup_from(self, dlg: BackupDialog) -> bool:
        try:
            path, own = dlg.checked()
        except AppError as exc:
            self._fail(exc, dlg)
            return False
        dlg.set_busy("Backing up…")
        self.backup(path, own, dlg)
        return True

    def backup(self, path: Path, password: str | None = None,
               dlg: BackupDialog | None = None) -> None:
        vault = self.window.vault
        box = self.window._begin_work("Backing up", "MB")

        def done(result: Result[BackupRecord]) -> None:
            self.window._end_work()
            rec = result.value
            # In the status bar's figure (one row per thing said), not the file's row count
            # (which holds each turn's short-term copy too): the two never disagree.
            figure = self.window.memory_figure or "the vault"
            self._say(f"Backed up {figure}, every version and the Archive too, to {rec.path} "
                      f"({rec.bytes / 1e6:.1f} MB, encrypted; read back and checked)")
            if dlg is not None:
                dlg.accept()
        run_op(self.window, lambda: vault.backup(path, password, progress=box.report), done,
               self.window.bridge, lambda exc: self._fail(exc, dlg))

    @Slot()
    def _on_restore_triggered(self) -> None:
        from ui.dialogs.files import RestoreDialog
        self._open(RestoreDialog(self.window), self.restore_from)

    def restore_from(self, dlg: RestoreDialog, *, ask_open: bool = True) -> bool:
        try:
            path, folder, password = dlg.checked()
        except AppError as exc:
            self._fail(exc, dlg)
            return False
        dlg.set_busy("Restoring…")
        self.restore(path, folder, password, ask_open=ask_open, dlg=dlg)
        return True

    def restore(self, path: Path, folder: Path, password: str, *, ask_open: bool = True,
                dlg: RestoreDialog | None = None) -> None:
        from app import bootstrap
        from app.errors import WrongKey
        self.window._begin_work("Restoring", "MB")

        def failed(exc: BaseException) -> None:  # a wrong password: that field, to type again
            self._fail(exc, dlg, dlg.password if dlg is not None and isinstance(exc, WrongKey)
                       else None)

        def done(chk: BackupCheck) -> None:
            self.window._end_work()
            if dlg is not None:
                dlg.accept()
            self._say(f"Restored {chk.memories:,} memories into {folder}; it opens with the "
                      "backup's password")
            if ask_open:
                confirm.ask(self.window, "Restored",
                            f"Restored {chk.memories:,} memories into {folder}. Lock this vault "
                            "and open the restored one now?", action="&Open it now",
                            then=lambda: self.vault_requested.emit(folder))
        run_query(self.window, lambda: bootstrap.restore_backup(path, password, folder), done,
                  failed)

    @Slot()
    def _on_quit_triggered(self) -> None:
        app = QApplication.instance()
        if app is not None:
            app.quit()
