#!/usr/bin/env python3
"""Recall over its bare query embedding, two versions of the code side by side (issue 28).
Prints JSON.

    KEPT_MODEL_DIR=../shared/models/all-MiniLM-L6-v2/onnx \\
    python bench/recall_ab.py --old ../base --new . --n 10000 --rounds 3

Each side is a child process run with ``PYTHONPATH`` on that side's code, on its own copy of
the vault ``bench/scale.py`` built and cached for ``--n`` (build it first with
``bench/scale.py --n N``); sides alternate round by round (old, new, new, old, ...), so the
machine's load hits both alike. In a child, once the RAM lexicon (and Chroma, if it builds) is
ready: every query twice, ``fresh`` (the first time any recall sees it) and ``again``; each
recall (``touch=False``, query embedding included, one ``now`` for every side) is followed by the same query's bare
embedding (``Embedder.embed_one``), so the ratio of the two is taken under the same load.
Wall time and process CPU per call; the load average at each child's start and end; the
floor (the embedding, the exact vector search and the lexical search alone, one after the
other) over the bare embedding on the same queries; then ``bench/scale.py``'s CPU per stage
over the first 100 queries (asked a third time). Every
hit (id, score, breakdown, text, refs, marks) of every query goes into a digest: the two sides
must print the same one (same answers), else the report says so.

Synthetic queries and vault (bench/scale.py's generator): dev figures.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# First, as in every bench script: onnxruntime telemetry off, here and in the children. From
# PYTHONPATH when set (a child: its side's code), else this checkout.
try:
    import storage  # noqa: F401
except ImportError:
    sys.path.insert(0, str(HERE.parent))
    import storage  # noqa: F401


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def summary(wall: list[float], cpu: list[float]) -> dict[str, float]:
    return {"p50_ms": round(statistics.median(wall) * 1000, 2),
            "p95_ms": round(pct(wall, .95) * 1000, 2),
            "cpu_p50_ms": round(statistics.median(cpu) * 1000, 2),
            "cpu_p95_ms": round(pct(cpu, .95) * 1000, 2)}


def child(args: argparse.Namespace) -> dict[str, Any]:
    # The side's code (cwd) and its own bench/scale.py (whose import puts its root first).
    sys.path[:0] = [os.getcwd(), os.path.join(os.getcwd(), "bench")]
    from scale import (  # the side's own generator
        PASSWORD,
        make_queries,
        stage_profile,
        timed_call,
    )

    import storage  # noqa: F401  (first: onnxruntime telemetry off)
    from app.facade import Vault, internals
    work = Path(tempfile.mkdtemp(prefix="kept-ab-"))
    try:
        shutil.copytree(args.vault, work / "vault")
        os.chmod(work / "vault", 0o700)
        load_start = os.getloadavg()
        vault = Vault.open(work / "vault", PASSWORD)
        inner = internals(vault)
        inner.lexicon.wait_ready(900)
        t_lex = time.perf_counter()
        if inner.lexicon._thread is not None:
            inner.lexicon._thread.join()  # and what runs after it there (as bench/scale.py)
        preloaded_s = round(time.perf_counter() - t_lex, 2)  # the new side's preload
        if inner.index._build_thread is not None:
            inner.index.wait_ready(900)
        queries = make_queries(args.queries, args.seed)
        embed = inner.embedder.embed_one
        for q in make_queries(5, args.seed + 7):  # warm the code paths, not these queries
            vault.recall(q, k=10, now=args.now, touch=False)
            embed(q)
        out: dict[str, Any] = {"load_avg_at_start": load_start}
        digest = hashlib.sha256()
        for phase in ("fresh", "again"):
            rw, rc, ew, ec = [], [], [], []
            for q in queries:
                hits, w, c = timed_call(vault.recall, q, k=10, now=args.now, touch=False)
                rw.append(w)
                rc.append(c)
                _, w, c = timed_call(embed, q)
                ew.append(w)
                ec.append(c)
                if phase == "fresh":
                    digest.update(repr([(int(h.id), h.score, sorted(h.breakdown.items()),
                                         h.text, h.refs, repr(h.currency), h.written_by)
                                        for h in hits]).encode())
            rec, emb = summary(rw, rc), summary(ew, ec)
            out[phase] = {"recall": rec, "query_embedding": emb,
                          "ratio_p50": round(rec["p50_ms"] / emb["p50_ms"], 3),
                          "ratio_p95": round(rec["p95_ms"] / emb["p95_ms"], 3),
                          "ratio_cpu_p50": round(rec["cpu_p50_ms"] / emb["cpu_p50_ms"], 3)}
        out["answers_digest"] = digest.hexdigest()[:16]
        # The floor (as bench/scale.py's): the query's embedding, the exact vector search (the
        # dense candidates and the similarity floor) and the lexical search, one after the
        # other and nothing else; each followed by the bare embedding, as recall is above.
        from app.services.recall import query_tokens
        from storage import repo
        service = inner.recall
        depth, lex_depth = service.tuning.dense_depth, service.tuning.lexical_depth

        def floor_call(q: str) -> None:
            qv = embed(q)
            inner.index.search_with_floor(qv, depth, exact=True)
            toks = query_tokens(q)
            if inner.lexicon.search(toks, lex_depth) is None:
                inner.db.read(lambda c: repo.fts_search(c, repo.fts_query(toks), lex_depth))
        fw, fc, ew, ec = [], [], [], []
        for q in queries:
            _, w, c = timed_call(floor_call, q)
            fw.append(w)
            fc.append(c)
            _, w, c = timed_call(embed, q)
            ew.append(w)
            ec.append(c)
        flo, emb = summary(fw, fc), summary(ew, ec)
        out["floor"] = {"embedding_vector_lexical": flo, "query_embedding": emb,
                        "ratio_p50": round(flo["p50_ms"] / emb["p50_ms"], 3),
                        "ratio_p95": round(flo["p95_ms"] / emb["p95_ms"], 3)}
        # Process CPU per stage (bench/scale.py's wrappers; a cache hit is no call), again.
        out["stages_cpu_ms"] = stage_profile(vault, queries[:min(len(queries), 100)])
        out["load_avg_at_end"] = os.getloadavg()
        out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        out["preloaded_s_after_lexicon"] = preloaded_s
        vault.lock()
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--old", help="the old code's root")
    ap.add_argument("--new", default=str(HERE.parent), help="the new code's root")
    ap.add_argument("--n", type=int, default=10_000, help="the cached scale vault's size")
    ap.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "kept-scale-cache"))
    ap.add_argument("--vault", help="a vault folder (default: the cached one for --n)")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--seed", type=int, default=20240611)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--now", type=float, default=None,
                    help="the recalls' now (default: when this run started; one for all sides)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.vault is None:
        found = sorted(Path(args.cache).glob(f"n{args.n}-seed{args.seed}-*/vault"))
        if not found:
            raise SystemExit(f"no cached vault for --n {args.n} in {args.cache}: "
                             f"run bench/scale.py --n {args.n} --cache {args.cache} first")
        args.vault = str(found[-1])
    if args.now is None:
        args.now = time.time()
    if args.child:
        print("@@RESULT@@" + json.dumps(child(args)), flush=True)
        return
    sides = {"old": args.old, "new": args.new}
    runs: dict[str, list[dict[str, Any]]] = {"old": [], "new": []}
    for r in range(args.rounds):
        for side in (("old", "new") if r % 2 == 0 else ("new", "old")):
            if not sides[side]:
                continue
            root = str(Path(sides[side]).resolve())
            env = dict(os.environ, PYTHONPATH=root)
            cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--vault",
                   args.vault, "--queries", str(args.queries), "--seed", str(args.seed),
                   "--now", repr(args.now)]
            print(f"[ab] round {r + 1} {side} ...", file=sys.stderr, flush=True)
            p = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)
            if p.returncode != 0:
                sys.stderr.write(p.stderr[-4000:])
                raise SystemExit(f"{side} failed")
            line = [x for x in p.stdout.splitlines() if x.startswith("@@RESULT@@")][-1]
            runs[side].append(json.loads(line[len("@@RESULT@@"):]))
    result: dict[str, Any] = {"bench": "recall over its query embedding, old vs new",
                              "n": args.n, "vault": args.vault, "queries": args.queries,
                              "data": "dev (synthetic, bench/scale.py's generator)",
                              "cpus": os.cpu_count(), "runs": runs}
    digests = {d["answers_digest"] for side in runs.values() for d in side}
    result["same_answers_old_and_new"] = len(digests) == 1
    for phase in ("fresh", "again"):
        result[phase] = {side: {k: round(statistics.median(r[phase][k] for r in rs), 3)
                                for k in ("ratio_p50", "ratio_p95", "ratio_cpu_p50")}
                         for side, rs in runs.items() if rs}
    result["floor"] = {side: {k: round(statistics.median(r["floor"][k] for r in rs), 3)
                              for k in ("ratio_p50", "ratio_p95")}
                       for side, rs in runs.items() if rs}
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
