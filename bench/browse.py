#!/usr/bin/env python3
"""Browsing for assistants (issue 26 item 3): each browsing operation in process, over the
owner's socket as an assistant, and through ``kept mcp`` (tool, and resource where there is
one), side by side in one run. Prints JSON.

    python bench/browse.py                  # 600 memories, 100 calls per path
    python bench/browse.py --memories 2000 --calls 200

One vault (real SQLCipher, default KDF floor 64 MiB; no model: browsing embeds nothing) with
``--memories`` facts and events about 30 people in the person's scope and two assistants',
consolidated once (entities, summaries). It is opened in this process and served by an
``OwnerServer`` in this process (the window's way); ``kept mcp --agent bench`` runs as a child
of the official SDK client. Per operation, ``--calls`` calls interleaved across the paths
(``in_process``: ``AgentSession(vault, "bench")``; ``socket_agent``: an agent ``RemoteVault``;
``mcp_tool``; ``mcp_resource``), p50/p95 in ms, and ``added_ms`` (MCP tool minus in process).
Also ``mcp_startup_s``: spawn until ``initialize``, ``tools/list``, ``resources/list``,
``resources/templates/list`` and ``prompts/list`` answered (median of 5).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import storage  # noqa: E402,F401  (first: onnxruntime telemetry off, here and in children)

NAMES = ["Ana", "Leo", "Maya", "Sam", "Ines", "Tomas", "Rita", "Hugo", "Clara", "Pedro",
         "Sofia", "Nuno", "Eva", "Rui", "Lara", "Ivo", "Marta", "Joao", "Vera", "Luis",
         "Beatriz", "Diogo", "Helena", "Filipe", "Carla", "Bruno", "Teresa", "Miguel", "Rosa",
         "Paulo"]
PLACES = ["Porto", "Lisbon", "Faro", "Braga", "Coimbra", "Sintra", "Evora", "Tavira"]


def build(folder: Path, n: int) -> dict[str, Any]:
    from app.agent_scope import AgentSession
    from app.api import AssistantFact
    from app.domain.memory import Draft, Store
    from app.facade import Vault
    from storage.crypto import KdfParams
    v = Vault.create(folder, "bench pw", kdf=KdfParams(m=65_536, t=3, p=4), load_model=False,
                     threaded=False, use_chroma=False).vault
    key = v.pair_agent("bench").value
    scopes: list[Any] = [v, AgentSession(v, "bench"), AgentSession(v, "other")]
    mine = []
    for i in range(n):
        who, where = NAMES[i % len(NAMES)], PLACES[i % len(PLACES)]
        target = scopes[(i // len(NAMES)) % 3]  # every name in every scope
        if i % 2:
            mid = target.remember_fact(AssistantFact(who, "visited", f"{where} {i}")).value.id
        else:
            mid = target.remember(Draft(f"{who} met the team at Quillon Labs in {where} ({i}).",
                                        store=Store.EPISODIC if i % 4 else Store.SEMANTIC)
                                  ).value
        if target is scopes[1] and mid is not None:
            mine.append(int(mid))
    v.consolidate()
    v.lock()
    return {"key": key, "ids": mine}


def pct(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    return {"p50": round(statistics.median(xs), 2),
            "p95": round(xs[min(len(xs) - 1, int(0.95 * len(xs)))], 2)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--memories", type=int, default=600)
    ap.add_argument("--calls", type=int, default=100)
    args = ap.parse_args()
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from app.agent_scope import AgentSession
    from app.facade import Vault
    from app.ipc.client import RemoteVault
    from app.ipc.server import OwnerServer

    tmp = Path(tempfile.mkdtemp(prefix="kept-bench-browse-"))
    folder = tmp / "v"
    seeded = build(folder, args.memories)
    vault = Vault.open(folder, "bench pw", load_model=False, use_chroma=False)
    server = OwnerServer(vault)
    server.start()
    local = AgentSession(vault, "bench")
    remote = RemoteVault.at(folder, agent="bench", key=seeded["key"])
    env = {k: os.environ[k] for k in ("HOME", "PATH") if k in os.environ}
    env.update(PYTHONPATH=str(ROOT), KEPT_AGENT_KEY=seeded["key"])
    params = StdioServerParameters(command=sys.executable, cwd=str(ROOT), env=env, args=[
        "-m", "app.cli", "--vault", str(folder), "mcp", "--agent", "bench"])
    ids = seeded["ids"]

    ops: dict[str, tuple[Callable[[Any, int], Any], str, Callable[[int], dict[str, Any]],
                         Callable[[int], str] | None]] = {
        "get_memory": (lambda b, i: b.get_memory(ids[i % len(ids)]), "get_memory",
                       lambda i: {"memory_id": ids[i % len(ids)]},
                       lambda i: f"kept://memory/{ids[i % len(ids)]}"),
        "recent_memories": (lambda b, i: b.recent_memories(10), "recent_memories",
                            lambda i: {"limit": 10}, lambda i: "kept://recent"),
        "entity": (lambda b, i: b.entity(NAMES[i % len(NAMES)]), "entity",
                   lambda i: {"name": NAMES[i % len(NAMES)]},
                   lambda i: f"kept://entity/{NAMES[i % len(NAMES)]}"),
        "inbox": (lambda b, i: b.inbox(5), "inbox", lambda i: {"limit": 5},
                  lambda i: "kept://inbox"),
    }

    async def timed(fn: Callable[[], Awaitable[Any]]) -> float:
        t = time.perf_counter()
        await fn()
        return (time.perf_counter() - t) * 1000

    async def session() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            await s.list_tools()
            for name, (call, tool, targs, uri) in ops.items():
                times: dict[str, list[float]] = {"in_process": [], "socket_agent": [],
                                                 "mcp_tool": [], "mcp_resource": []}
                await s.call_tool(tool, targs(0))  # warm
                for i in range(args.calls):
                    t = time.perf_counter()
                    call(local, i)
                    times["in_process"].append((time.perf_counter() - t) * 1000)
                    t = time.perf_counter()
                    await anyio.to_thread.run_sync(lambda i=i, c=call: c(remote, i))
                    times["socket_agent"].append((time.perf_counter() - t) * 1000)
                    t = time.perf_counter()
                    res = await s.call_tool(tool, targs(i))
                    times["mcp_tool"].append((time.perf_counter() - t) * 1000)
                    assert not res.is_error, res.content
                    if uri is not None:
                        times["mcp_resource"].append(
                            await timed(lambda i=i, u=uri: s.read_resource(u(i))))
                    await anyio.sleep(0.005)
                stats = {k: pct(v) for k, v in times.items() if v}
                stats["added_ms"] = {p: round(stats["mcp_tool"][p] - stats["in_process"][p], 2)
                                     for p in ("p50", "p95")}
                out[name] = stats
        return out

    async def startup() -> float:
        t = time.perf_counter()
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            await s.list_tools()
            await s.list_resources()
            await s.list_resource_templates()
            await s.list_prompts()
            return time.perf_counter() - t

    try:
        result = anyio.run(session)
        starts = [anyio.run(startup) for _ in range(5)]
    finally:
        remote.close()
        server.lock_vault()
    print(json.dumps({"memories": args.memories, "calls": args.calls,
                      "agent_memories": len(ids), "load_avg": os.getloadavg(),
                      "mcp_startup_s": round(statistics.median(starts), 3),
                      "ops_ms": result}, indent=1))


if __name__ == "__main__":
    main()
