"""The newer panes from the keyboard (issue 25 item 4): Tab reaches each control in reading
order and goes on past the last one (no trap), Enter activates what has focus. The entity
card's merge buttons, Settings > Assistants "What each assistant holds", and the detail pane's
link sentences, each in a real MainWindow driven by key presses."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import Qt, QThreadPool
from PySide6.QtWidgets import QApplication

from tests.ui.conftest import main_window
from tests.ui.test_entity_view import entity_item, merged_vault
from tests.ui.test_link_sentences import _between
from ui.views.detail import TARGET_ROLE

__all__ = ["merged_vault"]  # the fixture, shared with test_entity_view

pytestmark = pytest.mark.gui
WAIT = 15_000


def tab(qtbot: Any, back: bool = False) -> Any:
    """One Tab (Shift+Tab) to whatever has focus; returns what has it then."""
    w = QApplication.focusWidget()
    assert w is not None
    qtbot.keyClick(w, Qt.Key.Key_Backtab if back else Qt.Key.Key_Tab,
                   Qt.KeyboardModifier.ShiftModifier if back else Qt.KeyboardModifier.NoModifier)
    return QApplication.focusWidget()


def test_merge_buttons_by_tab_and_enter(qtbot: Any, merged_vault: Any) -> None:
    window = main_window(qtbot, merged_vault)
    window.resize(1024, 640)
    window.show()
    qtbot.waitExposed(window)
    card = window.browse.entity
    window.nav.setCurrentItem(entity_item(qtbot, window, "Spanish"))
    qtbot.waitUntil(lambda: card.merge_row.isVisible(), timeout=WAIT)
    # 1024x640: the note and both buttons are shown whole
    for b in (card.apart_button, card.undo_button):
        assert b.width() >= b.sizeHint().width(), b.text()
    # reading order: the merge row (note, then its buttons) sits above the facts
    card.apart_button.setFocus()
    assert tab(qtbot) is card.undo_button
    assert tab(qtbot) is card.facts
    assert tab(qtbot) is window.browse.table     # on past the card to its memories
    assert tab(qtbot, back=True) is card.facts   # and back
    assert tab(qtbot, back=True) is card.undo_button
    assert tab(qtbot, back=True) is card.apart_button
    qtbot.keyClick(card.apart_button, Qt.Key.Key_Return)  # Enter, as on a dialog's button
    qtbot.waitUntil(lambda: not card.merge_row.isVisible(), timeout=WAIT)
    qtbot.waitUntil(lambda: {e.kind for e in merged_vault.entities() if e.name == "Spanish"}
                    == {"person", "resource"}, timeout=WAIT)
    QThreadPool.globalInstance().waitForDone(WAIT)


def test_workspace_panel_by_tab(qtbot: Any, open_page: Any, window: Any,
                                demo_vault: Any) -> None:
    from app.agent_scope import AgentSession
    from app.domain.memory import Draft, Store
    demo_vault.pair_agent("alpha")
    AgentSession(demo_vault, "alpha").remember(
        Draft(text="Alpha noted: Sam wants short replies.", store=Store.SEMANTIC))
    window.resize(1024, 640)
    settings = open_page("settings")
    ws = settings.assistants.workspace
    qtbot.waitUntil(lambda: "alpha" in ws.names and ws.tree.topLevelItemCount() > 0,
                    timeout=WAIT)
    ws.choice.setFocus()
    assert tab(qtbot) is ws.tree                      # the chosen assistant's memories next
    assert tab(qtbot) is not ws.tree                  # and on: the tree keeps no Tab
    assert tab(qtbot, back=True) is ws.tree
    assert tab(qtbot, back=True) is ws.choice
    assert ws.summary.width() > 0 and "alpha holds" in ws.summary.text()


def test_link_sentences_by_tab_and_enter(qtbot: Any, window: Any, demo_vault: Any) -> None:
    before, mid, after = _between(demo_vault)
    window.resize(1024, 640)
    window.show()
    qtbot.waitExposed(window)
    browse, detail = window.browse, window.browse.detail
    qtbot.waitUntil(lambda: any(int(r.id) == mid for r in browse.model.rows), timeout=WAIT)
    row = next(n for n, r in enumerate(browse.model.rows) if int(r.id) == mid)
    browse.table.setFocus()
    browse.table.setCurrentIndex(browse.model.index(row, 0))
    qtbot.waitUntil(lambda: detail.memory_id == mid and detail.links.count() > 0,
                    timeout=WAIT)
    seen = []
    for _ in range(40):  # Tab from the list through the pane until the link sentences
        w = tab(qtbot)
        seen.append(w)
        if w is detail.links:
            break
    assert detail.links in seen, [type(w).__name__ for w in seen]
    assert browse.table not in seen[:-1]  # reached before Tab wrapped round to the list
    nxt = tab(qtbot)
    assert nxt is not detail.links  # no trap: Tab goes on
    assert tab(qtbot, back=True) is detail.links
    n = next(n for n in range(detail.links.count())
             if detail.links.item(n).data(TARGET_ROLE) == after)
    detail.links.setCurrentRow(n)
    qtbot.keyClick(detail.links, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: detail.memory_id == after, timeout=WAIT)
