"""An assistant's changes on a real vault, in process (issue 26 item 1): any slot holds one value
once the assistant says it changed, a change it cannot make is refused with one clear error
and loses nothing, Undo and reopen put everything back. The path through the owner and the SDK
client is tests/app/mcp/test_changes.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from app.agent_scope import AgentSession
from app.api import AssistantFact, Filters, MemoryQuery
from app.clock import parse_iso
from app.domain.memory import Draft, Store
from app.errors import NotFound, ValidationError
from app.facade import Vault
from tests.conftest import new_vault

PW = "correct horse battery"
MARCH = parse_iso("2026-03-01T00:00:00Z")


@pytest.fixture
def vault(tmp_path: Path, fast_kdf: object) -> Iterator[Vault]:
    v = new_vault(tmp_path / "v", PW, load_model=False, threaded=False, use_chroma=False)
    v.pair_agent("a")
    v.pair_agent("b")
    yield v
    v.lock()


def test_a_said_change_holds_one_value_in_any_slot(vault: Vault) -> None:
    a = AgentSession(vault, "a")
    jazz = a.remember_fact(AssistantFact("Maya", "likes", "jazz")).value
    # "likes" holds many values: without a change, both stand.
    folk = a.remember_fact(AssistantFact("Maya", "likes", "folk")).value
    assert folk.status == "saved" and folk.contradictions == 0
    now = a.remember_fact(AssistantFact("Maya", "likes", "hiking", valid_from=MARCH,
                                        change=True)).value
    assert now.status == "changed" and now.id is not None and now.replaced_id == jazz.id
    for old in (jazz.id, folk.id):
        assert old is not None
        m = vault.get(old)
        assert m.status.value == "superseded" and m.valid_until == MARCH
        assert m.superseded_by == now.id
    # The same value again is already known, and nothing is written.
    before = vault.count_memories(MemoryQuery(status=None))
    again = a.remember_fact(AssistantFact("Maya", "likes", "hiking", change=True)).value
    assert again.status == "already_known" and again.id is None
    assert vault.count_memories(MemoryQuery(status=None)) == before


def test_changes_it_cannot_make_are_refused_and_lose_nothing(vault: Vault) -> None:
    a, b = AgentSession(vault, "a"), AgentSession(vault, "b")
    theirs = b.remember_fact(AssistantFact("Ana", "vet", "Dr Alves")).value.id
    assert theirs is not None
    with pytest.raises(NotFound):  # another assistant's memory is one that does not exist
        a.remember_fact(AssistantFact("Ana", "vet", "Dr Lima", replaces=theirs))
    mine = a.remember_fact(AssistantFact("Ana", "gym", "Iron Works")).value.id
    assert mine is not None
    later = a.remember_fact(AssistantFact("Ana", "gym", "Pulse", replaces=mine)).value
    assert later.status == "changed" and later.replaced_id == mine
    with pytest.raises(ValidationError, match="already replaced"):
        a.remember_fact(AssistantFact("Ana", "gym", "Core", replaces=mine))
    with pytest.raises(ValidationError, match="empty"):
        a.correct_own(int(later.id), "   ")  # type: ignore[arg-type]
    with pytest.raises(NotFound):
        a.correct_own(int(theirs), "Ana's vet is Dr Lima")
    assert vault.get(theirs).text == "Ana vet Dr Alves" and vault.get(theirs).agent == "b"
    assert [f.id for f in a.recall("Ana gym") if f.text.startswith("Ana gym")] == [later.id]


def test_undo_and_reopen_put_a_change_back(vault: Vault) -> None:
    a = AgentSession(vault, "a")
    own = a.remember_fact(AssistantFact("Ana", "milk", "oat")).value.id
    changed = a.remember_fact(AssistantFact("Ana", "milk", "soy", valid_from=MARCH,
                                            change=True)).value
    vault.undo_run(changed.run_id)
    assert own is not None and vault.get(own).status.value == "active"
    assert vault.get(own).valid_until is None
    with pytest.raises(NotFound):
        vault.get(changed.id)  # type: ignore[arg-type]
    # The person's fact: the change waits, accepting moves it, reopening puts it back.
    person = vault.remember(Draft("Ana lives in Porto", store=Store.SEMANTIC)).value
    sent = a.remember_fact(AssistantFact("Ana", "lives_in", "Faro", valid_from=MARCH,
                                         replaces=person)).value
    assert sent.status == "sent_to_inbox" and sent.inbox_id is not None
    [item] = vault.inbox_items([sent.inbox_id])
    assert item.kind == "change"
    vault.resolve(sent.inbox_id, "b")
    faro = vault.get(sent.id)  # type: ignore[arg-type]
    assert faro.agent == "global" and faro.user_validated
    assert vault.get(person).status.value == "superseded"
    assert vault.get(person).valid_until == MARCH
    hits = AgentSession(vault, "b").recall("Ana lives", filters=Filters())
    assert sent.id in {h.id for h in hits}  # every assistant reads it now
    vault.reopen(sent.inbox_id)
    assert vault.get(sent.id).agent == "a"  # type: ignore[arg-type]
    assert not vault.get(sent.id).user_validated  # type: ignore[arg-type]
    assert vault.get(person).status.value == "active" and vault.get(person).valid_until is None
    # Keeping the person's value makes the assistant's an earlier version.
    vault.resolve(sent.inbox_id, "a")
    assert vault.get(sent.id).status.value == "superseded"  # type: ignore[arg-type]
    assert vault.get(person).status.value == "active"
