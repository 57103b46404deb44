"""Asking before a destructive or bulk action. Layer: ui. GUI thread.

Every action that removes or replaces what the person has (undo a run, reset the demo, block an
assistant, restore over what is open) asks here first and says in words what will change. The
question is window-modal and opened, not exec'd: the window keeps painting, and a test finds it
(``object name "confirm"``) and answers it with key presses as a person would. Cancel is the
default button, so Enter or Escape never does the destructive thing; the action's own button
has a mnemonic (Alt+letter) and takes Space once focused.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QWidget

from ui.tasks import release_later


def ask(parent: QWidget, title: str, text: str, *, action: str, then: Callable[[], None],
        detail: str = "") -> QMessageBox:
    """Open the question; ``then()`` runs only if the person chose ``action`` (a label with a
    mnemonic, "&Undo this run"). ``detail``: a second paragraph (what stays as it is)."""
    box = QMessageBox(parent)
    box.setObjectName("confirm")
    box.setIcon(QMessageBox.Icon.Question)
    box.setWindowTitle(title)
    box.setTextFormat(Qt.TextFormat.PlainText)  # the words may quote a name or a file
    box.setText(text)
    if detail:
        box.setInformativeText(detail)
    go = box.addButton(action, QMessageBox.ButtonRole.DestructiveRole)
    go.setObjectName("confirmAction")
    cancel = box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(cancel)
    box.setEscapeButton(cancel)
    box.setWindowModality(Qt.WindowModality.WindowModal)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)

    # ``then`` often holds the asking widget (``lambda: self._remove_now(row)``). Held by this
    # connection until the box is deleted, it could be that widget's last reference, released
    # inside the box's destructor: the widget (the box's parent) would be deleted from there
    # with the box a second time. So the answer takes it and lets go of it a loop turn later.
    held = [then]

    def finished(_result: int) -> None:
        action = held.pop() if held else None
        try:
            if action is not None and box.clickedButton() is go:
                action()
        finally:
            release_later(action)
    box.finished.connect(finished)
    box.open()
    return box
