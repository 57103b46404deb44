#!/usr/bin/env python3
"""One-at-a-time and concurrent ``remember`` rates, old path beside new, in one run (issue 28).
Prints JSON.

    export KEPT_MODEL_DIR=../shared/models/all-MiniLM-L6-v2/onnx
    python bench/remember_rate.py                    # a vault of 10,000 memories, 3 rounds
    python bench/remember_rate.py --n 2000 --count 100 --rounds 2   # quick

A vault (threaded writer, the model, exact search) is filled with ``--n`` memories by
``import_turns`` of bench/scale.py's synthetic turns (n/2 turns, each a short-term and an
episodic memory), then each round runs every mode once, modes interleaved so that the machine's
noise hits them alike (the rate reported is the median over rounds):

- ``old_*``: the path before issue 28: the embedding inside the call, then one transaction
  (``write``: one fsync) per memory;
- ``new_*``: the call commits the memory and acknowledges; its vector is made afterwards in
  batches (app/services/vector_follow.py), and concurrent callers' commits are grouped
  (``Database.write_group``: one transaction and one fsync per group);
- ``*_one_at_a_time``: one caller, each call waiting for the previous one (an assistant);
- ``*_concurrent``: ``--callers`` threads calling at once, ``--count`` memories in all.

Beside them: ``vector_lag_ms`` (acknowledgement to the vector in the index: p50, p95, max, over
the new modes), ``memories_per_commit`` (how many writes a group commit took), the bare fsync
of this disk, and ``what_if_synchronous_normal``: the new one-at-a-time path with the writer's
``synchronous`` at NORMAL, for the argument only (docs/security.md requires FULL and Kept keeps
it: the vault refuses to open otherwise). Synthetic texts: dev, not held out.
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

        def counted(fn: Any) -> Any:
            self.commits += 1
            return run_write(fn)
        self.db._run_write = counted

    def old(self) -> None:
        self.ingest.follower = None
        self.db.write_group = self.db.write  # one transaction per call

    def new(self) -> None:
        self.ingest.follower = self.follower
        self.db.write_group = self._group

    def remember(self, text: str) -> None:
        from app.domain.memory import Draft, Store
        mid = self.vault.remember(Draft(text=text, store=Store.EPISODIC, speaker="Me")).value
        self.acked[int(mid)] = time.perf_counter()


class _Proxy:
    def __init__(self, inner: Any, **over: Any) -> None:
        self._inner, self._over = inner, over

    def __getattr__(self, name: str) -> Any:
        return self._over[name] if name in self._over else getattr(self._inner, name)


def run_mode(modes: Modes, new: bool, texts: list[str], callers: int) -> dict[str, float]:
    modes.new() if new else modes.old()
    modes.commits = 0
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
    drained = 0.0
    if new:
        t1 = time.perf_counter()
        modes.follower.wait_idle(120)
        drained = time.perf_counter() - t1
    return {"per_s": len(texts) / sec, "per_commit": len(texts) / max(1, commits),
            "drain_s": drained}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000, help="memories in the vault first")
    ap.add_argument("--count", type=int, default=200, help="remembers per mode and round")
    ap.add_argument("--callers", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=11)
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
        names = ["old_one_at_a_time", "new_one_at_a_time", "old_concurrent", "new_concurrent"]
        got: dict[str, list[dict[str, float]]] = {k: [] for k in names}
        for _ in range(args.rounds):
            for name in names:
                texts = [scale._fill(rng, rng.choice(scale.TEMPLATES), 2024)
                         for _ in range(args.count)]
                got[name].append(run_mode(modes, name.startswith("new"), texts,
                                          1 if name.endswith("one_at_a_time") else args.callers))
        for name in names:
            out[name] = {"memories_per_s": round(statistics.median(r["per_s"] for r in got[name]), 1),
                         "each_round": [round(r["per_s"], 1) for r in got[name]],
                         "memories_per_commit": round(statistics.median(
                             r["per_commit"] for r in got[name]), 2)}
            if name.startswith("new"):
                out[name]["drain_after_last_s"] = round(max(r["drain_s"] for r in got[name]), 3)
        lags = [(modes.indexed[i] - at) * 1000 for i, at in modes.acked.items()
                if i in modes.indexed]
        out["vector_lag_ms"] = {"count": len(lags), "p50": round(scale.pct(lags, .5), 1),
                                "p95": round(scale.pct(lags, .95), 1),
                                "max": round(max(lags, default=0.0), 1)}
        # What synchronous=NORMAL would give (bench only; the vault keeps FULL).
        modes.db._outside_transaction(
            lambda: modes.db._write_conn.execute("PRAGMA synchronous = NORMAL"))
        texts = [scale._fill(rng, rng.choice(scale.TEMPLATES), 2024) for _ in range(args.count)]
        normal = run_mode(modes, True, texts, 1)
        out["what_if_synchronous_normal"] = {
            "new_one_at_a_time_per_s": round(normal["per_s"], 1),
            "note": "not used: docs/security.md requires FULL (power-loss durability)"}
        modes.db._outside_transaction(
            lambda: modes.db._write_conn.execute("PRAGMA synchronous = FULL"))
        vault.lock()
    out["load_avg_at_end"] = os.getloadavg()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
