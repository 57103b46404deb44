#!/usr/bin/env python3
"""The sync engine over real Syncthing on loopback (issue 29 targets), end to end: two real
vaults in two owner processes (``tests/sync_loopback/owner_proc.py``: real SQLCipher, the real
ONNX model, in-memory Chroma, ``SyncEngine``, a REST scan after each tick that wrote), each over
its own Syncthing instance (``tests/sync_loopback/harness.py``: 127.0.0.1 only). Prints JSON.

    KEPT_MODEL_DIR=... PYTHONPATH=. .venv/bin/python bench/sync_engine_syncthing.py \
        [--writes 40] [--forgets 5] [--wire 10] [--kill-rounds 0]

- ``visible_s``: from ``remember`` called on one owner (which then ticks: one memory, one
  segment, and scans) to the text listed on the other (which ticks every 50 ms); writes
  alternate A->B and B->A. Target: 95 % within 5 s.
- ``forget_s``: from ``forget`` on A to the text gone from B's list. Target: 15 s.
- ``wire_bytes_per_memory``: growth of the A-B connection's byte counters (both directions,
  TLS and Syncthing's messages included) per small memory, one memory a tick (``single``)
  and two or four remembered between two ticks (``batch2``, ``batch4``: the engine writes
  every unsent op of its journal as one segment a tick, up to 2,000). ``file_bytes``: the segment files.
  Target: 1.5 KiB.
- ``--kill-rounds N``: N rounds of both owners remembering in a loop with random gaps while
  one of them is killed -9 at a random moment and restarted: equal state hashes, every
  memory once.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import storage  # noqa: E402,F401  (first: onnxruntime telemetry off, as in every bench script)
from bench.sync_syncthing import TEXTS, _pct  # noqa: E402  (the same texts and percentile)
from tests.sync_loopback.harness import loopback, wait_synced  # noqa: E402
from tests.sync_loopback.owners import OwnerProc, settle, start_pair  # noqa: E402


def _dist(xs: list[float]) -> dict[str, float]:
    return {"n": len(xs), "p50": round(statistics.median(xs), 3), "p95": round(_pct(xs, 95), 3),
            "max": round(max(xs), 3)}


def _newest_segment(folder: Path) -> int:
    files = [p for p in folder.rglob("*") if p.is_file() and "/log/" in str(p)
             and not p.name.startswith(".")]
    return max(files, key=lambda p: p.stat().st_mtime_ns).stat().st_size


def _kill_rounds(a: OwnerProc, b: OwnerProc, rounds: int, n: int) -> dict[str, object]:
    rng = random.Random(29)
    expected: list[str] = []
    for r in range(rounds):
        victim, other = (a, b) if r % 2 == 0 else (b, a)
        for o in (a, b):
            o.send("loop", prefix=f"k{o.name}{r}", n=n, seed=rng.randrange(1 << 30),
                   max_gap_ms=60)
            expected += [f"k{o.name}{r}-{k} note of the loop" for k in range(n)]
        time.sleep(rng.uniform(0.2, 1.5))
        victim.kill()
        other.reply()
        victim.start()
        victim.cmd("loop", prefix=f"k{victim.name}{r}", n=n, seed=r, max_gap_ms=0)
    settle((a, b), timeout=120)
    ok = True
    for o in (a, b):
        texts = o.cmd("state")["texts"]
        mine = {t: c for t, c in texts.items() if t.startswith("k")}
        ok &= sorted(mine) == sorted(expected) and set(mine.values()) == {1}
        ok &= set(o.acked) <= set(texts)
    return {"rounds": rounds, "memories": len(expected), "equal_state_each_once": ok}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--writes", type=int, default=40)
    ap.add_argument("--forgets", type=int, default=5)
    ap.add_argument("--wire", type=int, default=10, help="memories for each wire figure")
    ap.add_argument("--kill-rounds", type=int, default=0)
    args = ap.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="kept-engine-bench-") as tmp, \
            loopback(Path(tmp) / "st") as (na, nb):
        a, b = start_pair(Path(tmp), na, nb, "bench")
        try:
            a.cmd("remember", text="warm up")   # makes the folders; not a steady-state cost
            b.cmd("until", present=["warm up"], wait_s=60)
            visible: list[float] = []
            for i in range(args.writes):
                src, dst = (a, b) if i % 2 == 0 else (b, a)
                text = f"{TEXTS[i % len(TEXTS)]} (change {i})"
                sent = src.cmd("remember", text=text)["at"]
                seen = dst.cmd("until", present=[text], wait_s=60)
                visible.append(seen["at"] - sent if seen["met"] else float("inf"))
            forget: list[float] = []
            for j in range(args.forgets):
                text = f"Ana's test results, note {j}"
                a.cmd("remember", text=text)
                b.cmd("until", present=[text], wait_s=60)
                sent = a.cmd("forget", text=text)["at"]
                seen = b.cmd("until", absent=[text], wait_s=60)
                forget.append(seen["at"] - sent if seen["met"] else float("inf"))
            wire: dict[str, object] = {}
            for label, per in (("single", 1), ("batch2", 2), ("batch4", 4)):
                settle((a, b))
                wait_synced([na, nb])
                before = na.wire_bytes(nb)
                sizes = []
                for k in range(args.wire):
                    texts = [f"{TEXTS[(k + j) % len(TEXTS)]} ({label} {k}.{j})"
                             for j in range(per)]
                    a.cmd("remember_many", texts=texts)
                    sizes.append(_newest_segment(a.folder))
                    b.cmd("until", present=texts, wait_s=60)
                wait_synced([na, nb])
                grown = na.wire_bytes(nb) - before
                wire[label] = {"per_segment": per, "file_bytes": sorted(set(sizes)),
                               "wire_bytes_per_memory": round(grown / (args.wire * per))}
            kills = _kill_rounds(a, b, args.kill_rounds, 12) if args.kill_rounds else None
            final = settle((a, b))
        finally:
            a.stop()
            b.stop()
        version = subprocess.run(["syncthing", "--version"], capture_output=True,
                                 text=True).stdout.split(" (")[0]
    out = {
        "bench": "sync_engine_syncthing", "sample": "dev (synthetic small memories)",
        "visible_s": _dist(visible),
        "within_5s": round(sum(v <= 5 for v in visible) / len(visible), 4),
        "forget_s": _dist(forget) if forget else None,
        "wire": wire, "kill_9_owner": kills, "equal_state_hash": bool(final),
        "target": {"within_5s": 0.95, "forget_s": 15, "wire_bytes_per_memory": 1536},
        "syncthing": version, "python": platform.python_version(),
        "cpus": os.cpu_count(), "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
