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


def test_people_insights_and_status_bar_count_what_the_lists_show(
        qtbot: Any, window: Any, open_page: Any) -> None:
    """One definition of "a memory" (storage.browse.listed_clause): the People & Projects
    entry "Sam (person, N)", the entity card's heading and the list's title "Sam: N memories"
    say the same N; Insights' "N memories in your lists" and the status bar say the list's
    count (issue 25: Insights said 43 where the list held 23, the card 21 where the list 20)."""
    from app import words
    from app.api import ALL_MEMORIES
    from ui.main_window import NAV_ROLE
    window.resize(1200, 760)
    window.show()
    qtbot.waitExposed(window)
    nav, people, browse = window.nav, window.people_item, window.browse
    qtbot.waitUntil(lambda: browse.model.rowCount() > 0 and people.childCount() > 0
                    and window.memory_figure != "", timeout=WAIT)
    listed = window.vault.count_memories(ALL_MEMORIES)
    assert window.memory_figure.startswith(words.count(listed, "memory", "memories"))
    nav.expandItem(people)
    said_n = {m.group(1): int(m.group(3)) for m in (  # each person's entry: name -> N
        re.fullmatch(r"(.+) \((.+), (\d+)\)", people.child(i).text(0))
        for i in range(people.childCount())) if m and m.group(2) == "person"}
    for i in range(min(3, people.childCount())):
        item = people.child(i)
        said = re.fullmatch(r"(.+) \((.+), (\d+)\)", item.text(0))
        assert said, item.text(0)
        name, n = item.data(0, NAV_ROLE)[2], int(said.group(3))
        nav.scrollToItem(item)
        qtbot.mouseClick(nav.viewport(), Qt.MouseButton.LeftButton,
                         pos=nav.visualItemRect(item).center())
        title = f"{name}: {words.count(n, 'memory', 'memories')}"
        qtbot.waitUntil(lambda t=title: browse.title.text() == t, timeout=WAIT)
        qtbot.waitUntil(lambda n=n: f"· {n:,} memor" in browse.entity.heading.text(),
                        timeout=WAIT)
    page = open_page("insights")
    qtbot.waitUntil(lambda: "in your lists" in page.summary.text(), timeout=WAIT)
    assert page.summary.text().startswith(
        f"{words.count(listed, 'memory', 'memories')} in your lists (one per thing said)")
    # "Strong memories" counts among the same memories (it said "of 43 active")
    strong = page.metric_labels["quality_ratio"][1]
    qtbot.waitUntil(lambda: "in your lists" in strong.text(), timeout=WAIT)
    assert f" of {listed:,} in your lists)" in strong.text()
    # The behaviour statistic names the person with the count of their entry and list (it
    # counted every mention: "Most mentioned person: Sam (21 memories)" beside "Sam (person,
    # 20)").
    top = [m for m in (re.search(r"Most mentioned person: (.+) \((\d+) memor", lbl.text())
                       for lbl in page.stat_labels) if m]
    assert len(top) == 1, [lbl.text() for lbl in page.stat_labels]
    assert said_n[top[0].group(1)] == int(top[0].group(2)) == max(said_n.values())


def test_a_navigation_refresh_changes_only_what_changed(qtbot: Any, window: Any) -> None:
    """An import refreshes the navigation every second (issue 25's stall): the Timeline's
    entries are updated where they stand, not rebuilt, so the person's selected day stays
    selected, and a new day's count and a day that went away still show right."""
    from app.domain.memory import Draft, Store
    from ui.main_window import NAV_ROLE
    window.show()
    qtbot.waitExposed(window)
    days = window.timeline_item
    qtbot.waitUntil(lambda: days.childCount() >= 2, timeout=WAIT)
    before = [days.child(i) for i in range(days.childCount())]
    labels = [item.text(0) for item in before]
    window.nav.setCurrentItem(before[-1])
    picked = before[-1].data(0, NAV_ROLE)
    from datetime import datetime
    noon = datetime.strptime(picked[1], "%Y-%m-%d").replace(hour=12).timestamp()  # local
    window.vault.remember(Draft(text="A note on that day again.", store=Store.EPISODIC,
                                speaker="Maya", occurred_at=noon))
    window.reload_nav_children()
    qtbot.waitUntil(lambda: [days.child(i).text(0) for i in range(days.childCount())] != labels,
                    timeout=WAIT)
    after = [days.child(i) for i in range(days.childCount())]
    assert after == before  # the same items, in place
    changed = [i for i, item in enumerate(after) if item.text(0) != labels[i]]
    assert changed == [len(after) - 1]  # the day that got a memory, its count one more
    n_before = int(labels[changed[0]].rsplit("(", 1)[1].rstrip(")"))
    assert after[changed[0]].text(0).endswith(f"({n_before + 1})")
    assert window.nav.currentItem() is before[-1]
    assert window.nav.currentItem().data(0, NAV_ROLE) == picked
    window._set_nav_children(days, [(labels[0], ("day", "2020-01-01"), "")])  # fewer: the rest go
    assert days.childCount() == 1 and days.child(0) is before[0]
    assert days.child(0).data(0, NAV_ROLE) == ("day", "2020-01-01")
