"""How an event went, set in the memory detail pane with the keyboard (issue 27 item 8): the
choice saves when changed with the arrow keys, the words on Enter; a fact has no such row."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt

from app.api import MemoryQuery
from tests.ui.test_flows import WAIT, close_vault, drain, make_vault, select_memory


def _open_on_an_event(qtbot: Any, vault: Any) -> tuple[Any, Any, int]:
    """The main window on ``vault`` with its first event selected and its "How it went" row
    shown: (window, the row, the event's id)."""
    from ui.bridge import CoreBridge
    from ui.main_window import MainWindow
    win = MainWindow(vault, CoreBridge(), idle_minutes=5)
    qtbot.addWidget(win)
    win.show()
    rows = vault.page_memories(MemoryQuery(fold=True), limit=20).rows
    event = next(int(r.id) for r in rows if r.store == "episodic")
    select_memory(qtbot, win, event)
    box = win.browse.detail.outcome
    qtbot.waitUntil(box.isVisible, timeout=WAIT)
    return win, box, event


def test_rating_an_event_from_the_detail_pane_by_keys(qtbot: Any, tmp_path: Path,
                                                      fast_kdf: Any) -> None:
    vault = make_vault(tmp_path / "v", fast_kdf, turns=3, facts=("Sam's bike is green.",))
    try:
        win, box, event = _open_on_an_event(qtbot, vault)
        rows = vault.page_memories(MemoryQuery(fold=True), limit=20).rows
        fact = next(int(r.id) for r in rows if r.store == "semantic")
        assert box.choice.currentText() == "Not rated"
        box.choice.setFocus()
        qtbot.keyClick(box.choice, Qt.Key.Key_Down)          # "Went well"
        qtbot.waitUntil(lambda: vault.get(event).extra.get("rating") == 1, timeout=WAIT)
        qtbot.keyClick(box.choice, Qt.Key.Key_Down)          # "Mixed"
        qtbot.waitUntil(lambda: vault.get(event).extra.get("rating") == 0, timeout=WAIT)
        qtbot.keyClick(box.choice, Qt.Key.Key_Tab)
        assert box.words.hasFocus()
        qtbot.keyClicks(box.words, "ran late but fine")
        qtbot.keyClick(box.words, Qt.Key.Key_Return)
        qtbot.waitUntil(lambda: vault.get(event).extra.get("outcome") == "ran late but fine",
                        timeout=WAIT)
        assert vault.get(event).extra["rating"] == 0
        drain()
        qtbot.waitUntil(lambda: box.words.text() == "ran late but fine", timeout=WAIT)
        assert box.choice.currentText() == "Mixed"
        select_memory(qtbot, win, fact)
        assert not box.isVisible()   # facts are not rated
    finally:
        drain()
        close_vault(vault)


def test_quick_choices_land_in_order_and_a_late_load_does_not_undo_them(
        qtbot: Any, tmp_path: Path, fast_kdf: Any) -> None:
    """Arrow keys pressed faster than the vault writes: each choice is saved in the order made,
    the last one wins, and the words typed meanwhile are saved with it (CI once saw a reload
    that had read the vault before a save put "Went well" back under the person's "Mixed")."""
    vault = make_vault(tmp_path / "v", fast_kdf, turns=3)
    try:
        _win, box, event = _open_on_an_event(qtbot, vault)
        for _round in range(3):
            box.choice.setFocus()
            for _ in range(3):                                   # Not rated -> Went badly
                qtbot.keyClick(box.choice, Qt.Key.Key_Down)
            qtbot.keyClick(box.choice, Qt.Key.Key_Up)            # -> Mixed
            qtbot.keyClick(box.choice, Qt.Key.Key_Tab)
            box.words.clear()
            qtbot.keyClicks(box.words, "late")
            qtbot.keyClick(box.words, Qt.Key.Key_Return)
            qtbot.waitUntil(lambda: vault.get(event).extra.get("outcome") == "late"
                            and vault.get(event).extra.get("rating") == 0, timeout=WAIT)
            drain()
            assert vault.get(event).extra["rating"] == 0
            assert box.choice.currentText() == "Mixed"
            assert box.words.text() == "late"
            box.choice.setFocus()
            qtbot.keyClick(box.choice, Qt.Key.Key_Home)          # back to "Not rated"
            box.words.clear()
            qtbot.keyClick(box.words, Qt.Key.Key_Return)
            qtbot.waitUntil(lambda: vault.get(event).extra.get("rating") is None
                            and not vault.get(event).extra.get("outcome"), timeout=WAIT)
            drain()
            assert box.choice.currentText() == "Not rated"
    finally:
        drain()
        close_vault(vault)
