"""What the window's helpers use of it. Layer: ui. GUI thread.

``ui.file_menu.FileMenu`` runs its work (import, export, backup, restore) with the window's
vault, bridge and progress bar; it is typed with this base class rather than with
``ui.main_window.MainWindow``, which builds the menu, so the two modules do not import each
other. ``MainWindow`` implements the methods.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtWidgets import QMainWindow

if TYPE_CHECKING:
    from app.api import CancelToken, VaultAPI
    from ui.bridge import CoreBridge
    from ui.progress import ProgressBox


class WorkWindow(QMainWindow):
    vault: VaultAPI
    bridge: CoreBridge
    memory_figure: str  # the status bar's count of memories, "" until it is known

    def _begin_work(self, label: str, unit: str) -> ProgressBox:
        """Show long work in the status bar and the progress bar; returns its reporter."""
        raise NotImplementedError

    def _end_work(self) -> None:
        raise NotImplementedError

    def _begin_import_work(self) -> tuple[ProgressBox, CancelToken]:
        """``_begin_work`` for an import: its rate, time left and a Cancel button."""
        raise NotImplementedError

    def watch_background(self) -> None:
        """Show the background work again (a file import's vectors follow it, issue 28)."""
        raise NotImplementedError
