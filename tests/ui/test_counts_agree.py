"""Counts that agree (issue 25: 'a day "(2)" opens 6 memories', '"(1 memories)"'): every day
of the Timeline, opened by a click as a person opens it, lists as many memories as its
navigation entry says, the page's title says the same number in words, and the entry fits the
navigation (its count was cut off: "Wednesday 20 May 20…"). The detail pane never keeps
showing a memory the new list does not hold (issue 25's fifth trap, seen on the Timeline)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from PySide6.QtCore import Qt

pytestmark = pytest.mark.gui
WAIT = 15_000


def test_every_timeline_day_opens_as_many_memories_as_it_says(qtbot: Any, window: Any) -> None:
    from app import words
    from ui.main_window import NAV_ROLE
    window.resize(1200, 760)
    window.show()
    qtbot.waitExposed(window)
    nav, days, browse = window.nav, window.timeline_item, window.browse
    qtbot.waitUntil(lambda: browse.model.rowCount() > 0 and days.childCount() > 0,
                    timeout=WAIT)
    browse.table.selectRow(0)  # a memory in the pane, as a person leaves it before a click
    qtbot.waitUntil(lambda: browse.detail.memory_id is not None, timeout=WAIT)
    nav.expandItem(days)
    checked = 0
    for i in range(days.childCount()):
        item = days.child(i)
        said = re.fullmatch(r".+ \((\d+)\)", item.text(0))
        assert said, item.text(0)
        n, day = int(said.group(1)), item.data(0, NAV_ROLE)[1]
        nav.scrollToItem(item)
        rect = nav.visualItemRect(item)
        text_width = nav.fontMetrics().horizontalAdvance(item.text(0))
        assert rect.left() + text_width < nav.viewport().width(), item.text(0)  # not cut
        assert item.toolTip(0) == f"{words.calendar_day(day)}: {words.count(n, 'memory', 'memories')}"
        qtbot.mouseClick(nav.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
        title = f"{words.calendar_day(day)}: {words.count(n, 'memory', 'memories')}"
        qtbot.waitUntil(lambda t=title: browse.title.text() == t, timeout=WAIT)
        model = browse.model  # a day holds less than a page: one load shows it all
        qtbot.waitUntil(lambda n=n, m=model: m.rowCount() == n, timeout=5_000)
        shown = browse.detail.memory_id
        assert shown is None or shown in [int(r.id) for r in model.rows], (day, shown)
        checked += 1
    assert checked == days.childCount() >= 2
