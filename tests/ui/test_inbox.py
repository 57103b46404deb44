"""The Inbox page against a real demo vault: its one open contradiction (favourite film Alien
vs Heat) and its one automatic resolution (Lisbon -> Porto)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from PySide6.QtCore import Qt

from tests.inside import inside

pytestmark = pytest.mark.gui


def _click_undo(qtbot: Any, view: Any, status: str, cid: int) -> None:
    """Click the Undo button painted in row ``cid`` of a settled list."""
    settled = view.lists[status]
    qtbot.mouseClick(settled.viewport(), Qt.MouseButton.LeftButton,
                     pos=settled.button_center(cid))


def _loaded(qtbot: Any, view: Any, n_open: int) -> None:
    # Cards added to a shown page are shown from the event loop (QLayout::addChildWidget).
    qtbot.waitUntil(lambda: not view.loading and len(view.cards) == n_open
                    and view.summary.text() != "Loading…"
                    and all(c.isVisible() for c in view.cards.values()), timeout=10_000)


def test_open_contradiction_shows_both_facts_side_by_side(qtbot: Any, open_page: Any,
                                                          demo_vault: Any) -> None:
    view = open_page("inbox")
    _loaded(qtbot, view, 1)
    (item,) = demo_vault.contradictions("open")
    card = view.cards[item.id]
    assert card.side_a.text.text() == item.a.text
    assert card.side_b.text.text() == item.b.text
    assert f"Confidence {item.a.confidence:.2f}" in card.side_a.meta.toolTip()
    assert "Kept is" in card.side_a.meta.text()  # the number in words, the number in the tip
    assert item.a.refs[0] in card.side_a.sources.toolTip()
    for btn in (card.keep_a_btn, card.keep_b_btn, card.both_btn, card.edit_btn):
        assert btn.isVisible() and btn.isEnabled()
    assert view.empty.isHidden()
    assert not card.edit_row.isVisible()


def test_keep_a_by_click_supersedes_b(qtbot: Any, open_page: Any, window: Any,
                                      demo_vault: Any) -> None:
    view = open_page("inbox")
    _loaded(qtbot, view, 1)
    (item,) = demo_vault.contradictions("open")
    a_id, b_id = item.a.id, item.b.id
    card = view.cards[item.id]
    with qtbot.waitSignal(window.bridge.changes_applied, timeout=10_000):
        qtbot.mouseClick(card.keep_a_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not view.cards and item.id in view.resolved_rows, timeout=10_000)
    qtbot.waitUntil(lambda: not view.loading, timeout=10_000)
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
    assert "Rule: the newer statement is a stated change" in row.how
    assert row.what.startswith("Kept “Sam lives in Porto” over")
    assert row.rule == "the newer statement is a stated change"
    loser = auto.a.id if auto.a.status == "superseded" else auto.b.id
    with qtbot.waitSignal(window.bridge.changes_applied, timeout=10_000):
        _click_undo(qtbot, view, "auto", auto.id)
    qtbot.waitUntil(lambda: auto.id in view.cards and not view.auto_rows, timeout=10_000)
    _loaded(qtbot, view, 2)  # the film one still waits too
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
    assert card.editor.toPlainText() == item.b.text

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
    assert demo_vault.get(item.a.id).status.value == "superseded"
    assert demo_vault.get(item.b.id).status.value == "superseded"
    assert "replaced by your edit" in view.resolved_rows[item.id].what


def test_both_true_then_undo_from_resolved_list(qtbot: Any, open_page: Any, window: Any,
                                                demo_vault: Any) -> None:
    view = open_page("inbox")
    _loaded(qtbot, view, 1)
    (item,) = demo_vault.contradictions("open")
    with qtbot.waitSignal(window.bridge.changes_applied, timeout=10_000):
        qtbot.mouseClick(view.cards[item.id].both_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: item.id in view.resolved_rows, timeout=10_000)
    older = demo_vault.get(item.a.id)
    assert older.status.value == "active" and older.valid_until is not None
    with qtbot.waitSignal(window.bridge.changes_applied, timeout=10_000):
        settled = view.lists["resolved"]  # from the keyboard this time
        settled.setCurrentIndex(settled.model_.index(settled.model_.row_of(item.id), 0))
        qtbot.keyClick(settled, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: item.id in view.cards, timeout=10_000)
    assert demo_vault.get(item.a.id).valid_until is None


# --- issue 12: review requests and paging ------------------------------------------------------
def _add_review(vault: Any, text: str = "Sam lives in Porto") -> tuple[int, int]:
    """A review request as consolidation stores an LLM delete (kind 'review', one memory)."""
    def w(c: Any) -> tuple[int, int]:
        mid = c.execute("SELECT id FROM memory WHERE text = ? AND status = 'active'",
                        (text,)).fetchone()[0]
        cid = c.execute("INSERT INTO contradiction (a, b, reason, created_at, kind) VALUES "
                        "(?, ?, 'user asked', 1.8e9, 'review')", (mid, mid)).lastrowid
        return int(cid), int(mid)
    return inside(vault).db.write_sync(w)  # type: ignore[no-any-return]


def test_review_request_is_a_one_sided_card_and_still_true_keeps_it(
        qtbot: Any, open_page: Any, window: Any, demo_vault: Any) -> None:
    from ui.views.inbox import ReviewCard
    cid, mid = _add_review(demo_vault)
    view = open_page("inbox")
    _loaded(qtbot, view, 2)
    card = view.cards[cid]
    assert isinstance(card, ReviewCard)
    assert not hasattr(card, "keep_a_btn")  # nothing to keep "over" itself
    assert card.side.text.text() == "Sam lives in Porto"
    assert "asked to forget this memory (user asked)" in card.reason.text()
    assert "1 contradiction and 1 review request need your answer" in view.summary.text()
    with qtbot.waitSignal(window.bridge.changes_applied, timeout=10_000):
        qtbot.mouseClick(card.still_true_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: cid not in view.cards and cid in view.resolved_rows, timeout=10_000)
    m = demo_vault.get(mid)
    assert m.status.value == "active" and m.superseded_by is None and m.user_validated
    assert view.resolved_rows[cid].what == "Asked to forget “Sam lives in Porto”: still true"


def test_forget_from_a_review_request_goes_through_the_forget_plan(
        qtbot: Any, open_page: Any, window: Any, demo_vault: Any) -> None:
    from app.errors import NotFound
    from ui.dialogs.forget import ForgetDialog
    cid, mid = _add_review(demo_vault)
    view = open_page("inbox")
    _loaded(qtbot, view, 2)
    qtbot.mouseClick(view.cards[cid].forget_btn, Qt.MouseButton.LeftButton)
    dlg = view.forget_dialog
    assert isinstance(dlg, ForgetDialog) and dlg.isVisible()
    qtbot.waitUntil(lambda: dlg.plan is not None, timeout=10_000)
    assert mid in {it.id for it in dlg.plan.items}
    assert not dlg.forget_btn.isEnabled()  # nothing goes before the explicit confirmation
    assert demo_vault.get(mid).status.value == "active"
    dlg.confirm.setChecked(True)
    with qtbot.waitSignal(window.bridge.changes_applied, timeout=10_000):
        qtbot.mouseClick(dlg.forget_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: cid not in view.cards, timeout=10_000)
    with pytest.raises(NotFound):
        demo_vault.get(mid)
    assert [c.id for c in demo_vault.contradictions("open")] == list(view.cards)
    dlg.close()


def test_lists_are_paged_and_only_a_page_of_widgets_exists(qtbot: Any, open_page: Any,
                                                           demo_vault: Any,
                                                           qtmodeltester: Any) -> None:
    from ui.views.inbox import PAGE_SIZE, ContradictionCard

    def add(c: Any) -> None:
        ids = [r[0] for r in c.execute("SELECT id FROM memory ORDER BY id")]
        pairs = [(x, y) for n, x in enumerate(ids) for y in ids[n + 1:]]
        have = {(r[0], r[1]) for r in c.execute("SELECT a, b FROM contradiction")}
        pairs = [p for p in pairs if p not in have]
        for n, (x, y) in enumerate(pairs[:72]):
            status = "auto" if n < 60 else "open"
            c.execute("INSERT INTO contradiction (a, b, reason, status, resolution, created_at) "
                      "VALUES (?, ?, 'facts disagree', ?, ?, ?)",
                      (x, y, status, json.dumps({"kept": y, "rule": f"rule {n}", "prior": {}})
                       if status == "auto" else None, 1.8e9 + n))
    inside(demo_vault).db.write_sync(add)
    n_auto = len(demo_vault.contradictions("auto"))
    n_open = len(demo_vault.contradictions("open"))
    assert n_auto == 61 and n_open == 13
    view = open_page("inbox")
    _loaded(qtbot, view, PAGE_SIZE["open"])
    pager = view.pagers["auto"]
    qtbot.waitUntil(lambda: len(view.auto_rows) == PAGE_SIZE["auto"], timeout=10_000)
    assert pager.isVisible() and pager.label.text() == f"1–25 of {n_auto}"
    assert not pager.prev_btn.isEnabled() and pager.next_btn.isEnabled()
    # Only the page is loaded, and painted by one list view (the old view built a widget
    # per item, 2,435 of them at 100k memories).
    assert view.lists["auto"].model_.rowCount() == PAGE_SIZE["auto"]
    assert len(view.findChildren(ContradictionCard)) == PAGE_SIZE["open"]
    newest = [c.id for c in demo_vault.contradictions("auto")]
    assert newest == sorted(newest, reverse=True)  # settled lists: newest first
    assert list(view.auto_rows) == newest[:25]
    seen = list(view.auto_rows)
    for page, n in ((1, 25), (2, 11)):
        qtbot.mouseClick(pager.next_btn, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda p=page: pager.page == p, timeout=10_000)
        assert len(view.auto_rows) == n
        assert list(view.auto_rows) == newest[25 * page:25 * page + n]
        seen += list(view.auto_rows)
    assert sorted(seen) == sorted(newest)  # every item once, none twice
    assert pager.label.text() == f"51–61 of {n_auto}" and not pager.next_btn.isEnabled()
    qtbot.mouseClick(pager.prev_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: pager.page == 1, timeout=10_000)
    assert list(view.auto_rows) == newest[25:50]
    qtmodeltester.check(view.lists["auto"].model_)
    # The open list pages the same way; the summary counts the whole list.
    assert "13 contradictions need your answer" in view.summary.text()
    qtbot.mouseClick(view.pagers["open"].next_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: view.pagers["open"].page == 1, timeout=10_000)
    assert len(view.cards) == 3
    qtbot.waitUntil(lambda: len(view.findChildren(ContradictionCard)) == 3, timeout=10_000)


def test_accept_an_assistants_change_from_the_keyboard(qtbot: Any, open_page: Any,
                                                       window: Any, demo_vault: Any) -> None:
    """Issue 26: an assistant says the person's fact changed; the Inbox shows "<assistant>
    says this changed" with the held value and the new one, and one key press accepts it: the
    new value becomes the person's (global, confirmed, current) and the old one ends when the
    change took effect."""
    from app.agent_scope import AgentSession
    from app.api import AssistantFact, Filters
    from app.clock import parse_iso
    from ui.views.inbox import ChangeCard
    (auto,) = demo_vault.contradictions("auto")
    porto = json.loads(auto.resolution)["kept"]
    assert demo_vault.get(porto).text == "Sam lives in Porto"
    demo_vault.pair_agent("helper")
    when = parse_iso("2026-06-01T00:00:00Z")
    out = AgentSession(demo_vault, "helper").remember_fact(AssistantFact(
        "Sam", "lives_in", "Braga", valid_from=when, replaces=porto)).value
    assert out.status == "sent_to_inbox" and out.id is not None
    view = open_page("inbox")
    _loaded(qtbot, view, 2)  # the film contradiction and the change
    card = view.cards[out.inbox_id]
    assert isinstance(card, ChangeCard)
    assert "helper says this changed" in card.reason.text()
    assert card.side_a.text.text() == "Sam lives in Porto"
    assert "Braga" in card.side_b.text.text()
    assert demo_vault.get(porto).status.value == "active"  # nothing changes before the person
    card.accept_btn.setFocus()
    with qtbot.waitSignal(window.bridge.changes_applied, timeout=10_000):
        qtbot.keyClick(card.accept_btn, Qt.Key.Key_Space)
    qtbot.waitUntil(lambda: out.inbox_id in view.resolved_rows, timeout=10_000)
    assert "accepted" in view.resolved_rows[out.inbox_id].what
    new = demo_vault.get(out.id)
    assert new.agent == "global" and new.user_validated and new.status.value == "active"
    old = demo_vault.get(porto)
    assert old.status.value == "superseded" and old.superseded_by == out.id
    assert old.valid_until == when
    # Any assistant now reads the new value as the person's, current and confirmed.
    hits = demo_vault.recall("where does Sam live", filters=Filters(agent="other"),
                             touch=False)
    [braga] = [h for h in hits if h.id == out.id]
    assert braga.currency is not None and braga.currency.state == "current"
    assert braga.confirmed_by_person and braga.written_by == "person"
    assert porto not in {h.id for h in hits}
