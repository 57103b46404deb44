"""The memory list and its search (issue 25 item 6), driven as a person drives them: clicks
in the navigation and on headers, keys in the search field, the sort box, the chips' ×, the
detail pane's sources and links, "Show the conversation". The real demo vault (its two films,
Ana, the conversation turns kept as events) in a real MainWindow."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import QPoint, Qt

from app.api import ALL_MEMORIES
from ui.models.memory_table import Column
from ui.views.detail import TARGET_ROLE

pytestmark = pytest.mark.gui
WAIT = 15_000


def _nav_item(window: Any, key: tuple[Any, ...]) -> Any:
    items = [window.nav.topLevelItem(i) for i in range(window.nav.topLevelItemCount())]
    while items:
        item = items.pop(0)
        if item.data(0, Qt.ItemDataRole.UserRole) == key:
            return item
        items += [item.child(n) for n in range(item.childCount())]
    raise AssertionError(f"no navigation item {key!r}")


def _click_nav(qtbot: Any, window: Any, key: tuple[Any, ...]) -> None:
    item = _nav_item(window, key)
    window.nav.scrollToItem(item)
    rect = window.nav.visualItemRect(item)
    qtbot.mouseClick(window.nav.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert window.nav.currentItem() is item


def _shown(qtbot: Any, window: Any) -> Any:
    window.show()
    qtbot.waitExposed(window)
    browse = window.browse
    qtbot.waitUntil(lambda: browse.model.rowCount() > 0 and ":" in browse.title.text(),
                    timeout=WAIT)
    return browse


def _search(qtbot: Any, browse: Any, text: str) -> list[Any]:
    browse.search.setFocus()
    browse.search.clear()
    qtbot.keyClicks(browse.search, text)
    qtbot.keyClick(browse.search, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: f"for “{text}”, best first" in browse.title.text(), timeout=WAIT)
    return list(browse.model.rows)


def _click_header(qtbot: Any, browse: Any, col: Column) -> None:
    header = browse.table.horizontalHeader()
    x = header.sectionViewportPosition(col) + header.sectionSize(col) // 2
    qtbot.mouseClick(header.viewport(), Qt.MouseButton.LeftButton,
                     pos=QPoint(x, header.height() // 2))


def _select(qtbot: Any, browse: Any, text: str) -> int:
    row = next(n for n, r in enumerate(browse.model.rows) if r.text == text)
    rect = browse.table.visualRect(browse.model.index(row, Column.TEXT))
    qtbot.mouseClick(browse.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    mid = int(browse.model.rows[row].id)
    qtbot.waitUntil(lambda: browse.detail.memory_id == mid, timeout=WAIT)
    return mid


def test_all_memories_lists_each_thing_said_once(qtbot: Any, window: Any,
                                                 demo_vault: Any) -> None:
    browse = _shown(qtbot, window)
    n = demo_vault.count_memories(ALL_MEMORIES)
    qtbot.waitUntil(lambda: browse.model.rowCount() == n, timeout=WAIT)
    rows = browse.model.rows
    # No statistics ("Told directly", dated today), no turn beside its event.
    assert {r.store for r in rows} <= {"episodic", "semantic", "procedural"}
    said = [(r.speaker, r.text) for r in rows if r.speaker]
    assert said and len(said) == len(set(said))
    # The title and the status bar count what the list holds.
    assert browse.title.text() == f"All memories: {n} memories"
    qtbot.waitUntil(lambda: window.status_label.text().startswith(f"{n} memories"),
                    timeout=WAIT)
    # The Conversation still lists its turns, the Patterns their statistics.
    _click_nav(qtbot, window, ("store", "short_term", "Conversation"))
    qtbot.waitUntil(lambda: browse.model.rowCount() > 0
                    and {r.store for r in browse.model.rows} == {"short_term"}, timeout=WAIT)


def test_search_inside_a_store_with_a_chip_that_widens_it(qtbot: Any, window: Any,
                                                          demo_vault: Any) -> None:
    browse = _shown(qtbot, window)
    _click_nav(qtbot, window, ("store", "semantic", "Facts"))
    qtbot.waitUntil(lambda: browse.title.text().startswith("Facts:"), timeout=WAIT)
    rows = _search(qtbot, browse, "film")
    assert rows and {r.store for r in rows} == {"semantic"}
    assert browse.chips.isVisibleTo(browse) and browse.chips.texts == ["Facts"]
    # Its own Relevance column in words (the number in the tooltip); Freshness and
    # Strength are the memory's own, as the detail pane says.
    assert not browse.table.isColumnHidden(Column.RELEVANCE)
    model = browse.model
    assert model.data(model.index(0, Column.RELEVANCE)) == "best match"
    assert "Relevance" in model.data(model.index(0, Column.RELEVANCE),
                                     Qt.ItemDataRole.ToolTipRole)
    fm = browse.table.fontMetrics()
    widest = max(fm.horizontalAdvance(model.data(model.index(n, Column.RELEVANCE)))
                 for n in range(model.rowCount()))
    assert browse.table.horizontalHeader().sectionSize(Column.RELEVANCE) > widest
    for r in rows:
        assert r.tier is not None
        assert r.composite == pytest.approx(demo_vault.get(r.id).scores.composite)
    # The chip's ×, reached with Tab from the search field and pressed with Space.
    x = browse.chips.chips["store"]
    browse.search.setFocus()
    for _ in range(10):
        if x.hasFocus():
            break
        qtbot.keyClick(window.focusWidget(), Qt.Key.Key_Tab)
    assert x.hasFocus(), "the chip's × is not reached by Tab"
    qtbot.keyClick(x, Qt.Key.Key_Space)
    qtbot.waitUntil(lambda: not browse.chips.isVisibleTo(browse)
                    and {r.store for r in browse.model.rows} > {"semantic"}, timeout=WAIT)


def test_search_cut_off_leaves_out_what_is_far_below_the_best(qtbot: Any, window: Any,
                                                              demo_vault: Any) -> None:
    browse = _shown(qtbot, window)
    rows = _search(qtbot, browse, "film")
    texts = [r.text for r in rows]
    # The tester's 16 hits: the two films first, and then everything the vault holds.
    assert {"Sam's favorite film is Heat", "Sam's favorite film is Alien"} <= set(texts[:2])
    assert len(rows) <= 5
    assert "weaker" not in {browse.model.data(browse.model.index(n, Column.RELEVANCE))
                            for n in range(2)}


def test_search_inside_a_person(qtbot: Any, window: Any, demo_vault: Any) -> None:
    browse = _shown(qtbot, window)
    ana = next(e for e in demo_vault.entities() if e.name == "Ana")
    qtbot.waitUntil(lambda: window.people_item.childCount() > 0, timeout=WAIT)
    _click_nav(qtbot, window, ("entity", int(ana.id), "Ana"))
    qtbot.waitUntil(lambda: browse.model.rowCount() > 0, timeout=WAIT)
    listed = {int(r.id) for r in browse.model.rows}
    rows = _search(qtbot, browse, "job")
    assert rows and {int(r.id) for r in rows} <= listed
    assert browse.chips.texts == ["about Ana"]


def test_why_this_result(qtbot: Any, window: Any) -> None:
    browse = _shown(qtbot, window)
    detail = browse.detail
    _search(qtbot, browse, "film")
    browse.table.setFocus()
    qtbot.keyClick(browse.table, Qt.Key.Key_Down)  # a result (the first or the second)
    row = browse.model.row_at(browse.table.currentIndex().row())
    assert row is not None and "film" in row.text
    qtbot.waitUntil(lambda: detail.memory_id == int(row.id)
                    and detail.why.isVisibleTo(detail), timeout=WAIT)
    lines = detail.why.text().splitlines()
    assert "It has the words you searched for." in lines
    assert not any(ch.isdigit() for ch in detail.why.text())  # words, not scores
    if row.store in ("episodic", "short_term"):  # a turn or its event: where it went, why
        assert lines[-1].startswith("Kept as a conversation turn")
    # A list's memory is not a search result: no panel.
    browse.search.clear()
    qtbot.keyClick(browse.search, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: browse.title.text().startswith("All memories:"), timeout=WAIT)
    browse.table.setFocus()
    qtbot.keyClick(browse.table, Qt.Key.Key_Down)
    qtbot.waitUntil(lambda: detail.memory_id is not None and detail.query is None,
                    timeout=WAIT)
    qtbot.waitUntil(lambda: not detail.why.isVisibleTo(detail), timeout=WAIT)


def test_columns_sort_by_header_and_by_keyboard(qtbot: Any, window: Any) -> None:
    browse = _shown(qtbot, window)
    model = browse.model
    header = browse.table.horizontalHeader()

    def strengths() -> list[float]:
        return [r.composite for r in model.rows]
    _click_header(qtbot, browse, Column.SCORE)
    qtbot.waitUntil(lambda: model.rowCount() > 1 and model.query.order in
                    ("strongest", "weakest") and not model.loading, timeout=WAIT)
    first = model.query.order
    got = strengths()
    assert got == sorted(got, reverse=first == "strongest")
    assert header.sortIndicatorSection() == Column.SCORE
    _click_header(qtbot, browse, Column.SCORE)  # again: the other way
    qtbot.waitUntil(lambda: model.query.order != first and not model.loading
                    and model.rowCount() > 1, timeout=WAIT)
    got = strengths()
    assert got == sorted(got, reverse=model.query.order == "strongest")
    # The sort box, by keyboard: Oldest first.
    box = browse.sort_box
    box.setFocus()
    qtbot.keyClick(box, Qt.Key.Key_Home)
    qtbot.keyClick(box, Qt.Key.Key_Down)
    qtbot.waitUntil(lambda: model.query.order == "oldest" and not model.loading
                    and model.rowCount() > 1, timeout=WAIT)
    when = [r.occurred_at for r in model.rows]
    assert when == sorted(when)
    assert box.currentText() == "Oldest first"
    assert (header.sortIndicatorSection(), header.sortIndicatorOrder()) == (
        Column.WHEN, Qt.SortOrder.AscendingOrder)
    # Search results sort by any column, here; the box offers "Best match first" back.
    _search(qtbot, browse, "Ana")
    assert box.currentText() == "Best match first"
    _click_header(qtbot, browse, Column.WHEN)
    when = [r.occurred_at for r in model.rows]
    assert len(when) > 1 and when in (sorted(when), sorted(when, reverse=True))
    box.setFocus()
    qtbot.keyClick(box, Qt.Key.Key_Home)
    rel = [r.relevance for r in model.rows]
    assert rel == sorted(rel, reverse=True)


def test_the_conversation_opens_around_a_memory(qtbot: Any, window: Any,
                                                demo_vault: Any) -> None:
    browse = _shown(qtbot, window)
    detail = browse.detail
    mid = _select(qtbot, browse, "I think my favorite film is Alien.")
    btn = detail.conversation_btn
    qtbot.waitUntil(lambda: btn.isVisibleTo(detail), timeout=WAIT)
    btn.setFocus()
    qtbot.keyClick(btn, Qt.Key.Key_Space)
    qtbot.waitUntil(lambda: browse.title.text().startswith("The conversation it was said in")
                    and not browse.model.loading and browse.model.rowCount() > 1,
                    timeout=WAIT)
    rows = browse.model.rows
    when = [r.occurred_at for r in rows]
    assert when == sorted(when)  # in the order it was said
    session = demo_vault.get(mid).session
    assert {demo_vault.get(r.id).session for r in rows} == {session}
    assert len({r.text for r in rows}) == len(rows)  # each thing said once
    qtbot.waitUntil(lambda: browse.model.row_at(browse.table.currentIndex().row()) is not None
                    and int(browse.model.row_at(browse.table.currentIndex().row()).id) == mid,
                    timeout=WAIT)


def test_sources_and_links_open_their_memory(qtbot: Any, window: Any,
                                             demo_vault: Any) -> None:
    browse = _shown(qtbot, window)
    detail = browse.detail
    fact = _select(qtbot, browse, "Sam's favorite film is Alien")
    qtbot.waitUntil(lambda: detail.sources.count() > 0, timeout=WAIT)
    src = detail.sources.item(0)
    target = src.data(TARGET_ROLE)
    assert isinstance(target, int) and target != fact
    # A click on the source: the source is selected in the list and shown.
    rect = detail.sources.visualItemRect(src)
    qtbot.mouseClick(detail.sources.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.waitUntil(lambda: detail.memory_id == target, timeout=WAIT)
    current = browse.model.row_at(browse.table.currentIndex().row())
    assert current is not None and int(current.id) == target
    # Enter on a link (from the keyboard): the memory it names is shown.
    qtbot.waitUntil(lambda: any(isinstance(detail.links.item(n).data(TARGET_ROLE), int)
                                for n in range(detail.links.count())), timeout=WAIT)
    n = next(n for n in range(detail.links.count())
             if isinstance(detail.links.item(n).data(TARGET_ROLE), int))
    linked = detail.links.item(n).data(TARGET_ROLE)
    detail.links.setFocus()
    detail.links.setCurrentRow(n)
    qtbot.keyClick(detail.links, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: detail.memory_id == linked, timeout=WAIT)
