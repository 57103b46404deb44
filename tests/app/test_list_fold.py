"""The window's lists and search at the contract (issue 25 item 6): one row per thing said
(``MemoryQuery.fold``), a conversation around a memory (``session_of``), orders with keyset
paging, a search's hits as list rows (``ids``), and recall limited to a person or project
(``Filters.entity_id``) with a relevance cut-off (``Filters.min_share``)."""

from __future__ import annotations

import pytest

from app.api import ALL_MEMORIES, Filters, MemoryQuery
from app.domain.memory import Store
from app.facade import Vault
from tests.app.conftest import HOUR, T0, ids, neutral, remember, turn
from tests.inside import inside


def _listed(vault: Vault, q: MemoryQuery, limit: int = 2) -> list[int]:
    """Every row of ``q``, paged ``limit`` at a time through the keyset cursor."""
    out: list[int] = []
    after = None
    while True:
        page = vault.page_memories(q, after=after, limit=limit)
        out += [int(r.id) for r in page.rows]
        if page.next is None:
            return out
        after = page.next


def _store_of(vault: Vault) -> dict[int, str]:
    return dict(inside(vault).db.read(
        lambda c: c.execute("SELECT id, store FROM memory").fetchall()))


@pytest.fixture
def said(vault: Vault) -> Vault:
    """Three turns kept as events (a turn and its event each), one turn kept as a turn only,
    a fact, and a behaviour statistic."""
    vault.import_turns([
        turn("s1", "Sam", "I adopted a grey cat called Miso.", T0 - 5 * HOUR, "r1"),
        turn("s1", "Ana", "Miso is a lovely name for a cat.", T0 - 4 * HOUR, "r2"),
        turn("s2", "Sam", "The film last night was Heat.", T0 - 3 * HOUR, "r3"),
        turn("s2", "Sam", "ok", T0 - 2 * HOUR, "r4", store=Store.SHORT_TERM),
    ])
    remember(vault, "Sam lives in Porto", Store.SEMANTIC, **neutral())
    inside(vault).db.write_sync(lambda c: c.execute(
        "INSERT INTO memory (store, text, created_at, occurred_at, decay_class) "
        "VALUES ('implicit', 'Sam talks most in the evening', ?, ?, 'semantic')", (T0, T0)))
    return vault


def test_all_memories_lists_each_thing_said_once(said: Vault) -> None:
    stores = _store_of(said)
    listed = _listed(said, ALL_MEMORIES)
    kinds = [stores[i] for i in listed]
    # Three events, the turn that has no event, the fact; no statistic, no turn twice.
    assert sorted(kinds) == sorted(["episodic"] * 3 + ["short_term", "semantic"])
    assert said.count_memories(ALL_MEMORIES) == len(listed) == 5
    # A store's own list still holds all it has: the conversation's four turns.
    turns = _listed(said, MemoryQuery(store=Store.SHORT_TERM))
    assert len(turns) == said.count_memories(MemoryQuery(store=Store.SHORT_TERM)) == 4
    assert said.count_memories(MemoryQuery(store=Store.IMPLICIT)) == 1
    # Unfolded, everything is counted (what the list showed before).
    assert said.count_memories(MemoryQuery()) == 9  # four turns, three events, two more


def test_a_turn_whose_event_is_archived_is_folded_in_the_archive_only(said: Vault) -> None:
    stores = _store_of(said)
    event = next(i for i in _listed(said, ALL_MEMORIES) if stores[i] == "episodic")
    said.archive(event)
    listed = _listed(said, ALL_MEMORIES)
    # Its turn is active and its event no longer in this list: the turn stands for it.
    assert said.count_memories(ALL_MEMORIES) == len(listed) == 5
    assert event not in listed
    archive = MemoryQuery(status="archived", fold=True)
    assert _listed(said, archive) == [event]


def test_the_conversation_around_a_memory_in_order(said: Vault) -> None:
    stores = _store_of(said)
    heat = next(r for r in said.page_memories(ALL_MEMORIES).rows if "Heat" in r.text)
    q = MemoryQuery(session_of=int(heat.id), fold=True, order="oldest")
    rows = said.page_memories(q).rows
    assert [r.text for r in rows] == ["The film last night was Heat.", "ok"]
    assert said.count_memories(q) == 2
    # Unfolded: the session's turns and events, oldest first.
    q2 = MemoryQuery(session_of=int(heat.id), order="oldest")
    listed = _listed(said, q2)
    assert sorted(stores[i] for i in listed) == ["episodic", "short_term", "short_term"]


@pytest.mark.parametrize("order", ["newest", "oldest", "strongest", "weakest"])
def test_orders_page_through_every_row_once(said: Vault, order: str) -> None:
    q = MemoryQuery(order=order)  # type: ignore[arg-type]
    listed = _listed(said, q, limit=3)
    assert len(listed) == len(set(listed)) == said.count_memories(q)
    rows = said.page_memories(q, limit=100).rows
    key = {"newest": lambda r: -r.occurred_at, "oldest": lambda r: r.occurred_at,
           "strongest": lambda r: -r.composite, "weakest": lambda r: r.composite}[order]
    assert [key(r) for r in rows] == sorted(key(r) for r in rows)


def test_ids_lists_just_those_memories(said: Vault) -> None:
    some = _listed(said, ALL_MEMORIES)[:2]
    rows = said.page_memories(MemoryQuery(ids=tuple(some), status=None), limit=10).rows
    assert sorted(int(r.id) for r in rows) == sorted(some)
    assert all(r.tier is not None for r in rows)  # list rows: a tier, the stored strength
    assert said.page_memories(MemoryQuery(ids=()), limit=10).rows == ()


def test_recall_inside_a_person_and_the_cut_off(said: Vault) -> None:
    stores = _store_of(said)
    cat_event = next(i for i in _listed(said, ALL_MEMORIES)
                     if stores[i] == "episodic" and "grey cat" in
                     said.get(i).text)

    def write(c: object) -> int:
        cur = c.execute(  # type: ignore[attr-defined]
            "INSERT INTO entity (kind, name, name_key, created_at, updated_at) "
            "VALUES ('person', 'Miso', 'miso', 0, 0)")
        eid = int(cur.lastrowid)
        c.execute("INSERT INTO entity_mention VALUES (?, ?)", (eid, cat_event))  # type: ignore
        return eid
    eid = inside(said).db.write_sync(write)
    everything = said.recall("cat", k=50, touch=False)
    assert len(everything) > 1
    inside_person = said.recall("cat", k=50, touch=False, filters=Filters(entity_id=eid))
    assert ids(inside_person) == [cat_event]

    cut = said.recall("cat", k=50, touch=False, filters=Filters(min_share=0.5))
    best = max(h.score for h in everything)
    assert ids(cut) == [int(h.id) for h in everything if h.score >= 0.5 * best]
    assert 0 < len(cut) < len(everything)


def test_folding_looks_up_each_turns_event_by_its_link(said: Vault) -> None:
    """The fold's plan starts from the turn's links (``link_dst``), then the event by id; the
    planner left free walked every active event for each turn (100k memories: 2 s a page)."""
    from storage import browse
    where, params, join = browse._where(None, "active", None, None, fold=True)
    sql = f"SELECT count(*) FROM memory m{join}{where}"
    plan = " | ".join(str(r[3]) for r in inside(said).db.read(
        lambda c: c.execute("EXPLAIN QUERY PLAN " + sql, params).fetchall()))
    assert "SEARCH l USING COVERING INDEX link_dst" in plan, plan
    assert "SEARCH e USING INTEGER PRIMARY KEY" in plan, plan
