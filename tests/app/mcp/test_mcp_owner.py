"""``kept mcp`` against a real owner (issue 14, tests 1): the official SDK client spawns
``kept --vault F mcp --agent a`` with only the agent's key, and every tool goes over the
owner's socket to a headless ``kept serve`` (real SQLCipher, the real model). Also what an
assistant sees when Kept is not running, and when the owner locks itself mid-session."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession

from tests.app.mcp.conftest import (
    PW,
    TOOLS,
    Seeded,
    mcp_params,
    seed_vault,
    serving,
    start_serve,
    stop_serve,
    structured,
    tool_error,
    with_mcp,
)

READ_ONLY = {"recall", "context", "explain", "list_contradictions", "status", "forget_status"} | {
    "get_memory", "recent_memories", "entity", "inbox"}

# One valid call per tool: what a well-behaved assistant would send.
CALLS: dict[str, dict[str, Any]] = {
    "remember": {"text": "Kestrel project review moved to Thursday"},
    "remember_fact": {"subject": "Ana", "attribute": "lives_in", "value": "Porto"},
    "correct": {"memory_id": 1, "text": "Ana lives in Porto"},
    "recall": {"query": "kestrel project"},
    "context": {"query": "kestrel project"},
    "explain": {"memory_id": 1},
    "list_contradictions": {},
    "status": {},
    "request_forget": {"memory_ids": [1], "reason": "the person asked"},
    "forget_status": {},
    "get_memory": {"memory_id": 1},
    "recent_memories": {},
    "entity": {"name": "Ana"},
    "inbox": {},
}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    seeded = seed_vault(tmp_path_factory.mktemp("owner") / "v", ("a", "b", "c"), {
        "global": ("The person drinks green tea every morning",),
        "b": ("Kestrel project budget is confidential",),
    })
    with serving(seeded.folder):
        yield seeded


def _check_listing(tools: dict[str, Any]) -> None:
    assert set(tools) == TOOLS
    for name, t in tools.items():
        assert t.description and t.input_schema and t.output_schema, name
        assert t.input_schema.get("type") == "object" and t.output_schema.get("type") == "object"
        ann = t.annotations
        assert ann is not None and ann.destructive_hint is False, name
        assert ann.read_only_hint is (name in READ_ONLY), name
        # The scope is the launch configuration's, never a tool argument.
        assert "agent" not in t.input_schema.get("properties", {}), name


def test_every_tool_through_kept_serve(served: Seeded) -> None:
    b_id = served.ids["b"][0]
    g_id = served.ids["global"][0]

    async def body(s: ClientSession, tools: dict[str, Any]) -> dict[str, Any]:
        _check_listing(tools)
        out: dict[str, Any] = {}
        st = structured(tools, "status", await s.call_tool("status", {}))
        assert st["agent"] == "a" and st["memories"]
        turn = structured(tools, "remember", await s.call_tool("remember", {
            "text": "Kestrel project deadline is March 3", "speaker": "user",
            "at": "2026-02-01T10:00:00Z", "session": "s1", "ref": "turn-1"}))
        assert turn["saved"] is True
        out["turn"] = turn["id"]
        rec = structured(tools, "recall", await s.call_tool("recall", {
            "query": "kestrel project deadline", "k": 50}))
        assert turn["id"] in {m["id"] for m in rec["memories"]}
        assert b_id not in {m["id"] for m in rec["memories"]}
        fact = structured(tools, "remember_fact", await s.call_tool("remember_fact", {
            "subject": "Kestrel project", "attribute": "deadline", "value": "March 3",
            "valid_from": "2026-02-01", "confidence": 0.8, "source_ids": [turn["id"]]}))
        assert fact["status"] == "saved" and fact["id"]
        out["fact"] = fact["id"]
        again = structured(tools, "remember_fact", await s.call_tool("remember_fact", {
            "subject": "Kestrel project", "attribute": "deadline", "value": "March 3"}))
        assert again["status"] == "already_known" and again["id"] is None
        moved = structured(tools, "remember_fact", await s.call_tool("remember_fact", {
            "subject": "Kestrel project", "attribute": "deadline", "value": "April 9",
            "valid_from": "2026-02-10"}))  # said before March 3 passed: the same deadline
        assert moved["contradictions"] == 1
        rec = structured(tools, "recall", await s.call_tool("recall", {
            "query": "kestrel project deadline", "k": 50, "stores": ["episodic", "semantic"],
            "min_score": 0.0}))
        # The fact carries its turn's ref: recall shows one of the two (ref dedupe).
        ids = {m["id"] for m in rec["memories"]}
        assert fact["id"] in ids and b_id not in ids
        tea = structured(tools, "recall", await s.call_tool("recall", {"query": "green tea"}))
        assert g_id in {m["id"] for m in tea["memories"]}
        then = structured(tools, "recall", await s.call_tool("recall", {
            "query": "kestrel", "as_of": "2000-01-01"}))
        assert turn["id"] not in {m["id"] for m in then["memories"]}
        ctx = structured(tools, "context", await s.call_tool("context", {
            "query": "kestrel project", "budget": 800}))
        assert ctx["budget"] <= 800 and ctx["tokens_used"] <= ctx["budget"]
        assert b_id not in {i["id"] for i in ctx["items"]}
        ex = structured(tools, "explain", await s.call_tool("explain", {
            "memory_id": fact["id"], "query": "kestrel deadline"}))
        assert ex["id"] == fact["id"] and ex["breakdown"]
        assert [x["id"] for x in ex["sources"]] == [turn["id"]]
        lc = structured(tools, "list_contradictions", await s.call_tool(
            "list_contradictions", {"limit": 5}))
        assert any({i["a"]["id"], i["b"]["id"]} == {fact["id"], moved["id"]}
                   for i in lc["items"])
        fr = structured(tools, "request_forget", await s.call_tool("request_forget", {
            "memory_ids": [turn["id"]], "reason": "the person asked"}))
        assert fr["status"] == "waiting_for_person" and fr["memory_ids"] == [turn["id"]]
        assert "Kept" in fr["tell_the_person"]
        out["request"] = fr["request_id"]
        st = structured(tools, "status", await s.call_tool("status", {}))
        assert st["pending_forget_requests"] == 1 and st["open_contradictions"] >= 1
        # The schema bounds hold at the server too.
        assert (await s.call_tool("recall", {"query": "x", "k": 500})).is_error
        assert (await s.call_tool("context", {"query": "x", "budget": 10**6})).is_error
        return out

    out = with_mcp(mcp_params(served.folder, "a", served.keys["a"]), body)
    # The person's view through the owner: written in a's scope, nothing forgotten.
    from app.ipc.client import RemoteVault
    with RemoteVault.at(served.folder, timeout=10) as person:
        assert person.get(out["turn"]).agent == "a"
        assert person.get(out["fact"]).agent == "a"
        [req] = [r for r in person.pending_forgets("pending") if r.id == out["request"]]
        assert req.agent == "a" and req.memory_ids == (out["turn"],)
        assert person.get(out["turn"]).text.startswith("Kestrel project deadline")
        # What a read was recorded by id and time (via recall, explain...), in a batch
        # written within a second (app.services.agents.READS_FLUSH_S).
        end = time.monotonic() + 10
        while not person.memory_reads(out["fact"]) and time.monotonic() < end:
            time.sleep(0.05)
        assert {r.agent for r in person.memory_reads(out["fact"])} == {"a"}


async def _every_tool_fails_readably(s: ClientSession) -> list[str]:
    texts = []
    for name in sorted(TOOLS):
        text = tool_error(await s.call_tool(name, CALLS[name]))
        assert "Kept" in text, (name, text)
        assert "Traceback" not in text and "Errno" not in text, (name, text)
        texts.append(text)
    return texts


def test_no_owner_tools_list_answers_and_tools_say_kept_is_closed(tmp_path: Path) -> None:
    seeded = seed_vault(tmp_path / "v", ("a",))

    async def body(s: ClientSession, tools: dict[str, Any]) -> list[str]:
        _check_listing(tools)
        return await _every_tool_fails_readably(s)

    texts = with_mcp(mcp_params(seeded.folder, "a", seeded.keys["a"]), body)
    assert all("not running" in t for t in texts), texts


@pytest.mark.slow  # long: runs in the slow group (CI runs it)
def test_owner_that_locks_itself_mid_session(tmp_path: Path) -> None:
    """``kept serve`` with a tiny idle time (``KEPT_IDLE_MINUTES``, the alias of
    ``--idle-lock``): the owner locks itself (keys wiped) and stays up; every tool then says
    "locked: open Kept to unlock", a new session's handshake still answers, and after
    ``kept unlock`` the same session works again."""
    from tests.app.mcp.test_idle_lock_mcp import kept, line_with
    seeded = seed_vault(tmp_path / "v", ("a",), {"global": ("Ana moved to Lisbon",)})
    proc = start_serve(seeded.folder, KEPT_IDLE_MINUTES="0.03")  # ~2 s without a request
    try:
        line_with(proc, "Idle for")

        async def listing(s: ClientSession, tools: dict[str, Any]) -> str:
            _check_listing(tools)
            return tool_error(await s.call_tool("recall", {"query": "Lisbon"}))

        assert "locked: open Kept to unlock" in with_mcp(
            mcp_params(seeded.folder, "a", seeded.keys["a"]), listing)
        assert proc.poll() is None  # still serving, locked

        async def body(s: ClientSession, tools: dict[str, Any]) -> list[str]:
            texts = await _every_tool_fails_readably(s)
            await anyio.to_thread.run_sync(lambda: kept(seeded.folder, "unlock"))
            structured(tools, "status", await s.call_tool("status", {}))
            return texts

        texts = with_mcp(mcp_params(seeded.folder, "a", seeded.keys["a"]), body)
        assert all("locked: open Kept to unlock" in t for t in texts), texts
    finally:
        err = stop_serve(proc)
    assert proc.returncode == 0, err


def test_a_key_revoked_while_connected(served: Seeded) -> None:
    """The person revokes an assistant over the socket (after proving the password): its
    live session's next call says to pair again, nothing else changes."""
    from app.ipc.client import RemoteVault

    async def body(s: ClientSession, tools: dict[str, Any]) -> str:
        structured(tools, "status", await s.call_tool("status", {}))

        def revoke() -> None:
            with RemoteVault.at(served.folder, timeout=10) as person:
                person.verify_password(PW)
                person.revoke_agent("c")
        await anyio.to_thread.run_sync(revoke)
        return tool_error(await s.call_tool("remember", {"text": "after revoke"}))

    text = with_mcp(mcp_params(served.folder, "c", served.keys["c"]), body)
    assert "not paired" in text and "kept agents pair" in text
    with RemoteVault.at(served.folder, timeout=10) as person:
        rows = person.page_memories(_everything(), limit=500).rows
        assert rows and all(m.text != "after revoke" for m in rows)


def _everything() -> Any:
    from app.api import MemoryQuery
    return MemoryQuery()


@pytest.mark.parametrize("key", [None, "kept_not-the-key-kept-issued"])
def test_no_key_or_a_wrong_key_gets_a_readable_refusal(served: Seeded, key: str | None) -> None:
    """The handshake and the listing still answer; every tool says the assistant is not
    paired (no key: it names KEPT_AGENT_KEY), and nothing is written."""
    async def body(s: ClientSession, tools: dict[str, Any]) -> list[str]:
        _check_listing(tools)
        return await _every_tool_fails_readably(s)

    from app.ipc.client import RemoteVault
    with RemoteVault.at(served.folder) as person:
        before = person.count_memories(_everything())
        texts = with_mcp(mcp_params(served.folder, "a", key), body)
        assert person.count_memories(_everything()) == before
    assert all("not paired" in t or "KEPT_AGENT_KEY" in t for t in texts), texts
    if key is None:
        assert all("KEPT_AGENT_KEY" in t for t in texts), texts
