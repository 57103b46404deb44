#!/usr/bin/env python3
"""bench/remember_rate.py of two checkouts, run alternately in one session (issue 28). Prints
JSON: each checkout's ``new_one_at_a_time`` and ``new_concurrent`` rates (its own current
path) per run, their medians, the ratio of this checkout's to the other's, and the load
average before every run.

    export KEPT_MODEL_DIR=../shared/models/all-MiniLM-L6-v2/onnx
    git -C . archive main | tar -x -C /tmp/kept-main     # the other checkout, e.g. main
    python bench/remember_ab.py /tmp/kept-main --runs 3 -- --n 2000 --count 200 --rounds 1
    python bench/remember_ab.py /tmp/kept-main --runs 4 --burst 2000 -- --n 2000 --count 200 --rounds 1

``--burst N`` adds one caller remembering N in a row (remember_rate's ``--sustained N``):
its rate, and ``drain_after_last_s``, the time from the burst's last acknowledgement until
every vector of it is in the index.

Each run is a fresh process and a fresh vault; the order of the two swaps every run. What
follows ``--`` goes to both scripts. Synthetic texts (bench/scale.py): dev, not held out.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import storage  # noqa: E402,F401  (first: onnxruntime telemetry off, inherited by the runs)

KEYS = ("new_one_at_a_time", "new_concurrent")


def run(tree: Path, extra: list[str]) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run([sys.executable, str(tree / "bench" / "remember_rate.py"), *extra],
                          cwd=tree, env=env, capture_output=True, text=True, check=True)
    got: dict[str, Any] = json.loads(done.stdout)
    return got


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("other", type=Path, help="the other checkout (e.g. an archive of main)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--burst", type=int, default=0,
                    help="also N one-at-a-time remembers in a row (--sustained N)")
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    args = ap.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    args.extra = extra + (["--sustained", str(args.burst)] if args.burst else [])
    keys = KEYS + (("new_sustained",) if args.burst else ())
    trees = {"other": args.other.resolve(), "this": ROOT}
    per: dict[str, list[dict[str, Any]]] = {"other": [], "this": []}
    for r in range(args.runs):
        for name in (["other", "this"] if r % 2 == 0 else ["this", "other"]):
            load = os.getloadavg()
            got = run(trees[name], args.extra)
            per[name].append({"load_avg_before": [round(x, 2) for x in load],
                              "fsync_ms": got.get("fsync_ms"),
                              **{k: got[k]["memories_per_s"] for k in keys}})
            if args.burst:
                per[name][-1]["burst_drain_after_last_s"] = \
                    got["new_sustained"]["drain_after_last_s"]
    out: dict[str, Any] = {"trees": {k: str(v) for k, v in trees.items()}, "runs": per,
                           "args": args.extra, "data": "synthetic (bench/scale.py), dev"}
    for k in keys + (("burst_drain_after_last_s",) if args.burst else ()):
        med = {name: statistics.median(x[k] for x in per[name]) for name in per}
        out[k] = {"median_other": med["other"], "median_this": med["this"],
                  "ratio_this_to_other": round(med["this"] / med["other"], 2)}
    out["load_avg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
