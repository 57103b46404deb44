"""An assistant's recall carries no score breakdown (issue 26, item 9): no tool shows it, and it
was 40 % of the reply's bytes on the owner's socket. The person's recall keeps it, and
``explain`` still gives an assistant the parts for one memory."""

from __future__ import annotations

from app.agent_scope import AgentSession
from app.domain.memory import Draft
from app.facade import Vault
from app.ipc import protocol as p


def test_an_assistants_hits_leave_the_breakdown_to_explain(vault: Vault) -> None:
    vault.pair_agent("claude")
    vault.remember(Draft(text="Ana moved to Lisbon in May."))
    vault.remember(Draft(text="Ana drinks green tea every morning."))
    me = AgentSession(vault, "claude")

    mine = me.recall("where does Ana live", touch=False)
    person = vault.recall("where does Ana live", touch=False)
    assert mine and [h.id for h in mine] == [h.id for h in person]
    assert [h.score for h in mine] == [h.score for h in person]
    assert all(h.breakdown == {} for h in mine)
    assert all("final" in h.breakdown for h in person)
    assert len(p.encode_result(1, "recall", mine)) < len(p.encode_result(1, "recall", person))
    assert me.explain(int(mine[0].id), "where does Ana live").breakdown
