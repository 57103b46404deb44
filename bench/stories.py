#!/usr/bin/env python3
"""What is true now, asked of stories of everyday chat (issue 23). Prints JSON.

For each story ``tests/data/stories/<name>.jsonl`` (Kept JSON Lines: weeks of a person's chat
with an assistant, small talk, changes said in passing, corrections) and its questions
``<name>.questions.jsonl``: import it into a fresh vault (real SQLCipher, the real model),
consolidate once (``now`` one hour after the last turn), then ask every question (recall, k =
10, ``now`` = the same moment) and read the hits in order:

- **current first**: a hit naming the current answer (any ``current`` key, case-insensitive)
  comes before any hit naming a stale one (``stale`` keys);
- **stale first**: a stale hit comes before any current one;
- **missing**: no hit names either;
- ``top1_current``: the first hit names the current answer.

``--context`` scores the context briefing's items in their order instead of recall's hits;
items it marks earlier or no longer true are not taken as answers.
``--order mcp`` puts hits marked earlier or superseded after the others, as MCP ``recall`` does
without ``include_earlier`` (issue 26); ``--order drop`` leaves them out; ``total_by_order``
gives all three from the same hits.
``--no-consolidate`` asks before consolidation (what the turns alone give). These stories are
the DEVELOPMENT set (written for tuning; see tests/data/stories/README.md); the held-out story
is not in the repository.

    KEPT_MODEL_DIR=../shared/models/all-MiniLM-L6-v2/onnx .venv/bin/python bench/stories.py
    .venv/bin/python bench/stories.py --story story_a --show
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import storage  # noqa: F401  (first: onnxruntime telemetry off)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
import tuning  # noqa: E402

STORIES = ROOT / "tests" / "data" / "stories"
PASSWORD = "stories bench"


def load(name: str) -> tuple[list[str], list[dict[str, Any]]]:
    lines = (STORIES / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    questions = [json.loads(x) for x in
                 (STORIES / f"{name}.questions.jsonl").read_text(encoding="utf-8").splitlines()
                 if x.strip()]
    return [x for x in lines if x.strip()], questions


def judge(texts: list[str], q: dict[str, Any]) -> dict[str, Any]:
    def first(keys: list[str]) -> int | None:
        for n, t in enumerate(texts):
            low = t.casefold()
            if any(k.casefold() in low for k in keys):
                return n
        return None
    cur = first(q["current"])
    stale = first(q["stale"]) if q.get("stale") else None
    if cur is None and stale is None:
        verdict = "missing"
    elif stale is None or (cur is not None and cur < stale):
        verdict = "current_first"
    elif cur is None or stale < cur:
        verdict = "stale_first"
    else:  # one hit names both: the current answer stated as a change ("X, not Y")
        verdict = "current_first"
    return {"id": q["id"], "verdict": verdict, "current_at": cur, "stale_at": stale,
            "top1_current": cur == 0}


def run_story(name: str, *, consolidate: bool, use_context: bool, show: bool,
              tune: dict[str, Any] | None = None, order: str = "rank") -> dict[str, Any]:
    from app.clock import FixedClock
    from app.facade import Vault
    from app.services.importer import parse_import
    from storage.crypto import KdfParams
    lines, questions = load(name)
    turns = parse_import(lines)
    end = max(t.at for t in turns) + 3600
    folder = Path(tempfile.mkdtemp(prefix=f"kept-story-{name}-")) / "v"
    vault = Vault.create(folder, PASSWORD, kdf=KdfParams(m=65_536, t=3, p=4), threaded=False,
                         use_chroma=False, clock=FixedClock(end)).vault
    tuning.apply(vault, tune or {})
    try:
        t0 = time.process_time()
        vault.import_turns(turns)
        if consolidate:
            vault.consolidate(now=end)
        build_cpu = time.process_time() - t0
        results = []
        by_order: dict[str, list[dict[str, Any]]] = {}
        for q in questions:
            if use_context:
                ctx = vault.context(q["q"], now=end)
                # An item the briefing marks as earlier or no longer true is not given as
                # the answer: it is left out of the judging.
                texts = [i.text for i in ctx.items
                         if i.currency is None or i.currency.state == "current"]
            else:
                hits = vault.recall(q["q"], k=10, now=end, touch=False)
                old = [h for h in hits if h.currency is not None
                       and h.currency.state in ("earlier", "superseded")]
                # What MCP recall does without include_earlier (issue 26): "mcp" puts them
                # after the others, "drop" leaves them out; "rank" is recall's own order.
                orders = {"rank": hits, "mcp": [h for h in hits if h not in old] + old,
                          "drop": [h for h in hits if h not in old]}
                for name_, ordered in orders.items():
                    by_order.setdefault(name_, []).append(judge([h.text for h in ordered], q))
                texts = [h.text for h in orders[order]]
            r = judge(texts, q)
            results.append(r)
            if show:
                print(f"\n[{r['verdict']}] {q['id']} {q['q']}  current={q['current']} "
                      f"stale={q.get('stale')}", file=sys.stderr)
                for n, t in enumerate(texts[:6]):
                    print(f"   {n}. {t[:110]}", file=sys.stderr)
    finally:
        vault.lock()
    counts = {v: sum(r["verdict"] == v for r in results)
              for v in ("current_first", "stale_first", "missing")}
    judged = {o: {**{v: sum(r["verdict"] == v for r in rs)
                     for v in ("current_first", "stale_first", "missing")},
                  "top1_current": sum(r["top1_current"] for r in rs)}
              for o, rs in by_order.items()}
    return {"story": name, "turns": len(turns), "questions": len(questions), **counts,
            "orders": judged,
            "top1_current": sum(r["top1_current"] for r in results),
            "build_cpu_s": round(build_cpu, 2),
            "stale_first_ids": [r["id"] for r in results if r["verdict"] == "stale_first"],
            "missing_ids": [r["id"] for r in results if r["verdict"] == "missing"]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--story", action="append", help="a story's name (default: all)")
    ap.add_argument("--context", action="store_true", help="score the context briefing")
    ap.add_argument("--no-consolidate", action="store_true")
    ap.add_argument("--show", action="store_true", help="print each question's top hits")
    ap.add_argument("--order", choices=("rank", "mcp", "drop"), default="rank",
                    help="recall's hits as ranked; current ones before earlier ones (MCP "
                         "recall's default, issue 26); or earlier ones left out")
    ap.add_argument("--tune", action="append", default=[], metavar="FIELD=VALUE",
                    help="override a RecallTuning field for an experiment")
    args = ap.parse_args()
    tune = tuning.parse(args.tune)
    names = args.story or sorted(p.name.removesuffix(".questions.jsonl")
                                 for p in STORIES.glob("*.questions.jsonl"))
    out = [run_story(n, consolidate=not args.no_consolidate, use_context=args.context,
                     show=args.show, tune=tune, order=args.order) for n in names]
    total = {k: sum(o[k] for o in out) for k in ("questions", "current_first", "stale_first",
                                                "missing", "top1_current")}
    orders = {o: {k: sum(x["orders"][o][k] for x in out) for k in next(iter(
        out[0]["orders"].values()))} for o in out[0]["orders"]} if out and out[0].get(
        "orders") else {}
    print(json.dumps({"set": "development (tests/data/stories)", "tune": tune,
                      "order": args.order,
                      "stories": out,
                      "total": total, "total_by_order": orders}, indent=1))


if __name__ == "__main__":
    main()
