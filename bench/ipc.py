#!/usr/bin/env python3
"""The owner's socket against in-process calls, side by side in one run. Prints JSON.

1. ``kept recall`` wall time (process start included) with ``kept serve`` running, against
   the same command unlocking the vault itself (password from KEPT_PASSWORD).
2. ``recall`` round trip over the socket (``RemoteVault``) against in-process
   ``Vault.recall`` on the same queries, p50/p95 in ms. The in-process vault is a second
   unlock of a copy of the vault (the owner holds the folder).
3. ``remember`` throughput over the socket, turns/s.

    KEPT_MODEL_DIR=../shared/models/all-MiniLM-L6-v2/onnx python bench/ipc.py --memories 2000
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PW = "bench password 14"
WORDS = ("Ana Bruno Carla Dora Lisbon Porto tea coffee flat job Acme meeting Monday Friday "
         "train doctor book guitar garden project deadline budget trip beach rain").split()


def _text(i: int) -> str:
    w = [WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(8)]
    return f"Note {i}: {' '.join(w)}."


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(q * len(xs)))] * 1000, 3)


def _cli(folder: Path, env: dict[str, str], *args: str) -> float:
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "app.cli", "--vault", str(folder), *args],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    if r.returncode:
        raise SystemExit(f"kept {' '.join(args)} failed: {r.stderr}")
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--memories", type=int, default=1000)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--cli-runs", type=int, default=5)
    a = ap.parse_args()
    from app.api import Turn
    from app.domain.memory import Draft
    from app.facade import Vault
    from app.ipc.client import RemoteVault, owner_running
    from storage.crypto import KdfParams

    tmp = Path(tempfile.mkdtemp(prefix="kept-bench-ipc-"))
    folder, copy = tmp / "vault", tmp / "copy"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KEPT_PASSWORD": PW}
    try:
        res = Vault.create(folder, PW, kdf=KdfParams(m=65_536, t=3, p=4), load_model=True,
                           threaded=False, use_chroma=False)
        turns = [Turn(session=f"s{i // 50}", speaker="user", text=_text(i), at=1.7e9 + i,
                      ref=f"r{i}") for i in range(a.memories)]
        res.vault.import_turns(turns)
        res.vault.lock()
        shutil.copytree(folder, copy)
        queries = [" ".join(WORDS[(i * 5 + j) % len(WORDS)] for j in range(3))
                   for i in range(a.queries)]

        without = [_cli(folder, env, "recall", queries[i]) for i in range(a.cli_runs)]
        serve = subprocess.Popen([sys.executable, "-m", "app.cli", "--vault", str(folder),
                                  "serve"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)
        while not owner_running(folder):
            if serve.poll() is not None:
                raise SystemExit(serve.stderr.read() if serve.stderr else "serve failed")
            time.sleep(0.05)
        try:
            cli_env = {k: v for k, v in env.items() if k != "KEPT_PASSWORD"}
            with_owner = [_cli(folder, cli_env, "recall", queries[i])
                          for i in range(a.cli_runs)]
            remote = RemoteVault(folder)
            local = Vault.open(copy, PW, threaded=True, use_chroma=False, verify="sync")
            for q in queries[:5]:  # warm both
                remote.recall(q, touch=False)
                local.recall(q, touch=False)
            sock_t, local_t = [], []
            for q in queries:
                t = time.perf_counter()
                remote.recall(q, k=10, touch=False)
                sock_t.append(time.perf_counter() - t)
                t = time.perf_counter()
                local.recall(q, k=10, touch=False)
                local_t.append(time.perf_counter() - t)
            n = 200
            t = time.perf_counter()
            for i in range(n):
                remote.remember(Draft(text=f"throughput {i} {_text(i)}"))
            remember_s = time.perf_counter() - t
            local.lock()
            remote.close()
        finally:
            serve.terminate()
            serve.wait(timeout=60)
        print(json.dumps({
            "memories": a.memories, "queries": a.queries, "cpus": os.cpu_count(),
            "kept_recall_wall_s": {
                "without_owner": {"median": round(statistics.median(without), 3),
                                  "runs": [round(x, 3) for x in without]},
                "with_owner": {"median": round(statistics.median(with_owner), 3),
                               "runs": [round(x, 3) for x in with_owner]}},
            "recall_ms": {"socket": {"p50": _pct(sock_t, 0.5), "p95": _pct(sock_t, 0.95)},
                          "in_process": {"p50": _pct(local_t, 0.5),
                                         "p95": _pct(local_t, 0.95)}},
            "remember_over_socket_per_s": round(n / remember_s, 1),
        }, indent=2))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
