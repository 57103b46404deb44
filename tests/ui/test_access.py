"""Keyboard and screen-reader checks (issue 25 item 7): Tab walks every page of the main window
and every main dialog, reaches each control that takes the focus, never gets stuck and comes
back round; each control reached has a name a screen reader can say; and in both of Kept's
themes the focus is drawn in a colour that stands out from what it is drawn on.

Real widgets on the demo vault (no model: names and focus do not depend on it), keys pressed
with QTest as a person presses them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QSize, Qt, QThreadPool
from PySide6.QtGui import QColor, QPalette
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QAbstractSpinBox, QApplication, QWidget

from ui import theme
from ui.access import exposed_name

pytestmark = pytest.mark.gui
WAIT = 15_000
STEPS = 150  # more Tab presses than any page has controls
STAY = 8  # Tab presses that may keep the focus on one control (links in a text browser)


@pytest.fixture(scope="module")
def demo(qapp: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from tests.ui.screens.look import fixed_demo_vault, release_words_clock
    vault = fixed_demo_vault(tmp_path_factory.mktemp("access") / "demo", load_model=False)
    yield vault
    QThreadPool.globalInstance().waitForDone(WAIT)
    vault.lock()
    release_words_clock()


@pytest.fixture
def window(qtbot: Any, demo: Any) -> Iterator[Any]:
    from ui.bridge import CoreBridge
    from ui.main_window import MainWindow
    win = MainWindow(demo, CoreBridge(), idle_minutes=5)
    qtbot.addWidget(win)
    win.resize(QSize(1200, 760))
    win.show()
    qtbot.waitExposed(win)
    yield win
    QThreadPool.globalInstance().waitForDone(WAIT)


def settle(qtbot: Any) -> None:
    QThreadPool.globalInstance().waitForDone(WAIT)
    qtbot.wait(30)
    QThreadPool.globalInstance().waitForDone(WAIT)


def takes_tab(w: QWidget, top: QWidget) -> bool:
    """A control Tab should reach: shown, enabled, in this window and taking Tab focus (a spin
    box's inner field is reached as its box)."""
    return (w.window() is top and w.isVisibleTo(top) and w.isEnabled()
            and bool(w.focusPolicy() & Qt.FocusPolicy.TabFocus)
            and not isinstance(w.parent(), QAbstractSpinBox)
            and w.focusProxy() is None)


def describe(w: QWidget) -> str:
    return f"{type(w).__name__}({w.objectName()!r}, {exposed_name(w)!r}) in {type(w.parent()).__name__}"


def tab_round(qtbot: Any, top: QWidget, first: QWidget) -> list[QWidget]:
    """Press Tab from ``first`` until the focus is back on it; the controls on the way. Fails
    on a trap (Tab that leaves the focus where it was, or never comes back)."""
    top.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is top, timeout=WAIT)
    first.setFocus(Qt.FocusReason.TabFocusReason)
    qtbot.waitUntil(lambda: QApplication.focusWidget() is first, timeout=WAIT)
    seen = [first]
    if sum(takes_tab(w, top) for w in top.findChildren(QWidget)) == 1:
        return seen  # a window of one control: Tab stays on it
    stay = 0  # presses that kept the focus where it was (a text browser walks its links)
    for _ in range(STEPS):
        here = QApplication.focusWidget()
        QTest.keyClick(here, Qt.Key.Key_Tab)
        now = QApplication.focusWidget()
        if now is here:
            stay += 1
            assert stay < STAY, f"Tab is trapped in {describe(here)}"
            continue
        stay = 0
        if now is first:
            return seen
        assert now not in seen, f"Tab went round without coming back: {describe(now)} again"
        seen.append(now)
    pytest.fail(f"Tab never came back to {describe(first)}: {[describe(w) for w in seen]}")


def check_round(qtbot: Any, top: QWidget, first: QWidget) -> list[QWidget]:
    seen = tab_round(qtbot, top, first)
    missed = [describe(w) for w in top.findChildren(QWidget)
              if takes_tab(w, top) and w not in seen]
    assert not missed, f"Tab never reaches {missed}"
    nameless = [describe(w) for w in seen if not exposed_name(w)]
    assert not nameless, f"no accessible name: {nameless}"
    return seen


def open_page(qtbot: Any, window: Any, key: tuple[Any, ...]) -> QWidget:
    window.go(key)
    settle(qtbot)
    return window.stack.currentWidget()


def test_browse_with_a_memory_selected(qtbot: Any, window: Any, demo: Any) -> None:
    from tests.ui.screens.look import find_memory
    browse = window.browse
    qtbot.waitUntil(lambda: browse.model.rowCount() > 0, timeout=WAIT)
    mid = find_memory(demo, "Sam lives in Porto", "semantic")
    row = next(n for n, r in enumerate(browse.model.rows) if int(r.id) == mid)
    browse.table.setCurrentIndex(browse.model.index(row, 0))
    qtbot.waitUntil(lambda: browse.detail.memory_id == mid, timeout=WAIT)
    settle(qtbot)
    seen = check_round(qtbot, window, window.nav)
    assert browse.table in seen and browse.search in seen
    assert browse.detail.correct_btn in seen


@pytest.mark.parametrize("key", [("page", "inbox"), ("page", "consolidation"),
                                 ("page", "insights"), ("page", "settings")])
def test_pages(qtbot: Any, window: Any, key: tuple[Any, ...]) -> None:
    page = open_page(qtbot, window, key)
    if key == ("page", "inbox"):  # its questions come as cards once loaded
        qtbot.waitUntil(lambda: bool(getattr(page, "cards", None)), timeout=WAIT)
        settle(qtbot)
    seen = check_round(qtbot, window, window.nav)
    assert any(page.isAncestorOf(w) for w in seen), f"Tab never enters {key}"


