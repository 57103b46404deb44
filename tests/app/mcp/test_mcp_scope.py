"""Scope through a real owner (issue 14, tests 5): assistant ``b``'s memories never reach
assistant ``a`` through any tool, and nothing a client sends (a tool argument, a filter, a
draft's agent, a second ``hello``) changes the scope its key proved.

Every text ``b`` writes carries the marker ``Zephyr``; ``a`` asks about it every way it can,
and no answer, structured or text, may contain it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from tests.app.mcp.conftest import (
    PW,
    Seeded,
    mcp_params,
    serving,
    structured,
    tool_error,
    with_mcp,
)

MARK = "Zephyr"


def _seed(folder: Path) -> Seeded:
    from app.agent_scope import AgentSession
    from app.api import AssistantFact
    from app.domain.memory import Draft, Store
    from app.facade import Vault
    from storage.crypto import KdfParams
    v = Vault.create(folder, PW, kdf=KdfParams(m=65_536, t=3, p=4), load_model=False,
                     threaded=False, use_chroma=False).vault
    try:
        seeded = Seeded(folder, {n: v.pair_agent(n).value for n in ("a", "b")})
        person = v.remember_fact(AssistantFact("Ana", "lives_in", "Porto")).value.id
        seeded.ids["global"] = [int(person),  # type: ignore[arg-type]
                                int(v.remember(Draft("The Quillon offsite is in Sintra",
                                                     store=Store.SEMANTIC)).value)]
        b = AgentSession(v, "b")
        b_ids = [int(b.remember(Draft(f"Quillon {MARK} trip to Faro in May",
                                      store=Store.EPISODIC)).value)]
        moved = b.remember_fact(AssistantFact("Ana", "lives_in", f"Faro {MARK}")).value
        assert moved.contradictions == 1  # against the person's fact: an Inbox item
        c1 = b.remember_fact(AssistantFact("Quillon", "works_at", f"{MARK} Labs")).value
        c2 = b.remember_fact(AssistantFact("Quillon", "works_at", f"{MARK} Forge")).value
        assert c2.contradictions == 1  # b against b
        b_ids += [int(x.id) for x in (moved, c1, c2)]  # type: ignore[arg-type]
        b.request_forget(ids=[b_ids[0]], reason=f"{MARK} asked")
        seeded.ids["b"] = b_ids
        a = AgentSession(v, "a")
        seeded.ids["a"] = [int(a.remember(Draft("Quillon meeting moved to noon",
                                                store=Store.EPISODIC)).value)]
        assert len(v.contradictions("open")) == 2
    finally:
        v.lock()
    return seeded


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    seeded = _seed(tmp_path_factory.mktemp("scope") / "v")
    with serving(seeded.folder):
        yield seeded


def _no_leak(result: Any, b_ids: list[int]) -> None:
    """Neither b's marker nor (for memory lists) b's ids in anything the assistant got."""
    dumped = json.dumps(result.structured_content) + " ".join(
        getattr(c, "text", "") for c in result.content)
    assert MARK not in dumped, dumped


def _ids(data: dict[str, Any]) -> set[int]:
    """Every ``id`` anywhere in a structured result."""
    out: set[int] = set()

    def walk(x: Any) -> None:
        if isinstance(x, dict):
            for k, v in x.items():
                if k in ("id", "memory_ids", "sent_to_inbox") and isinstance(v, int):
                    out.add(v)
                elif k == "memory_ids" and isinstance(v, list):
                    out.update(v)
                else:
                    walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(data)
    return out


def test_b_never_reaches_a_through_any_tool(served: Seeded) -> None:
    b_ids, a_ids, g_ids = served.ids["b"], served.ids["a"], served.ids["global"]

    async def body(s: ClientSession, tools: dict[str, Any]) -> dict[str, Any]:
        seen: list[Any] = []

        async def ok(name: str, args: dict[str, Any]) -> dict[str, Any]:
            res = await s.call_tool(name, args)
            seen.append(res)
            data = structured(tools, name, res)
            assert not _ids(data) & set(b_ids), (name, data)
            return data

        async def err(name: str, args: dict[str, Any]) -> str:
            res = await s.call_tool(name, args)
            seen.append(res)
            return tool_error(res)

        st = await ok("status", {})
        assert st["pending_forget_requests"] == 0  # b's request is b's
        for q in (MARK, f"Quillon {MARK} Faro", "Ana lives in Faro", "door code"):
            await ok("recall", {"query": q, "k": 50})
            for stores in (["episodic"], ["semantic"]):
                await ok("recall", {"query": q, "k": 50, "stores": stores})
            await ok("context", {"query": q, "budget": 4000})
        rec = await ok("recall", {"query": "Quillon", "k": 50})
        assert set(a_ids) | {g_ids[1]} <= {m["id"] for m in rec["memories"]}
        # An id of b's is indistinguishable from an id that never existed.
        missing = await err("explain", {"memory_id": 999_999})
        for mid in b_ids:
            assert await err("explain", {"memory_id": mid}) == missing
        ex = await ok("explain", {"memory_id": g_ids[0]})  # the person's fact b contradicts
        assert ex["id"] == g_ids[0]
        lc = await ok("list_contradictions", {"limit": 20})
        assert lc["items"] == []  # both open items involve b
        for ids in ([b_ids[0]], [a_ids[0], b_ids[0]]):
            await err("request_forget", {"memory_ids": ids, "reason": "the person asked"})
        fr = await ok("request_forget", {"query": "Quillon", "reason": "the person asked"})
        assert set(fr["memory_ids"]) <= set(a_ids) | set(g_ids) and fr["memory_ids"]
        assert "already" not in await err("remember_fact", {
            "subject": "Quillon", "attribute": "door_code", "value": "1234",
            "source_ids": [b_ids[0]]})
        # A tool argument cannot name a scope: refused or ignored, never obeyed.
        for name, args in (("recall", {"query": MARK, "agent": "b"}),
                           ("context", {"query": MARK, "agent": "b"}),
                           ("remember", {"text": "scoped by argument?", "agent": "b"})):
            res = await s.call_tool(name, args)
            seen.append(res)
            if not res.is_error:
                assert not _ids(structured(tools, name, res)) & set(b_ids)
        st = await ok("status", {})
        assert st["pending_forget_requests"] == 1
        for res in seen:
            _no_leak(res, b_ids)
        return fr

    fr = with_mcp(mcp_params(served.folder, "a", served.keys["a"]), body)

    from app.ipc.client import RemoteVault
    with RemoteVault.at(served.folder, timeout=10) as person:
        for mid in b_ids:
            assert person.get(mid).agent == "b"  # nothing of b's changed
        pending = {r.agent: r for r in person.pending_forgets("pending")}
        assert set(pending) == {"a", "b"}
        assert list(pending["a"].memory_ids) == fr["memory_ids"]
        rows = person.page_memories(_everything(), limit=500).rows
        assert not [m for m in rows if m.agent == "b" and m.id not in b_ids]
        assert not [m for m in rows if m.text == "scoped by argument?" and m.agent != "a"]
        assert not [m for m in rows if m.agent == "a" and m.text.endswith("1234")]


def _everything() -> Any:
    from app.api import MemoryQuery
    return MemoryQuery()


def test_scope_arguments_are_overwritten_on_the_socket(served: Seeded) -> None:
    """The same through the owner's protocol directly (what any local program could send
    with a's key): scope fields in filters, drafts and facts name b; the owner ignores them."""
    from app.api import AssistantFact, Filters
    from app.domain.memory import Draft, MemoryId
    from app.errors import AgentNotPaired, NotFound, RemoteRefused
    from app.ipc.client import RemoteVault
    b_ids = set(served.ids["b"])
    a = RemoteVault.at(served.folder, agent="a", key=served.keys["a"], timeout=10)
    person = RemoteVault.at(served.folder, timeout=10)
    try:
        # The queries do find b's memories for the person (so their absence below means
        # something).
        assert b_ids <= {h.id for h in person.recall(MARK, k=50)}
        assert not {h.id for h in a.recall(MARK, k=50, filters=Filters(agent="b"))} & b_ids
        ctx = a.context(MARK, budget=4000, filters=Filters(agent="b"))
        assert not {i.id for i in ctx.items} & b_ids and MARK not in ctx.render()
        mid = a.remember(Draft("Written with agent=b in the draft", agent="b")).value
        assert person.get(mid).agent == "a"
        fact = a.remember_fact(AssistantFact("Lio", "likes", "figs"), agent="b").value
        assert fact.id is not None and person.get(fact.id).agent == "a"
        with pytest.raises(NotFound):
            a.remember_fact(AssistantFact("Lio", "likes", "plums",
                                          source_ids=(MemoryId(served.ids["b"][0]),)),
                            agent="b")
        with pytest.raises(NotFound):
            a.explain(served.ids["b"][0])
        assert all(r.agent == "a" for r in a.pending_forgets("pending", agent="b"))
        assert not any(b_ids & {i.a.id, i.b.id} for i in a.contradictions(None))
        with pytest.raises(NotFound):
            a.request_forget(agent="b", ids=[served.ids["b"][0]], reason="x")
        # A second hello cannot switch the connection to b with a's key...
        with pytest.raises(AgentNotPaired):
            a._call("hello", agent="b", key=served.keys["a"])
        # ...and a hello without an agent does not drop the connection to the person's.
        a._call("hello", agent=None, key=None)
        with pytest.raises(RemoteRefused):
            a.forget_plan(ids=list(b_ids))
        with pytest.raises(RemoteRefused):
            a.page_memories(_everything())
        assert not {h.id for h in a.recall(MARK, k=50)} & b_ids
    finally:
        a.close()
        person.close()
