"""The fast ``kept mcp`` launcher (issue 26, item 9): the handshake comes from a table of the
SDK's own replies, and the SDK server takes over on the first message the table does not
cover. Time itself is measured in bench/mcp_latency.py (no wall-clock assertions here)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from app import mcp_launch
from tests.app.mcp.conftest import (
    TOOLS,
    Seeded,
    mcp_params,
    seed_vault,
    serving,
    structured,
    with_mcp,
)

TABLE: dict[str, Any] = json.loads(mcp_launch.TABLE.read_text())


def test_the_table_is_what_the_sdk_answers_now() -> None:
    # Fails when a tool, schema, description, cap or the SDK changed without regenerating:
    # python -m app.mcp_launch --write-table
    assert TABLE["fingerprint"] == mcp_launch.fingerprint(), "stale: regenerate the table"
    assert mcp_launch.record() == TABLE
    for era in ("legacy", "modern"):
        for replies in TABLE[era].values():
            assert {t["name"] for t in replies["tools/list"]["tools"]} >= TOOLS


def _msg(mid: int | None, method: str, params: dict[str, Any] | None = None) -> bytes:
    m: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if mid is not None:
        m["id"] = mid
    if params is not None:
        m["params"] = params
    return json.dumps(m).encode()


INIT = {"protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}
META = {"_meta": {mcp_launch.VERSION_META: "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}


def test_launcher_answers_the_handshake_of_both_eras_and_nothing_else() -> None:
    legacy = mcp_launch.Launcher(TABLE)
    assert legacy.answer(_msg(7, "tools/list")) is None  # before initialize: the SDK judges
    reply = legacy.answer(_msg(7, "initialize", INIT))
    assert reply == {"jsonrpc": "2.0", "id": 7,
                     "result": TABLE["legacy"]["2025-06-18"]["initialize"]}
    assert reply["result"]["protocolVersion"] == "2025-06-18"
    assert legacy.answer(_msg(8, "tools/list")) is None  # before notifications/initialized
    assert legacy.answer(_msg(None, "notifications/initialized")) == {}
    assert legacy.answer(_msg("x", "tools/list"))["result"] == (  # type: ignore[index]
        TABLE["legacy"]["2025-06-18"]["tools/list"])
    assert legacy.answer(_msg(9, "tools/call", {"name": "status", "arguments": {}})) is None
    assert legacy.answer(_msg(9, "server/discover", META)) is None  # the era is chosen
    assert legacy.answer(_msg(9, "tools/list", {"cursor": "2"})) is None
    # Replayed to the SDK under private ids, in order; the ids said are remembered.
    assert [m.get("id") for m in legacy.replay] == ["kept-replay-0", None, "kept-replay-2"]
    assert set(legacy.said) == {"kept-replay-0", "kept-replay-2"}

    modern = mcp_launch.Launcher(TABLE)
    assert modern.answer(_msg(1, "server/discover", META))["result"] == (  # type: ignore[index]
        TABLE["modern"]["2026-07-28"]["server/discover"])
    assert modern.answer(_msg(2, "tools/list", META)) is not None
    assert modern.answer(_msg(3, "initialize", INIT)) is None
    odd = {"_meta": {**META["_meta"], mcp_launch.VERSION_META: "2099-01-01"}}
    assert modern.answer(_msg(3, "tools/list", odd)) is None

    for bad in (b"{not json", b"[]", _msg(1, "initialize", {**INIT, "protocolVersion": 5}),
                _msg(1, "initialize", {**INIT, "protocolVersion": "1999-01-01"}),
                _msg(1, "initialize", {**INIT, "extra": 1}),
                json.dumps({"jsonrpc": "2.0", "id": True, "method": "initialize",
                            "params": INIT}).encode()):
        assert mcp_launch.Launcher(TABLE).answer(bad) is None, bad
    assert mcp_launch.Launcher(None).answer(_msg(1, "initialize", INIT)) is None


def test_a_stale_table_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stale = tmp_path / "t.json"
    stale.write_text(json.dumps({**TABLE, "fingerprint": "0" * 16}))
    monkeypatch.setattr(mcp_launch, "TABLE", stale)
    assert mcp_launch.load_table() is None
    monkeypatch.setattr(mcp_launch, "TABLE", tmp_path / "missing.json")
    assert mcp_launch.load_table() is None


@pytest.fixture(scope="module")
def owner(tmp_path_factory: pytest.TempPathFactory) -> Any:
    seeded = seed_vault(tmp_path_factory.mktemp("launch") / "v",
                        texts={"global": ("Ana moved to Lisbon in May",),
                               "b": ("b's secret: the gym on Tuesdays",)})
    with serving(seeded.folder):
        yield seeded


def test_sdk_client_legacy_handshake_then_tools_through_the_sdk(owner: Seeded) -> None:
    async def body(s: Any, tools: dict[str, Any]) -> list[str]:
        assert set(tools) == TOOLS
        res = await s.call_tool("recall", {"query": "Lisbon gym"})
        return [m["text"] for m in structured(tools, "recall", res)["memories"]]
    texts = with_mcp(mcp_params(owner.folder, "a", owner.keys["a"]), body)
    assert "Ana moved to Lisbon in May" in texts
    assert not any("gym" in t for t in texts)  # b's memory stays b's


def test_sdk_client_2026_era_through_the_launcher(owner: Seeded) -> None:
    async def main() -> tuple[str, set[str], Any]:
        async with Client(mcp_params(owner.folder, "a", owner.keys["a"])) as c:
            tools = {t.name for t in (await c.list_tools()).tools}
            res = await c.call_tool("recall", {"query": "Lisbon"})
            return str(c.protocol_version), tools, res
    version, tools, res = anyio.run(main)
    assert version == "2026-07-28" and tools == TOOLS
    assert not res.is_error
    assert res.structured_content["memories"][0]["text"] == "Ana moved to Lisbon in May"


def test_pipelined_raw_session_sees_only_its_own_ids(owner: Seeded) -> None:
    # A client that writes everything at once: the handshake from the table, the call from
    # the SDK, nothing replayed leaks, nothing but protocol lines on stdout.
    p = mcp_params(owner.folder, "a", owner.keys["a"])
    lines = [_msg(1, "initialize", INIT), _msg(None, "notifications/initialized"),
             _msg(2, "tools/list"), _msg(3, "tools/call", {"name": "recall",
                                                           "arguments": {"query": "Lisbon"}}),
             _msg(4, "tools/list"), _msg(5, "ping")]
    proc = subprocess.Popen([p.command, *p.args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=p.env, cwd=p.cwd)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"\n".join(lines) + b"\n")
    proc.stdin.flush()
    replies = [json.loads(proc.stdout.readline()) for _ in range(5)]
    proc.stdin.close()  # then the client leaves: the server ends cleanly
    assert proc.wait(timeout=60) == 0
    rest, err = proc.stdout.read(), proc.stderr.read()  # type: ignore[union-attr]
    assert rest == b"", rest
    by_id = {r["id"]: r for r in replies}
    assert sorted(by_id) == [1, 2, 3, 4, 5] and len(replies) == 5
    assert by_id[1]["result"] == TABLE["legacy"]["2025-06-18"]["initialize"]
    assert by_id[2]["result"] == by_id[4]["result"]  # the table and the SDK agree
    assert "Lisbon" in json.dumps(by_id[3]["result"]["structuredContent"])
    assert by_id[5]["result"] == {}
    assert b"differs" not in err


def test_client_that_leaves_after_the_handshake(owner: Seeded) -> None:
    p = mcp_params(owner.folder, "a", owner.keys["a"])
    out = subprocess.run([p.command, *p.args], input=_msg(1, "initialize", INIT) + b"\n",
                         env=p.env, cwd=p.cwd, capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["id"] == 1 and out.stderr == b""


def test_a_replayed_reply_is_swallowed_and_a_difference_is_said(
        caplog: pytest.LogCaptureFixture) -> None:
    said = {"kept-replay-0": {"a": 1}, "kept-replay-2": {"b": 2}}
    pending = dict(said)
    ok = json.dumps({"jsonrpc": "2.0", "id": "kept-replay-0", "result": {"a": 1}})
    drifted = json.dumps({"jsonrpc": "2.0", "id": "kept-replay-2", "result": {"b": 3}})
    theirs = json.dumps({"jsonrpc": "2.0", "id": 3, "result": {}})
    with caplog.at_level("WARNING", logger="app.mcp_launch"):
        assert mcp_launch._swallowed(ok + "\n", pending)
        assert not caplog.records
        assert not mcp_launch._swallowed(theirs + "\n", pending)  # the client's: sent on
        assert mcp_launch._swallowed(drifted + "\n", pending)
    assert pending == {}
    assert [r.getMessage().split(":")[0] for r in caplog.records] == [
        "the MCP start-up table differs from the SDK's reply to kept-replay-2"]