def test_entity_page(qtbot: Any, window: Any) -> None:
    qtbot.waitUntil(lambda: window.people_item.childCount() > 0, timeout=WAIT)
    window.nav.setCurrentItem(window.people_item.child(0))
    settle(qtbot)
    check_round(qtbot, window, window.nav)


def _dialogs(window: Any, demo: Any, tmp: Path) -> Iterator[tuple[str, QWidget]]:
    from tests.ui.screens.look import find_memory
    from ui.dialogs.add_memory import AddMemoryDialog
    from ui.dialogs.files import BackupDialog, ExportDialog, RestoreDialog
    from ui.dialogs.forget import ForgetDialog
    from ui.dialogs.help import HelpDialog
    from ui.dialogs.pair import PairDialog
    from ui.dialogs.sync_pair import SyncJoinDialog
    from ui.dialogs.unlock import RecoveryCodeDialog, UnlockDialog
    yield "unlock", UnlockDialog(demo.folder)
    yield "create", UnlockDialog(tmp / "new", create=True)
    yield "recovery code", RecoveryCodeDialog("ABCD-EFGH-IJKL-MNOP", window)
    mid = find_memory(demo, "I moved to Porto; the Lisbon flat was too expensive.", "episodic")
    yield "forget", ForgetDialog(demo, window.bridge, window, ids=[mid])
    yield "export", ExportDialog(demo.folder, window)
    yield "back up", BackupDialog(str(tmp), window, vault_folder=demo.folder)
    yield "restore", RestoreDialog(window)
    yield "pair", PairDialog(demo, window.bridge, window)
    yield "set up sync", SyncJoinDialog(demo, window.bridge, window, set_up=True)
    yield "join a synced vault", SyncJoinDialog(demo, window.bridge, window)
    yield "add memory", AddMemoryDialog(demo, window.bridge, "demo", window)
    yield "help", HelpDialog(window, "Keys", "<p>F1 shows the keys.</p><p><a href='#x'>x</a></p>")


def test_dialogs(qtbot: Any, window: Any, demo: Any, tmp_path: Path) -> None:
    problems = []
    for name, dlg in _dialogs(window, demo, tmp_path):
        qtbot.addWidget(dlg)
        dlg.show()
        qtbot.waitExposed(dlg)
        settle(qtbot)
        first = next(w for w in [dlg, *dlg.findChildren(QWidget)] if takes_tab(w, dlg))
        try:
            check_round(qtbot, dlg, first)
        except AssertionError as exc:
            problems.append(f"{name} dialog: {str(exc).splitlines()[0]}")
        dlg.close()
    assert not problems, "\n".join(problems)


def test_confirm_question(qtbot: Any, window: Any) -> None:
    from ui.dialogs import confirm
    box = confirm.ask(window, "Undo the run?", "Undo it?", action="&Undo this run",
                      then=lambda: None)
    qtbot.waitExposed(box)
    seen = check_round(qtbot, box, box.defaultButton())
    assert box.findChild(QWidget, "confirmAction") in seen
    box.reject()


# --- visible focus ---------------------------------------------------------------------------
def contrast(a: QColor, b: QColor) -> float:
    """WCAG contrast ratio of two colours (1 to 21)."""
    def lum(c: QColor) -> float:
        def ch(v: float) -> float:
            return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4
        return 0.2126 * ch(c.redF()) + 0.7152 * ch(c.greenF()) + 0.0722 * ch(c.blueF())
    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def fusion_focus_outline(pal: QPalette) -> QColor:
    """The colour Fusion draws a focused button's, field's and box's frame in
    (``QFusionStylePrivate::highlightedOutline``: Highlight darkened by 125, its HSL lightness
    at most 160)."""
    c = pal.color(QPalette.ColorRole.Highlight).darker(125)
    if c.value() > 160:
        c.setHsl(c.hslHue(), c.hslSaturation(), 160)
    return c


@pytest.mark.parametrize("colors", [theme.LIGHT, theme.DARK], ids=["light", "dark"])
def test_focus_stands_out(colors: dict[str, str]) -> None:
    """The focus frame against what it is drawn on (Button, Base, Window), the current row of
    a list (a Highlight fill) against the list's Base, and the text on either: WCAG 2.2 asks
    3:1 for a focus indicator and 4.5:1 for text."""
    pal = theme.palette(colors)
    r = QPalette.ColorRole
    outline = fusion_focus_outline(pal)
    for role in (r.Window, r.Base, r.Button, r.AlternateBase):
        ratio = contrast(outline, pal.color(role))
        assert ratio >= 3.0, f"focus frame on {role.name}: {ratio:.2f}:1"
        ratio = contrast(pal.color(r.Highlight), pal.color(role))
        assert ratio >= 3.0, f"selected row on {role.name}: {ratio:.2f}:1"
    assert contrast(pal.color(r.HighlightedText), pal.color(r.Highlight)) >= 4.5
    # Muted notes and errors are text too (ui/theme.py: PlaceholderText, BrightText).
    for role in (r.PlaceholderText, r.BrightText):
        assert contrast(pal.color(role), pal.color(r.Window)) >= 4.5, role.name
    for role in (r.Text, r.WindowText, r.ButtonText):
        assert contrast(pal.color(role), pal.color(r.Base)) >= 4.5
        assert contrast(pal.color(role), pal.color(r.Window)) >= 4.5
