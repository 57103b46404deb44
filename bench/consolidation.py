#!/usr/bin/env python3
"""Consolidation on LoCoMo dev: speed, what it makes, and what it does to recall. Prints JSON.

For each conversation of ../shared/bench/locomo_dev.json (read at run time, never copied):

1. import it into its own vault exactly as ``bench/locomo_recall.py`` does and recall every
   question (``recall_batch``, ``now`` one day after the last session): the figure *without*
   consolidation;
2. ``vault.consolidate(now=...)`` with the whole pipeline in one run. Per-step times come from
   the run's progress callback (called after each step), so the steps run exactly as in
   production; calling ``consolidate(steps=(step,))`` one step at a time would change what
   ``similar`` does (it links the facts created earlier in the same run);
3. recall again on the consolidated vault (facts are extra keys whose refs map back to their
   source turns through DERIVED_FROM): the figure *with* consolidation;
4. the same hits with the consolidation products (facts, procedures, statistics) left out
   ("full_turn_hits_only"): separates what facts add as hits from how their presence (and the
   new entities) shifts the scores of the turns themselves;
5. undo that run and consolidate again without ``decay`` (decay archives memories idle past
   their retention), recall again ("no_decay"); with ``--ablation`` also the ``extract`` step
   alone and the ``entities`` step alone (new people change the person boost of recall).

All rankings are scored with ``locomo_score.py --rankers none --external`` (the same scorer
and questions as locomo_recall.py) in the same process, side by side. Per-conversation R@10
is computed here with the scorer's formula (mean |gold & top-10| / |gold|), and must agree
with the scorer on a full run.

Also reported per variant: how many of the top-10 hits are consolidation products and how
many of those add a ref that no hit above them had.

    KEPT_MODEL_DIR=../shared/models/all-MiniLM-L6-v2/onnx python bench/consolidation.py
    python bench/consolidation.py --samples conv-30 --profile /tmp/cons.prof --ablation

Times: wall seconds and this process's CPU seconds (the machine is shared; CPU seconds are
the steadier number). "per_1k" = seconds per 1,000 episodes (one episode per turn).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from locomo_recall import DATA, PASSWORD, SCORER, SHARED, turns_of  # noqa: E402

import storage  # noqa: E402,F401  (first: onnxruntime telemetry off, here and in children)
from app.services.consolidation.pipeline import STEPS  # noqa: E402  (the one step list)

DERIVED = ("semantic", "procedural", "implicit")   # what consolidation adds to recall
# name -> the steps of its run (each after undoing the previous run on the same vault)
VARIANTS: dict[str, tuple[str, ...]] = {
    "none": (), "full": STEPS,
    "full_turn_hits_only": STEPS,  # the "full" hits without facts/procedures/statistics
    "no_decay": tuple(s for s in STEPS if s != "decay")}
ABLATION: dict[str, tuple[str, ...]] = {"extract_only": ("extract",),
                                        "entities_only": ("entities",)}


def clocks() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def ranking(results: Any, depth: int
            ) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """Ranked refs per question (as locomo_recall.ranked_refs) and top-10 diagnostics."""
    out = []
    derived_hits = derived_new_refs = no_ref_hits = 0
    for qid, hits in results:
        ranked: list[str] = []
        for n, h in enumerate(hits):
            new = [r for r in h.refs if r not in ranked]
            if n < 10 and h.store in DERIVED:
                derived_hits += 1
                derived_new_refs += bool(new) and len(ranked) < 10
                no_ref_hits += not h.refs
            ranked += new
        out.append({"qid": qid, "ranked": ranked[:depth]})
    nq = max(1, len(results))
    return out, {"derived_in_top10_per_q": round(derived_hits / nq, 3),
                 "derived_adding_a_ref_per_q": round(derived_new_refs / nq, 3),
                 "derived_without_refs_per_q": round(no_ref_hits / nq, 3)}


def recall_at(ranked: list[dict[str, Any]], gold: dict[str, list[str]], k: int = 10
              ) -> dict[str, float]:
    """The scorer's R@k per question."""
    return {r["qid"]: len(set(gold[r["qid"]]) & set(r["ranked"][:k])) / len(gold[r["qid"]])
            for r in ranked}


def mean(vals: Any) -> float:
    vals = list(vals)
    return round(sum(vals) / max(1, len(vals)), 4)


def changed(after: dict[str, float], before: dict[str, float]) -> dict[str, int]:
    return {"better": sum(after[q] > before[q] for q in before),
            "worse": sum(after[q] < before[q] for q in before)}


def store_counts(vault: Any) -> dict[str, dict[str, int]]:
    from app.facade import internals
    from storage import repo
    return internals(vault).db.read(repo.counts)  # type: ignore[no-any-return]


