"""The system's file and folder choosers, as Kept opens them. Layer: ui. GUI thread.

They start in the person's home folder (or beside the open vault), never in whatever folder the
program was started from; a chooser for a *new* folder takes a name that does not exist yet
(Qt's folder chooser only picks existing ones), and Kept makes the folder when it uses it.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QWidget


def start_folder(near: Path | None = None) -> str:
    """Where a chooser opens: beside ``near`` (a vault folder) if it still exists, else home."""
    if near is not None and near.expanduser().parent.is_dir():
        return str(near.expanduser().parent)
    return str(Path.home())


def existing_folder(parent: QWidget, title: str, near: Path | None = None) -> Path | None:
    chosen = QFileDialog.getExistingDirectory(parent, title, start_folder(near))
    return Path(chosen) if chosen else None


def new_folder(parent: QWidget, title: str, suggested: str, near: Path | None = None
               ) -> Path | None:
    """A folder that may not exist yet: the person types its name (``suggested`` first)."""
    start = str(Path(start_folder(near)) / suggested)
    chosen, _ = QFileDialog.getSaveFileName(parent, title, start, "",
                                            options=QFileDialog.Option.ShowDirsOnly)
    return Path(chosen) if chosen else None


def open_file(parent: QWidget, title: str, filters: str, near: Path | None = None
              ) -> Path | None:
    chosen, _ = QFileDialog.getOpenFileName(parent, title, start_folder(near), filters)
    return Path(chosen) if chosen else None


def new_file(parent: QWidget, title: str, suggested: str, filters: str,
             near: Path | None = None) -> Path | None:
    start = suggested if Path(suggested).is_absolute() else str(
        Path(start_folder(near)) / suggested)
    chosen, _ = QFileDialog.getSaveFileName(parent, title, start, filters)
    return Path(chosen) if chosen else None
