"""The vault's side of issue 26 items 3 and 5, in process on a real SQLCipher file: entity
cards (current and earlier facts, any name safe), the newest memories in an assistant's sight,
and sharing an assistant's memory (refused where it makes no sense, undone exactly)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.errors import NotFound, ValidationError
from tests.conftest import new_vault

DAY = 86_400.0


@pytest.fixture
def vault(tmp_path: Path, fast_kdf: Any) -> Iterator[Any]:
    v = new_vault(tmp_path / "v", "pw", load_model=False, threaded=False, use_chroma=False)
    yield v
    v.lock()


def test_entity_card_current_earlier_and_any_name(vault: Any) -> None:
    from app.agent_scope import AgentSession
    from app.api import AssistantFact
    from app.domain.memory import Draft, Store
    now = time.time()
    porto = int(vault.remember_fact(AssistantFact("Ana", "lives_in", "Porto")).value.id)
    braga = int(vault.correct(porto, "Ana lives in Braga").value)
    ended = int(vault.remember(Draft("Ana worked at the bakery.", store=Store.SEMANTIC,
                                     valid_until=now - DAY)).value)
    said = int(vault.remember(Draft("Dinner with Ana and Leo.", store=Store.SEMANTIC)).value)
    hidden = int(AgentSession(vault, "b").remember(Draft("Ana hates olives.",
                                                         store=Store.SEMANTIC)).value)
    card = vault.entity("ANA")
    assert {int(r.id) for r in card.current} == {braga, said, hidden}  # the person sees all
    earlier = {int(r.id): r.currency for r in card.earlier}
    assert earlier[porto] is not None and earlier[porto].later_id == braga
    assert earlier[ended] is not None and earlier[ended].ended_at == pytest.approx(now - DAY)
    mine = AgentSession(vault, "a").entity("Ana")
    assert hidden not in {int(r.id) for r in mine.current + mine.earlier}
    # Query syntax of the full-text index is only ever a name.
    for name in ('x" OR "y', "*", "NEAR(a b)", "!!!", "Nobody"):
        with pytest.raises(NotFound):
            vault.entity(name)
    for name in ("", "   "):
        with pytest.raises(ValidationError):
            vault.entity(name)


def test_recent_memories_in_an_assistants_sight(vault: Any) -> None:
    from app.agent_scope import AgentSession
    from app.domain.memory import Draft, Store
    g = int(vault.remember(Draft("Global note", store=Store.SEMANTIC)).value)
    e = int(vault.remember(Draft("An event", store=Store.EPISODIC)).value)
    a = int(AgentSession(vault, "a").remember(Draft("a's note", store=Store.SEMANTIC)).value)
    b = int(AgentSession(vault, "b").remember(Draft("b's note", store=Store.SEMANTIC)).value)
    seen = AgentSession(vault, "a").recent_memories(25)
    assert {int(r.id) for r in seen} == {g, e, a}
    assert [int(r.id) for r in seen] == sorted((int(r.id) for r in seen), reverse=True)
    facts = AgentSession(vault, "a").recent_memories(25, Store.SEMANTIC)
    assert {int(r.id) for r in facts} == {g, a}
    assert b in {int(r.id) for r in vault.recent_memories(25)}
    for bad in (0, 201):
        with pytest.raises(ValidationError):
            vault.recent_memories(bad)


def test_share_and_unshare(vault: Any) -> None:
    from app.agent_scope import AgentSession
    from app.domain.memory import Draft, Store
    b = AgentSession(vault, "b")
    mid = int(b.remember(Draft("Ana adopted a cat called Miso.", store=Store.SEMANTIC)).value)
    a = AgentSession(vault, "a")
    assert not a.recall("Miso cat")
    with pytest.raises(NotFound):
        a.get_memory(mid)
    assert vault.share(mid).value == "b"
    assert vault.get(mid).agent == "global"
    assert [int(h.id) for h in a.recall("Miso cat")] == [mid]
    assert int(a.get_memory(mid).id) == mid
    with pytest.raises(ValidationError, match="not one assistant's own"):
        vault.share(mid)
    assert vault.unshare(mid).value == "b"
    assert vault.get(mid).agent == "b" and not a.recall("Miso cat")
    with pytest.raises(ValidationError, match="no sharing to undo"):
        vault.unshare(mid)
    entries = [(e.action, e.detail) for e in vault.history(mid).entries]
    assert entries[-2:] == [("shared", "b"), ("unshared", "b")]
    # A global memory was never an assistant's; an earlier version is not what to share.
    g = int(vault.remember(Draft("Mine", store=Store.SEMANTIC)).value)
    with pytest.raises(ValidationError):
        vault.share(g)
    with pytest.raises(ValidationError):
        vault.unshare(g)
    old = int(b.remember(Draft("Leo lives in Faro.", store=Store.SEMANTIC)).value)
    vault.correct(old, "Leo lives in Tavira.")
    with pytest.raises(ValidationError, match="replaced by a newer version"):
        vault.share(old)
    with pytest.raises(NotFound):
        vault.share(999_999)
