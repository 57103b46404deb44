"""The window after decay and for time travel (issue 12): search finds what decay archived
(marked, ranked lower), searching in the Archive searches the Archive, the Timeline keeps
archived days, and the as-of control searches what was said and true on a day.

Real vault (SQLCipher file, threaded writer, lexical recall), real MainWindow offscreen.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QCoreApplication, QDate, Qt, QThreadPool

from tests.conftest import new_vault
from tests.ui.conftest import main_window

pytestmark = pytest.mark.gui

T0 = 1_780_000_000.0  # 2026-05-28
DAY = 86_400.0
WAIT = 15_000
OLD = T0 - 3 * 365 * DAY


def _iso_day(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).date().isoformat()


@pytest.fixture
def vault(tmp_path: Path, fast_kdf: Any) -> Iterator[Any]:
    """An imported history from three years back (learned at T0), archived by a decay run a
    year and more later; today's notes about the harbour; Maya's two homes."""
    from app.api import Turn
    from app.clock import FixedClock, parse_iso
    from app.domain.memory import Draft, Store
    v = new_vault(tmp_path / "v", "pw", load_model=False, use_chroma=False, clock=FixedClock(T0))
    v.import_turns([Turn(session="old", speaker="Leo", ref="old:1", at=OLD,
                         text="We rowed across the harbour at dawn.")])
    v.consolidate(steps=("decay",), now=T0 + 400 * DAY)
    v.remember(Draft(text="Rowed around the harbour again today.", occurred_at=T0 - DAY))
    jan, mar = parse_iso("2026-01-10T10:00:00Z"), parse_iso("2026-03-10T10:00:00Z")
    v.remember(Draft(text="Maya lives in Lisbon.", store=Store.SEMANTIC, occurred_at=jan,
                     valid_until=mar))
    v.remember(Draft(text="Maya lives in Porto.", store=Store.SEMANTIC, occurred_at=mar,
                     valid_from=mar))
    yield v
    QThreadPool.globalInstance().waitForDone(WAIT)
    if not v.locked:
        v.lock()


@pytest.fixture
def window(qtbot: Any, vault: Any) -> Iterator[Any]:
    win = main_window(qtbot, vault)
    win.show()
    yield win
    QThreadPool.globalInstance().waitForDone(WAIT)
    QCoreApplication.processEvents()


def _nav(window: Any, key: tuple[Any, ...]) -> Any:
    nav = window.nav
    for i in range(nav.topLevelItemCount()):
        top = nav.topLevelItem(i)
        for item in [top] + [top.child(n) for n in range(top.childCount())]:
            if item.data(0, Qt.ItemDataRole.UserRole) == key:
                return item
    raise AssertionError(f"no navigation item {key!r}")


def _search(qtbot: Any, window: Any, text: str) -> list[Any]:
    browse = window.browse
    browse.search.clear()
    qtbot.keyClicks(browse.search, text)
    qtbot.keyClick(browse.search, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: "best first" in browse.title.text(), timeout=WAIT)
    return list(browse.model.rows)


def test_search_finds_what_decay_archived_ranked_lower(qtbot: Any, window: Any,
                                                       vault: Any) -> None:
    qtbot.waitUntil(lambda: window.browse.model.rowCount() > 0, timeout=WAIT)
    rows = _search(qtbot, window, "harbour")
    texts = [r.text for r in rows]
    assert "We rowed across the harbour at dawn." in texts, "search lost archived history"
    assert texts.index("Rowed around the harbour again today.") < texts.index(
        "We rowed across the harbour at dawn.")
    assert {r.status for r in rows if "dawn" in r.text} == {"archived"}


def test_searching_in_the_archive_searches_the_archive(qtbot: Any, window: Any) -> None:
    window.nav.setCurrentItem(_nav(window, ("archive",)))
    qtbot.waitUntil(lambda: window.browse.model.rowCount() > 0, timeout=WAIT)
    rows = _search(qtbot, window, "harbour")
    assert rows and {r.status for r in rows} == {"archived"}
    assert "today" not in " ".join(r.text for r in rows)
    assert window.browse.chips.texts == ["the Archive"]  # the limit, shown as a chip


def test_timeline_keeps_the_days_of_archived_episodes(qtbot: Any, window: Any,
                                                      vault: Any) -> None:
    day = _iso_day(OLD)
    qtbot.waitUntil(lambda: window.timeline_item.childCount() > 0, timeout=WAIT)
    item = _nav(window, ("day", day))
    window.nav.setCurrentItem(item)
    qtbot.waitUntil(lambda: window.browse.model.rowCount() > 0, timeout=WAIT)
    rows = window.browse.model.rows
    assert any(r.store == "episodic" and r.status == "archived" for r in rows)


def test_as_of_control_searches_what_was_true_that_day(qtbot: Any, window: Any) -> None:
    bar = window.browse.search_bar
    qtbot.waitUntil(lambda: window.browse.model.rowCount() > 0, timeout=WAIT)
    assert bar.as_of_date.isHidden()
    both = {r.text for r in _search(qtbot, window, "Maya lives")}
    assert {"Maya lives in Lisbon.", "Maya lives in Porto."} <= both
    bar.as_of_date.setDate(QDate(2026, 2, 15))
    bar.as_of_check.setChecked(True)   # searches again on its own
    assert not bar.as_of_date.isHidden()
    qtbot.waitUntil(lambda: "as of Sunday 15 February 2026" in window.browse.chips.texts
                    and "best first" in window.browse.title.text(), timeout=WAIT)
    texts = {r.text for r in window.browse.model.rows}
    assert "Maya lives in Lisbon." in texts and "Maya lives in Porto." not in texts
    assert "Rowed around the harbour again today." not in texts
