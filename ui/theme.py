"""Every colour of the window in one place. Layer: ui. GUI thread (the helpers touch widgets).

Views say what a piece of text is (an error, a note, a warning) and take its look from here;
a guard test (tests/ui/test_ui_structure.py) fails on a colour written anywhere else in ui/.
Muted text uses the palette's placeholder role, so it follows the platform's light or dark
theme; the fixed colours below are the few that carry meaning of their own.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QLabel, QProgressBar

ERROR = "#b00020"            # an inline error: what was refused and why
OK = "#1b7f3b"               # an inline confirmation ("Saved", "Password changed")
PROBLEM = "#8a4b00"          # something went partly wrong and is retried (failed batches)
WARNING_BACKGROUND = "#fff4ce"
WARNING_BORDER = "#e0c97a"
MUTED_INLINE = "gray"        # an aside inside rich text ("(found 2026-03-01)")

# The password strength meter: weak, fair, strong (ui/dialogs/unlock.py ``strength_color``).
STRENGTH_WEAK = "#c62828"
STRENGTH_FAIR = "#e0a000"
STRENGTH_GOOD = "#2e7d32"

# Insights' bars: one colour per store (in STORE_ORDER) and per tier (hot, warm, cold).
STORE_COLORS = ("#7aa6d8", "#4f86c6", "#2f6db3", "#5c9e6e", "#c48a3a")
TIER_COLORS = ("#d9534f", "#f0ad4e", "#6c9bd2")

# One spacing scale (pixels at 100 %): every margin and spacing a layout sets in ui/ is one of
# these (a guard test, tests/ui/test_ui_structure.py, fails on a number written elsewhere);
# layouts that set nothing take Fusion's own, which are on the scale's steps too.
XXS, XS, S, M, L, XL = 2, 4, 8, 12, 16, 24

# Style sheets for a single label (a style sheet on a page or card would send every label
# through QStyleSheetStyle; see ui/views/inbox.py).
# An error's colour is the palette's BrightText, which each theme sets (``palette``): the
# light theme's dark red cannot be read on the dark theme's grey.
ERROR_STYLE = "color: palette(bright-text)"
OK_STYLE = f"color: {OK}"
PROBLEM_STYLE = f"color: {PROBLEM}"
NOTE_STYLE = "color: palette(placeholder-text)"
EMPTY_STYLE = "padding: 24px; color: palette(placeholder-text)"
# A warning's pale background carries its own dark text: under a dark theme the palette's
# text is light, and light on pale yellow could not be read.
WARNING_TEXT = "#3d3000"
WARNING_STYLE = (f"background: {WARNING_BACKGROUND}; color: {WARNING_TEXT}; border: 1px solid "
                 f"{WARNING_BORDER}; padding: 6px")
BANNER_STYLE = (f"background: {WARNING_BACKGROUND}; color: {WARNING_TEXT}; padding: 6px; "
                f"border: 1px solid {WARNING_BORDER}")
CODE_STYLE = "font-family: monospace; font-size: 16pt; padding: 8px"


def vault_name(folder: Path) -> str:
    """A vault as dialogs and titles name it: its folder's name, quoted ("“kept-vault”")."""
    return f"“{folder.name}”"


def muted_html(text: str) -> str:
    """``text`` (already escaped) as a muted aside inside a rich-text label."""
    return f"<span style='color:{MUTED_INLINE}'>{text}</span>"


def plain(label: QLabel) -> QLabel:
    """A label whose text is shown as typed, never as markup
    (docs/security.md#28-text-is-never-markup): for anything that may hold memory, fact, summary,
    entity, assistant, file or error text."""
    label.setTextFormat(Qt.TextFormat.PlainText)
    return label


def set_muted(label: QLabel) -> None:
    """Muted text through the palette (no style sheet, see ``ERROR_STYLE``)."""
    label.setForegroundRole(QPalette.ColorRole.PlaceholderText)


def set_error_color(label: QLabel) -> None:
    """Error text through the palette (no style sheet): the theme's error colour (BrightText,
    see ``ERROR_STYLE``)."""
    label.setForegroundRole(QPalette.ColorRole.BrightText)


# --- Kept's own light and dark themes (View > Theme) ----------------------------------------
# One palette each, over Qt's Fusion style (ui/application.py); "system" picks the one that
# matches the desktop's light or dark setting and follows it when it changes.
LIGHT = {"window": "#f3f3f3", "text": "#1b1b1b", "base": "#ffffff", "alternate": "#f6f7f9",
         "button": "#ececec", "highlight": "#2f6db3", "highlighted": "#ffffff",
         "muted": "#6b6b6b", "link": "#1a5fb4", "disabled": "#9a9a9a", "tip": "#ffffdc",
         "error": ERROR}
DARK = {"window": "#2b2d30", "text": "#e6e6e6", "base": "#1e1f22", "alternate": "#26282b",
        "button": "#3a3c40", "highlight": "#8ab4f8", "highlighted": "#1b1b1b",
        "muted": "#9da0a6", "link": "#8ab4f8", "disabled": "#6f7277", "tip": "#3a3c40",
        "error": "#ff8a80"}


def palette(colors: dict[str, str]) -> QPalette:
    """A full palette from one of the colour sets above."""
    r = QPalette.ColorRole
    pal = QPalette()
    c = {k: QColor(v) for k, v in colors.items()}
    for role, key in ((r.Window, "window"), (r.WindowText, "text"), (r.Base, "base"),
                      (r.AlternateBase, "alternate"), (r.Text, "text"), (r.Button, "button"),
                      (r.ButtonText, "text"), (r.Highlight, "highlight"),
                      (r.HighlightedText, "highlighted"), (r.PlaceholderText, "muted"),
                      (r.Link, "link"), (r.ToolTipBase, "tip"), (r.ToolTipText, "text")):
        pal.setColor(role, c[key])
    for role in (r.WindowText, r.Text, r.ButtonText):
        pal.setColor(QPalette.ColorGroup.Disabled, role, c["disabled"])
    pal.setColor(r.BrightText, c["error"])
    return pal


def system_is_dark() -> bool:
    from PySide6.QtGui import QGuiApplication
    return QGuiApplication.styleHints().colorScheme() == Qt.ColorScheme.Dark


def apply_theme(app: QApplication, name: str) -> str:
    """Use theme ``name`` ("light", "dark" or "system") in the whole application; returns the
    one in effect ("light" or "dark")."""
    dark = name == "dark" or (name == "system" and system_is_dark())
    app.setPalette(palette(DARK if dark else LIGHT))
    return "dark" if dark else "light"


def set_meter_color(bar: QProgressBar, color: str) -> None:
    """A progress bar drawn in ``color`` (through the palette: no style sheet), its text in
    black or white, whichever reads on it."""
    pal = bar.palette()
    fill = QColor(color)
    pal.setColor(QPalette.ColorRole.Highlight, fill)
    luma = 0.299 * fill.red() + 0.587 * fill.green() + 0.114 * fill.blue()
    text = QColor("black") if luma > 140 else QColor("white")
    pal.setColor(QPalette.ColorRole.HighlightedText, text)
    bar.setPalette(pal)
