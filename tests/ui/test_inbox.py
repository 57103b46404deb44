"""The Inbox page against a real demo vault: its one open contradiction (favourite film Alien
vs Heat) and its one automatic resolution (Lisbon -> Porto)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from PySide6.QtCore import Qt

pytestmark = pytest.mark.gui


def _loaded(qtbot: Any, view: Any, n_open: int) -> None:
    # Cards added to a shown page are shown from the event loop (QLayout::addChildWidget).
    qtbot.waitUntil(lambda: len(view.cards) == n_open and view.summary.text() != "Loading…"
                    and all(c.isVisible() for c in view.cards.values()), timeout=10_000)


def test_open_contradiction_shows_both_facts_side_by_side(qtbot: Any, open_page: Any,
                                                          demo_vault: Any) -> None:
    view = open_page("inbox")
    _loaded(qtbot, view, 1)
    (item,) = demo_vault.contradictions("open")
    card = view.cards[item.id]
    assert card.side_a.text.text() == item.a["text"]
    assert card.side_b.text.text() == item.b["text"]
    assert "confidence 0.60" in card.side_a.meta.text()
    assert item.a["refs"][0] in card.side_a.sources.text()
    for btn in (card.keep_a_btn, card.keep_b_btn, card.both_btn, card.edit_btn):
        assert btn.isVisible() and btn.isEnabled()
    assert view.empty.isHidden()
    assert not card.edit_row.isVisible()


def test_keep_a_by_click_supersedes_b(qtbot: Any, open_page: Any, window: Any,
                                      demo_vault: Any) -> None:
    view = open_page("inbox")
    _loaded(qtbot, view, 1)
    (item,) = demo_vault.contradictions("open")
    a_id, b_id = item.a["id"], item.b["id"]
    card = view.cards[item.id]
    with qtbot.waitSignal(window.bridge.changes_applied, timeout=10_000):
        qtbot.mouseClick(card.keep_a_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not view.cards and item.id in view.resolved_rows, timeout=10_000)
    assert view.empty.isVisible()  # the empty state once nothing waits
    assert "Nothing waits" in view.empty.text()
    assert demo_vault.contradictions("open") == []
    b = demo_vault.get(b_id)
    assert b.status.value == "superseded"
    assert b.superseded_by == a_id
    assert demo_vault.get(a_id).status.value == "active"
    qtbot.waitUntil(lambda: window.inbox_item.text(0) == "Inbox", timeout=10_000)


def test_undo_an_automatic_resolution_reopens_it(qtbot: Any, open_page: Any, window: Any,
                                                 demo_vault: Any) -> None:
    view = open_page("inbox")
    _loaded(qtbot, view, 1)
    (auto,) = demo_vault.contradictions("auto")
    row = view.auto_rows[auto.id]
    assert "the newer statement is a stated change" in row.label.text()
    assert row.rule == "the newer statement is a stated change"
    loser = auto.a["id"] if auto.a["status"] == "superseded" else auto.b["id"]
    with qtbot.waitSignal(window.bridge.changes_applied, timeout=10_000):
        qtbot.mouseClick(row.undo_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: auto.id in view.cards and not view.auto_rows, timeout=10_000)
    assert len(view.cards) == 2  # the film one still waits too
    assert view.auto_empty.isVisible()
    assert demo_vault.contradictions("auto") == []
    assert demo_vault.get(loser).status.value == "active"
    assert auto.id in {c.id for c in demo_vault.contradictions("open")}


def test_edit_replaces_both_with_the_typed_text(qtbot: Any, open_page: Any, window: Any,
                                                demo_vault: Any) -> None:
    view = open_page("inbox")
    _loaded(qtbot, view, 1)
    (item,) = demo_vault.contradictions("open")
    card = view.cards[item.id]
    qtbot.mouseClick(card.edit_btn, Qt.MouseButton.LeftButton)
    assert card.edit_row.isVisible()
    assert card.editor.toPlainText() == item.b["text"]

    # Empty text: an inline error, nothing sent to the vault.
    card.editor.clear()
    qtbot.keyClicks(card.editor, "   ")
    qtbot.mouseClick(card.save_btn, Qt.MouseButton.LeftButton)
    assert card.error.isVisible()
    assert "empty" in card.error.text()
    assert [c.id for c in demo_vault.contradictions("open")] == [item.id]

    card.editor.clear()
    qtbot.keyClicks(card.editor, "Sam's favorite film is Ran")
    with qtbot.waitSignal(window.bridge.changes_applied, timeout=10_000):
        qtbot.mouseClick(card.save_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not view.cards and item.id in view.resolved_rows, timeout=10_000)
    (done,) = [c for c in demo_vault.contradictions("resolved") if c.id == item.id]
    new_id = json.loads(done.resolution)["new"]
    new = demo_vault.get(new_id)
    assert new.text == "Sam's favorite film is Ran"
    assert new.status.value == "active"
    assert new.confidence == 1.0
    assert demo_vault.get(item.a["id"]).status.value == "superseded"
    assert demo_vault.get(item.b["id"]).status.value == "superseded"
    assert "replaced by your edit" in view.resolved_rows[item.id].label.text()


def test_both_true_then_undo_from_resolved_list(qtbot: Any, open_page: Any, window: Any,
                                                demo_vault: Any) -> None:
    view = open_page("inbox")
    _loaded(qtbot, view, 1)
    (item,) = demo_vault.contradictions("open")
    with qtbot.waitSignal(window.bridge.changes_applied, timeout=10_000):
        qtbot.mouseClick(view.cards[item.id].both_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: item.id in view.resolved_rows, timeout=10_000)
    older = demo_vault.get(item.a["id"])
    assert older.status.value == "active" and older.valid_until is not None
    with qtbot.waitSignal(window.bridge.changes_applied, timeout=10_000):
        qtbot.mouseClick(view.resolved_rows[item.id].undo_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: item.id in view.cards, timeout=10_000)
    assert demo_vault.get(item.a["id"]).valid_until is None
