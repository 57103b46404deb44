"""Links in the detail pane as sentences a person reads (issue 27 item 7): a conversation
turn says what came before it and what followed (FOLLOWED_BY is PRECEDED_BY read from the
other side), and a click or Enter on a line opens the memory it names. The real demo vault in
a real MainWindow."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import Qt

from app.api import ALL_MEMORIES
from ui.models.memory_table import Column
from ui.views.detail import TARGET_ROLE

pytestmark = pytest.mark.gui
WAIT = 15_000


def _between(vault: Any) -> tuple[int, int, int]:
    """An event with one before it and one after it in its conversation: (before, it, after)."""
    for row in vault.page_memories(ALL_MEMORIES, limit=200).rows:
        ex = vault.explain(row.id)
        before = [int(x.dst) for x in ex.links if x.kind == "PRECEDED_BY" and x.src == ex.id]
        after = [int(x.src) for x in ex.links if x.kind == "PRECEDED_BY" and x.dst == ex.id]
        if before and after:
            return before[0], int(ex.id), after[0]
    raise AssertionError("the demo vault has no event between two others")


def _lines(detail: Any) -> dict[str, Any]:
    return {detail.links.item(n).text(): detail.links.item(n).data(TARGET_ROLE)
            for n in range(detail.links.count())}


def test_a_turn_says_what_came_before_and_after_and_opens_them(
        qtbot: Any, window: Any, demo_vault: Any) -> None:
    before, mid, after = _between(demo_vault)
    window.show()
    qtbot.waitExposed(window)
    browse, detail = window.browse, window.browse.detail
    qtbot.waitUntil(lambda: any(int(r.id) == mid for r in browse.model.rows), timeout=WAIT)
    row = next(n for n, r in enumerate(browse.model.rows) if int(r.id) == mid)
    rect = browse.table.visualRect(browse.model.index(row, Column.TEXT))
    qtbot.mouseClick(browse.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.waitUntil(lambda: detail.memory_id == mid and detail.links.count() > 0, timeout=WAIT)
    lines = _lines(detail)
    came_after = [t for t, target in lines.items() if target == before]
    followed = [t for t, target in lines.items() if target == after]
    assert came_after and came_after[0].startswith("Came after what "), lines
    assert followed and followed[0].startswith("Followed by what "), lines
    said_before = demo_vault.get(before)
    assert said_before.speaker in came_after[0]  # who said it, in words
    assert not any("PRECEDED" in t or "_" in t.split(":")[0] for t in lines), lines
    # A click on "Followed by …" opens the later turn, which says it came after this one.
    n = next(n for n in range(detail.links.count()) if detail.links.item(n).data(TARGET_ROLE)
             == after)
    item_rect = detail.links.visualItemRect(detail.links.item(n))
    qtbot.mouseClick(detail.links.viewport(), Qt.MouseButton.LeftButton, pos=item_rect.center())
    qtbot.waitUntil(lambda: detail.memory_id == after and detail.links.count() > 0,
                    timeout=WAIT)
    back = [t for t, target in _lines(detail).items() if target == mid]
    assert back and back[0].startswith("Came after"), _lines(detail)
    # Enter on that line (the keyboard) goes back to the first turn.
    n = next(n for n in range(detail.links.count()) if detail.links.item(n).data(TARGET_ROLE)
             == mid)
    detail.links.setFocus()
    detail.links.setCurrentRow(n)
    qtbot.keyClick(detail.links, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: detail.memory_id == mid, timeout=WAIT)
