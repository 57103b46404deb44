"""What the journal records besides remember and forget (issue 29 items 2-3), seen from the
other vault: an assistant's facts and their changes, an import (one batch per page), the
person's Inbox answers."""

from __future__ import annotations

from typing import Any

from app.api import AssistantFact, Turn
from app.facade import Vault
from app.sync.ops import parse_ops
from tests.app.conftest import T0, remember
from tests.app.sync.fleet import Fleet
from tests.inside import inside


def _rows(v: Vault, sql: str) -> list[tuple[Any, ...]]:
    return inside(v).db.read(lambda c: [tuple(r) for r in c.execute(sql)])


def test_an_assistants_fact_and_its_change_arrive_as_facts(two: Fleet) -> None:
    a, b = two.members
    for m in (a, b):
        m.vault.pair_agent("helper")
    from app.agent_scope import AgentSession
    helper = AgentSession(a.vault, "helper")
    first = helper.remember_fact(AssistantFact("Ana", "gym", "Iron Works")).value
    kinds = [o.kind for o in parse_ops(a.vault._sync_journal().unsent())]  # type: ignore[union-attr]
    assert kinds == ["fact.assert"]
    a.tick()
    later = helper.remember_fact(AssistantFact("Ana", "gym", "Pulse", replaces=first.id)).value
    assert later.status == "changed"
    kinds = [o.kind for o in parse_ops(a.vault._sync_journal().unsent())]  # type: ignore[union-attr]
    assert kinds == ["fact.supersede"]
    a.tick()
    b.tick()
    got = {r[0]: r[1:] for r in _rows(
        b.vault, "SELECT m.text, m.status, m.agent, f.subject, f.predicate, f.object "
                 "FROM memory m JOIN fact f ON f.memory_id = m.id")}
    assert got == {"Ana gym Iron Works": ("superseded", "helper", "Ana", "gym", "Iron Works"),
                   "Ana gym Pulse": ("active", "helper", "Ana", "gym", "Pulse")}
    assert a.hash() == b.hash()


def test_an_import_is_journaled_one_batch_per_page_and_arrives(two: Fleet) -> None:
    a, b = two.members
    turns = [Turn(session="chat-1", speaker="Sam" if i % 2 else "Ana",
                  text=f"Message {i}: we should book the cabin for the {i + 1}th",
                  at=T0 + i * 60, ref=f"t{i}") for i in range(7)]
    report = a.vault.import_turns(turns).value
    assert report.added == 7
    journal = a.vault._sync_journal()
    assert journal is not None
    ops = parse_ops(journal.record_creates([a.vault.get(i) for i in report.ids], batch=3))
    assert ops == []  # already named: recorded once, by the import itself
    ops = parse_ops(journal.unsent())
    assert [o.kind for o in ops] == ["memory.create"] * 7
    assert len({o.seq for o in ops}) == 1  # one batch for the page
    a.tick()
    b.tick()
    mine = {r[0] for r in _rows(a.vault, "SELECT text FROM memory WHERE store = 'episodic'")}
    theirs = {r[0] for r in _rows(b.vault, "SELECT text FROM memory WHERE store = 'episodic'")}
    assert theirs == mine and len(mine) == 7


def test_an_inbox_answer_on_one_vault_settles_the_item_on_the_other(two: Fleet) -> None:
    a, b = two.members
    mid = remember(a.vault, "The car insurance renews in June")
    a.tick()
    b.tick()
    now = a.clock.now()
    inbox = inside(a.vault).consolidation.inbox.inbox
    inside(a.vault).db.write_sync(lambda c: inbox.add_review(c, mid, "old", now))
    (item,) = a.vault.contradictions()
    a.vault.resolve(item.id, "still_true")
    kinds = [o.kind for o in parse_ops(a.vault._sync_journal().unsent())]  # type: ignore[union-attr]
    assert kinds == ["inbox.propose", "inbox.decide"]
    a.tick()
    b.tick()
    assert b.vault.contradictions() == []  # asked and answered there too
    settled = b.vault.contradictions(status=None)
    assert len(settled) == 1 and settled[0].status != "open"
    assert a.hash() == b.hash()