def run_sample(sample: dict[str, Any], qs: list[dict[str, Any]], folder: Path, depth: int,
               profile: Any, variants: dict[str, tuple[str, ...]]) -> dict[str, Any]:
    from app.clock import parse_iso
    from app.facade import Vault
    from app.services.importer import parse_import
    from storage.crypto import KdfParams

    turns = turns_of(sample)
    last = max(t["at"] for t in turns)
    now_iso = (datetime.fromisoformat(last) + timedelta(days=1)).isoformat()
    now = parse_iso(now_iso)
    queries = [(q["qid"], q["question"], now) for q in qs]
    gold = {q["qid"]: q["evidence"] for q in qs}

    w0, c0 = clocks()
    vault = Vault.create(folder, PASSWORD, kdf=KdfParams(m=65_536, t=3), threaded=False,
                         use_chroma=False).vault
    vault.import_turns(parse_import([json.dumps(t) for t in turns]))
    w1, c1 = clocks()
    episodes = store_counts(vault).get("episodic", {}).get("active", 0)
    per_1k = 1000.0 / max(1, episodes)
    out: dict[str, Any] = {"turns": len(turns), "episodes": episodes, "questions": len(qs),
                           "import_s": round(w1 - w0, 2)}
    rankings: dict[str, list[dict[str, Any]]] = {}
    diag: dict[str, dict[str, float]] = {}

    def recall(name: str) -> None:
        res = vault.recall_batch(queries, k=depth)
        rankings[name], diag[name] = ranking(res, depth)
        if name == "full":  # the same hits, consolidation products left out
            rankings["full_turn_hits_only"], _ = ranking(
                [(qid, [h for h in hits if h.store not in DERIVED]) for qid, hits in res], depth)

    recall("none")

    # --- the whole pipeline in one run, step times from the progress callback ---------
    marks: list[tuple[float, float]] = []
    if profile is not None:
        profile.enable()
    s0 = clocks()
    report = vault.consolidate(now=now, progress=lambda n, total: marks.append(clocks())).value
    s1 = clocks()
    if profile is not None:
        profile.disable()
    steps = {}
    prev = s0
    for step, mark in zip(STEPS, marks, strict=False):
        steps[step] = {"wall_s": round(mark[0] - prev[0], 3), "cpu_s": round(mark[1] - prev[1], 3),
                       "wall_per_1k": round((mark[0] - prev[0]) * per_1k, 2),
                       "cpu_per_1k": round((mark[1] - prev[1]) * per_1k, 2)}
        prev = mark
    c = report.counts
    counts_after = store_counts(vault)
    out["consolidation"] = {
        "wall_s": round(s1[0] - s0[0], 2), "cpu_s": round(s1[1] - s0[1], 2),
        "wall_per_1k": round((s1[0] - s0[0]) * per_1k, 2),
        "cpu_per_1k": round((s1[1] - s0[1]) * per_1k, 2),
        "failed_batches": report.failed_batches, "steps": steps,
        "facts_created": c.get("facts_created", 0),
        "procedures_created": c.get("procedures_created", 0),
        "facts_corroborated": c.get("facts_corroborated", 0),
        "contradictions_found": c.get("contradictions_found", 0),
        "auto_resolved": c.get("auto_resolved", 0),
        "sent_to_inbox": c.get("sent_to_inbox", 0),
        "entities_created": c.get("entities_created", 0),
        "similar_links": c.get("similar_links", 0),
        "statistics": c.get("statistics_updated", 0),
        "archived": c.get("archived", 0),
        "archived_by_store": {s: v.get("archived", 0) for s, v in counts_after.items()
                              if v.get("archived")},
        "summaries_written": c.get("summaries_written", 0),
        "counts": c}
    recall("full")

    # --- undo, then other step sets on the same vault ----------------------------------
    run_id = report.run_id
    out["reruns"] = {}
    for name, only in variants.items():
        if name in ("none", "full", "full_turn_hits_only"):
            continue
        u0 = clocks()
        vault.undo_run(run_id)
        u1 = clocks()
        r = vault.consolidate(now=now, steps=only).value
        u2 = clocks()
        run_id = r.run_id
        out["reruns"][name] = {"steps": list(only), "undo_s": round(u1[0] - u0[0], 2),
                               "wall_s": round(u2[0] - u1[0], 2),
                               "cpu_s": round(u2[1] - u1[1], 2),
                               "facts_created": r.counts.get("facts_created", 0),
                               "entities_created": r.counts.get("entities_created", 0),
                               "archived": r.counts.get("archived", 0)}
        recall(name)
    vault.lock()

    per_q = {v: recall_at(rankings[v], gold) for v in variants}
    out["recall_at_10"] = {v: mean(per_q[v].values()) for v in variants}
    out["questions_changed_vs_none"] = {v: changed(per_q[v], per_q["none"])
                                        for v in variants if v != "none"}
    out["top10"] = diag
    out["_per_q"] = per_q
    out["_rankings"] = rankings
    return out


