"""The single user-facing error path. Layer: ui. GUI thread.

``show_error`` is the popup (non-modal); ``report_error`` is what a view calls when an
operation fails: an expected failure (an ``AppError``: a wrong password, "undo the later runs
first") is said inline where the person is looking, anything else also gets the popup with
Copy details (docs/architecture.md#errors). Views never choose between the two themselves.
"""

from __future__ import annotations

import logging
import platform
import traceback
from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QMessageBox, QWidget

from app import __version__
from app.errors import AppError

log = logging.getLogger(__name__)


def details(exc: BaseException) -> str:
    import PySide6
    tb = getattr(exc, "__traceback_text__", None) or "".join(
        traceback.format_exception(type(exc), exc, exc.__traceback__))
    return (f"Kept {__version__}, Qt {PySide6.__version__}, Python {platform.python_version()}, "
            f"{platform.platform()}\n\n{tb}")


def show_error(parent: QWidget | None, exc: BaseException) -> QMessageBox:
    """An AppError shows its user_message; anything else "Something went wrong" with a
    Copy details button. Non-modal (show, not exec)."""
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Warning)
    box.setWindowTitle("Kept")
    if isinstance(exc, AppError):
        box.setTextFormat(Qt.TextFormat.PlainText)  # a message may quote input
        box.setText(exc.user_message)
        if exc.hint:
            box.setInformativeText(exc.hint)
        box.setStandardButtons(QMessageBox.StandardButton.Ok)
    else:
        log.error("unexpected error: %s", type(exc).__name__)
        box.setText("Something went wrong. Your vault was not changed by the failed step.")
        copy = box.addButton("Copy details", QMessageBox.ButtonRole.ActionRole)
        box.addButton(QMessageBox.StandardButton.Close)
        text = details(exc)

        def copy_details(*_a: object) -> None:
            QApplication.clipboard().setText(text)
        copy.clicked.disconnect()
        copy.clicked.connect(copy_details)
    box.setModal(False)
    box.show()
    return box


def error_text(exc: AppError) -> str:
    """An AppError's message with its hint, for a line in a form."""
    return exc.user_message + (f" {exc.hint}" if exc.hint else "")


def report_error(parent: QWidget | None, exc: BaseException, say: Callable[[str], None], *,
                 prefix: str = "", otherwise: str | None = None, hint: bool = False) -> bool:
    """An operation failed. An ``AppError`` is said inline, ``say(prefix + message)`` (with
    its hint when ``hint``); anything else pops up ``show_error`` and says ``otherwise``
    inline (if given). Returns True when the failure was an expected one said inline."""
    if isinstance(exc, AppError):
        say(prefix + (error_text(exc) if hint else exc.user_message))
        return True
    if otherwise is not None:
        say(otherwise)
    show_error(parent, exc)
    return False
