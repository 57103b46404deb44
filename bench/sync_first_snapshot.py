"""A device joins a vault that held memories before sync was set up (issue 29 items 4-5): the
founder's first tick names them (create ops) and rotates at once, so the new device gets them
from that snapshot. Prints JSON. Real SQLCipher vaults, the real ONNX model
(``KEPT_MODEL_DIR``), real pairing through a local folder, no network.

    KEPT_MODEL_DIR=../shared/models/all-MiniLM-L6-v2/onnx .venv/bin/python \
        bench/sync_first_snapshot.py [--memories 2000]

- ``founder_tick_s``: A's first ``tick`` after pairing: name every memory (``memory.create`` ops
  through the journal, one transaction per 256), write them as segments, rotate (key sealed
  for both devices, the compacted snapshot written).
- ``joiner_tick_s``: B's first ``tick``: open the key, load the snapshot, keep and merge its
  ops, acknowledge, write the memories into its vault; ``until_vectors_s``: until B's own
  vectors are all made (the follower embeds after the commit).
- ``rotate_tick_s``: a later founder tick that rotates on the schedule (the clock moved a day).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import storage  # noqa: E402,F401  (first: onnxruntime telemetry off, as every bench script)
from bench.sync_loopback import wait_vectors  # noqa: E402

PASSWORD = "sync-first-snapshot-bench"
WORDS = ["garden", "invoice", "train", "dentist", "birthday", "tax", "holiday", "boiler"]


def _vault(folder: Path, clock: Any) -> Any:
    from app.facade import Vault
    from storage.crypto import KdfParams
    return Vault.create(folder, PASSWORD, kdf=KdfParams(m=65_536, t=3, p=4),
                        use_chroma=False, clock=clock).vault


def _listed(v: Any) -> int:
    from app.facade import internals
    return int(internals(v).db.read(lambda c: c.execute(
        "SELECT count(*) FROM memory WHERE status = 'active'").fetchone()[0]))


def run(tmp: Path, n: int) -> dict[str, Any]:
    from app import policy
    from app.clock import FixedClock
    from app.domain.memory import Draft, Store
    from app.sync.engine import SyncEngine
    clock_a, clock_b = FixedClock(time.time()), FixedClock(time.time())
    a, b = _vault(tmp / "a", clock_a), _vault(tmp / "b", clock_b)
    shared = tmp / "Sync"
    shared.mkdir()
    try:
        t = time.perf_counter()
        for i in range(n):
            a.remember(Draft(text=f"Note {i}: the {WORDS[i % 8]} on day {i % 28 + 1}",
                             store=Store.EPISODIC))
        fill_s = time.perf_counter() - t
        a.sync_set_up(shared, "laptop")
        b.sync_join(shared, a.sync_invite().value.code, "desktop")
        a.sync_pair_step()
        b.sync_pair_step()
        ea = SyncEngine(a, shared)
        t = time.perf_counter()
        ra = ea.tick()
        founder_s = time.perf_counter() - t
        eb = SyncEngine(b, shared)
        t = time.perf_counter()
        rb = eb.tick()
        joiner_s = time.perf_counter() - t
        wait_vectors(b)
        vectors_s = time.perf_counter() - t
        ea.tick()
        eb.tick()
        same = ea.state_hash() == eb.state_hash()
        snap = max((shared / "v1" / "snap" / ea.device.device_id).iterdir())
        clock_a.advance(policy.SYNC_ROTATION_SLOT_S + 1)
        clock_b.advance(policy.SYNC_ROTATION_SLOT_S + 1)
        a.remember(Draft(text="One more note, a day later", store=Store.EPISODIC))
        t = time.perf_counter()
        rr = ea.tick()
        rotate_s = time.perf_counter() - t
        return {"memories": n, "fill_s": round(fill_s, 1),
                "founder_tick_s": round(founder_s, 2), "named": ra.named,
                "rotated": ra.rotated, "snapshot_bytes": snap.stat().st_size,
                "joiner_tick_s": round(joiner_s, 2), "from_snapshot": rb.snapshot,
                "from_log": rb.received, "applied": rb.applied,
                "until_vectors_s": round(vectors_s, 2), "listed_on_b": _listed(b),
                "equal_state_hash": same,
                "rotate_tick_s": round(rotate_s, 2), "rotated_later": rr.rotated}
    finally:
        a.lock()
        b.lock()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--memories", type=int, default=2_000)
    args = ap.parse_args()
    out: dict[str, Any] = {"load_before": os.getloadavg()[0], "set": "synthetic (dev)"}
    with tempfile.TemporaryDirectory() as d:
        out.update(run(Path(d), args.memories))
    out["load_after"] = os.getloadavg()[0]
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
