"""The owner's sync job between two real owners over one local folder (issue 29 item 1: a
change visible on the other device within 5 s). Prints JSON. Real SQLCipher vaults paired
through the folder (``sync_set_up``, ``sync_join``), two ``OwnerSession`` (real APScheduler,
real socket) in this process, no sync tool in between (its own delay comes on top), no network.

    KEPT_MODEL_DIR=../shared/models/all-MiniLM-L6-v2/onnx .venv/bin/python bench/sync_owner.py \
        [--memories 15] [--idle 20] [--intervals 5,2] [--rounds 2]

For each tick interval (``policy.SYNC_TICK_S``), alternating, ``--rounds`` times:

- ``visible_ms``: a memory remembered on A (the journal makes A's job tick about
  ``SYNC_SOON_S`` later) until B lists it (B receives at its own next tick): the time from the
  remember's return until B's list holds it, per memory, memories 0.2 to 2 x ``--gap``
  seconds apart at random (seeded: a fixed gap would lock onto B's tick and show one phase);
- ``idle_cpu_ms_per_min``: the process's CPU time (every thread) over ``--idle`` seconds with
  both owners ticking and nothing to move, per minute: what the job costs when nothing happens.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import storage  # noqa: E402,F401  (first: onnxruntime telemetry off, as every bench script)

PASSWORD = "sync-owner-bench"


def _vault(folder: Path) -> Any:
    from app.facade import Vault
    from storage.crypto import KdfParams
    return Vault.create(folder, PASSWORD, kdf=KdfParams(m=65_536, t=3, p=4),
                        use_chroma=False).vault


def _pair(a: Any, b: Any, shared: Path) -> None:
    a.sync_set_up(shared, "laptop")
    b.sync_join(shared, a.sync_invite().value.code, "desktop")
    a.sync_pair_step()
    if b.sync_pair_step().value.state != "joined":
        raise SystemExit("pairing failed")


def _listed(v: Any, text: str) -> bool:
    from app.facade import internals
    return bool(internals(v).db.read(lambda c: c.execute(
        "SELECT 1 FROM memory WHERE text = ? AND status = 'active'", (text,)).fetchone()))


def one_run(tmp: Path, interval: int, n: int, gap: float, idle: float) -> dict[str, Any]:
    import app.jobs
    from app.domain.memory import Draft, Store
    from app.owner import OwnerSession
    app.jobs.SYNC_TICK_S = interval  # read when the scheduler is built
    shared = tmp / "Sync"
    shared.mkdir()
    a, b = _vault(tmp / "a"), _vault(tmp / "b")
    _pair(a, b, shared)
    owners = [OwnerSession(a), OwnerSession(b)]
    for o in owners:
        o.start()
    try:
        # Both jobs running and the journals on (the first tick turns them on).
        start = time.monotonic()
        while not (a.sync_activity().last_sync and b.sync_activity().last_sync):
            if time.monotonic() - start > 60:
                raise SystemExit("the owners never ticked")
            time.sleep(0.05)
        c0, w0 = time.process_time(), time.monotonic()
        time.sleep(idle)
        idle_cpu = (time.process_time() - c0) / (time.monotonic() - w0) * 60_000
        seen: list[float] = []
        rng = random.Random(interval)
        for i in range(n):
            text = f"Bench note {i}: the ferry to Porto leaves at {8 + i % 10}:15"
            a.remember(Draft(text=text, store=Store.SEMANTIC))
            t0 = time.monotonic()
            while not _listed(b, text):
                if time.monotonic() - t0 > 60:
                    break
                time.sleep(0.01)
            seen.append((time.monotonic() - t0) * 1000)
            time.sleep(rng.uniform(0.2, 2 * gap))
    finally:
        for o in owners:
            o.lock()
    seen.sort()
    return {"interval_s": interval, "visible_ms": {
        "p50": round(statistics.median(seen)), "p95": round(seen[int(0.95 * (len(seen) - 1))]),
        "max": round(seen[-1]), "within_5s": sum(s <= 5000 for s in seen) / len(seen)},
        "idle_cpu_ms_per_min": round(idle_cpu), "load_avg": os.getloadavg()[0]}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--memories", type=int, default=15)
    p.add_argument("--gap", type=float, default=2.0)
    p.add_argument("--idle", type=float, default=20.0)
    p.add_argument("--intervals", default="5,2")
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    intervals = [int(x) for x in args.intervals.split(",")]
    runs = []
    for r in range(args.rounds):
        for interval in intervals:  # alternating: each interval under the same load
            with tempfile.TemporaryDirectory() as tmp:
                run = one_run(Path(tmp), interval, args.memories, args.gap, args.idle)
            run["round"] = r
            runs.append(run)
            print(json.dumps(run), file=sys.stderr, flush=True)
    print(json.dumps({"label": "dev, synthetic", "runs": runs, "load_avg_end":
                      os.getloadavg()}, indent=1))


if __name__ == "__main__":
    main()
