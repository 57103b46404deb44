"""Consolidation and what assistants gave (issue 26, item 7): extraction does not take again
from a turn a fact an assistant already gave from it (``remember_fact`` with that turn in
``source_ids``), and Inbox items whose two sides were both replaced since close themselves
(undoing the run opens them again). A real vault file, the rules extractor."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agent_scope import AgentSession
from app.api import AssistantFact
from app.domain.memory import Draft, MemoryId, Store
from app.facade import Vault
from tests.conftest import new_vault
from tests.inside import inside

PW = "correct horse battery"


@pytest.fixture
def vault(tmp_path: Path, fast_kdf: object):
    v = new_vault(tmp_path / "v", PW, load_model=False, threaded=False, use_chroma=False)
    yield v
    v.lock()


def _facts(v: Vault) -> list[tuple[int, str, str]]:
    return inside(v).db.read(lambda c: [tuple(r) for r in c.execute(
        "SELECT id, text, status FROM memory WHERE store = 'semantic' ORDER BY id")])


def test_extraction_skips_what_the_assistant_gave_from_the_turn(vault: Vault) -> None:
    a = AgentSession(vault, "a")
    turn = a.remember(Draft("Ana lives in Lisbon now.", speaker="Sam", session="s",
                            ref="1")).value
    given = a.remember_fact(AssistantFact("Ana", "lives_in", "Lisbon, Portugal",
                                          source_ids=(MemoryId(turn),))).value
    assert given.status == "saved"
    before = _facts(vault)
    report = vault.consolidate().value
    # The rules would read (Ana, lives_in, Lisbon) from the turn: a second value of the same
    # slot, in the assistant's own scope, against its own word.
    assert report.counts.get("facts_already_given") == 1
    assert not report.counts.get("facts_created")
    assert not report.counts.get("contradictions_found")
    assert _facts(vault) == before
    assert vault.contradictions("open") == []
    # A turn the assistant gave nothing from is still read.
    a.remember(Draft("Mina lives in Faro.", speaker="Sam", session="s", ref="2"))
    assert vault.consolidate().value.counts.get("facts_created") == 1


def test_inbox_items_whose_sides_both_ended_close_themselves(vault: Vault) -> None:
    ana = vault.remember(Draft("Ana lives in Lisbon", store=Store.SEMANTIC,
                               speaker="Sam")).value
    assert vault.remember_fact(AssistantFact("Ana", "lives_in", "Lisbon")).value  # person's
    a = AgentSession(vault, "a")
    out = a.remember_fact(AssistantFact("Ana", "lives_in", "Porto")).value
    [item] = vault.contradictions("open")
    assert out.sent_to_inbox == (item.id,)
    # One side replaced: still open (a choice is left).
    vault.correct(item.a.id, "Ana lives in Braga")
    assert [i.id for i in vault.contradictions("open")] == [item.id]
    # Both replaced: the next run closes it, and says so.
    vault.correct(item.b.id, "Ana lives in Faro")
    report = vault.consolidate(steps=("entities",)).value
    assert report.counts.get("closed_both_replaced") == 1
    assert vault.contradictions("open") == []
    [closed] = [i for i in vault.contradictions(None) if i.id == item.id]
    assert closed.status == "auto"
    # Undoing that run opens it again.
    vault.undo_run(report.run_id)
    assert [i.id for i in vault.contradictions("open")] == [item.id]
    assert ana
