"""Icons (issue 25 item 7): every icon the window names is shipped with its licence, drawn in
the theme's text colour (light in the dark theme), and sharp at a 2x pixel ratio."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import QSize
from PySide6.QtGui import QColor, QIcon, QPalette

from ui import icons, theme

pytestmark = pytest.mark.gui


def test_every_named_icon_is_shipped_with_its_licence() -> None:
    folder = icons.icon_dir()
    names = set(icons.NAV_ICONS.values()) | set(icons.ACTION_ICONS.values()) | {"rotate-ccw"}
    assert {p.stem for p in folder.glob("*.svg")} == names  # no more copied than used
    assert "ISC License" in (folder / "LICENSE").read_text()
    assert "lucide-static" in (folder / "README.md").read_text()


def _darkest(icon: QIcon, scale: float, mode: QIcon.Mode = QIcon.Mode.Normal) -> QColor:
    image = icon.pixmap(QSize(24, 24), scale, mode).toImage()
    assert image.width() == round(24 * scale)
    drawn = [image.pixelColor(x, y) for x in range(image.width())
             for y in range(image.height()) if image.pixelColor(x, y).alpha() == 255]
    assert drawn, "nothing drawn"
    return drawn[0]


@pytest.mark.parametrize("name", ["light", "dark"])
def test_icons_take_the_theme_text_colour(qapp: Any, name: str) -> None:
    old = qapp.palette()
    try:
        qapp.setPalette(theme.palette(theme.DARK if name == "dark" else theme.LIGHT))
        text = qapp.palette().color(QPalette.ColorRole.WindowText)
        assert _darkest(icons.icon("lock"), 2.0) == text
        selected = qapp.palette().color(QPalette.ColorRole.HighlightedText)
        assert _darkest(icons.icon("lock"), 1.0, QIcon.Mode.Selected) == selected
    finally:
        qapp.setPalette(old)


def test_window_actions_and_navigation_have_icons(qtbot: Any, window: Any) -> None:
    for attr in ("lock_action", "run_action", "import_action"):
        assert not getattr(window, attr).icon().isNull(), attr
    for i in range(window.nav.topLevelItemCount()):
        assert not window.nav.topLevelItem(i).icon(0).isNull()
