"""How long the sync merge takes (issue 29: catching up 10k ops after 30 days offline <= 30 s,
of which the merge is one part). Prints JSON. No vault, no model: the pure fold.

    .venv/bin/python bench/sync_merge.py [--memories 10000]

Three devices write creates; a tenth of the memories are edited on two devices at once (a
conflict each), 1 % are forgotten. Measured: ``fold`` of the whole set, ``Replica.apply`` in
segments of 100 ops (what a device does while catching up), ``state_hash``, and the wire size
of one small memory op.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import storage  # noqa: E402,F401  (first: onnxruntime telemetry off, as every bench script)
from app.sync.hlc import HybridClock  # noqa: E402
from app.sync.merge import Replica, fold, state_hash  # noqa: E402
from app.sync.ops import (  # noqa: E402
    Forget,
    MemoryCreate,
    MemoryEdit,
    Op,
    OpWriter,
    canonical,
    new_gid,
)

T0 = 1_764_151_200_000


def _create(gid: str, text: str) -> MemoryCreate:
    return MemoryCreate(
        gid=gid, store="episodic", text=text, occurred_at=T0 / 1000, learned_at=T0 / 1000,
        agent="global", context=None, written_by="person", confidence=None,
        user_validated=False, valid_from=None, valid_to=None, sources=(), session=None,
        speaker=None, turn=None, ref=None, importance=None, emotional=None, social=None,
        side={})


def build(n: int, seed: int = 1) -> list[Op]:
    rng = random.Random(seed)
    wall = [T0]
    writers = [OpWriter(HybridClock(d, lambda: wall[0])) for d in ("a", "b", "c")]
    ops: list[Op] = []
    gids = [new_gid() for _ in range(n)]
    for i, g in enumerate(gids):
        wall[0] += rng.randint(0, 50)
        ops += writers[i % 3].batch([_create(g, f"Memory number {i} about a day in town")])
    for g in rng.sample(gids, n // 10):
        for w in writers[:2]:
            ops += w.batch([MemoryEdit(gid=g, bases=(g,), text="edited on " + w.clock.device,
                                       confidence=None, user_validated=False)])
    gone = rng.sample(gids, max(1, n // 100))
    ops += writers[2].batch([Forget(gids=tuple(sorted(gone)))])
    rng.shuffle(ops)
    return ops


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--memories", type=int, default=10_000)
    args = ap.parse_args()
    ops = build(args.memories)
    t = time.perf_counter()
    state = fold(ops)
    fold_s = time.perf_counter() - t
    t = time.perf_counter()
    h = state_hash(state)
    hash_s = time.perf_counter() - t
    replica = Replica()
    t = time.perf_counter()
    for i in range(0, len(ops), 100):
        replica.apply(ops[i:i + 100])
    apply_s = time.perf_counter() - t
    assert state_hash(replica.state()) == h
    small = next(o for o in ops if o.kind == "memory.create")
    print(json.dumps({
        "bench": "sync_merge", "ops": len(ops), "memories": args.memories,
        "fold_s": round(fold_s, 3), "replica_apply_s": round(apply_s, 3),
        "state_hash_s": round(hash_s, 3), "open_questions": len(state.open_questions()),
        "forgotten": len(state.forgotten), "items": len(state.items),
        "small_op_bytes": len(canonical(small.to_dict()).encode("utf-8")),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }))


if __name__ == "__main__":
    main()