def score(ranked: list[dict[str, Any]], tmp: Path, name: str) -> dict[str, Any]:
    rfile = tmp / f"ranked-{name}.jsonl"
    rfile.write_text("\n".join(json.dumps(r) for r in ranked))
    jfile = tmp / f"scores-{name}.json"
    subprocess.run([sys.executable, str(SCORER), "--rankers", "none", "--external", str(rfile),
                    "--json-out", str(jfile)], check=True, capture_output=True)
    return json.loads(jfile.read_text())["results"]["external"]  # type: ignore[no-any-return]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--depth", type=int, default=20)
    ap.add_argument("--samples", help="comma list of sample ids (default: all)")
    ap.add_argument("--profile", help="write cProfile stats of the consolidation runs here")
    ap.add_argument("--ablation", action="store_true",
                    help="also recall after the extract step alone and the entities step alone")
    args = ap.parse_args()
    variants = {**VARIANTS, **(ABLATION if args.ablation else {})}
    if not DATA.exists():
        print(json.dumps({"error": f"missing {DATA}"}))
        return 2
    os.environ.setdefault("KEPT_MODEL_DIR", str(SHARED / "models" / "all-MiniLM-L6-v2" / "onnx"))
    profile = None
    if args.profile:
        import cProfile
        profile = cProfile.Profile()
    data = json.loads(DATA.read_text())
    per: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="kept-consolidation-") as tmpdir:
        tmp = Path(tmpdir)
        qfile = tmp / "q.jsonl"
        subprocess.run([sys.executable, str(SCORER), "--dump-questions", str(qfile)],
                       check=True, capture_output=True)
        questions = [json.loads(x) for x in qfile.read_text().splitlines()]
        for sample in data:
            sid = sample["sample_id"]
            if args.samples and sid not in args.samples.split(","):
                continue
            qs = [q for q in questions if q["sample_id"] == sid]
            folder = tmp / sid / "vault"
            folder.parent.mkdir(parents=True)
            per[sid] = run_sample(sample, qs, folder, args.depth, profile, variants)
        per_rankings = [s.pop("_rankings") for s in per.values()]
        rankings = {v: [r for pr in per_rankings for r in pr[v]] for v in variants}
        # The scorer counts every question of the data set (unrun ones score 0), so its
        # tables are only meaningful for a full run; a subset is scored here per category.
        scores = {v: score(rankings[v], tmp, v) for v in variants} if not args.samples else None
        per_qs = [s.pop("_per_q") for s in per.values()]
        per_q = {v: {q: x for pq in per_qs for q, x in pq[v].items()} for v in variants}
        cat = {q["qid"]: q["category"] for q in questions}
    if profile is not None:
        profile.dump_stats(args.profile)

    episodes = sum(s["episodes"] for s in per.values())
    wall = sum(s["consolidation"]["wall_s"] for s in per.values())
    cpu = sum(s["consolidation"]["cpu_s"] for s in per.values())
    total_steps = {}
    for step in STEPS:
        sw = sum(s["consolidation"]["steps"].get(step, {}).get("wall_s", 0) for s in per.values())
        sc = sum(s["consolidation"]["steps"].get(step, {}).get("cpu_s", 0) for s in per.values())
        total_steps[step] = {"wall_s": round(sw, 2), "cpu_s": round(sc, 2),
                             "wall_per_1k": round(sw * 1000 / episodes, 2),
                             "cpu_per_1k": round(sc * 1000 / episodes, 2)}
    keys = ("facts_created", "procedures_created", "facts_corroborated", "contradictions_found",
            "auto_resolved", "sent_to_inbox", "entities_created", "similar_links", "archived")
    total = {"episodes": episodes, "questions": sum(s["questions"] for s in per.values()),
             "consolidation_wall_s": round(wall, 2), "consolidation_cpu_s": round(cpu, 2),
             "wall_per_1k": round(wall * 1000 / episodes, 2),
             "cpu_per_1k": round(cpu * 1000 / episodes, 2), "steps": total_steps,
             **{k: sum(s["consolidation"][k] for s in per.values()) for k in keys},
             "archived_by_store": dict(sum((Counter(s["consolidation"]["archived_by_store"])
                                            for s in per.values()), Counter()))}
    names = {4: "single-hop", 1: "multi-hop", 2: "temporal", 3: "open-domain", 5: "adversarial"}
    local = {v: {**{names[c]: mean(x for q, x in per_q[v].items() if cat[q] == c)
                    for c in (4, 1, 2, 3, 5)},
                 "overall (1-4)": mean(x for q, x in per_q[v].items() if cat[q] != 5),
                 "overall (1-5)": mean(per_q[v].values())} for v in variants}
    summary = ({v: {c: round(scores[v][c]["R@10"], 4) for c in scores[v]} for v in variants}
               if scores else local)
    if scores:  # the local figures must agree with the scorer's
        assert all(abs(summary[v][c] - local[v][c]) < 1e-3 for v in variants for c in local[v])
    delta = {v: {cat: round(summary[v][cat] - summary["none"][cat], 4) for cat in summary[v]}
             for v in variants if v != "none"}
    print(json.dumps({"benchmark": "locomo_dev_consolidation", "depth": args.depth,
                      "target_per_1k_s": 30, "total": total,
                      "recall_at_10": summary, "delta_vs_none": delta,
                      "questions_changed_vs_none": {v: changed(per_q[v], per_q["none"])
                                                    for v in variants if v != "none"},
                      "scores": scores,
                      "per_conversation": per}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
