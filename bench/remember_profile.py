#!/usr/bin/env python3
"""Where one ``remember``'s CPU goes, one caller at a time (issue 28). Prints JSON.

    export KEPT_MODEL_DIR=../shared/models/all-MiniLM-L6-v2/onnx
    python bench/remember_profile.py                 # 2,000 memories first, 400 remembers
    python bench/remember_profile.py --n 10000 --count 600

A threaded vault (the model, exact search) is filled with ``--n`` memories (bench/scale.py's
synthetic turns, as bench/remember_rate.py), then ``--count`` episodic memories are remembered
one at a time through ``Vault.remember``, with the caller thread and the writer thread each
under cProfile timed by ``time.thread_time`` (CPU, not waiting). Printed per remember:

- ``cpu_ms``: the caller's and the writer's CPU, and the whole process's (the vector follower's
  embedding included);
- ``sql``: every statement the writer ran: calls, wall ms, CPU ms (COMMIT's wall is mostly
  its fsync; its CPU is encrypting the pages);
- ``caller_top`` / ``writer_top``: the functions with the most cumulative CPU;
- ``lookaside_misses`` on the writer connection (each one an mlock and a munlock with
  ``cipher_memory_security`` on, storage/sqlcipher.py) and ``wal_frames`` (pages written).

The profiler's own cost is in the figures (about 10-20 %): compare runs of this script, not its
figures with bench/remember_rate.py's. Synthetic texts: dev, not held out.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import json
import os
import pstats
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "bench"))
import scale  # noqa: E402

import storage  # noqa: E402,F401  (first: onnxruntime telemetry off)

PASSWORD = "remember-profile-bench"


class _TimedConn:
    """The writer's connection, timing every statement (bench only)."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self.stats: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0, 0.0])

    def _timed(self, label: str, call: Any, *args: Any) -> Any:
        t0, c0 = time.perf_counter(), time.thread_time()
        try:
            return call(*args)
        finally:
            row = self.stats[label]
            row[0] += 1
            row[1] += time.perf_counter() - t0
            row[2] += time.thread_time() - c0

    def execute(self, sql: str, *args: Any) -> Any:
        return self._timed(" ".join(sql.split())[:60], self._conn.execute, sql, *args)

    def executemany(self, sql: str, *args: Any) -> Any:
        return self._timed("many: " + " ".join(sql.split())[:54], self._conn.executemany, sql,
                           *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def _top(prof: cProfile.Profile, count: int, per: int) -> list[list[Any]]:
    st = pstats.Stats(prof)
    rows = []
    for (path, line, fn), (_cc, _nc, _tt, ct, _callers) in st.stats.items():  # type: ignore[attr-defined]
        where = path.split("/site-packages/")[-1].replace(str(ROOT) + "/", "")
        rows.append((ct, f"{where}:{line}({fn})"))
    rows.sort(reverse=True)
    return [[round(ct * 1000 / count, 3), name] for ct, name in rows[:per]]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2_000, help="memories in the vault first")
    ap.add_argument("--count", type=int, default=400, help="remembers profiled")
    ap.add_argument("--top", type=int, default=14)
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args()
    from app.api import Turn
    from app.domain.memory import Draft, Store
    from app.facade import Vault, internals
    from storage import sqlcipher
    from storage.crypto import KdfParams
    out: dict[str, Any] = {"n": args.n, "count": args.count,
                           "data": "synthetic (bench/scale.py), dev",
                           "load_avg_at_start": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="kept-remember-profile-") as tmp:
        vault = Vault.create(Path(tmp) / "vault", PASSWORD, kdf=KdfParams(m=65_536, t=3, p=4),
                             use_chroma=False).vault
        vault.import_turns([Turn(session=t["session"], speaker=t["speaker"], text=t["text"],
                                 at=t["at"], ref=t["ref"])
                            for t in scale.make_turns(args.n // 2, args.seed)])
        inner = internals(vault)._vault
        db, follower = inner._db, inner._ingest.follower
        rng = random.Random(args.seed + 1)
        texts = [scale._fill(rng, rng.choice(scale.TEMPLATES), 2024)
                 for _ in range(args.count + 20)]
        for t in texts[:20]:  # the statement caches warm
            vault.remember(Draft(text=t, store=Store.EPISODIC, speaker="Me"))
        if follower is not None:
            follower.wait_idle(120)
        conn = db._write_conn
        db._outside_transaction(lambda: conn.execute("PRAGMA wal_checkpoint(TRUNCATE)"))
        db._outside_transaction(lambda: conn.execute("PRAGMA wal_autocheckpoint = 0"))
        # (getattr: the script also runs on a checkout from before storage/sqlcipher.py had it)
        misses_of = getattr(sqlcipher, "lookaside_misses", lambda conn, reset=False: None)
        db._outside_transaction(lambda: misses_of(conn, reset=True))
        timed = _TimedConn(conn)
        db._write_conn = timed
        writer_prof = cProfile.Profile(time.thread_time)
        caller_prof = cProfile.Profile(time.thread_time)
        writer_cpu0 = db._outside_transaction(time.thread_time)
        db._outside_transaction(writer_prof.enable)
        proc0, caller0, t0 = time.process_time(), time.thread_time(), time.perf_counter()
        caller_prof.enable()
        for t in texts[20:]:
            vault.remember(Draft(text=t, store=Store.EPISODIC, speaker="Me"))
        caller_prof.disable()
        sec, caller_cpu = time.perf_counter() - t0, time.thread_time() - caller0
        db._outside_transaction(writer_prof.disable)
        writer_cpu = db._outside_transaction(time.thread_time) - writer_cpu0
        if follower is not None:
            follower.wait_idle(120)
        proc_cpu = time.process_time() - proc0
        db._write_conn = conn
        misses = db._outside_transaction(lambda: misses_of(conn))
        frames = db._outside_transaction(
            lambda: conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1])
        db._outside_transaction(lambda: conn.execute("PRAGMA wal_autocheckpoint = 1000"))
        k = args.count
        out["per_s"] = round(k / sec, 1)
        out["wall_ms"] = round(sec * 1000 / k, 2)
        out["cpu_ms"] = {"caller": round(caller_cpu * 1000 / k, 3),
                         "writer": round(writer_cpu * 1000 / k, 3),
                         "process_with_follower": round(proc_cpu * 1000 / k, 3)}
        out["lookaside_misses"] = None if misses is None else round(misses / k, 1)
        out["wal_frames"] = round(frames / k, 1)
        out["sql"] = [[round(c / k, 2), round(w * 1000 / k, 3), round(cp * 1000 / k, 3), sql]
                      for sql, (c, w, cp) in sorted(timed.stats.items(), key=lambda x: -x[1][2])]
        out["sql_columns"] = ["calls", "wall_ms", "cpu_ms", "statement"]
        out["caller_top"] = _top(caller_prof, k, args.top)
        out["writer_top"] = _top(writer_prof, k, args.top)
        vault.lock()
    out["load_avg_at_end"] = os.getloadavg()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
