"""The window shows each entity's summary and its facts (issue 15 item 4): choosing a
person, project, area or resource under "People & Projects" shows its card above the list of
memories that mention it; a store's list shows no card. Real threaded SQLCipher vault, real
consolidation, real MainWindow offscreen."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QThreadPool

from tests.ui.conftest import maya_said, shown_window

pytestmark = pytest.mark.gui

PASSWORD = "entity view password"
NOW = 1_782_950_400.0  # 2026-07-02
WAIT = 15_000
SAID = ["I've been reading Atomic Habits lately.",
        "I'm writing a children's book about a dragon who is scared of fire.",
        "The children's book has twelve chapters now."]


@pytest.fixture
def vault(tmp_path: Path, fast_kdf: Any) -> Iterator[Any]:
    # said in May, learned today
    yield from maya_said(tmp_path / "v", PASSWORD, SAID, NOW - 60 * 86_400, NOW)


@pytest.fixture
def window(qtbot: Any, vault: Any) -> Iterator[Any]:
    win = shown_window(qtbot, vault)
    yield win
    QThreadPool.globalInstance().waitForDone(WAIT)


def entity_item(qtbot: Any, window: Any, name: str) -> Any:
    people = window.people_item
    qtbot.waitUntil(lambda: people.childCount() > 0, timeout=WAIT)
    for i in range(people.childCount()):
        if people.child(i).text(0).startswith(name + " ("):
            return people.child(i)
    raise AssertionError(f"{name!r} is not under People & Projects")


def facts_listed(card: Any) -> list[str]:
    return [card.facts.item(i).text() for i in range(card.facts.count())]


def test_an_entity_shows_its_summary_and_facts(qtbot: Any, window: Any) -> None:
    card = window.browse.entity
    item = entity_item(qtbot, window, "Atomic Habits")
    assert "(resource," in item.text(0)
    window.nav.setCurrentItem(item)
    qtbot.waitUntil(lambda: card.isVisible() and card.facts.count() > 0, timeout=WAIT)
    assert "Atomic Habits" in card.heading.text() and "Resource" in card.heading.text()
    assert "Maya is reading Atomic Habits" in card.summary.text()
    assert facts_listed(card) == ["Maya is reading Atomic Habits"]
    # the person: the same fact, from her summary
    window.nav.setCurrentItem(entity_item(qtbot, window, "Maya"))
    qtbot.waitUntil(lambda: "Maya</b>" in card.heading.text(), timeout=WAIT)
    assert "Maya is reading Atomic Habits" in card.summary.text()
    # a project no fact names yet says so, and the list below holds what mentions it
    window.nav.setCurrentItem(entity_item(qtbot, window, "Children's book"))
    qtbot.waitUntil(lambda: "Project" in card.heading.text(), timeout=WAIT)
    assert "No summary yet" in card.summary.text()
    assert facts_listed(card) == ["No facts about it yet"]
    qtbot.waitUntil(lambda: window.browse.model.rowCount() == 2, timeout=WAIT)
    # a store's list has no entity card
    memories = window.nav.topLevelItem(0)
    window.nav.setCurrentItem(memories.child(0))
    qtbot.waitUntil(lambda: not card.isVisible(), timeout=WAIT)


SPANISH = ["I've been learning Spanish for a year.", "My Spanish teacher is called Rosa.",
           "Spanish is hard but fun.", "I practise Spanish on the bus."]


@pytest.fixture
def merged_vault(tmp_path: Path, fast_kdf: Any) -> Iterator[Any]:
    """"Spanish" said as a capitalised name (a person) and as what Maya learns (a resource):
    consolidation makes one entity of the two (issue 27 item 3)."""
    yield from maya_said(tmp_path / "v", PASSWORD, SPANISH, NOW - 86_400, NOW)


def test_the_person_says_a_merge_joined_different_things(qtbot: Any, merged_vault: Any
                                                         ) -> None:
    from PySide6.QtCore import Qt
    window = shown_window(qtbot, merged_vault)
    card = window.browse.entity
    item = entity_item(qtbot, window, "Spanish")
    assert "(resource," in item.text(0)
    assert not any(window.people_item.child(i).text(0).startswith("Spanish (person")
                   for i in range(window.people_item.childCount()))
    window.nav.setCurrentItem(item)
    qtbot.waitUntil(lambda: card.merge_row.isVisible(), timeout=WAIT)
    assert "“Spanish”" in card.merge_note.text()
    assert "two kinds" in card.merge_note.text()
    card.apart_button.setFocus()
    qtbot.keyClick(card.apart_button, Qt.Key.Key_Space)
    qtbot.waitUntil(lambda: not card.merge_row.isVisible(), timeout=WAIT)

    def both_listed() -> bool:
        names = [window.people_item.child(i).text(0)
                 for i in range(window.people_item.childCount())]
        return any(n.startswith("Spanish (person") for n in names) and \
            any(n.startswith("Spanish (resource") for n in names)
    qtbot.waitUntil(both_listed, timeout=WAIT)
    # said to be different: the next consolidation keeps them apart
    merged_vault.consolidate()
    assert [m for e in merged_vault.entities() for m in merged_vault.entity_merges(e.id)] == []
    QThreadPool.globalInstance().waitForDone(WAIT)


def test_undo_merge_by_keyboard_lets_a_later_run_merge_again(qtbot: Any, merged_vault: Any
                                                             ) -> None:
    from PySide6.QtCore import Qt
    window = shown_window(qtbot, merged_vault)
    card = window.browse.entity
    window.nav.setCurrentItem(entity_item(qtbot, window, "Spanish"))
    qtbot.waitUntil(lambda: card.merge_row.isVisible(), timeout=WAIT)
    card.undo_button.setFocus()
    qtbot.keyClick(card.undo_button, Qt.Key.Key_Space)
    qtbot.waitUntil(lambda: not card.merge_row.isVisible(), timeout=WAIT)
    assert {e.kind for e in merged_vault.entities() if e.name == "Spanish"} == \
        {"person", "resource"}
    QThreadPool.globalInstance().waitForDone(WAIT)
    report = merged_vault.consolidate().value  # not said to differ: merged again
    assert report.counts.get("entities_merged") == 1
    assert {e.kind for e in merged_vault.entities() if e.name == "Spanish"} == {"resource"}
