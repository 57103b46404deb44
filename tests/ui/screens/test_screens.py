"""Screenshot comparisons (STYLE B9): every page of the main window on the demo vault and every
dialog, in Kept's light and dark themes, rendered offscreen with Fusion, the bundled DejaVu
Sans, the theme's palette and fixed sizes, against the grey PNGs in ``baseline/`` (named
``<screen>-<theme>.png``) with a tolerance (at most 1.0 % of pixels may differ by more than
16 grey levels). One window per theme serves every page (a window costs more than a page).

Regenerate after an intended change with ``KEPT_REGEN_SCREENS=1`` (the test then writes the
baseline and fails, so review the PNG diff before committing). On a mismatch the actual image
and a diff (changed pixels in red) are written to ``tests/ui/screens/failures/``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QEvent, QSize, QThreadPool
from PySide6.QtWidgets import QApplication

from tests.conftest import time_zone
from tests.ui.screens.look import (
    baseline_image,
    compare_images,
    find_memory,
    fixed_demo_vault,
    regen,
    release_words_clock,
)

pytestmark = [pytest.mark.screenshot, pytest.mark.gui,
              pytest.mark.skipif(sys.platform != "linux", reason="baselines are Linux renders")]

HERE = Path(__file__).resolve().parent
BASELINE = HERE / "baseline"
FAILURES = HERE / "failures"
THRESHOLD = float(os.environ.get("KEPT_SCREEN_THRESHOLD", "1.0"))  # percent of pixels
WAIT = 15_000


THEMES = ["light", "dark"]


@pytest.fixture(scope="module", params=THEMES)
def look(request: pytest.FixtureRequest, qapp: Any) -> Iterator[str]:
    from tests.ui.screens.look import apply_look
    restore = apply_look(qapp, request.param)
    yield request.param
    restore()


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    # No embedding model: the status line and the demo's consolidation must not depend on
    # whether the model is installed.
    # Times are shown in the local zone (app/words.py): the pictures are taken in UTC
    # wherever the tests run.
    with time_zone("UTC"):
        vault = fixed_demo_vault(tmp_path_factory.mktemp("screens") / "demo", load_model=False)
        yield vault
        QThreadPool.globalInstance().waitForDone(WAIT)
        vault.lock()
        release_words_clock()


@pytest.fixture(scope="module")
def window(look: str, demo: Any, qapp: Any) -> Iterator[Any]:
    from ui.bridge import CoreBridge
    from ui.main_window import MainWindow
    win = MainWindow(demo, CoreBridge(), idle_minutes=5)
    win.resize(QSize(1200, 760))
    win.show()
    yield win
    QThreadPool.globalInstance().waitForDone(WAIT)
    win.clear_for_lock()
    win.close()
    win.deleteLater()
    QThreadPool.globalInstance().waitForDone(WAIT)


def settle(qtbot: Any) -> None:
    """Every background query delivered, every pending layout and paint done."""
    QThreadPool.globalInstance().waitForDone(WAIT)
    qtbot.wait(50)
    QThreadPool.globalInstance().waitForDone(WAIT)
    QApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)
    qtbot.wait(50)


def active(widget: Any) -> None:
    """Make ``widget``'s window the active one, as the window a person looks at is. Whether
    a window is active changes how selections and default buttons are drawn, and without this
    it depends on which tests ran before in the same process (pytest-xdist shares them out
    differently from run to run)."""
    from PySide6.QtTest import QTest
    top = widget.window()
    top.raise_()
    top.activateWindow()
    assert QTest.qWaitForWindowActive(top, WAIT), f"{type(top).__name__} never became active"


def check(widget: Any, name: str, look: str) -> None:
    active(widget)
    QApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)
    QApplication.processEvents()
    image = widget.grab().toImage()
    name = f"{name}-{look}"
    path = BASELINE / f"{name}.png"
    if regen() or not path.exists():
        BASELINE.mkdir(exist_ok=True)
        baseline_image(image).save(str(path), "PNG", 0)  # quality 0: strongest compression
        pytest.fail(f"baseline written to {path}: review it, then rerun")
    from PySide6.QtGui import QImage
    diff = compare_images(image, QImage(str(path)))
    if diff.percent > THRESHOLD:
        FAILURES.mkdir(exist_ok=True)
        image.save(str(FAILURES / f"{name}.actual.png"))
        if diff.diff_image is not None:
            diff.diff_image.save(str(FAILURES / f"{name}.diff.png"))
        pytest.fail(f"{name}: {diff.percent:.2f} % of pixels differ (size mismatch: "
                    f"{diff.size_mismatch}); see {FAILURES}")


def select(qtbot: Any, window: Any, mid: int) -> None:
    browse = window.browse
    window.go(("store", None, "All memories"))
    qtbot.waitUntil(lambda: browse.model.rowCount() > 0, timeout=WAIT)
    row = next(n for n, r in enumerate(browse.model.rows) if int(r.id) == mid)
    browse.table.setCurrentIndex(browse.model.index(row, 0))
    qtbot.waitUntil(lambda: browse.detail.memory_id == mid, timeout=WAIT)


# --- pages -----------------------------------------------------------------------------------
def test_main_window(qtbot: Any, window: Any, demo: Any, look: str) -> None:
    mid = find_memory(demo, "Sam lives in Porto", "semantic")
    select(qtbot, window, mid)
    qtbot.waitUntil(lambda: window.status_label.text() != "", timeout=WAIT)
    qtbot.waitUntil(lambda: window.timeline_item.childCount() > 0, timeout=WAIT)
    expand_nav(window)
    settle(qtbot)
    assert window.size() == QSize(1200, 760)
    check(window, "main_window", look)


def expand_nav(window: Any) -> None:
    """Every branch of the navigation open, whichever pages were shown before (an entity's
    page opens People; without this the pictures depend on the tests' order)."""
    for n in range(window.nav.topLevelItemCount()):
        window.nav.topLevelItem(n).setExpanded(True)


PAGES = ["inbox", "consolidation", "insights", "settings", "entity", "archive", "timeline_day"]


@pytest.mark.parametrize("page", PAGES)
def test_page(qtbot: Any, window: Any, look: str, page: str) -> None:
    qtbot.waitUntil(lambda: window.people_item.childCount() > 0
                    and window.timeline_item.childCount() > 0, timeout=WAIT)
    if page == "entity":
        window.nav.setCurrentItem(window.people_item.child(0))
    elif page == "timeline_day":
        window.nav.setCurrentItem(window.timeline_item.child(0))
    elif page == "archive":
        window.go(("archive",))
    else:
        window.go(("page", page))
    settle(qtbot)
    if page == "inbox":
        shown = window.stack.currentWidget()
        qtbot.waitUntil(lambda: bool(getattr(shown, "cards", None)), timeout=WAIT)
        settle(qtbot)
    if page in ("entity", "timeline_day"):  # (the demo's Archive is empty)
        qtbot.waitUntil(lambda: window.browse.model.rowCount() > 0, timeout=WAIT)
        settle(qtbot)
    expand_nav(window)
    settle(qtbot)
    check(window, page, look)


# --- dialogs ---------------------------------------------------------------------------------
def show(qtbot: Any, dlg: Any, size: QSize | None = None) -> Any:
    qtbot.addWidget(dlg)
    if size is not None:
        dlg.resize(size)
    dlg.show()
    qtbot.waitExposed(dlg)
    settle(qtbot)
    return dlg


def test_forget_dialog(qtbot: Any, window: Any, demo: Any, look: str) -> None:
    from ui.dialogs.forget import ForgetDialog
    mid = find_memory(demo, "I moved to Porto; the Lisbon flat was too expensive.", "episodic")
    dlg = ForgetDialog(window.vault, window.bridge, window, ids=[mid])
    dlg.resize(QSize(640, 520))
    dlg.show()
    qtbot.waitUntil(lambda: dlg.plan is not None, timeout=WAIT)
    settle(qtbot)
    assert not dlg.forget_btn.isEnabled()
    assert dlg.tree.currentItem() is dlg.tree.topLevelItem(0)  # the keyboard starts at the top
    check(dlg, "forget_dialog", look)
    dlg.reject()


def _dialog(qtbot: Any, folder: Path, create: bool) -> Any:
    from ui.dialogs.unlock import UnlockDialog
    dlg = UnlockDialog(folder, create=create)
    qtbot.addWidget(dlg)
    dlg.resize(QSize(460, 320 if create else 220))
    dlg.show()
    qtbot.waitUntil(lambda: dlg.remember_note.text() != "" or dlg.remember.isVisible(),
                    timeout=WAIT)
    return dlg


def test_unlock_dialog(qtbot: Any, look: str, demo: Any) -> None:
    dlg = _dialog(qtbot, demo.folder, create=False)
    dlg.password.setText("not the password")
    dlg.error.setText("Wrong password, or the key file was tampered with. Nothing was changed.")
    settle(qtbot)
    check(dlg, "unlock_dialog", look)


def test_create_dialog(qtbot: Any, look: str, tmp_path: Path) -> None:
    dlg = _dialog(qtbot, tmp_path / "new", create=True)
    dlg.password.setText("river otter lantern 42")
    settle(qtbot)
    assert dlg.meter.value() > 0
    check(dlg, "create_dialog", look)


def test_recovery_code_dialog(qtbot: Any, look: str, demo: Any) -> None:
    from ui.dialogs.unlock import RecoveryCodeDialog
    dlg = show(qtbot, RecoveryCodeDialog("K7QF-2MXD-9PLA-W4RT-H3NC-8ZEB", folder=demo.folder))
    check(dlg, "recovery_code_dialog", look)


@pytest.mark.parametrize("name", ["export", "backup", "restore"])
def test_file_dialogs(qtbot: Any, window: Any, demo: Any, look: str, name: str) -> None:
    from ui.dialogs.files import BackupDialog, ExportDialog, RestoreDialog
    if name == "export":
        dlg = ExportDialog(demo.folder, window)
    elif name == "backup":
        dlg = BackupDialog("", window, vault_folder=demo.folder)  # no dated default name
    else:
        dlg = RestoreDialog(window)
    show(qtbot, dlg)
    check(dlg, f"{name}_dialog", look)
    dlg.close()


def test_pair_dialog(qtbot: Any, window: Any, demo: Any, look: str) -> None:
    from ui.dialogs.pair import PairDialog
    dlg = show(qtbot, PairDialog(demo, window.bridge, window))
    check(dlg, "pair_dialog", look)
    dlg.close()


def test_add_memory_dialog(qtbot: Any, window: Any, demo: Any, look: str) -> None:
    from ui.dialogs.add_memory import AddMemoryDialog
    dlg = AddMemoryDialog(demo, window.bridge, "demo", window)
    dlg.text.setPlainText("Sam's birthday is on the 3rd of May.")
    show(qtbot, dlg)
    check(dlg, "add_memory_dialog", look)
    dlg.close()


def test_help_dialog(qtbot: Any, window: Any, look: str) -> None:
    # Keyboard shortcuts, not About: About lists the installed libraries' versions.
    from ui.dialogs.help import HelpDialog
    window.menus.show_shortcuts()
    dlg = next(d for d in window.findChildren(HelpDialog) if d.isVisible())
    settle(qtbot)
    check(dlg, "help_dialog", look)
    dlg.close()


def test_confirm_question(qtbot: Any, window: Any, look: str) -> None:
    from ui.dialogs import confirm
    box = confirm.ask(window, "Undo this run?", "Undo the consolidation run of 14 July?",
                      action="&Undo this run", then=lambda: None,
                      detail="The memories it merged come back as they were.")
    qtbot.waitExposed(box)
    settle(qtbot)
    check(box, "confirm_question", look)
    box.reject()


@pytest.mark.parametrize("set_up", [True, False], ids=["set_up", "join"])
def test_sync_join_dialog(qtbot: Any, window: Any, demo: Any, look: str, set_up: bool) -> None:
    # Settings > Devices' two first steps (issue 29). The pair dialog shows a fresh random code
    # and its QR picture, so it is checked by tests/ui/test_devices_window.py, not by a picture.
    from ui.dialogs.sync_pair import SyncJoinDialog
    dlg = show(qtbot, SyncJoinDialog(demo, window.bridge, window, set_up=set_up))
    check(dlg, "sync_set_up_dialog" if set_up else "sync_join_dialog", look)
    dlg.close()
