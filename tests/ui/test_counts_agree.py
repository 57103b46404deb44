"""Counts that agree (issue 25: 'a day "(2)" opens 6 memories', '"(1 memories)"'): every day
of the Timeline, opened by a click as a person opens it, lists as many memories as its
navigation entry says, and the page's title says the same number in words."""

from __future__ import annotations

import re
from typing import Any

import pytest
from PySide6.QtCore import Qt

pytestmark = pytest.mark.gui
WAIT = 15_000


def test_every_timeline_day_opens_as_many_memories_as_it_says(qtbot: Any, window: Any) -> None:
    window.resize(1200, 760)
    window.show()
    qtbot.waitExposed(window)
    nav, days = window.nav, window.timeline_item
    qtbot.waitUntil(lambda: days.childCount() > 0, timeout=WAIT)
    nav.expandItem(days)
    checked = 0
    for i in range(days.childCount()):
        item = days.child(i)
        said = re.fullmatch(r"(.+) \((\d+)\)", item.text(0))
        assert said, item.text(0)
        day_words, n = said.group(1), int(said.group(2))
        nav.scrollToItem(item)
        rect = nav.visualItemRect(item)
        qtbot.mouseClick(nav.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
        title = f"{day_words}: {n} {'memory' if n == 1 else 'memories'}"
        qtbot.waitUntil(lambda t=title: window.browse.title.text() == t, timeout=WAIT)
        model = window.browse.model  # a day holds less than a page: one load shows it all
        qtbot.waitUntil(lambda n=n, m=model: m.rowCount() == n, timeout=5_000)
        checked += 1
    assert checked == days.childCount() >= 2
