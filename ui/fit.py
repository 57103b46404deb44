"""Windows and panes that show all their text, at any font size (issue 25). Layer: ui. GUI
thread (everything here touches widgets).

Why dialogs cut their text: a word-wrapped QLabel's height depends on its width
(``heightForWidth``), and Qt sizes a top-level window by its layout's minimum size, which
ignores height-for-width. A dialog is sized right when first shown (``adjustSize`` does ask
for the height at its width), but text that arrives later (the keychain note, a failed
unlock, a path) makes a label taller while the window stays as it was, so the layout squeezes
every row and the labels are cut. ``fit_to_text`` makes a window honour height-for-width
after every change of its layout, and gives it a minimum width in characters of its font, so
it neither clips text nor wraps it into a narrow column.

Sizes that hold text are given in characters and lines of the widget's font (``chars``,
``lines``), never in pixels: the font is larger at 150 % and 200 % and on systems with a
larger default font, while a pixel size is not.
"""

from __future__ import annotations

import re

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtGui import QFontMetrics, QFontMetricsF
from PySide6.QtWidgets import QWidget

# A dialog narrower than this many average characters wraps its notes into a thin column.
DIALOG_CHARS = 56

# A line may break after these characters of a path (see ``breakable``).
_PATH_BREAK = re.compile(r"([/\\])(?=\S)")
ZERO_WIDTH_SPACE = "\u200b"


def chars(widget: QWidget, n: float) -> int:
    """The width of ``n`` average characters of ``widget``'s font, in pixels."""
    return round(QFontMetricsF(widget.font()).averageCharWidth() * n)


def lines(widget: QWidget, n: float) -> int:
    """The height of ``n`` lines of ``widget``'s font, in pixels."""
    return round(QFontMetricsF(widget.font()).lineSpacing() * n)


def text_width(widget: QWidget, texts: list[str]) -> int:
    """The width of the widest of ``texts`` in ``widget``'s font, in pixels."""
    fm = QFontMetrics(widget.font())
    return max((fm.horizontalAdvance(t) for t in texts), default=0)


def breakable(path: str) -> str:
    """``path`` with a zero-width space after each separator, so that a word-wrapped label can
    break a path longer than its width instead of cutting it. Only for labels whose text
    cannot be selected and copied (the spaces would be copied with it)."""
    return _PATH_BREAK.sub(r"\1" + ZERO_WIDTH_SPACE, path)


_CHARS = "kept_fit_chars"      # the window's minimum width in characters
_PENDING = "kept_fit_pending"  # a fit is queued for the window


class _Fitter(QObject):
    """Owned by the window it fits (a child QObject, deleted with it). Watches the window's
    layout requests, resizes and font changes and, once the event loop is idle, runs ``fit``.

    It keeps no Python state: while Qt keeps it, its Python side may be dropped and made
    again (nothing in Python holds it), so what it needs is stored on the window."""

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt name)
        if (isinstance(obj, QWidget) and event.type() in _WATCHED
                and not obj.property(_PENDING)):
            obj.setProperty(_PENDING, True)
            # After Qt has handled the event (and activated the layout); dropped with obj.
            QTimer.singleShot(0, obj, lambda: _fit_queued(obj))
        return False


_WATCHED = (QEvent.Type.LayoutRequest, QEvent.Type.Resize, QEvent.Type.FontChange,
            QEvent.Type.Show)


def _fit_queued(window: QWidget) -> None:
    window.setProperty(_PENDING, False)
    fit(window)


def fit(window: QWidget) -> None:
    """Make ``window``'s minimum height the least height its layout needs at its width
    (every wrapped label whole) and its minimum width ``fit_to_text``'s characters, growing
    it if it is smaller."""
    lay = window.layout()
    if lay is None:
        return
    lay.activate()
    least = lay.totalMinimumSize()
    width = max(least.width(), chars(window, int(window.property(_CHARS) or 0)))
    if window.minimumWidth() != width:
        window.setMinimumWidth(width)
    now = max(window.width(), width)
    height = least.height()
    if lay.hasHeightForWidth():
        height = max(height, lay.totalMinimumHeightForWidth(now))
    if window.minimumHeight() != height:
        window.setMinimumHeight(height)
    if window.height() < height or window.width() < now:
        window.resize(now, max(window.height(), height))
        _keep_on_screen(window)


def _keep_on_screen(window: QWidget) -> None:
    """Move a window that grew past the bottom or right of its screen back onto it (as far
    as it fits): a dialog that grows downwards would otherwise hide its buttons."""
    if not window.isWindow() or not window.isVisible():
        return
    screen = window.screen().availableGeometry()
    frame = window.frameGeometry()
    x = max(screen.left(), min(frame.left(), screen.right() + 1 - frame.width()))
    y = max(screen.top(), min(frame.top(), screen.bottom() + 1 - frame.height()))
    if (x, y) != (frame.left(), frame.top()):
        window.move(x, y)


def fit_to_text(window: QWidget, min_chars: int = DIALOG_CHARS) -> None:
    """Keep ``window`` (a dialog) tall enough for its wrapped text at whatever width it has,
    and at least ``min_chars`` average characters wide, whenever its text, font or size
    changes. Call once, after its layout is set."""
    window.setProperty(_CHARS, min_chars)
    window.installEventFilter(_Fitter(window))
    fit(window)


def grow_to_hint(window: QWidget) -> None:
    """Make ``window`` at least as large as its layout would like (after new parts were shown
    in it), keeping any larger size the person gave it."""
    lay = window.layout()
    if lay is None:
        return
    lay.activate()
    hint = lay.totalSizeHint()
    screen = window.screen().availableGeometry()
    width = max(window.width(), min(hint.width(), screen.width()))
    height = hint.height()
    if lay.hasHeightForWidth():
        height = max(height, lay.totalHeightForWidth(width))
    # No taller than the screen (what it holds scrolls), nor shorter than its minimum.
    height = max(min(height, screen.height() - (window.frameGeometry().height()
                                                  - window.height())), window.minimumHeight())
    window.resize(width, max(window.height(), height))
    _keep_on_screen(window)
