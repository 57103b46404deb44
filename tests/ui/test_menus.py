"""The window's menus and everyday keys, a first run that helps, recent vaults and themes
(issue 25 items 3 and 4). Real widgets, real vaults; keys pressed as a person presses them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QCoreApplication, QEvent, Qt, QThreadPool
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication, QMenu

from app.prefs import Prefs
from tests.conftest import new_vault

pytestmark = pytest.mark.gui
WAIT = 30_000


def _drain() -> None:
    QThreadPool.globalInstance().waitForDone(WAIT)
    QCoreApplication.processEvents()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


def _shown(qtbot: Any, window: Any) -> Any:
    window.resize(1200, 760)
    window.show()
    qtbot.waitExposed(window)
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=WAIT)
    return window


def _closed(widget: Any) -> bool:
    """Closed (a dialog that deletes itself on close is then gone)."""
    import shiboken6
    return not shiboken6.isValid(widget) or not widget.isVisible()


def _labels(menu: QMenu) -> list[str]:
    return [a.text().replace("&", "") for a in menu.actions() if not a.isSeparator()]


def _top(qtbot: Any, kind: type) -> Any:
    found: list[Any] = []

    def visible() -> bool:
        found[:] = [w for w in QApplication.topLevelWidgets()
                    if isinstance(w, kind) and w.isVisible()]
        return bool(found)
    qtbot.waitUntil(visible, timeout=WAIT)
    return found[0]


@pytest.fixture
def empty_vault(tmp_path: Path, fast_kdf: Any) -> Iterator[Any]:
    vault = new_vault(tmp_path / "Sam's vault", "a long enough password", load_model=False,
                      use_chroma=False)
    yield vault
    QThreadPool.globalInstance().waitForDone(WAIT)
    if not vault.locked:
        vault.lock()


@pytest.fixture
def empty_window(qtbot: Any, empty_vault: Any) -> Iterator[Any]:
    from ui.bridge import CoreBridge
    from ui.main_window import MainWindow
    win = MainWindow(empty_vault, CoreBridge(), idle_minutes=5, folder=empty_vault.folder)
    qtbot.addWidget(win)
    yield win
    _drain()


def test_menus_hold_the_everyday_actions_with_their_keys(window: Any) -> None:
    bar = window.menuBar()
    menus = {m.title().replace("&", ""): m for m in bar.findChildren(QMenu)
             if m.parent() is bar}
    assert {"File", "Edit", "View", "Help"} <= set(menus)
    assert _labels(window.files.menu)[:3] == ["New vault…", "Open vault…", "Open recent"]
    assert {"Import…", "Export…", "Back up now…", "Restore…", "Quit"} <= set(
        _labels(window.files.menu))
    edit = _labels(menus["Edit"])
    assert edit[0] == "Add a memory…" and "Correct…" in edit and "Forget…" in edit
    assert "Select all in the list" in edit
    view = _labels(menus["View"])
    assert {"Find…", "Search as of a day", "Conversation", "Facts", "Inbox", "Archive",
            "Timeline", "Theme"} <= set(view)
    assert _labels(menus["Help"]) == ["Keyboard shortcuts",
                                      "How Kept keeps your memories safe", "About Kept"]
    keys = {a.text().replace("&", ""): a.shortcut().toString() for m in menus.values()
            for a in m.actions()}
    assert keys["Add a memory…"] == "Ctrl+N" and keys["Find…"] == "Ctrl+F"
    assert keys["Forget…"] == "Del" and keys["Keyboard shortcuts"] == "F1"
    assert keys["Correct…"] == "F2"


def test_ctrl_f_finds_f1_helps_and_delete_asks_to_forget_only_from_the_list(
        qtbot: Any, window: Any) -> None:
    from ui.dialogs.forget import ForgetDialog
    from ui.dialogs.help import HelpDialog
    _shown(qtbot, window)
    browse = window.browse
    qtbot.waitUntil(lambda: browse.model.rowCount() > 3, timeout=WAIT)
    browse.table.setFocus()
    qtbot.keyClick(browse.table, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert browse.search.hasFocus()
    # Delete in the search field deletes a character; it never asks to forget.
    qtbot.keyClicks(browse.search, "tea")
    qtbot.keyClick(browse.search, Qt.Key.Key_Home)
    qtbot.keyClick(browse.search, Qt.Key.Key_Delete)
    assert browse.search.text() == "ea"
    assert not [w for w in QApplication.topLevelWidgets()
                if isinstance(w, ForgetDialog) and w.isVisible()]
    # In the list: Down to a memory, Shift+Down for a second one, Delete asks about both.
    browse.table.setFocus()
    qtbot.keyClick(browse.table, Qt.Key.Key_Down)
    qtbot.keyClick(browse.table, Qt.Key.Key_Down, Qt.KeyboardModifier.ShiftModifier)
    ids = browse.selected_ids()
    assert len(ids) == 2
    qtbot.keyClick(browse.table, Qt.Key.Key_Delete)
    dlg = _top(qtbot, ForgetDialog)
    qtbot.waitUntil(lambda: dlg.plan is not None, timeout=WAIT)
    assert set(dlg.plan.memory_ids) >= set(ids) and not dlg.forget_btn.isEnabled()
    qtbot.keyClick(dlg, Qt.Key.Key_Escape)  # nothing forgotten
    assert all(window.vault.get(i) for i in ids)
    # F1: every key, named.
    _shown(qtbot, window)
    qtbot.keyClick(browse.table, Qt.Key.Key_F1)
    help_dlg = _top(qtbot, HelpDialog)
    text = help_dlg.body.toPlainText()
    assert "Ctrl+F" in text and "Add a memory" in text and "Del" in text
    help_dlg.close()


def test_ctrl_n_adds_a_memory_by_hand_and_selects_it(qtbot: Any, window: Any) -> None:
    from ui.dialogs.add_memory import AddMemoryDialog
    _shown(qtbot, window)
    browse = window.browse
    qtbot.waitUntil(lambda: browse.model.rowCount() > 0, timeout=WAIT)
    qtbot.keyClick(browse.table, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    dlg = _top(qtbot, AddMemoryDialog)
    qtbot.waitUntil(dlg.text.hasFocus, timeout=WAIT)
    qtbot.keyClick(dlg.text, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert "Write the memory first" in dlg.problem.text() and dlg.isVisible()  # nothing yet
    qtbot.keyClicks(dlg.text, "My sister Ana lives in Porto.")
    qtbot.keyClick(dlg.text, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: _closed(dlg), timeout=WAIT)

    def current() -> Any:
        return browse.model.row_at(browse.table.currentIndex().row())
    qtbot.waitUntil(lambda: current() is not None
                    and current().text == "My sister Ana lives in Porto.", timeout=WAIT)
    memory = window.vault.get(int(current().id))
    assert memory.store.value == "semantic" and memory.user_validated
    qtbot.waitUntil(lambda: browse.detail.text.toPlainText()
                    == "My sister Ana lives in Porto.", timeout=WAIT)


def test_an_empty_vault_greets_with_three_things_to_do(qtbot: Any, empty_window: Any) -> None:
    from ui.dialogs.add_memory import AddMemoryDialog
    from ui.dialogs.pair import PairDialog
    window = _shown(qtbot, empty_window)
    browse = window.browse
    qtbot.waitUntil(lambda: browse.welcome.isVisible(), timeout=WAIT)
    assert not browse.table.isVisible()
    assert [b.text() for b in (browse.import_btn, browse.connect_btn, browse.write_btn)] == [
        "Import a chat export…", "Connect an assistant…", "Write a first memory…"]
    # Connect an assistant: Settings, with the pairing dialog open.
    browse.connect_btn.setFocus()
    qtbot.keyClick(browse.connect_btn, Qt.Key.Key_Space)
    pair = _top(qtbot, PairDialog)
    pair.close()
    _drain()
    window.go(("store", None, "All memories"))
    qtbot.waitUntil(lambda: browse.welcome.isVisible(), timeout=WAIT)
    # Write a first memory: the Add dialog; once added, the list replaces the greeting.
    browse.write_btn.setFocus()
    qtbot.keyClick(browse.write_btn, Qt.Key.Key_Space)
    dlg = _top(qtbot, AddMemoryDialog)
    assert "Sam's vault" in dlg.windowTitle()  # the dialog names the vault
    qtbot.keyClicks(dlg.text, "I started at Pinegrove in September.")
    qtbot.keyClick(dlg.text, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: browse.model.rowCount() == 1 and not browse.welcome.isVisible()
                    and browse.table.isVisible(), timeout=WAIT)
    # A search that finds nothing, or an empty store, is not a first run.
    window.go(("store", window.store_items()[3][1][1], window.store_items()[3][0]))
    qtbot.waitUntil(lambda: "Habits" in browse.title.text() or browse.model.rowCount() >= 0,
                    timeout=WAIT)
    assert not browse.welcome.isVisible()


def test_the_theme_is_chosen_in_view_and_remembered(qtbot: Any, window: Any,
                                                    qapp: Any) -> None:
    from ui import theme
    before = qapp.palette()
    try:
        window.menus.theme_actions["dark"].trigger()
        assert qapp.palette().color(QPalette.ColorRole.Window).lightness() < 80
        assert Prefs.load().theme == "dark"
        window.menus.theme_actions["light"].trigger()
        assert qapp.palette().color(QPalette.ColorRole.Window).lightness() > 200
        assert Prefs.load().theme == "light"
        # The banner's pale background carries its own dark text, whatever the theme.
        assert "color: #3d3000" in theme.BANNER_STYLE
    finally:
        qapp.setPalette(before)


def test_recent_vaults_and_the_last_one_opens_at_start(tmp_path: Path, demo_template: Path,
                                                       window: Any) -> None:
    import shutil

    from app.bootstrap import default_vault_dir
    from ui.main import last_vault
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(demo_template, a)
    shutil.copytree(demo_template, b)
    prefs = Prefs.load()
    assert prefs.recent == [] and last_vault() == default_vault_dir()
    for folder in (a, b, a):
        prefs.opened(folder)
    prefs.save()
    assert Prefs.load().recent == [str(a), str(b)]  # once each, the last opened first
    assert last_vault() == a
    shutil.rmtree(a)  # gone: the next start falls back, the menu leaves it out
    assert last_vault() == default_vault_dir()
    window.files._fill_recent()
    labels = [x.text() for x in window.files.recent_menu.actions()]
    assert len(labels) == 1 and "b" in labels[0]
    # A damaged file reads as nothing yet; the window still starts.
    Prefs.path().write_text("{not json", encoding="utf-8")
    assert Prefs.load() == Prefs()
    Prefs.path().write_text(json.dumps({"recent": [1, str(b)], "theme": "neon"}), "utf-8")
    assert Prefs.load() == Prefs([str(b)], "system")


def test_f2_corrects_the_memory_just_selected_and_tab_leaves_the_editor(
        qtbot: Any, window: Any) -> None:
    """The Edit actions follow the detail pane (which loads after the selection): F2 right
    after a memory is selected opens its editor; Tab there moves to Save (it never types a
    tab into the memory)."""
    _shown(qtbot, window)
    browse, detail = window.browse, window.browse.detail
    qtbot.waitUntil(lambda: browse.model.rowCount() > 3, timeout=WAIT)
    browse.table.setFocus()
    qtbot.keyClick(browse.table, Qt.Key.Key_Down)
    qtbot.waitUntil(lambda: detail.memory_id is not None, timeout=WAIT)
    qtbot.keyClick(browse.table, Qt.Key.Key_F2)
    qtbot.waitUntil(detail.editor.isVisible, timeout=WAIT)
    assert detail.editor.hasFocus()
    before = detail.editor.toPlainText()
    qtbot.keyClick(detail.editor, Qt.Key.Key_Tab)
    assert detail.save_btn.hasFocus() and detail.editor.toPlainText() == before


def test_archiving_several_asks_first_and_says_what_happens(qtbot: Any, window: Any) -> None:
    from tests.ui.conftest import answer_confirm
    _shown(qtbot, window)
    browse, vault = window.browse, window.vault
    window.go(("store", window.store_items()[3][1][1], window.store_items()[3][0]))  # Facts
    qtbot.waitUntil(lambda: browse.model.rowCount() > 2
                    and browse.title.text().startswith("Facts"), timeout=WAIT)
    browse.table.setFocus()
    qtbot.keyClick(browse.table, Qt.Key.Key_Down)
    qtbot.keyClick(browse.table, Qt.Key.Key_Down, Qt.KeyboardModifier.ShiftModifier)
    ids = browse.selected_ids()
    assert len(ids) == 2
    window.menus.archive_action.trigger()
    words = answer_confirm(qtbot, accept=False)  # Enter: Cancel
    assert "Archive the 2 selected memories?" in words and "not forgotten" in words
    assert all(vault.get(i).status.value == "active" for i in ids)
    window.menus.archive_action.trigger()
    answer_confirm(qtbot, accept=True)
    qtbot.waitUntil(lambda: all(vault.get(i).status.value == "archived" for i in ids),
                    timeout=WAIT)


def test_the_recovery_code_can_be_copied_and_printed_and_leaves_the_clipboard(
        qtbot: Any, tmp_path: Path) -> None:
    from PySide6.QtPrintSupport import QPrintDialog

    from ui.dialogs.unlock import RecoveryCodeDialog
    code = "ABCD-EFGH-JKLM-NPQR-STUV-WXYZ-2345-6789"
    dlg = RecoveryCodeDialog(code, folder=tmp_path / "My vault")
    qtbot.addWidget(dlg)
    dlg.CLIPBOARD_SECONDS = 1
    dlg._clear.setInterval(300)
    dlg.show()
    qtbot.waitExposed(dlg)
    assert "My vault" in dlg.windowTitle()
    assert not dlg.copied.isVisible()  # no blank line before there is something to say
    dlg.copy_btn.setFocus()
    qtbot.keyClick(dlg.copy_btn, Qt.Key.Key_Space)
    clip = QApplication.clipboard()
    assert clip.text() == code and "Copied" in dlg.copied.text()
    # The message shows, and the dialog grows to hold it (its layout's height at its width).
    lay = dlg.layout()
    qtbot.waitUntil(lambda: dlg.copied.isVisible()
                    and dlg.height() >= lay.totalHeightForWidth(dlg.width()), timeout=5_000)
    qtbot.waitUntil(lambda: clip.text() != code, timeout=5_000)  # cleared after its time
    dlg.print_btn.setFocus()
    qtbot.keyClick(dlg.print_btn, Qt.Key.Key_Space)
    printing = _top(qtbot, QPrintDialog)
    printing.reject()
    clip.setText("something else the person copied")
    qtbot.keyClick(dlg.copy_btn, Qt.Key.Key_Space)
    dlg.accept()  # closing takes the code off the clipboard too
    assert clip.text() != code


def test_choosers_start_at_home_or_beside_the_vault_never_in_the_working_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ui.choosers import start_folder
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    assert start_folder(None) == str(tmp_path / "home")
    vault = tmp_path / "vaults" / "mine"
    vault.mkdir(parents=True)
    assert start_folder(vault) == str(tmp_path / "vaults")
    assert start_folder(tmp_path / "gone" / "v") == str(tmp_path / "home")


def test_what_is_imported_while_the_password_is_typed_exists() -> None:
    """``ui.main.WARM`` (imported in the background while the unlock dialog waits, so opening
    the window after unlock does not stall on first imports) names modules that import."""
    import importlib

    from ui.main import WARM
    for name in WARM:
        assert importlib.import_module(name) is not None
