#!/usr/bin/env python3
"""One-at-a-time and concurrent ``remember`` rates, main's path beside this one, in one run
(issue 28). Prints JSON.

    export KEPT_MODEL_DIR=../shared/models/all-MiniLM-L6-v2/onnx
    python bench/remember_rate.py                    # a vault of 10,000 memories, 3 rounds
    python bench/remember_rate.py --n 2000 --count 200 --rounds 3   # quick

A vault (threaded writer, the model, exact search) is filled with ``--n`` memories by
``import_turns`` of bench/scale.py's synthetic turns (n/2 turns, each a short-term and an
episodic memory), then each round runs every mode once, modes interleaved so that the machine's
noise hits them alike (the rate reported is the median over rounds):

- ``full_*``: the path of main before this change: the call commits the memory and returns, its
  vector made afterwards in batches (app/services/vector_follow.py), concurrent callers' commits
  grouped (``Database.write_group``), and every group commit waits for its fsync
  (``synchronous=FULL``);
- ``new_*``: the same, with group commits at ``synchronous=NORMAL`` and the WAL fsynced by the
  writer within ``storage.db.SYNC_WITHIN_S`` (an acknowledged memory survives kill -9 at once,
  a power cut once that fsync ran);
- ``unbatched_*`` (``--unbatched``): the path before issue 28: the embedding inside the call,
  then one FULL transaction per memory;
- ``*_one_at_a_time``: one caller, each call waiting for the previous one (an assistant);
- ``*_concurrent``: ``--callers`` threads calling at once, ``--count`` memories in all;
- ``*_sustained`` (``--sustained N``): one caller, N in a row. Before issue 28's last change the
  caller waited for the model past 256 due, so this was the rate the model allowed; now past
  ``FOLLOW_MAX_QUEUED`` the texts spill to the vault's pending rows and the caller goes on
  (``drain_after_last_s``: from the last acknowledgement until every vector is in the index).

Beside them: ``vector_lag_ms`` (acknowledgement to the vector in the index: p50, p95, max, over
the batched modes), ``memories_per_commit`` (how many writes a group commit took),
``wal_fsyncs`` (the writer's own fsyncs of the WAL in the new modes), the bare fsync of this
disk, and the load average at start and end. Synthetic texts: dev, not held out.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "bench"))
import scale  # noqa: E402

import storage  # noqa: E402,F401  (first: onnxruntime telemetry off)

PASSWORD = "remember-rate-bench"


def fsync_ms(folder: Path, n: int = 100) -> dict[str, float]:
    path = folder / "fsync-probe"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    times = []
    try:
        for _ in range(n):
            os.write(fd, b"\0" * 4096)
            t0 = time.perf_counter()
            os.fsync(fd)
            times.append((time.perf_counter() - t0) * 1000)
    finally:
        os.close(fd)
        path.unlink()
    return {"p50": round(scale.pct(times, .5), 2), "p95": round(scale.pct(times, .95), 2)}


class Modes:
    """Switches one open vault between the old and the new remember path."""

    def __init__(self, vault: Any) -> None:
        from app.facade import internals
        self.vault = vault
        inner = internals(vault)._vault
        self.ingest = inner._ingest
        self.db = inner._db
        self.follower = self.ingest.follower
        assert self.follower is not None, "no model: set KEPT_MODEL_DIR"
        self._group = self.db.write_group
        self.acked: dict[int, float] = {}
        self.indexed: dict[int, float] = {}
        self.commits = 0
        index = self.follower.index
        add = index.add

        def timed_add(ids: Any, vecs: Any) -> None:
            add(ids, vecs)
            now = time.perf_counter()
            for i in ids:
                self.indexed.setdefault(int(i), now)
        self.follower.index = _Proxy(index, add=timed_add)
        run_write = self.db._run_write

        def counted(fn: Any, **kw: Any) -> Any:
            self.commits += 1
            return run_write(fn, **kw)
        self.db._run_write = counted

    def unbatched(self) -> None:
        self.ingest.follower = None
        self.db.write_group = self.db.write  # one transaction per call
        self.db._sync_within = 0.0

    def full(self) -> None:
        self.ingest.follower = self.follower
        self.db.write_group = self._group
        self.db._sync_within = 0.0  # every group commit at FULL (main's path)
        # main's follower: embeds once a batch is due or its first memory waited gather_s
        self.follower.start_at = self.follower.batch
        self.follower.max_defer_s = self.follower.gather_s

    def new(self) -> None:
        from app import policy
        from storage.db import SYNC_WITHIN_S
        self.ingest.follower = self.follower
        self.db.write_group = self._group
        self.db._sync_within = SYNC_WITHIN_S
        self.follower.start_at = max(self.follower.batch,
                                     self.follower.max_queued - self.follower.batch)
        self.follower.max_defer_s = policy.FOLLOW_MAX_DEFER_S

    def remember(self, text: str) -> None:
        from app.domain.memory import Draft, Store
        mid = self.vault.remember(Draft(text=text, store=Store.EPISODIC, speaker="Me")).value
        self.acked[int(mid)] = time.perf_counter()


class _Proxy:
    def __init__(self, inner: Any, **over: Any) -> None:
        self._inner, self._over = inner, over

    def __getattr__(self, name: str) -> Any:
        return self._over[name] if name in self._over else getattr(self._inner, name)


def run_mode(modes: Modes, mode: str, texts: list[str], callers: int) -> dict[str, float]:
    getattr(modes, mode)()
    modes.commits = 0
    syncs = modes.db.wal_syncs
    t0 = time.perf_counter()
    if callers == 1:
        for t in texts:
            modes.remember(t)
    else:
        parts = [texts[i::callers] for i in range(callers)]
        threads = [threading.Thread(target=lambda p=p: [modes.remember(t) for t in p])
                   for p in parts]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    sec = time.perf_counter() - t0
    commits = modes.commits
    wal_fsyncs = modes.db.wal_syncs - syncs
    drained = 0.0
    if mode != "unbatched":
        t1 = time.perf_counter()
        modes.follower.wait_idle(120)
        drained = time.perf_counter() - t1
    return {"per_s": len(texts) / sec, "per_commit": len(texts) / max(1, commits),
            "drain_s": drained, "wal_fsyncs": wal_fsyncs, "sec": sec}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000, help="memories in the vault first")
    ap.add_argument("--count", type=int, default=200, help="remembers per mode and round")
    ap.add_argument("--callers", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--sustained", type=int, default=0,
                    help="also one caller remembering this many in a row (more than "
                         "FOLLOW_MAX_QUEUED: then texts spill to the vault)")
    ap.add_argument("--unbatched", action="store_true",
                    help="also the path before issue 28 (slow: ~20/s on this machine)")
    args = ap.parse_args()
    from app.api import Turn
    from app.facade import Vault
    from storage.crypto import KdfParams
    out: dict[str, Any] = {"n": args.n, "count": args.count, "callers": args.callers,
                           "rounds": args.rounds, "data": "synthetic (bench/scale.py), dev",
                           "load_avg_at_start": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="kept-remember-") as tmp:
        folder = Path(tmp) / "vault"
        vault = Vault.create(folder, PASSWORD, kdf=KdfParams(m=65_536, t=3, p=4),
                             use_chroma=False).vault
        t0 = time.perf_counter()
        turns = [Turn(session=t["session"], speaker=t["speaker"], text=t["text"], at=t["at"],
                      ref=t["ref"]) for t in scale.make_turns(args.n // 2, args.seed)]
        vault.import_turns(turns)
        out["fill_s"] = round(time.perf_counter() - t0, 1)
        out["fsync_ms"] = fsync_ms(Path(tmp))
        modes = Modes(vault)
        rng = random.Random(args.seed + 1)
        kinds = (["unbatched"] if args.unbatched else []) + ["full", "new"]
        hows = ["one_at_a_time", "concurrent"] + (["sustained"] if args.sustained else [])
        names = [f"{k}_{how}" for how in hows for k in kinds]
        got: dict[str, list[dict[str, float]]] = {k: [] for k in names}
        for r in range(args.rounds):
            # the modes alternate, and the order reverses each round
            order = names if r % 2 == 0 else names[::-1]
            for name in order:
                count = args.sustained if name.endswith("sustained") else args.count
                texts = [scale._fill(rng, rng.choice(scale.TEMPLATES), 2024)
                         for _ in range(count)]
                got[name].append(run_mode(modes, name.split("_")[0], texts,
                                          args.callers if name.endswith("concurrent") else 1))
        for name in names:
            out[name] = {"memories_per_s": round(statistics.median(r["per_s"] for r in got[name]), 1),
                         "each_round": [round(r["per_s"], 1) for r in got[name]],
                         "memories_per_commit": round(statistics.median(
                             r["per_commit"] for r in got[name]), 2)}
            if not name.startswith("unbatched"):
                out[name]["drain_after_last_s"] = round(max(r["drain_s"] for r in got[name]), 3)
            if name.startswith("new"):
                out[name]["wal_fsyncs_per_s"] = round(
                    sum(r["wal_fsyncs"] for r in got[name]) / sum(r["sec"] for r in got[name]), 2)
        for how in hows:
            out[f"ratio_new_to_full_{how}"] = round(
                out[f"new_{how}"]["memories_per_s"] / out[f"full_{how}"]["memories_per_s"], 2)
        lags = [(modes.indexed[i] - at) * 1000 for i, at in modes.acked.items()
                if i in modes.indexed]
        out["vector_lag_ms"] = {"count": len(lags), "p50": round(scale.pct(lags, .5), 1),
                                "p95": round(scale.pct(lags, .95), 1),
                                "max": round(max(lags, default=0.0), 1)}
        vault.lock()
    out["load_avg_at_end"] = os.getloadavg()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
