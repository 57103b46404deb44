"""Kept's icons: Lucide line icons (assets/icons/lucide, ISC; see its README) drawn in the
theme's colours. Layer: ui. GUI thread (icons and pixmaps are GUI objects).

The SVGs draw with ``currentColor``. ``icon(name)`` returns a QIcon whose engine renders the
SVG when asked for a pixmap, with ``currentColor`` replaced by the application palette's text
colour at that moment (its highlighted text colour for a selected item, the disabled text
colour for a disabled one). So the dark theme gets light icons, a theme change re-tints every
icon without setting it again (Qt repaints on the palette change), and each size and device
pixel ratio is rendered from the vector, sharp at 150 % and 200 %.

What shows which icon is listed here (``NAV_ICONS``, ``ACTION_ICONS``), so the window's own
modules only call ``decorate_nav`` and ``decorate_actions``.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QByteArray, QPoint, QRect, QSize, Qt
from PySide6.QtGui import QGuiApplication, QIcon, QIconEngine, QPainter, QPalette, QPixmap
from PySide6.QtSvg import QSvgRenderer
from PySide6.QtWidgets import QTreeWidget, QTreeWidgetItem

if TYPE_CHECKING:
    from ui.main_window import MainWindow

log = logging.getLogger(__name__)

_REL = Path("assets") / "icons" / "lucide"


def icon_dir() -> Path:
    """The folder of the icon SVGs: inside the frozen bundle, else in the source tree."""
    meipass = getattr(sys, "_MEIPASS", None)
    if getattr(sys, "frozen", False) and meipass:
        return Path(meipass) / _REL
    return Path(__file__).resolve().parent.parent / _REL


_svg_cache: dict[str, bytes] = {}


def svg_source(name: str) -> bytes:
    """The SVG text of icon ``name`` (b"" if it is missing: the icon is then blank)."""
    if name not in _svg_cache:
        try:
            _svg_cache[name] = (icon_dir() / f"{name}.svg").read_bytes()
        except OSError:
            log.warning("icon %s is missing", name)
            _svg_cache[name] = b""
    return _svg_cache[name]


def icon_color(mode: QIcon.Mode) -> str:
    """The colour an icon is drawn in for ``mode``, from the application's palette."""
    pal = QGuiApplication.palette()
    if mode == QIcon.Mode.Disabled:
        return pal.color(QPalette.ColorGroup.Disabled, QPalette.ColorRole.WindowText).name()
    if mode == QIcon.Mode.Selected:
        return pal.color(QPalette.ColorRole.HighlightedText).name()
    return pal.color(QPalette.ColorRole.WindowText).name()


class TintedSvgEngine(QIconEngine):
    """Renders one Lucide SVG in the palette's colour for the mode asked (see the module)."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def clone(self) -> QIconEngine:
        engine = TintedSvgEngine(self.name)
        _engines.append(engine)  # see ``icon``
        return engine

    def key(self) -> str:
        return "kept-tinted-svg"

    def renderer(self, mode: QIcon.Mode) -> QSvgRenderer:
        data = svg_source(self.name).replace(b"currentColor", icon_color(mode).encode())
        return QSvgRenderer(QByteArray(data))

    def paint(self, painter: QPainter, rect: QRect, mode: QIcon.Mode,
              state: QIcon.State) -> None:
        self.renderer(mode).render(painter, rect)

    def pixmap(self, size: QSize, mode: QIcon.Mode, state: QIcon.State) -> QPixmap:
        return self.scaledPixmap(size, mode, state, 1.0)

    def scaledPixmap(self, size: QSize, mode: QIcon.Mode,  # noqa: N802 (Qt name)
                     state: QIcon.State, scale: float) -> QPixmap:
        pm = QPixmap(size * scale)
        pm.fill(Qt.GlobalColor.transparent)
        painter = QPainter(pm)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        self.renderer(mode).render(painter, QRect(QPoint(0, 0), pm.size()))
        painter.end()
        pm.setDevicePixelRatio(scale)
        return pm

    def isNull(self) -> bool:  # noqa: N802 (Qt name)
        return not svg_source(self.name)


# Qt calls the engines' Python methods while painting. Each icon is made once and kept for
# the process (a few dozen), so no engine's Python side can be collected while a QIcon copy
# inside Qt (an action's, an item's) still paints with it; clones too.
_icons: dict[str, QIcon] = {}
_engines: list[TintedSvgEngine] = []


def icon(name: str) -> QIcon:
    """Lucide icon ``name`` (a file name in assets/icons/lucide without ``.svg``)."""
    if name not in _icons:
        engine = TintedSvgEngine(name)
        _engines.append(engine)
        _icons[name] = QIcon(engine)
    return _icons[name]


# Navigation items by their key (``ui.main_window.NavKey``; a store by its store value, or
# None for "All memories"), and the window's actions by attribute name.
NAV_ICONS: dict[tuple[object, ...], str] = {
    ("none", "Memories"): "brain",
    ("store", None): "library",
    ("store", "short_term"): "timer",
    ("store", "episodic"): "book-open",
    ("store", "semantic"): "lightbulb",
    ("store", "procedural"): "list-checks",
    ("store", "implicit"): "sparkles",
    ("none", "People & Projects"): "users",
    ("none", "Timeline"): "calendar-days",
    ("page", "inbox"): "inbox",
    ("archive",): "archive",
    ("page", "consolidation"): "combine",
    ("page", "insights"): "chart-column",
    ("page", "settings"): "settings",
}

ACTION_ICONS: dict[str, str] = {  # window attribute (dotted) -> icon
    "lock_action": "lock",
    "run_action": "play",
    "import_action": "file-input",
    "files.new_action": "folder-plus",
    "files.open_action": "folder-open",
    "files.export_action": "upload",
    "files.backup_action": "hard-drive-download",
    "files.restore_action": "archive-restore",
    "files.quit_action": "log-out",
    "menus.add_action": "square-pen",
    "menus.forget_action": "trash-2",
    "menus.archive_action": "archive",
    "menus.find_action": "search",
    "menus.shortcuts_action": "circle-help",
}


def _nav_icon_key(item: QTreeWidgetItem) -> tuple[object, ...]:
    key = item.data(0, Qt.ItemDataRole.UserRole)
    match key:
        case ("store", store, _label):
            return ("store", None if store is None else str(getattr(store, "value", store)))
        case ("none",):
            return ("none", item.text(0))
        case tuple():
            return key
    return ()


def decorate_nav(nav: QTreeWidget) -> None:
    """Icons on the navigation's headings, stores and pages (``NAV_ICONS``)."""
    items = [nav.topLevelItem(i) for i in range(nav.topLevelItemCount())]
    while items:
        item = items.pop()
        if item is None:
            continue
        name = NAV_ICONS.get(_nav_icon_key(item))
        if name:
            item.setIcon(0, icon(name))
        items.extend(item.child(i) for i in range(item.childCount()))


def decorate_actions(window: MainWindow) -> None:
    """Icons on the toolbar's and menus' actions (``ACTION_ICONS``); one that a window lacks
    (a menu built elsewhere) is skipped."""
    for path, name in ACTION_ICONS.items():
        obj: object = window
        for part in path.split("."):
            obj = getattr(obj, part, None)
        set_icon = getattr(obj, "setIcon", None)
        if set_icon is not None:
            set_icon(icon(name))
