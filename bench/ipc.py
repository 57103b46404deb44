#!/usr/bin/env python3
"""The live path (issue 14, "Measured"): the owner's socket and ``kept mcp`` against in-process
calls, side by side in one run. Prints JSON.

    export KEPT_MODEL_DIR=../shared/models/all-MiniLM-L6-v2/onnx
    python bench/ipc.py                          # 10k memories
    python bench/ipc.py --sizes 10000,100000     # both sizes (the 100k build takes minutes)
    python bench/ipc.py --quick                  # 2k smoke run

Vaults come from bench/scale.py's ``kept-build`` role (synthetic turns embedded with the real
model, default KDF; cached in ``--cache`` and reused). Per size, on two copies of the cached
vault (A is served, B is opened in this process), with the assistant "bench" paired on A
before the owner starts (B is a copy of A afterwards):

1. ``kept_recall_wall_s``: ``kept recall "<query>"`` (the installed script, process start
   included), ``--cli-runs`` times with no owner (the CLI unlocks the vault itself: Argon2id,
   SQLCipher, model load) and as many times with ``kept serve --no-schedule`` running on A
   (no password); medians and their ratio.
2. ``recall_ms``: the same queries, interleaved query by query (the order rotates) so machine
   noise hits every path alike, with an untimed 5 ms gap and a flush of this process's own
   background writes between calls; p50/p95 in ms:
   - ``in_process``: ``Vault.recall(q, k=10, touch=False)`` on B; ``socket``: the same call
     through ``RemoteVault`` (the person's connection) to the owner of A.
   - ``in_process_agent``: what the owner does for an assistant's recall, in this process:
     ``AgentSession(B, "bench").recall(q, k=10, filters=Filters(agent="bench"))`` (touch and
     the read log included); ``socket_agent``: the same through an agent ``RemoteVault``
     (``hello`` with the key); ``mcp``: the ``recall`` tool (k=10) through the official SDK
     client and a ``kept mcp --agent bench`` process.
   ``added_ms``: each remote path minus its in-process twin at p50 and p95 (target: at most
   3 ms at p95 for the MCP path), and the p95 of per-query differences.
   Both vaults search the same index (``index``: exact search below storage/vector.py's
   CHROMA_MIN_ROWS vectors, else Chroma), after their background builds.
3. ``remember_per_s``: ``remember`` one turn at a time: in process (B), over the socket (the
   person's and the agent's connection) and through the MCP tool, turns/s.
4. ``owner_rss_mb`` (psutil, the ``kept serve`` process): after the CLI runs with no client
   connected, with two clients connected (the MCP process and an agent ``RemoteVault``),
   after the workload with them connected, and after they closed; ``kept mcp``'s own RSS.

Also, once per run, ``mcp_startup_s``: the official SDK client spawning ``kept mcp --agent x``
until ``initialize`` and ``tools/list`` answered (median of ``--startup-runs``), next to the
same for a bare SDK server with one tool (the SDK's floor) and ``python -c "import
mcp.server"``. Needs no owner: ``kept mcp`` reaches Kept on the first tool call.
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
import storage  # noqa: E402,F401  (first: onnxruntime telemetry off, as in bench/scale.py)

DEFAULT_MODEL = ROOT.parent / "shared" / "models" / "all-MiniLM-L6-v2" / "onnx"
KEPT = Path(sys.executable).parent / "kept"
AGENT = "bench"
TARGET_ADDED_P95_MS = 3.0
TARGET_CLI_WITH_OWNER_S = 0.3
TARGET_MCP_STARTUP_S = 1.0
GAP_S = 0.005  # between timed recalls
BARE_SERVER = '''from mcp.server import MCPServer
server = MCPServer("bare")
@server.tool()
def ping(x: int) -> int:
    """Answer x."""
    return x
server.run()
'''


def _pct(xs: list[float], q: float) -> float:
    """Milliseconds at quantile ``q`` (nearest rank) of seconds ``xs``."""
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(q * len(xs)))] * 1000, 3)


def _lat(xs: list[float]) -> dict[str, float]:
    return {"p50": _pct(xs, 0.5), "p95": _pct(xs, 0.95),
            "mean": round(statistics.fmean(xs) * 1000, 3), "count": len(xs)}


def _added(remote: list[float], local: list[float]) -> dict[str, float]:
    diff = [r - q for r, q in zip(remote, local, strict=True)]
    return {"p50": round(_pct(remote, 0.5) - _pct(local, 0.5), 3),
            "p95": round(_pct(remote, 0.95) - _pct(local, 0.95), 3),
            "paired_p95": _pct(diff, 0.95)}


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("KEPT_PASSWORD", "KEPT_AGENT_KEY")}
    env.update(extra)
    return env


def _cli(folder: Path, env: dict[str, str], *args: str) -> float:
    t = time.perf_counter()
    r = subprocess.run([str(KEPT), "--vault", str(folder), *args], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=600)
    took = time.perf_counter() - t
    if r.returncode:
        raise SystemExit(f"kept {' '.join(args)} failed: {r.stderr}")
    return took


def _rss_mb(pid: int) -> float:
    import psutil
    return round(psutil.Process(pid).memory_info().rss / 2**20, 1)


def _wait(pred: Callable[[], bool], timeout: float, what: str) -> float:
    t0 = time.monotonic()
    while not pred():
        if time.monotonic() - t0 > timeout:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.2)
    return round(time.monotonic() - t0, 1)


# --- start-up ---------------------------------------------------------------------------------

def startup(runs: int, tmp: Path) -> dict[str, Any]:
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    bare = tmp / "bare_server.py"
    bare.write_text(BARE_SERVER)
    env = {k: os.environ[k] for k in ("HOME", "PATH", "LANG") if k in os.environ}

    async def once(params: StdioServerParameters, tools: int) -> float:
        t0 = time.perf_counter()
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            assert len((await s.list_tools()).tools) == tools
            return time.perf_counter() - t0

    kept = StdioServerParameters(command=str(KEPT), env=env, cwd=str(tmp),
                                 args=["--vault", str(tmp / "none"), "mcp", "--agent", "x"])
    floor = StdioServerParameters(command=sys.executable, args=[str(bare)], env=env,
                                  cwd=str(tmp))
    from app.mcp_server import TOOLS
    n_tools = len({o.tool for o in TOOLS.values()})  # every tool kept mcp lists
    k_runs, f_runs, imp = [], [], []
    for _ in range(runs):  # interleaved: load hits both alike
        k_runs.append(anyio.run(once, kept, n_tools))
        f_runs.append(anyio.run(once, floor, 1))
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import mcp.server"], check=True, env=env)
        imp.append(time.perf_counter() - t)

    def med(xs: list[float]) -> dict[str, Any]:
        return {"median": round(statistics.median(xs), 3), "runs": [round(x, 3) for x in xs]}
    return {"kept_mcp_handshake_and_tools_list": med(k_runs),
            "bare_sdk_server_handshake_and_tools_list": med(f_runs),
            "python_import_mcp_server": med(imp),
            "kept_over_floor_s": round(statistics.median(k_runs) - statistics.median(f_runs), 3),
            "target_s": TARGET_MCP_STARTUP_S,
            "met": statistics.median(k_runs) < TARGET_MCP_STARTUP_S}


# --- one size ---------------------------------------------------------------------------------

def build(n: int, cache: Path, seed: int) -> Path:
    """bench/scale.py's cached build of ``n`` memories; the vault folder."""
    import scale
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "scale.py"), "--role", "kept-build",
                        "--n", str(n), "--seed", str(seed), "--cache", str(cache)],
                       cwd=ROOT, env=_env(), capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"build of {n} failed: {r.stderr[-2000:]}")
    ns = argparse.Namespace(n=n, seed=seed, cache=str(cache))
    return Path(scale.cache_dir(ns)) / "vault"


