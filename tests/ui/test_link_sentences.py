"""Links in the detail pane as sentences a person reads (issue 27 item 7): a conversation
turn says what came before it and what followed (FOLLOWED_BY is PRECEDED_BY read from the
other side), and a click or Enter on a line opens the memory it names. The real demo vault in
a real MainWindow."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt, QThreadPool

from app.api import ALL_MEMORIES
from tests.conftest import new_vault
from tests.ui.conftest import main_window
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
    detail = _open(qtbot, window, mid)
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


@pytest.fixture
def topics(tmp_path: Path, fast_kdf: Any) -> Iterator[Any]:
    """Three conversations of Maya's about one project and her sister (rules, no model)."""
    from app.api import Turn
    from app.clock import FixedClock, parse_iso
    v = new_vault(tmp_path / "v", "pw-link-words", load_model=False, use_chroma=False,
                  clock=FixedClock(parse_iso("2026-10-01T00:00:00Z")))
    said = [("s1", "2026-09-01T10:00:00Z", "We kicked off Project Falcon at work today."),
            ("s1", "2026-09-01T10:01:00Z", "My sister Ana lives in Porto."),
            ("s2", "2026-09-08T09:00:00Z", "Coffee first."),
            ("s2", "2026-09-08T09:05:00Z", "Project Falcon slipped a week, again."),
            ("s2", "2026-09-08T09:06:00Z", "Ana works at Fabrikam as a nurse."),
            ("s3", "2026-09-15T09:00:00Z", "Project Falcon shipped!")]
    v.import_turns([Turn(s, "Maya", text, parse_iso(at), f"{s}-{n}")
                    for n, (s, at, text) in enumerate(said)])
    v.consolidate(now=parse_iso("2026-09-16T00:00:00Z"))
    yield v
    QThreadPool.globalInstance().waitForDone(WAIT)
    if not v.locked:
        v.lock()


def _open(qtbot: Any, window: Any, mid: int) -> Any:
    browse, detail = window.browse, window.browse.detail
    qtbot.waitUntil(lambda: any(int(r.id) == mid for r in browse.model.rows), timeout=WAIT)
    row = next(n for n, r in enumerate(browse.model.rows) if int(r.id) == mid)
    rect = browse.table.visualRect(browse.model.index(row, Column.TEXT))
    qtbot.mouseClick(browse.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.waitUntil(lambda: detail.memory_id == mid and detail.links.count() > 0, timeout=WAIT)
    return detail


def test_links_across_conversations_and_about_a_person_read_as_sentences(
        qtbot: Any, topics: Any) -> None:
    window = main_window(qtbot, topics)
    window.show()
    qtbot.waitExposed(window)
    slipped = next(int(r.id) for r in topics.page_memories(ALL_MEMORIES, limit=50).rows
                   if r.text == "Project Falcon slipped a week, again.")
    detail = _open(qtbot, window, slipped)
    lines = _lines(detail)
    earlier = [t for t in lines if t.startswith("Picks up from an earlier conversation: ")]
    later = [t for t in lines if t.startswith("Picked up in a later conversation: ")]
    assert earlier and "kicked off Project Falcon" in earlier[0], lines
    assert later and "Falcon shipped" in later[0], lines
    # Within its own conversation it still came after the turn before it.
    assert any(t.startswith("Came after what Maya said") and "Coffee first" in t
               for t in lines), lines
    # A fact about Ana: related to the other fact about her, by her name.
    fact = next(int(r.id) for r in topics.page_memories(ALL_MEMORIES, limit=50).rows
                if r.store == "semantic" and "Fabrikam" in r.text
                and any(x.kind == "RELATES_TO" for x in topics.explain(r.id).links))
    detail = _open(qtbot, window, fact)
    about = [(t, target) for t, target in _lines(detail).items()
             if t.startswith("Also about Ana: the fact")]
    assert about and "Porto" in about[0][0], _lines(detail)
    # Enter on it opens the other fact.
    n = next(n for n in range(detail.links.count())
             if detail.links.item(n).text() == about[0][0])
    detail.links.setFocus()
    detail.links.setCurrentRow(n)
    qtbot.keyClick(detail.links, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: detail.memory_id == about[0][1], timeout=WAIT)
