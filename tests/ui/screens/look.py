"""A fixed look for screenshots (STYLE B9): Fusion, the bundled DejaVu Sans, Kept's light or dark
palette (ui/theme.py) with the same colours active or not, no caret blinking; a demo vault at a fixed time;
and a tolerant pixel comparison. Used by ``test_screens.py`` and ``make_readme_screenshots.py``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests import ROOT
from tests.inside import inside

FONTS = ROOT / "assets" / "fonts"
FIXED_NOW = 1_784_000_000.0  # 2026-07-14 03:33 UTC, three days after the last demo turn

def theme_palette(name: str) -> Any:
    """Kept's own light or dark palette (``ui.theme``), the same whether the window is active
    or not (a screenshot must not depend on which window has the focus)."""
    from PySide6.QtGui import QPalette

    from ui import theme
    pal = theme.palette(theme.DARK if name == "dark" else theme.LIGHT)
    for role in QPalette.ColorRole:
        if role == QPalette.ColorRole.NColorRoles:
            continue
        pal.setColor(QPalette.ColorGroup.Inactive, role,
                     pal.color(QPalette.ColorGroup.Active, role))
    return pal


def apply_look(app: Any, theme_name: str = "light") -> Callable[[], None]:
    """Fusion, bundled font and Kept's "light" or "dark" theme; returns a function restoring
    the previous look."""
    from PySide6.QtGui import QFont, QFontDatabase
    old = (app.style().name(), app.palette(), app.font(), app.cursorFlashTime())
    families = set()
    for path in sorted(FONTS.glob("*.ttf")):
        font_id = QFontDatabase.addApplicationFont(str(path))
        assert font_id >= 0, f"cannot load {path}"
        families.update(QFontDatabase.applicationFontFamilies(font_id))
    assert "DejaVu Sans" in families, families
    app.setStyle("Fusion")
    app.setPalette(theme_palette(theme_name))
    font = QFont("DejaVu Sans", 10)
    font.setHintingPreference(QFont.HintingPreference.PreferNoHinting)
    app.setFont(font)
    app.setCursorFlashTime(0)  # the caret is drawn steadily, never mid-blink

    def restore() -> None:
        app.setStyle(old[0])
        app.setPalette(old[1])
        app.setFont(old[2])
        app.setCursorFlashTime(old[3])
    return restore


def fixed_demo_vault(folder: Path, *, load_model: bool = True) -> Any:
    """The real demo vault (``app.demo``) built as if the clock read FIXED_NOW, and kept at
    that time, so dates, recency scores and tiers are the same on every run."""
    from unittest import mock

    import app.demo
    from app import bootstrap
    from app.clock import FixedClock, SystemClock
    if load_model:
        with mock.patch.object(SystemClock, "now", lambda self: FIXED_NOW):
            vault = app.demo.create_demo_vault(folder, threaded=True)
    else:
        # The demo composes its vault in app.bootstrap: no model there, no vectors.
        with mock.patch.object(SystemClock, "now", lambda self: FIXED_NOW), \
                mock.patch.object(bootstrap, "load_embedder", lambda _load: (None, None)):
            vault = app.demo.create_demo_vault(folder, threaded=True)
    fixed = FixedClock(FIXED_NOW)
    # The facade's own clock and its services' were composed with the system clock.
    for name, part in list(vars(vault).items()):
        if isinstance(part, SystemClock):
            setattr(vault, name, fixed)
        elif isinstance(getattr(part, "clock", None), SystemClock):
            part.clock = fixed
    assert inside(vault).clock is fixed
    # The window's "today 09:14" counts from this clock too (app/words.py), not the test day.
    # Restored by ``release_words_clock`` when the vault is done with.
    from app import words
    words.clock = fixed.now
    return vault


def release_words_clock() -> None:
    import time

    from app import words
    words.clock = time.time


def find_memory(vault: Any, text: str, store: str | None = None) -> int:
    from app.services.browse import MemoryQuery
    rows = vault.page_memories(MemoryQuery(store=store), limit=1000).rows
    return next(int(r.id) for r in rows if r.text == text)


@dataclass
class Diff:
    percent: float
    size_mismatch: bool
    diff_image: Any


def baseline_image(image: Any) -> Any:
    """What a baseline stores: 8-bit grey (a third of the size of colour; a colour-only
    change with the same luminance goes unnoticed, which is accepted)."""
    from PySide6.QtGui import QImage
    return image.convertToFormat(QImage.Format.Format_Grayscale8)


def _grey(image: Any) -> Any:
    import numpy as np
    g = baseline_image(image)
    w, h = g.width(), g.height()
    return np.frombuffer(g.constBits(), np.uint8).reshape(h, g.bytesPerLine())[:, :w].astype(
        np.int16)


def compare_images(actual: Any, expected: Any, tolerance: int = 16) -> Diff:
    """Share of pixels (percent) whose grey level differs by more than ``tolerance``."""
    import numpy as np
    from PySide6.QtGui import QImage
    if actual.size() != expected.size():
        return Diff(100.0, True, None)
    bad = np.abs(_grey(actual) - _grey(expected)) > tolerance
    out = actual.convertToFormat(QImage.Format.Format_RGB32)
    w, h = out.width(), out.height()
    marks = np.frombuffer(out.bits(), np.uint8).reshape(h, out.bytesPerLine())[
        :, :w * 4].reshape(h, w, 4)
    marks[bad] = (0, 0, 255, 255)  # BGRA: red where pixels differ
    return Diff(100.0 * float(bad.mean()), False, out)


def regen() -> bool:
    return os.environ.get("KEPT_REGEN_SCREENS") == "1"