def one_size(n: int, a: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    import anyio
    import scale

    from app.facade import Vault
    src = build(n, Path(a.cache), a.seed)
    served, local_dir = tmp / f"a{n}", tmp / f"b{n}"
    shutil.copytree(src, served)
    v = Vault.open(served, scale.PASSWORD, load_model=False, threaded=False, use_chroma=False)
    try:
        key = v.pair_agent(AGENT).value
        memories = sum(v.status().totals.values())
    finally:
        v.lock()
    shutil.copytree(served, local_dir)
    queries = scale.make_queries(a.queries, a.seed)

    without = [_cli(served, _env(KEPT_PASSWORD=scale.PASSWORD), "recall", queries[i])
               for i in range(a.cli_runs)]
    serve = subprocess.Popen([str(KEPT), "--vault", str(served), "serve", "--no-schedule"],
                             cwd=ROOT, env=_env(KEPT_PASSWORD=scale.PASSWORD,
                                                KEPT_IDLE_MINUTES="120"),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        out = anyio.run(_served, n, a, serve, served, local_dir, key, queries)
    finally:
        serve.terminate()
        serve.wait(timeout=120)
    out = {"memories": memories, **out}
    w = out["kept_recall_wall_s"]
    w["without_owner"] = {"median": round(statistics.median(without), 3),
                          "runs": [round(x, 3) for x in without]}
    w["ratio_without_over_with"] = round(w["without_owner"]["median"]
                                         / w["with_owner"]["median"], 1)
    out["kept_recall_wall_s"] = {k: w[k] for k in ("without_owner", "with_owner",
                                                   "ratio_without_over_with", "target_s", "met")}
    return out


async def _served(n: int, a: argparse.Namespace, serve: subprocess.Popen[str], served: Path,
                  local_dir: Path, key: str, queries: list[str]) -> dict[str, Any]:
    import psutil
    import scale
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from app.agent_scope import AgentSession
    from app.api import Filters
    from app.domain.memory import Draft
    from app.facade import Vault, internals
    from app.ipc.client import RemoteVault, owner_running

    def up() -> bool:
        if serve.poll() is not None:
            raise SystemExit(serve.stderr.read() if serve.stderr else "kept serve failed")
        return owner_running(served)
    serve_ready_s = _wait(up, 600, "kept serve")
    local = Vault.open(local_dir, scale.PASSWORD, threaded=True, use_chroma=True,
                       verify="sync")  # no page self-test thread holding the GIL here
    try:
        # The same index on both sides: Chroma from CHROMA_MIN_ROWS vectors, else exact search
        # (storage/vector.py). The owner started first, so once this process's background
        # builds (RAM lexicon, then Chroma if any) are done, the owner's are too (+ margin).
        from storage.vector import CHROMA_MIN_ROWS
        want = "chroma" if local.status().vectors >= CHROMA_MIN_ROWS else "exact"
        t0 = time.monotonic()
        if internals(local).lexicon._thread is not None:  # built from lexicon.MIN_ROWS rows only
            internals(local).lexicon.wait_ready(1800)
        with RemoteVault.at(served) as probe:
            _wait(lambda: local.status().index == want == probe.status().index, 1800,
                  f"the {want} index on both sides")
        background_s = round(time.monotonic() - t0, 1)
        time.sleep(2.0)
        local.recall(queries[0], k=10, touch=False)
        with_owner = [_cli(served, _env(), "recall", q) for q in queries[:a.cli_runs]]
        time.sleep(1.0)
        rss: dict[str, Any] = {"no_client": _rss_mb(serve.pid)}

        env = {k: os.environ[k] for k in ("HOME", "PATH", "LANG") if k in os.environ}
        env["KEPT_AGENT_KEY"] = key
        params = StdioServerParameters(command=str(KEPT), env=env, cwd=str(ROOT), args=[
            "--vault", str(served), "mcp", "--agent", AGENT])
        agent = RemoteVault.at(served, agent=AGENT, key=key)
        person = RemoteVault.at(served)
        in_agent = AgentSession(local, AGENT)
        scope = Filters(agent=AGENT)
        async with stdio_client(params) as (r, w), ClientSession(r, w) as mcp:
            await mcp.initialize()

            async def mcp_recall(q: str) -> None:
                res = await mcp.call_tool("recall", {"query": q, "k": 10})
                if res.is_error:
                    raise SystemExit(f"MCP recall failed: {res.content}")

            await mcp_recall(queries[0])
            agent.recall(queries[0], k=10, filters=scope)
            time.sleep(1.0)
            rss["two_clients_mcp_and_agent_socket"] = _rss_mb(serve.pid)
            mcp_pid = next((c.pid for c in psutil.Process().children()
                            if "mcp" in c.cmdline()), None)
            person.recall(queries[0], k=10, touch=False)
            for q in queries[1:6]:  # warm every path
                await mcp_recall(q)
                agent.recall(q, k=10, filters=scope)
                in_agent.recall(q, k=10, filters=scope)
                person.recall(q, k=10, touch=False)
                local.recall(q, k=10, touch=False)

            t: dict[str, list[float]] = {k: [] for k in (
                "in_process", "socket", "in_process_agent", "socket_agent", "mcp")}
            calls: dict[str, Callable[[str], Any]] = {
                "in_process": lambda q: local.recall(q, k=10, touch=False),
                "socket": lambda q: person.recall(q, k=10, touch=False),
                "in_process_agent": lambda q: in_agent.recall(q, k=10, filters=scope),
                "socket_agent": lambda q: agent.recall(q, k=10, filters=scope),
            }
            order = [*calls, "mcp"]
            for i, q in enumerate(queries):
                for name in order[i % 5:] + order[:i % 5]:
                    t0 = time.perf_counter()
                    if name == "mcp":
                        await mcp_recall(q)
                    else:
                        calls[name](q)
                    t[name].append(time.perf_counter() - t0)
                    # Untimed settle: this process's own background writes (the in-process
                    # read log, touch) must not hold the GIL during the next path's call, and
                    # an assistant's calls are never back to back.
                    internals(local).db.write_sync(lambda c: None)
                    time.sleep(GAP_S)

            m = a.remember
            rates: dict[str, float] = {}
            t0 = time.perf_counter()
            for i in range(m):
                local.remember(Draft(text=f"in-process turn {i}: {queries[i % len(queries)]}"))
            rates["in_process"] = round(m / (time.perf_counter() - t0), 1)
            t0 = time.perf_counter()
            for i in range(m):
                person.remember(Draft(text=f"socket turn {i}: {queries[i % len(queries)]}"))
            rates["socket"] = round(m / (time.perf_counter() - t0), 1)
            t0 = time.perf_counter()
            for i in range(m):
                agent.remember(Draft(text=f"agent turn {i}: {queries[i % len(queries)]}"))
            rates["socket_agent"] = round(m / (time.perf_counter() - t0), 1)
            t0 = time.perf_counter()
            for i in range(m):
                res = await mcp.call_tool("remember", {
                    "text": f"mcp turn {i}: {queries[i % len(queries)]}", "speaker": "user",
                    "session": "bench"})
                if res.is_error:
                    raise SystemExit(f"MCP remember failed: {res.content}")
            rates["mcp"] = round(m / (time.perf_counter() - t0), 1)
            rss["two_clients_after_workload"] = _rss_mb(serve.pid)
            rss["kept_mcp_process"] = _rss_mb(mcp_pid) if mcp_pid else None
            agent.close()
            person.close()
        time.sleep(1.0)
        rss["clients_closed"] = _rss_mb(serve.pid)
    finally:
        local.lock()
    added = {"socket": _added(t["socket"], t["in_process"]),
             "socket_agent": _added(t["socket_agent"], t["in_process_agent"]),
             "mcp": _added(t["mcp"], t["in_process_agent"])}
    cli_med = statistics.median(with_owner)
    return {
        "owner_ready_s": {"serving": serve_ready_s, "background_builds_after": background_s},
        "index": want,
        "kept_recall_wall_s": {
            "with_owner": {"median": round(cli_med, 3), "runs": [round(x, 3) for x in with_owner]},
            "target_s": TARGET_CLI_WITH_OWNER_S, "met": cli_med < TARGET_CLI_WITH_OWNER_S},
        "recall_ms": {k: _lat(v) for k, v in t.items()},
        "added_ms": {**added, "target_p95": TARGET_ADDED_P95_MS,
                     "met": added["mcp"]["p95"] <= TARGET_ADDED_P95_MS},
        "remember_per_s": rates,
        "owner_rss_mb": rss,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10000", help="memories, comma-separated")
    ap.add_argument("--quick", action="store_true", help="2k smoke run")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--cli-runs", type=int, default=7)
    ap.add_argument("--remember", type=int, default=200)
    ap.add_argument("--startup-runs", type=int, default=7)
    ap.add_argument("--no-startup", action="store_true", help="skip the kept mcp start-up part")
    ap.add_argument("--seed", type=int, default=20240611)
    ap.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "kept-scale-cache"))
    ap.add_argument("--out", help="also write the JSON here")
    a = ap.parse_args()
    os.environ.setdefault("KEPT_MODEL_DIR", str(DEFAULT_MODEL))
    sizes = [int(s) for s in a.sizes.split(",") if s.strip()]
    if a.quick:
        sizes, a.queries, a.cli_runs, a.remember, a.startup_runs = [2000], 40, 3, 30, 3
    result: dict[str, Any] = {"bench": "kept ipc + mcp", "cpus": os.cpu_count(),
                              "load_avg_at_start": [round(x, 2) for x in os.getloadavg()],
                              "queries": a.queries, "remember_turns": a.remember}
    tmp = Path(tempfile.mkdtemp(prefix="kept-bench-ipc-"))
    try:
        if not a.no_startup:
            result["mcp_startup_s"] = startup(a.startup_runs, tmp)
        result["sizes"] = [one_size(n, a, tmp) for n in sizes]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    result["load_avg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    text = json.dumps(result, indent=1)
    if a.out:
        Path(a.out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
