"""Sharing an assistant's memory from the window (issue 26 item 5): the detail pane's "Share with
all assistants…" shows only on an assistant's memory, asks first (Cancel changes nothing), and
once shared offers "Undo sharing", which gives it back; the Edit menu follows the pane.

Real vault (SQLCipher file, threaded writer), real MainWindow offscreen, driven with key
presses."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QCoreApplication, Qt, QThreadPool

from tests.conftest import new_vault
from tests.ui.conftest import answer_confirm, main_window

pytestmark = pytest.mark.gui

WAIT = 15_000
AGENT = "claude-code"


@pytest.fixture
def vault(tmp_path: Path, fast_kdf: Any) -> Iterator[Any]:
    from app.agent_scope import AgentSession
    from app.domain.memory import Draft, Store
    v = new_vault(tmp_path / "v", "pw", load_model=False, use_chroma=False)
    v.pair_agent(AGENT)
    v.remember(Draft(text="Ana's birthday is on 3 July.", store=Store.SEMANTIC))
    AgentSession(v, AGENT).remember(Draft(text="Ana adopted a cat called Miso.",
                                          store=Store.SEMANTIC))
    yield v
    QThreadPool.globalInstance().waitForDone(WAIT)
    if not v.locked:
        v.lock()


@pytest.fixture
def window(qtbot: Any, vault: Any) -> Iterator[Any]:
    win = main_window(qtbot, vault)
    win.show()
    qtbot.waitExposed(win)
    yield win
    QThreadPool.globalInstance().waitForDone(WAIT)
    QCoreApplication.processEvents()


def _select(qtbot: Any, window: Any, text: str) -> Any:
    """Select the memory that says ``text`` in the list (keyboard: the list has the focus,
    Down until it is current) and wait for the detail pane to show it."""
    browse = window.browse
    qtbot.waitUntil(lambda: any(r.text == text for r in browse.model.rows), timeout=WAIT)
    browse.table.setFocus()
    row = next(n for n, r in enumerate(browse.model.rows) if r.text == text)
    browse.table.setCurrentIndex(browse.model.index(0, 0))
    for _ in range(row):
        qtbot.keyClick(browse.table, Qt.Key.Key_Down)
    mid = int(browse.model.rows[row].id)
    qtbot.waitUntil(lambda: browse.detail.memory_id == mid, timeout=WAIT)
    return mid


def _press(qtbot: Any, button: Any) -> None:
    button.setFocus()
    qtbot.keyClick(button, Qt.Key.Key_Space)


def test_share_asks_then_shares_and_undo_gives_it_back(qtbot: Any, window: Any,
                                                        vault: Any) -> None:
    from ui.menus import WindowMenus
    detail = window.browse.detail
    menus = window.findChild(WindowMenus)
    assert menus is not None
    # The person's own memory: nothing to share.
    _select(qtbot, window, "Ana's birthday is on 3 July.")
    assert detail.share_btn.isHidden()
    mid = _select(qtbot, window, "Ana adopted a cat called Miso.")
    qtbot.waitUntil(lambda: not detail.share_btn.isHidden(), timeout=WAIT)
    assert detail.share_btn.text() == "Share with all assistants…"
    assert detail.origin.text().startswith(f"from {AGENT}")

    # Cancel (Enter takes the default Cancel): nothing changes.
    _press(qtbot, detail.share_btn)
    words = answer_confirm(qtbot, accept=False)
    assert AGENT in words and "all assistants" in words
    QThreadPool.globalInstance().waitForDone(WAIT)
    assert vault.get(mid).agent == AGENT

    # Share it: global, the history says so, the button becomes the undo.
    _press(qtbot, detail.share_btn)
    answer_confirm(qtbot, accept=True)
    qtbot.waitUntil(lambda: vault.get(mid).agent == "global", timeout=WAIT)
    qtbot.waitUntil(lambda: detail.share_btn.text() == "Undo sharing", timeout=WAIT)
    assert not detail.share_btn.isHidden()
    assert detail.origin.text() == f"from {AGENT}: shared by you with all assistants"
    history = [detail.history.item(n).text() for n in range(detail.history.count())]
    assert any("shared by you with all assistants" in line for line in history)
    menus.update_edit_actions()
    assert menus.share_action.text() == "&Undo sharing"

    # Undo: the assistant's own again, asked nothing, and it can be shared again.
    _press(qtbot, detail.share_btn)
    qtbot.waitUntil(lambda: vault.get(mid).agent == AGENT, timeout=WAIT)
    qtbot.waitUntil(lambda: detail.share_btn.text() == "Share with all assistants…",
                    timeout=WAIT)
    assert [e.action for e in vault.history(mid).entries if e.memory_id == mid][-2:] == [
        "shared", "unshared"]


def test_edit_menu_shares_the_selected_assistant_memory(qtbot: Any, window: Any,
                                                        vault: Any) -> None:
    from ui.menus import WindowMenus
    menus = window.findChild(WindowMenus)
    assert menus is not None
    _select(qtbot, window, "Ana's birthday is on 3 July.")
    menus.update_edit_actions()
    assert not menus.share_action.isEnabled()
    mid = _select(qtbot, window, "Ana adopted a cat called Miso.")
    qtbot.waitUntil(lambda: not window.browse.detail.share_btn.isHidden(), timeout=WAIT)
    menus.update_edit_actions()
    assert menus.share_action.isEnabled()
    menus.share_action.trigger()
    answer_confirm(qtbot, accept=True)
    qtbot.waitUntil(lambda: vault.get(mid).agent == "global", timeout=WAIT)
