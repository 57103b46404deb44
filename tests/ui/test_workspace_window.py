"""Settings > Assistants shows what each assistant holds (issue 27 item 10): chosen with the
keyboard, assistant B's workspace lists B's memories by day, and none of A's or the
person's."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import Qt

pytestmark = pytest.mark.gui
WAIT = 15_000


def test_the_workspace_of_the_assistant_chosen_by_keys(qtbot: Any, open_page: Any,
                                                       demo_vault: Any) -> None:
    from app.agent_scope import AgentSession
    from app.domain.memory import Draft, Store
    for name, text in (("alpha", "Alpha noted: Sam wants short replies."),
                       ("beta", "Beta noted: the build runs on Fridays.")):
        demo_vault.pair_agent(name)
        AgentSession(demo_vault, name).remember(Draft(text=text, store=Store.SEMANTIC))
    settings = open_page("settings")
    ws = settings.assistants.workspace
    qtbot.waitUntil(lambda: {"alpha", "beta"} <= set(ws.names), timeout=WAIT)
    ws.choice.setFocus()
    qtbot.keyClick(ws.choice, Qt.Key.Key_Home)
    qtbot.waitUntil(lambda: ws.agent() == ws.names[0], timeout=WAIT)
    qtbot.keyClicks(ws.choice, "beta")   # a combo box jumps to what is typed
    assert ws.agent() == "beta"
    qtbot.waitUntil(lambda: any("build runs on Fridays" in t for t in ws.texts()),
                    timeout=WAIT)
    lines = ws.texts()
    assert lines[0] == "today" and len(lines) == 2   # one day, one memory
    assert not any("short replies" in t for t in lines)      # not alpha's
    assert "beta holds 1 memory of its own" in ws.summary.text()
    from PySide6.QtWidgets import QApplication
    qtbot.wait(QApplication.keyboardInputInterval() + 100)  # a new search, not "betaalpha"
    qtbot.keyClicks(ws.choice, "alpha")
    qtbot.waitUntil(lambda: any("short replies" in t for t in ws.texts()), timeout=WAIT)
    assert not any("Fridays" in t for t in ws.texts())
