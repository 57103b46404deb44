"""Changes from assistants and what is current, through a real owner and the SDK client (issue
26 items 1 and 2): an assistant's own change settles at once; a change to the person's fact
waits in the Inbox and recall shows it pending beside the held value (to that assistant only);
``correct`` takes the assistant's own memories and refuses the person's; every result says its
status, who wrote it and whether the person confirmed it; context ids are ids ``explain`` takes,
and a small budget ends at a whole item."""

from __future__ import annotations

import re
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

EPISODES = ("Ana moved to Porto last spring", "Ana works at Quillon as a designer",
            "Ana loves oat milk in her coffee", "Had lunch with Ana at the harbour")


def _seed(folder: Path) -> Seeded:
    from app.agent_scope import AgentSession
    from app.api import MemoryQuery
    from app.domain.memory import Draft, Store
    from app.facade import Vault
    from storage.crypto import KdfParams
    v = Vault.create(folder, PW, kdf=KdfParams(m=65_536, t=3, p=4), load_model=False,
                     threaded=False, use_chroma=False).vault
    try:
        seeded = Seeded(folder, {n: v.pair_agent(n).value for n in ("a", "b")})
        episodes = [int(v.remember(Draft(t, store=Store.EPISODIC, speaker="user")).value)
                    for t in EPISODES]
        v.consolidate()  # the person's facts about Ana, and Ana's card (entity summary)
        facts = {r.text: int(r.id) for r in
                 v.page_memories(MemoryQuery(store=Store.SEMANTIC), limit=50).rows}
        assert "Ana lives in Porto" in facts, facts
        assert any(e.name == "Ana" and e.summary for e in v.entities())
        seeded.ids["global"] = [facts["Ana lives in Porto"], *episodes]
        seeded.ids["b"] = [int(AgentSession(v, "b").remember(
            Draft("Ana prefers the window seat", store=Store.SEMANTIC)).value)]
    finally:
        v.lock()
    return seeded


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    seeded = _seed(tmp_path_factory.mktemp("changes") / "v")
    with serving(seeded.folder):
        yield seeded


