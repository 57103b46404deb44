"""Read tools answered beside the SDK's dispatcher (``app.mcp_fast``, issue 26 item 9): every
reply is the byte-for-byte line the SDK's own stdio server writes for the same call, in both
protocol eras, for successes, bad arguments, a memory that is not there, a locked vault and an
owner gone; what the fast path does not take goes to the SDK.

How the two are compared: one ``build_server`` and one real owner (an ``OwnerServer`` on a real
SQLCipher vault in this process, reached over its socket by the real ``RemoteVault``). The
calls first go through the SDK's stdio server (``stdio_server`` and ``Server.run``, as ``kept
mcp`` runs them); the owner's answers (values, or the errors it raised) are kept as they pass,
because a recall is not idempotent (it counts the read, and scores move with the clock). Then
the same calls go to ``FastCalls``, which gets those same answers back in the same order, for
the same arguments (asserted): so any difference in the lines is the dispatch's alone."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from app import mcp_launch
from app.mcp_fast import FastCalls, read_tools
from app.mcp_server import Connection, build_server
from tests.app.mcp.conftest import PW, seed_vault
from tests.app.mcp.test_mcp_owner import READ_ONLY

TABLE: dict[str, Any] = json.loads(mcp_launch.TABLE.read_text())
LEGACY = "2025-11-25"
MODERN = "2026-07-28"
CLIENT = {"name": "t", "version": "1"}
META = {"_meta": {mcp_launch.VERSION_META: MODERN,
                  "io.modelcontextprotocol/clientInfo": CLIENT,
                  "io.modelcontextprotocol/clientCapabilities": {}}}


class Tee:
    """The real owner's answers, kept as they pass (``record``), then given back in the same
    order (``replay``), where each call must be the one recorded."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.log: list[tuple[str, Any, str, Any]] = []
        self.replaying = False
        self.at = 0

    def close(self) -> None:
        if not self.replaying:
            self.real.close()

    def __getattr__(self, name: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            if self.replaying:
                assert self.at < len(self.log), f"{name}: a call the SDK's pass never made"
                recorded, asked, kind, value = self.log[self.at]
                self.at += 1
                assert (recorded, asked) == (name, (args, kwargs))
                if kind == "raise":
                    raise value
                return value
            try:
                value = getattr(self.real, name)(*args, **kwargs)
            except Exception as exc:
                self.log.append((name, (args, kwargs), "raise", exc))
                raise
            self.log.append((name, (args, kwargs), "return", value))
            return value
        return call


def call(mid: Any, name: str, arguments: dict[str, Any] | None, era: str) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    if era == "modern":
        params.update(META)
    return {"jsonrpc": "2.0", "id": mid, "method": "tools/call", "params": params}


def handshake(era: str) -> list[dict[str, Any]]:
    if era == "modern":
        return [{"jsonrpc": "2.0", "id": "h1", "method": "server/discover", "params": META}]
    return [{"jsonrpc": "2.0", "id": "h1", "method": "initialize",
             "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": CLIENT}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"}]


def sdk_replies(server: Any, messages: list[dict[str, Any]],
                before: dict[int, Callable[[], None]]) -> dict[Any, str]:
    """Each request's reply line from the SDK's stdio server, one message at a time (the
    next is sent when the last is answered); ``before[i]`` runs before message i."""
    from mcp.server.stdio import stdio_server

    async def main() -> dict[Any, str]:
        replies: dict[Any, str] = {}
        answered = {id(m): anyio.Event() for m in messages}

        class In:
            def __init__(self) -> None:
                self.i = 0

            def __aiter__(self) -> In:
                return self

            async def __anext__(self) -> str:
                if self.i > 0 and "id" in messages[self.i - 1]:
                    await answered[id(messages[self.i - 1])].wait()
                if self.i == len(messages):
                    raise StopAsyncIteration
                if self.i in before:
                    before[self.i]()
                self.i += 1
                return json.dumps(messages[self.i - 1]) + "\n"

        class Out:
            async def write(self, text: str) -> None:
                mid = json.loads(text).get("id")
                assert mid not in replies, text
                replies[mid] = text
                for m in messages:
                    if m.get("id") == mid:
                        answered[id(m)].set()

            async def flush(self) -> None:
                return None

        low = server._lowlevel_server
        async with stdio_server(stdin=In(), stdout=Out()) as (read, write):  # type: ignore[arg-type]
            await low.run(read, write, low.create_initialization_options())
        return replies
    return anyio.run(main)


def fast_replies(fast: FastCalls, messages: list[dict[str, Any]]) -> dict[Any, str | None]:
    async def main() -> dict[Any, str | None]:
        out: dict[Any, str | None] = {}
        for m in messages:
            reply, parsed = await fast.answer(json.dumps(m).encode() + b"\n")
            assert parsed == m
            out[m["id"]] = None if reply is None else reply.decode()
        return out
    return anyio.run(main)


@pytest.fixture(scope="module")
def vault_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    seeded = seed_vault(tmp_path_factory.mktemp("fast") / "v", ("a", "b"), {
        "global": ("Ana moved to Lisbon in May", "Ana drinks green tea every morning"),
        "a": ("a's note: the Kestrel review is on Thursday",),
        "b": ("b's secret: the gym on Tuesdays",)})
    (seeded.folder / "keys.json").write_text(json.dumps(seeded.keys))
    return seeded.folder


@pytest.fixture
def owner(vault_folder: Path, tmp_path: Path) -> Iterator[Any]:
    import shutil

    from app.facade import Vault
    from app.ipc.server import OwnerServer
    folder = tmp_path / "v"
    shutil.copytree(vault_folder, folder)
    server = OwnerServer(Vault.open(folder, PW, load_model=False, use_chroma=False))
    server.start()
    try:
        yield server
    finally:
        server.lock_vault()


def the_calls(era: str) -> tuple[list[dict[str, Any]], int, int]:
    """(calls, where the vault locks, where the owner stops)."""
    calls = [
        call(1, "recall", {"query": "Ana Lisbon"}, era),
        call("two", "recall", {"query": "tea", "k": 3, "include_earlier": True,
                               "min_score": 0.01}, era),
        call(3, "recall", {"query": ""}, era),                     # too short
        call(4, "recall", {"query": "x", "k": 0}, era),            # out of range
        call(5, "recall", {"query": "x", "k": "many"}, era),       # not a number
        call(6, "recall", {}, era),                                # missing
        call(7, "recall", {"query": "x", "as_of": "next Tuesday-ish"}, era),  # Kept's check
        call(8, "recall", {"query": "gym", "surprise": 1}, era),   # an argument not known
        call(9, "context", {"query": "Ana", "budget": 300}, era),
        call(10, "explain", {"memory_id": 1, "query": "Lisbon"}, era),
        call(11, "explain", {"memory_id": 99999}, era),            # not there
        call(12, "status", None, era),                             # no arguments at all
        call(13, "list_contradictions", {"limit": 2}, era),
        call(14, "get_memory", {"memory_id": 2}, era),
        call(15, "recent_memories", {}, era),
        call(16, "entity", {"name": "Ana"}, era),
        call(17, "inbox", {}, era),
        call(18, "forget_status", {}, era),
        call(19, "nope", {}, era),                                 # not a tool: the SDK's
        call(20, "remember", {"text": "a write goes to the SDK"}, era),
        call(21, "recall", {"query": "Lisbon"}, era),              # the vault is locked
        call(22, "status", {}, era),
        call(23, "recall", {"query": "Lisbon"}, era),              # the owner is gone
    ]
    return calls, 20, 22


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_fast_replies_are_the_sdk_replies_byte_for_byte(
        era: str, owner: Any, vault_folder: Path) -> None:
    from app.ipc.client import RemoteVault
    folder = owner.vault.folder
    key = json.loads((vault_folder / "keys.json").read_text())["a"]
    tee = Tee(RemoteVault.at(folder, agent="a", key=key))
    server = build_server(Connection("a", folder, key, factory=lambda: cast(Any, tee)))
    calls, lock_at, stop_at = the_calls(era)
    opening = handshake(era)
    sdk = sdk_replies(server, opening + calls, {len(opening) + lock_at: owner.vault.lock,
                                                len(opening) + stop_at: owner.stop})

    # What the SDK said, so that equality means something.
    def result(mid: Any) -> dict[str, Any]:
        return cast(dict[str, Any], json.loads(sdk[mid])["result"])
    found = result(1)["structuredContent"]["memories"]
    assert [m["text"] for m in found][:1] == ["Ana moved to Lisbon in May"]
    assert not any("gym" in m["text"] for m in result(8).get("structuredContent",
                                                              {"memories": []})["memories"])
    for mid in (3, 4, 5, 6):
        assert result(mid)["isError"] and "validation error" in result(mid)["content"][0]["text"]
    assert result(7)["isError"] and "as_of" in result(7)["content"][0]["text"]
    assert result(11)["isError"] and not result(10).get("isError")
    assert "Unknown tool" in result(19)["content"][0]["text"]
    assert result(21)["isError"] and "lock" in result(21)["content"][0]["text"].lower()
    assert result(23)["isError"] and "not running" in result(23)["content"][0]["text"]
    if era == "modern":
        assert result(1)["resultType"] == "complete" and "_meta" in result(1)

    # The same calls beside the SDK, on the same owner answers (the write is the SDK's).
    assert [e[0] for e in tee.log].count("remember") == 1
    tee.log = [e for e in tee.log if e[0] != "remember"]
    tee.replaying = True
    launcher = mcp_launch.Launcher(TABLE)
    for m in opening:
        assert launcher.answer(json.dumps(m).encode()) is not None
    fast = launcher.fast(server)
    assert fast is not None
    mine = fast_replies(fast, calls)
    assert tee.at == len(tee.log)  # every owner call made again, none more
    for m in calls:
        mid = m["id"]
        if m["params"]["name"] in ("nope", "remember"):
            assert mine[mid] is None, mid  # the SDK answers these
        else:
            assert mine[mid] == sdk[mid], mid


def test_what_the_fast_path_leaves_to_the_sdk(owner: Any, vault_folder: Path) -> None:
    key = json.loads((vault_folder / "keys.json").read_text())["a"]
    server = build_server(Connection("a", owner.vault.folder, key))
    assert set(read_tools(server)) == READ_ONLY  # every read tool, no write
    launcher = mcp_launch.Launcher(TABLE)
    assert launcher.fast(server) is None  # no handshake yet: the era is not known
    for m in handshake("legacy")[:1]:
        launcher.answer(json.dumps(m).encode())
    assert launcher.fast(server) is None  # not initialized yet
    launcher.answer(json.dumps(handshake("legacy")[1]).encode())
    fast = launcher.fast(server)
    assert fast is not None
    ok = call(1, "status", {}, "legacy")
    assert fast.take(ok) is not None
    for odd in (
            {**ok, "id": True}, {**ok, "id": 1.5}, {**ok, "id": None}, {**ok, "extra": 1},
            {**ok, "jsonrpc": "1.0"},
            {**ok, "params": {**ok["params"], "_meta": {"progressToken": 1}}},
            {**ok, "params": {**ok["params"], "arguments": [1]}},
            {**ok, "params": {"arguments": {}}},
            call(1, "status", {}, "modern"),  # the other era's envelope
            {**ok, "method": "tools/list"}):
        assert fast.take(odd) is None, odd
    # A request handed to the SDK holds read calls back until the SDK answered it: a write
    # the client sent first is never overtaken.
    fast.handed(call("w", "remember", {"text": "x"}, "legacy"))
    assert fast.take(ok) is None
    fast.replied(json.dumps({"jsonrpc": "2.0", "id": "other", "result": {}}))
    assert fast.take(ok) is None
    fast.replied(json.dumps({"jsonrpc": "2.0", "id": "w", "result": {}}))
    assert fast.take(ok) is not None
    fast.handed(call(7, "remember", {"text": "x"}, "legacy"))
    fast.handed({"jsonrpc": "2.0", "method": "notifications/cancelled",
                 "params": {"requestId": "7"}})  # cancelled: never answered
    assert fast.take(ok) is not None
