#!/usr/bin/env python3
"""``kept mcp``: handshake time and per-tool latency beside the same call in-process on the
owner (issue 26, item 9). Prints JSON.

    export KEPT_MODEL_DIR=../shared/models/all-MiniLM-L6-v2/onnx
    python bench/mcp_latency.py                  # 600 memories, 150 calls per tool
    python bench/mcp_latency.py --calls 100 --handshakes 10

1. ``handshake_s``: the official SDK client spawning ``kept mcp --agent x`` until
   ``initialize`` + ``notifications/initialized`` + ``tools/list`` answered (``legacy``:
   ``ClientSession``), and until ``server/discover`` + ``tools/list`` answered (``modern``:
   ``Client``, 2026-07-28), interleaved with the same for a bare SDK server with one tool (the
   SDK's floor) and ``python -c "import mcp.server"``; median, p90 and every run. Target:
   median <= 0.8 s.
2. ``tools``: a vault of ``--n`` memories (bench/scale.py's cached ``kept-build``: synthetic
   turns, the real model, default KDF) is served by an owner child process (``OwnerServer`` on
   the unlocked ``Vault``, as ``kept serve``); the assistant "bench" is paired. Per tool, for
   ``--calls`` calls, interleaved call by call (the order rotates; an untimed 5 ms gap):
   - ``in_process``: the owner child times the call an assistant's request becomes there
     (``AgentSession(vault, "bench").<op>(...)``), on the same vault, in the same process;
   - ``socket``: the same through an agent ``RemoteVault`` from this process (socket round
     trip, wire encoding and decoding, the owner's dispatch);
   - ``wire``: the tool through a bare JSON-RPC client (a line written, a line read,
     ``json.loads``) and its own ``kept mcp --agent bench`` process: what Kept adds;
   - ``mcp``: the tool through the SDK client and one ``kept mcp --agent bench`` process
     (stdio JSON-RPC, the SDK server's validation and output schema, the thread hop, the
     client's parsing and validation).
   p50/p95 in ms; ``added_ms``: mcp minus in_process (p50 and p95 of each, and of the
   per-call differences; on a loaded machine the op's own noise dominates these);
   ``added_same_call_ms``: per call, the client's time minus what the owner spent serving that
   very call (its ``_call``: the key check and the op, timed in the owner; target: recall
   p95 <= 3 ms over MCP), for the socket and the MCP path; ``owner_key_check_ms``: the
   per-call key check inside that; ``mcp_over_socket_ms``: the part the MCP process and
   client add over the bare socket.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from ipc import (  # noqa: E402  (bench/ipc.py: the socket bench's constants and quantiles)
    AGENT,
    BARE_SERVER,
    DEFAULT_MODEL,
    GAP_S,
    KEPT,
    TARGET_ADDED_P95_MS,
    _lat,
    _pct,
)

import storage  # noqa: E402,F401  (first: onnxruntime telemetry off, as in bench/scale.py)

TARGET_HANDSHAKE_S = 0.8
TOOLS = ("recall", "context", "explain", "status", "list_contradictions", "remember")


# --- handshake --------------------------------------------------------------------------------

def handshakes(runs: int, tmp: Path) -> dict[str, Any]:
    import anyio
    from mcp import Client, ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    bare = tmp / "bare_server.py"
    bare.write_text(BARE_SERVER)
    env = {k: os.environ[k] for k in ("HOME", "PATH", "LANG") if k in os.environ}
    kept = StdioServerParameters(command=str(KEPT), env=env, cwd=str(tmp),
                                 args=["--vault", str(tmp / "none"), "mcp", "--agent", "x"])
    floor = StdioServerParameters(command=sys.executable, args=[str(bare)], env=env,
                                  cwd=str(tmp))

    async def legacy(params: StdioServerParameters) -> float:
        t0 = time.perf_counter()
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            assert (await s.list_tools()).tools
            return time.perf_counter() - t0

    async def modern(params: StdioServerParameters) -> float:
        t0 = time.perf_counter()
        async with Client(params) as c:
            assert (await c.list_tools()).tools
            took = time.perf_counter() - t0
            assert c.protocol_version == "2026-07-28", c.protocol_version
            return took

    runs_by: dict[str, list[float]] = {k: [] for k in (
        "kept_legacy", "kept_modern", "bare_sdk_legacy", "python_import_mcp_server")}
    for _ in range(runs):  # interleaved: load hits all alike
        runs_by["kept_legacy"].append(anyio.run(legacy, kept))
        runs_by["kept_modern"].append(anyio.run(modern, kept))
        runs_by["bare_sdk_legacy"].append(anyio.run(legacy, floor))
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import mcp.server"], check=True, env=env)
        runs_by["python_import_mcp_server"].append(time.perf_counter() - t)

    def med(xs: list[float]) -> dict[str, Any]:
        s = sorted(xs)
        return {"median": round(statistics.median(xs), 3),
                "p90": round(s[min(len(s) - 1, int(0.9 * len(s)))], 3),
                "runs": [round(x, 3) for x in xs]}
    out: dict[str, Any] = {k: med(v) for k, v in runs_by.items()}
    out["target_median_s"] = TARGET_HANDSHAKE_S
    out["met"] = all(statistics.median(runs_by[k]) <= TARGET_HANDSHAKE_S
                     for k in ("kept_legacy", "kept_modern"))
    return out


# --- the owner child --------------------------------------------------------------------------

def role_owner(folder: Path) -> None:
    """Serve ``folder`` and time in-process calls on request (one JSON line each way)."""
    import scale

    from app.agent_scope import AgentSession
    from app.api import Filters
    from app.domain.memory import Draft, MemoryId
    from app.facade import Vault, internals
    from app.ipc.server import OwnerServer
    vault = Vault.open(folder, scale.PASSWORD, threaded=True, use_chroma=True, verify="sync")
    key = vault.pair_agent(AGENT).value
    # What the owner spends on each request it serves (the op as an assistant's request runs
    # it, the key check included; not the wire decoding or encoding), for "same call" added
    # latency: the client's time minus the owner's for that very call.
    served: list[float] = []
    checks: list[float] = []
    call, verify = OwnerServer._call, vault.verify_agent

    def timed_call(self: OwnerServer, req: Any, scope: Any) -> object:
        t0 = time.perf_counter()
        try:
            return call(self, req, scope)
        finally:
            served.append(time.perf_counter() - t0)

    def timed_verify(name: str, key: str) -> Any:
        t0 = time.perf_counter()
        try:
            return verify(name, key)
        finally:
            checks.append(time.perf_counter() - t0)
    OwnerServer._call = timed_call  # type: ignore[method-assign]
    vault.verify_agent = timed_verify  # type: ignore[method-assign]
    server = OwnerServer(vault)
    server.start()
    lex = internals(vault).lexicon
    if lex._thread is not None:
        lex.wait_ready(600)
    me = AgentSession(vault, AGENT)
    scope = Filters(agent=AGENT)
    ids = [int(h.id) for h in vault.recall("what did we talk about", k=10, touch=False)]
    print(json.dumps({"key": key, "ids": ids, "index": vault.status().index}), flush=True)
    ops: dict[str, Any] = {
        "recall": lambda a: me.recall(a["query"], k=a["k"], filters=scope),
        "context": lambda a: me.context(a["query"], budget=a["budget"], filters=scope),
        "explain": lambda a: me.explain(MemoryId(a["memory_id"]), a.get("query")),
        "status": lambda a: (me.status(), me.pending_forgets("pending", AGENT)),
        "list_contradictions": lambda a: me.contradictions("open"),
        "remember": lambda a: me.remember(Draft(text=a["text"], agent=AGENT)),
    }
    for line in sys.stdin:
        req = json.loads(line)
        if req.get("served"):  # what the owner spent on the requests since the last ask
            print(json.dumps({"s": sum(served), "n": len(served), "check": sum(checks)}),
                  flush=True)
            served.clear()
            checks.clear()
            continue
        t0 = time.perf_counter()
        ops[req["tool"]](req["args"])
        took = time.perf_counter() - t0
        internals(vault).db.write_sync(lambda c: None)  # untimed: the read log, touch
        print(json.dumps({"s": took}), flush=True)
    server.lock_vault()


def tools_part(a: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    import anyio
    import ipc
    import scale
    src = ipc.build(a.n, Path(a.cache), a.seed)
    folder = tmp / "vault"
    shutil.copytree(src, folder)
    env = {**os.environ, "KEPT_IDLE_MINUTES": "120"}
    env.pop("KEPT_PASSWORD", None)
    owner = subprocess.Popen([sys.executable, __file__, "--role", "owner", str(folder)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
                             cwd=ROOT)
    assert owner.stdin is not None and owner.stdout is not None
    try:
        hello = json.loads(owner.stdout.readline())
        queries = scale.make_queries(a.calls + 10, a.seed)
        return anyio.run(_timed, a, owner, folder, hello, queries)
    finally:
        owner.stdin.close()
        owner.wait(timeout=120)


async def _timed(a: argparse.Namespace, owner: subprocess.Popen[str], folder: Path,
                 hello: dict[str, Any], queries: list[str]) -> dict[str, Any]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from app.api import Filters
    from app.domain.memory import Draft, MemoryId
    from app.ipc.client import RemoteVault
    assert owner.stdin is not None and owner.stdout is not None
    key, ids = hello["key"], hello["ids"]
    scope = Filters(agent=AGENT)
    remote = RemoteVault.at(folder, agent=AGENT, key=key)

    def args_for(tool: str, i: int) -> dict[str, Any]:
        q = queries[i % len(queries)]
        return {"recall": {"query": q, "k": 10}, "context": {"query": q, "budget": 1200},
                "explain": {"memory_id": ids[i % len(ids)], "query": q}, "status": {},
                "list_contradictions": {"limit": 5},
                "remember": {"text": f"bench turn {i}: {q}"}}[tool]

    def in_process(tool: str, args: dict[str, Any]) -> float:
        owner.stdin.write(json.dumps({"tool": tool, "args": args}) + "\n")  # type: ignore[union-attr]
        owner.stdin.flush()  # type: ignore[union-attr]
        return float(json.loads(owner.stdout.readline())["s"])  # type: ignore[union-attr]

    def owner_spent() -> dict[str, Any]:
        owner.stdin.write(json.dumps({"served": True}) + "\n")  # type: ignore[union-attr]
        owner.stdin.flush()  # type: ignore[union-attr]
        return dict(json.loads(owner.stdout.readline()))  # type: ignore[union-attr]

    def socket_call(tool: str, args: dict[str, Any]) -> None:
        if tool == "recall":
            remote.recall(args["query"], k=args["k"], filters=scope)
        elif tool == "context":
            remote.context(args["query"], budget=args["budget"], filters=scope)
        elif tool == "explain":
            remote.explain(MemoryId(args["memory_id"]), args["query"])
        elif tool == "status":
            remote.status()
            remote.pending_forgets("pending", AGENT)
        elif tool == "list_contradictions":
            remote.contradictions("open")
        else:
            remote.remember(Draft(text=args["text"], agent=AGENT))

    env = {k: os.environ[k] for k in ("HOME", "PATH", "LANG") if k in os.environ}
    env["KEPT_AGENT_KEY"] = key
    params = StdioServerParameters(command=str(KEPT), env=env, cwd=str(ROOT), args=[
        "--vault", str(folder), "mcp", "--agent", AGENT])
    out: dict[str, Any] = {"memories_index": hello["index"]}
    wire = _Wire([str(KEPT), "--vault", str(folder), "mcp", "--agent", AGENT], env)
    async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        await s.list_tools()

        async def mcp_call(tool: str, args: dict[str, Any]) -> float:
            t0 = time.perf_counter()
            res = await s.call_tool(tool, args)
            took = time.perf_counter() - t0
            if res.is_error:
                raise SystemExit(f"MCP {tool} failed: {res.content}")
            return took

        for tool in a.tools.split(","):
            for i in range(5):  # warm every path
                args = args_for(tool, i)
                in_process(tool, args)
                socket_call(tool, args)
                await mcp_call(tool, args)
            owner_spent()
            for i in range(5):
                wire.call(tool, args_for(tool, i))
            owner_spent()
            t: dict[str, list[float]] = {"in_process": [], "socket": [], "wire": [], "mcp": []}
            same: dict[str, list[float]] = {"socket": [], "wire": [], "mcp": []}
            check: list[float] = []
            order = list(t)
            for i in range(a.calls):
                args = args_for(tool, i + 5)
                for path in order[i % 4:] + order[:i % 4]:
                    if path == "in_process":
                        t[path].append(in_process(tool, args))
                        continue
                    if path == "socket":
                        t0 = time.perf_counter()
                        socket_call(tool, args)
                        t[path].append(time.perf_counter() - t0)
                    elif path == "wire":
                        t[path].append(wire.call(tool, args))
                    else:
                        t[path].append(await mcp_call(tool, args))
                    spent = owner_spent()
                    same[path].append(t[path][-1] - spent["s"])
                    check.append(spent["check"])
                    time.sleep(GAP_S)
            lat = {k: _lat(v) for k, v in t.items()}
            diff = sorted(m - q for m, q in zip(t["mcp"], t["in_process"], strict=True))
            added = {"p50": round(lat["mcp"]["p50"] - lat["in_process"]["p50"], 3),
                     "p95": round(lat["mcp"]["p95"] - lat["in_process"]["p95"], 3),
                     "paired_p50": _pct(diff, 0.5), "paired_p95": _pct(diff, 0.95)}
            out[tool] = {**lat, "added_ms": added,
                         "mcp_over_socket_ms": {
                             "p50": round(lat["mcp"]["p50"] - lat["socket"]["p50"], 3),
                             "p95": round(lat["mcp"]["p95"] - lat["socket"]["p95"], 3)},
                         "socket_over_in_process_ms": {
                             "p50": round(lat["socket"]["p50"] - lat["in_process"]["p50"], 3),
                             "p95": round(lat["socket"]["p95"] - lat["in_process"]["p95"], 3)},
                         "added_same_call_ms": {k: _lat(v) for k, v in same.items()},
                         "owner_key_check_ms": _lat(check)}
    remote.close()
    wire.close()
    out["target_added_p95_ms"] = TARGET_ADDED_P95_MS
    same_call = out["recall"]["added_same_call_ms"]
    out["met_recall_at_the_wire"] = same_call["wire"]["p95"] <= TARGET_ADDED_P95_MS
    out["met_recall_sdk_client"] = same_call["mcp"]["p95"] <= TARGET_ADDED_P95_MS
    return out


class _Wire:
    """A bare JSON-RPC client on its own ``kept mcp``: a line written, a line read and
    ``json.loads``: what Kept adds at the wire, without the SDK client's own parsing and
    validation of the result (the ``mcp`` path has those)."""

    def __init__(self, cmd: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     env=env, cwd=ROOT)
        self.ids = 0
        self.rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                "clientInfo": {"name": "bench-wire", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.rpc("tools/list", {})

    def send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()

    def rpc(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.ids += 1
        self.send({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params})
        assert self.proc.stdout is not None
        reply: dict[str, Any] = json.loads(self.proc.stdout.readline())
        if "error" in reply:
            raise SystemExit(f"MCP {method} failed: {reply['error']}")
        return reply

    def call(self, tool: str, args: dict[str, Any]) -> float:
        t0 = time.perf_counter()
        reply = self.rpc("tools/call", {"name": tool, "arguments": args})
        took = time.perf_counter() - t0
        if reply["result"].get("isError"):
            raise SystemExit(f"MCP {tool} failed: {reply['result']['content']}")
        return took

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=600, help="memories in the vault")
    ap.add_argument("--calls", type=int, default=150, help="timed calls per tool and path")
    ap.add_argument("--handshakes", type=int, default=10)
    ap.add_argument("--no-tools", action="store_true", help="the handshake part only")
    ap.add_argument("--tools", default=",".join(TOOLS), help="comma-separated tools to time")
    ap.add_argument("--no-handshake", action="store_true", help="the tools part only")
    ap.add_argument("--seed", type=int, default=20240611)
    ap.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "kept-scale-cache"))
    ap.add_argument("--role", help=argparse.SUPPRESS)
    ap.add_argument("folder", nargs="?", help=argparse.SUPPRESS)
    a = ap.parse_args()
    os.environ.setdefault("KEPT_MODEL_DIR", str(DEFAULT_MODEL))
    if a.role == "owner":
        role_owner(Path(a.folder))
        return
    result: dict[str, Any] = {"bench": "kept mcp latency", "cpus": os.cpu_count(),
                              "load_avg_at_start": [round(x, 2) for x in os.getloadavg()]}
    tmp = Path(tempfile.mkdtemp(prefix="kept-bench-mcp-"))
    try:
        if not a.no_handshake:
            result["handshake_s"] = handshakes(a.handshakes, tmp)
        if not a.no_tools:
            result["tools"] = {"memories": a.n, "calls": a.calls, **tools_part(a, tmp)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    result["load_avg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