def _by_id(result: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {m["id"]: m for m in result["memories"]}


def test_changes_settle_in_own_scope_and_wait_for_the_person(served: Seeded) -> None:
    porto = served.ids["global"][0]

    async def as_a(s: ClientSession, tools: dict[str, Any]) -> dict[str, Any]:
        assert "correct" in tools and "replaces" in tools["remember_fact"].input_schema[
            "properties"]
        assert "sent_to_inbox" in (tools["remember_fact"].description or "")

        async def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
            return structured(tools, name, await s.call_tool(name, args))
        # --- the assistant's own value changes: settled at once -------------------------
        oat = await call("remember_fact", {"subject": "Ana", "attribute": "milk",
                                           "value": "oat", "valid_from": "2026-01-10"})
        assert oat["status"] == "saved"
        soy = await call("remember_fact", {"subject": "Ana", "attribute": "milk in coffee",
                                           "value": "soy", "change": True,
                                           "valid_from": "2026-03-01"})
        assert soy["status"] == "changed" and soy["replaced_id"] == oat["id"]
        assert soy["inbox_id"] is None
        hist = await call("recall", {"query": "Ana milk", "include_earlier": True, "k": 20})
        got = _by_id(hist)
        assert got[oat["id"]]["status"] == "superseded"
        assert got[oat["id"]]["ended"].startswith("2026-03-01")
        assert got[oat["id"]]["later_id"] == soy["id"]
        assert got[soy["id"]]["status"] == "current"
        assert got[soy["id"]]["written_by"] == "a"
        assert got[soy["id"]]["confirmed_by_person"] is False
        now = await call("recall", {"query": "Ana milk", "k": 20})
        assert oat["id"] not in _by_id(now) and soy["id"] in _by_id(now)
        # --- the person's fact: the change waits in the Inbox -----------------------------
        faro = await call("remember_fact", {"subject": "Ana", "attribute": "lives_in",
                                            "value": "Faro", "replaces": porto,
                                            "valid_from": "2026-04-01"})
        assert faro["status"] == "sent_to_inbox" and faro["inbox_id"]
        assert faro["replaced_id"] is None
        live = _by_id(await call("recall", {"query": "where does Ana live", "k": 20}))
        held = live[porto]
        assert held["status"] == "pending" and held["written_by"] == "kept"
        assert held["text"] == "Ana lives in Porto"  # the held value is still what it was
        change = held["pending_change"]
        assert change["value"] == "Faro" and change["by"] == "a"
        assert change["inbox_id"] == faro["inbox_id"] and change["memory_id"] == faro["id"]
        assert change["valid_from"].startswith("2026-04-01")
        assert live[faro["id"]]["status"] == "pending"
        ex = await call("explain", {"memory_id": porto})
        assert ex["status"] == "pending" and ex["pending_change"]["value"] == "Faro"
        # --- correct: its own memories only -----------------------------------------------
        fixed = await call("correct", {"memory_id": soy["id"],
                                       "text": "Ana takes soy milk in her coffee, no sugar"})
        assert fixed["replaced_id"] == soy["id"] and fixed["id"] != soy["id"]
        refused = tool_error(await s.call_tool("correct", {"memory_id": porto,
                                                           "text": "Ana lives in Faro"}))
        assert "remember_fact" in refused and f"replaces={porto}" in refused
        hidden = tool_error(await s.call_tool("correct", {"memory_id": served.ids["b"][0],
                                                          "text": "Ana prefers the aisle"}))
        assert "No memory" in hidden and "window seat" not in hidden
        return {"soy": soy["id"], "fixed": fixed["id"], "faro": faro["id"],
                "inbox": faro["inbox_id"]}

    out = with_mcp(mcp_params(served.folder, "a", served.keys["a"]), as_a)

    async def as_b(s: ClientSession, tools: dict[str, Any]) -> None:
        # Another assistant sees the person's value as it is, never a's proposal.
        live = structured(tools, "recall", await s.call_tool("recall", {
            "query": "where does Ana live", "k": 20}))
        held = _by_id(live)[porto]
        assert held["status"] == "current" and held["pending_change"] is None
        assert "Faro" not in str(live)
        ex = structured(tools, "explain", await s.call_tool("explain", {"memory_id": porto}))
        assert ex["status"] == "current" and ex["pending_change"] is None

    with_mcp(mcp_params(served.folder, "b", served.keys["b"]), as_b)

    from app.ipc.client import RemoteVault
    with RemoteVault.at(served.folder, timeout=10) as person:
        [item] = person.inbox_items([out["inbox"]])
        assert item.kind == "change" and item.reason == "a says this changed"
        assert (item.a.id, item.b.id) == (porto, out["faro"])
        assert person.get(porto).status == "active"  # nothing changed for the person yet
        assert person.get(out["soy"]).status == "superseded"
        fixed = person.get(out["fixed"])
        assert fixed.agent == "a" and not fixed.user_validated  # not the person's word
        assert any(e.detail == f"correction of {out['soy']} by a"
                   for e in person.history(out["fixed"]).entries)


def test_context_ids_are_ids_explain_takes_and_budgets_end_at_whole_items(
        served: Seeded) -> None:
    async def body(s: ClientSession, tools: dict[str, Any]) -> None:
        ctx = structured(tools, "context", await s.call_tool("context", {
            "query": "Ana", "budget": 4000}))
        cards = [i for i in ctx["items"] if i["id"] is None]
        assert [(c["entity"], c["kind"]) for c in cards] == [("Ana", "person")]
        assert "[-" not in ctx["briefing"]
        ids = [i["id"] for i in ctx["items"] if i["id"] is not None]
        assert ids
        for i in ctx["items"]:
            assert i["status"] in ("current", "earlier", "superseded", "pending")
            assert i["written_by"] in ("person", "kept", "a")
        for mid in ids:
            ex = structured(tools, "explain", await s.call_tool("explain", {"memory_id": mid}))
            assert ex["id"] == mid
        small = structured(tools, "context", await s.call_tool("context", {
            "query": "Ana", "budget": 100}))
        assert 0 < small["tokens_used"] <= 100 and small["items"]
        assert len(small["items"]) < len(ctx["items"])
        full = {i["text"] for i in ctx["items"]}
        lines = [ln for ln in small["briefing"].splitlines() if ln.startswith("- ")]
        assert len(lines) == len(small["items"])
        for line, item in zip(lines, small["items"], strict=True):
            text = re.sub(r"^- (\[\d+\] )?", "", line)
            assert text == item["text"] and text in full  # whole, never cut
        assert small["briefing"].endswith(small["items"][-1]["text"])

    with_mcp(mcp_params(served.folder, "a", served.keys["a"]), body)
