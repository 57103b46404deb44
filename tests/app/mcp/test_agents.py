"""Pairing, agent scope and pending forget requests on a real vault (issue 14)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agent_scope import AgentSession
from app.api import AssistantFact, Filters
from app.domain.memory import Draft, Store
from app.errors import AgentNotPaired, NotFound, ValidationError
from app.facade import Vault
from tests.conftest import new_vault
from tests.inside import inside

PW = "correct horse battery"


@pytest.fixture
def vault(tmp_path: Path, fast_kdf: object):
    v = new_vault(tmp_path / "v", PW, load_model=False, threaded=False, use_chroma=False)
    yield v
    v.lock()


def test_pair_verify_revoke(vault: Vault) -> None:
    key = vault.pair_agent("cursor").value
    assert key.startswith("kept_") and len(key) > 40
    assert vault.verify_agent("cursor", key).name == "cursor"
    with pytest.raises(AgentNotPaired):
        vault.verify_agent("cursor", key + "x")
    with pytest.raises(AgentNotPaired):
        vault.verify_agent("nobody", key)
    # Only a hash is stored.
    assert key not in repr(inside(vault).db.read(
        lambda c: c.execute("SELECT * FROM agent").fetchall()))
    new = vault.pair_agent("cursor").value  # re-pairing replaces the key
    with pytest.raises(AgentNotPaired):
        vault.verify_agent("cursor", key)
    vault.revoke_agent("cursor")
    with pytest.raises(AgentNotPaired):
        vault.verify_agent("cursor", new)
    assert [a.name for a in vault.agents()] == ["cursor"] and vault.agents()[0].revoked_at
    with pytest.raises(ValidationError):
        vault.pair_agent("global")


def test_scope_and_pending_forget(vault: Vault) -> None:
    g = vault.remember(Draft("The person likes green tea", store=Store.SEMANTIC)).value
    a = AgentSession(vault, "a")
    b = AgentSession(vault, "b")
    # A tool argument cannot choose the scope: the session overwrites it.
    mine = a.remember(Draft("Project lantern deadline is Friday", agent="b")).value
    theirs = b.remember(Draft("Project lantern budget is secret", agent="global")).value
    assert vault.get(mine).agent == "a" and vault.get(theirs).agent == "b"
    ids_a = {h.id for h in a.recall("project lantern", k=50, filters=Filters(agent="b"))}
    assert mine in ids_a and theirs not in ids_a
    assert g in {h.id for h in a.recall("green tea")}
    ctx = a.context("project lantern", budget=100000, filters=Filters(agent="b"))
    assert ctx.budget <= 4000 and theirs not in {i.id for i in ctx.items}
    with pytest.raises(NotFound):
        a.explain(theirs)
    with pytest.raises(NotFound):
        a.request_forget(agent="b", ids=[theirs], reason="x")
    # A query only asks about what the agent can see.
    req = a.request_forget(agent="b", query="lantern", reason="the person asked").value
    assert req.agent == "a" and set(req.memory_ids) == {mine}
    assert vault.get(mine).text and vault.get(theirs).text  # nothing forgotten
    assert [r.id for r in vault.pending_forgets()] == [req.id]
    assert b.pending_forgets() == []
    # The person declines one, confirms another.
    vault.close_pending_forget(req.id, None)
    assert vault.get(mine) and vault.pending_forgets() == []
    with pytest.raises(ValidationError, match="declined"):  # not asked again (issue 26)
        a.request_forget(ids=[mine], reason="again")
    kickoff = a.remember(Draft("Project lantern kickoff is Monday")).value
    req2 = a.request_forget(ids=[kickoff], reason="the person asked").value
    plan = vault.pending_forget_plan(req2.id)
    assert plan.memory_ids == (kickoff,)
    vault.close_pending_forget(req2.id, plan)
    with pytest.raises(NotFound):
        vault.get(kickoff)
    assert vault.pending_forgets("done", "a")[0].id == req2.id


def test_remember_fact_goes_through_the_policy(vault: Vault) -> None:
    a = AgentSession(vault, "a")
    first = a.remember_fact(AssistantFact("Ana", "lives_in", "Porto")).value
    assert first.status == "saved" and vault.get(first.id).agent == "a"
    again = a.remember_fact(AssistantFact("Ana", "lives_in", "Porto")).value
    assert again.status == "already_known"
    other = a.remember_fact(AssistantFact("Ana", "lives_in", "Lisbon")).value
    assert other.status == "saved" and other.contradictions == 1
    # Another agent's facts are another scope: no conflict with a's.
    b = AgentSession(vault, "b")
    assert b.remember_fact(AssistantFact("Ana", "lives_in", "Faro")).value.contradictions == 0
    assert all(vault.get(i.a.id).agent in ("global", "b") for i in b.contradictions(None))


def test_an_assistant_never_replaces_the_persons_facts(vault: Vault) -> None:
    # A global fact (the person's), then an assistant that disagrees: the Inbox decides.
    person = vault.remember_fact(AssistantFact("Ana", "lives_in", "Porto")).value
    assert person.id is not None and vault.get(person.id).agent == "global"
    a = AgentSession(vault, "a")
    assert a.remember_fact(AssistantFact("Ana", "lives_in", "Porto")).value.status == \
        "already_known"
    other = a.remember_fact(AssistantFact("Ana", "lives_in", "Lisbon")).value
    assert other.status == "saved" and other.contradictions == 1
    assert len(other.sent_to_inbox) == 1  # never settled by the policy
    assert vault.get(person.id).status == "active"
    [item] = [i for i in vault.contradictions("open") if person.id in (i.a.id, i.b.id)]
    assert {item.a.id, item.b.id} == {person.id, other.id}


def test_a_request_whose_memories_went_meanwhile(vault: Vault) -> None:
    a = AgentSession(vault, "a")
    one = a.remember(Draft(text="Parked on level 3", store=Store.EPISODIC)).value
    two = a.remember(Draft(text="Parked on level 4", store=Store.EPISODIC)).value
    req = a.request_forget(ids=[one, two], reason="old parking notes").value
    vault.forget(vault.forget_plan(ids=[one]))  # the person forgot one already
    assert [i.id for i in vault.pending_forget_plan(req.id).items] == [two]
    vault.forget(vault.forget_plan(ids=[two]))
    with pytest.raises(ValidationError, match="already forgotten"):
        vault.pending_forget_plan(req.id)
    assert vault.pending_forgets("pending") == []
