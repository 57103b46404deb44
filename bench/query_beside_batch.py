#!/usr/bin/env python3
"""A recall's query embedding while a background thread embeds batches (issue 28): the vector
follower after a burst of remembers, or an import. Prints JSON.

    KEPT_MODEL_DIR=../shared/models/all-MiniLM-L6-v2/onnx python bench/query_beside_batch.py

One process, one model. A thread at background priority (``app.threads``, as the follower and
the import run) embeds batches of 32 chat turns without pause; the main thread embeds one
short question at a time, in rounds that alternate two ways of waiting:

- ``waits_for_batch``: the query takes the batches' turn first, as every call did before
  (storage/embedder.py's lock held around the whole call);
- ``beside_batch``: the query runs beside the batch (what ``Embedder.embed`` does for one
  text now).

``idle``, the same questions with no batch running, is measured first and last. Synthetic
texts: dev, not held out.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import storage  # noqa: E402,F401  (first: sets ORT_DISABLE_TELEMETRY before onnxruntime loads)

QUESTIONS = ["where does Ana work now", "what did I say about the garden",
             "when is the launch", "who is allergic to cats", "what film do I like"]
TURN = ("Sure! Here is a longer answer about planning the garden for spring: start with the "
        "soil, then choose plants that like the light you have, water them in the morning, "
        "and keep a note of what grew well so that next year is easier. ")


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--queries", type=int, default=20, help="per round and way")
    args = ap.parse_args()

    from app.threads import background_priority
    from storage.embedder import Embedder
    emb = Embedder(Path(os.environ["KEPT_MODEL_DIR"]))
    emb.embed_one("warm up")
    stop = threading.Event()
    batches = [0]

    def follower() -> None:
        background_priority()
        texts = [f"{i}: {TURN * (1 + i % 3)}" for i in range(32)]
        while not stop.is_set():
            emb.embed(texts)
            batches[0] += 1

    def timed(way: str, n: int) -> list[float]:
        out = []
        for i in range(n):
            q = QUESTIONS[i % len(QUESTIONS)]
            t = time.perf_counter()
            if way == "waits_for_batch":
                with emb._lock:  # what every call did before: wait for the batches' turn
                    emb.embed_one(q)
            else:
                emb.embed_one(q)
            out.append((time.perf_counter() - t) * 1000)
            time.sleep(0.02)  # questions come one at a time, not back to back
        return out

    load = [os.getloadavg()[0]]
    idle = timed("beside_batch", args.queries)
    th = threading.Thread(target=follower, daemon=True)
    th.start()
    time.sleep(0.5)
    got: dict[str, list[float]] = {"waits_for_batch": [], "beside_batch": []}
    for r in range(args.rounds):
        ways = ["waits_for_batch", "beside_batch"] if r % 2 == 0 else \
            ["beside_batch", "waits_for_batch"]
        for way in ways:
            got[way] += timed(way, args.queries)
        load.append(os.getloadavg()[0])
    stop.set()
    th.join()
    idle += timed("beside_batch", args.queries)
    load.append(os.getloadavg()[0])
    res: dict[str, object] = {"load_1min": load, "batches_embedded": batches[0],
                              "idle_ms": {"p50": round(statistics.median(idle), 2),
                                          "p95": round(pct(idle, .95), 2)}}
    for way, xs in got.items():
        res[f"{way}_ms"] = {"p50": round(statistics.median(xs), 2),
                            "p95": round(pct(xs, .95), 2), "max": round(max(xs), 2),
                            "n": len(xs)}
    w, b = got["waits_for_batch"], got["beside_batch"]
    res["ratio_beside_over_waits"] = {"p50": round(statistics.median(b) / statistics.median(w), 3),
                                      "p95": round(pct(b, .95) / pct(w, .95), 3)}
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
