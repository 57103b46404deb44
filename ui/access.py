"""Keyboard and screen-reader rules shared by every window (issue 25 item 7). Layer: ui. GUI
thread.

Tab moves between controls everywhere, as a person expects of a desktop app, and never gets
stuck inside one: lists and tables keep the arrow keys for their rows but give Tab back to
the window (Qt's tables take Tab to walk their cells, which is a trap in a table of 500
memories), and a text field of several lines gives Tab back too (a memory has no use for a
tab character; Ctrl+Tab still moves on in Qt's own fields). A scroll area is no stop of its
own: the focus goes into its controls, and Qt scrolls them into view; a page whose scroll area
holds no control gives it an accessible name, and it then stays a stop so the keys can scroll
it (``tab_between_controls``).

``exposed_name`` is the name a screen reader announces for a control; the tests check that
every control reached with Tab has one.
"""

from __future__ import annotations

from typing import TypeVar

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QAbstractSpinBox,
    QLabel,
    QPlainTextEdit,
    QScrollArea,
    QTextEdit,
    QWidget,
)

W = TypeVar("W", bound=QWidget)


def tab_between_controls(root: QWidget) -> None:
    """Apply the module's Tab rules to ``root`` and every widget inside it."""
    # One search per kind, filtered by Qt: a walk over every widget made a Python wrapper for
    # each of the window's hundreds of widgets, about 10-20 ms of the main window's first build.
    def each(kind: type[W]) -> list[W]:
        return ([root] if isinstance(root, kind) else []) + list(root.findChildren(kind))

    for view in each(QAbstractItemView):
        view.setTabKeyNavigation(False)
    for edit in each(QPlainTextEdit) + each(QTextEdit):
        edit.setTabChangesFocus(True)
    for area in each(QScrollArea):
        if not area.accessibleName():
            area.setFocusPolicy(Qt.FocusPolicy.NoFocus)


def exposed_name(w: QWidget) -> str:
    """What Qt tells assistive technology this control is called: its accessible name, else a
    button's own text, else the text of a label whose buddy it is (a QFormLayout row's label)."""
    if w.accessibleName().strip():
        return w.accessibleName().strip()
    if isinstance(w, QAbstractButton) and w.text().replace("&", "").strip():
        return w.text().replace("&", "").strip()
    target = w
    # A spin box's inner line edit carries its box's label.
    if isinstance(w.parent(), QAbstractSpinBox):
        target = w.parent()  # type: ignore[assignment]
    for label in w.window().findChildren(QLabel):
        if label.buddy() is target and label.text().replace("&", "").strip():
            return label.text().replace("&", "").strip()
    return ""
