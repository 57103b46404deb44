"""What an idle sync tick costs (issue 29: idle ticks read the epoch files every tick). Prints
JSON. Two real SQLCipher vaults synced through one local folder, no sync tool, no network.

    KEPT_MODEL_DIR=../shared/models/all-MiniLM-L6-v2/onnx .venv/bin/python \
        bench/sync_idle_tick.py [--segments 60] [--forgets 3] [--ticks 200] [--settle 3]

Set-up: ``--segments`` memories remembered on A, each sent in a segment of its own (B's log
grows as well: B edits every third), ``--forgets`` forgets on A, then a rotation by the founder
(A) that both devices move to, so each holds one key and the folder holds acknowledgements,
sealed keys and snapshots of two epochs. After ``--settle`` seconds with nothing written (an
idle folder: its directories' stats settled), ``--ticks`` rounds of what the owner's sync job
does every ``SYNC_TICK_S`` when nothing is new: ``tick`` then ``forget_progress`` (the window's
"forgotten on 2 of 3 devices"), on A then on B, each timed (``tick_ms``: p50, p90, p99 over
both devices' ticks) and the process's CPU time over all of them (``cpu_ms_per_tick``).

The script uses only what main had before the idle-tick caches, so one command compares two
trees: run it with ``PYTHONPATH`` at each tree, alternating (docs/sync.md gives the figures).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parents[1]))  # PYTHONPATH (a tree) first
import storage  # noqa: E402,F401  (first: onnxruntime telemetry off, as every bench script)


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def run(tmp: Path, segments: int, forgets: int, ticks: int, settle: float = 3.0
        ) -> dict[str, Any]:
    from app.domain.memory import Draft
    from app.sync.engine import SyncEngine
    from bench.sync_loopback import _identity, _vault
    a, b = _vault(tmp / "a"), _vault(tmp / "b")
    folder = tmp / "folder"
    folder.mkdir()
    _identity([a, b], ["laptop", "desktop"])
    ea, eb = SyncEngine(a, folder), SyncEngine(b, folder)
    engines = (ea, eb)
    try:
        ids = []
        for i in range(segments):
            ids.append(int(a.remember(Draft(text=f"Idle bench note {i}")).value))
            ea.tick()
            eb.tick()
            if i % 3 == 0:
                mine = b.recall(f"Idle bench note {i}")
                if mine:
                    b.correct(int(mine[0].id), f"Idle bench note {i}, corrected")
                    eb.tick()
        for mid in ids[:forgets]:
            try:
                a.forget(a.forget_plan(ids=[mid]))
            except Exception:  # corrected on B meanwhile: another version; any forget does
                continue
            ea.tick()
            eb.tick()
        ea._snapshot_now = True  # the founder rotates at its next tick
        for _ in range(6):
            ea.tick()
            eb.tick()
        time.sleep(settle)  # idle: nothing written for a while (the folder's stats settled)
        times: list[float] = []
        c0 = time.process_time()
        for _ in range(ticks):
            for e in engines:
                t0 = time.perf_counter()
                e.tick()
                e.forget_progress()
                times.append((time.perf_counter() - t0) * 1000)
        cpu = (time.process_time() - c0) * 1000 / (2 * ticks)
        keys = [len(e.keys) for e in engines]
    finally:
        a.lock()
        b.lock()
    return {"tick_ms": {"p50": round(statistics.median(times), 2),
                        "p90": round(_pct(times, .9), 2), "p99": round(_pct(times, .99), 2)},
            "cpu_ms_per_tick": round(cpu, 2), "keys_held": keys}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--segments", type=int, default=60)
    ap.add_argument("--forgets", type=int, default=3)
    ap.add_argument("--ticks", type=int, default=200)
    ap.add_argument("--settle", type=float, default=3.0)
    args = ap.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as d:
        out = run(Path(d), args.segments, args.forgets, args.ticks, args.settle)
    import app
    print(json.dumps({"label": "dev, synthetic", "tree": str(Path(app.__file__).parents[1]),
                      **out, "load_before": load, "load_after": os.getloadavg()[0]}))


if __name__ == "__main__":
    main()
