#!/usr/bin/env python3
"""What the result marks of issue 26 cost (who wrote each hit, a change waiting for it: two
batched queries per recall, ``RecallService._describe``). Prints JSON.

A story of tests/data/stories is imported into a fresh vault (real SQLCipher, the real model)
and consolidated; an assistant proposes changes to a few of the person's facts (so some hits
carry a pending change); then every question is asked ``--rounds`` times through
``AgentSession.recall`` (k = 10, touch off), with the marks and with ``_describe`` replaced by
the identity, interleaved question by question so machine load hits both alike; p50/p95 in ms,
the paired difference, and the marks' own time measured inside recall (``marks_own_ms``: the
least noisy figure on a loaded machine).

    KEPT_MODEL_DIR=../shared/models/all-MiniLM-L6-v2/onnx .venv/bin/python bench/result_marks.py
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import storage  # noqa: F401  (first: onnxruntime telemetry off)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
import stories  # noqa: E402


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(q * len(xs)))] * 1000, 3)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--story", default="story_a")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    from app.agent_scope import AgentSession
    from app.api import AssistantFact, Filters, MemoryQuery
    from app.clock import FixedClock
    from app.domain.memory import Store
    from app.facade import Vault
    from app.services.importer import parse_import
    from app.services.recall import RecallService
    from storage.crypto import KdfParams
    lines, questions = stories.load(args.story)
    turns = parse_import(lines)
    end = max(t.at for t in turns) + 3600
    folder = Path(tempfile.mkdtemp(prefix="kept-marks-")) / "v"
    vault = Vault.create(folder, stories.PASSWORD, kdf=KdfParams(m=65_536, t=3, p=4),
                         threaded=False, use_chroma=False, clock=FixedClock(end)).vault
    try:
        vault.import_turns(turns)
        vault.consolidate(now=end)
        vault.pair_agent("bench")
        agent = AgentSession(vault, "bench")
        facts = [r for r in vault.page_memories(MemoryQuery(store=Store.SEMANTIC), limit=200).rows
                 if r.agent == "global"]
        proposed = 0
        for r in facts[:10]:
            m = vault.get(r.id)
            subject, pred = m.extra.get("subject"), m.extra.get("predicate")
            if isinstance(subject, str) and isinstance(pred, str):
                out = agent.remember_fact(AssistantFact(subject, pred, "Valparaiso",
                                                        replaces=r.id)).value
                proposed += out.status == "sent_to_inbox"
        real_describe = RecallService._describe
        own: list[float] = []  # the marks' own time, measured inside recall

        def real(self: Any, hits: Any, meta: Any, viewer: Any) -> Any:
            t = time.perf_counter()
            out = real_describe(self, hits, meta, viewer)
            own.append(time.perf_counter() - t)
            return out
        plain: Any = lambda self, hits, meta, viewer: hits  # noqa: E731
        timed: dict[str, list[float]] = {"with_marks": [], "without_marks": []}
        pending = 0
        for n in range(args.rounds):
            for i, q in enumerate(questions):
                order = ("with_marks", "without_marks") if (n + i) % 2 else (
                    "without_marks", "with_marks")
                for how in order:
                    RecallService._describe = real if how == "with_marks" else plain  # type: ignore[method-assign]
                    t0 = time.perf_counter()
                    hits = agent.recall(q["q"], k=10, now=end, filters=Filters(), touch=False)
                    timed[how].append(time.perf_counter() - t0)
                    if how == "with_marks" and n == 0:
                        pending += sum(1 for h in hits if h.currency is not None
                                       and h.currency.state == "pending")
        RecallService._describe = real_describe  # type: ignore[method-assign]
        diffs = [a - b for a, b in zip(timed["with_marks"], timed["without_marks"], strict=True)]
        print(json.dumps({
            "bench": "result marks (issue 26)", "story": args.story, "cpus": os.cpu_count(),
            "load_avg": [round(x, 2) for x in os.getloadavg()],
            "questions": len(questions), "rounds": args.rounds,
            "changes_proposed": proposed, "pending_hits_first_round": pending,
            "recall_ms": {k: {"p50": pct(v, .5), "p95": pct(v, .95), "count": len(v)}
                          for k, v in timed.items()},
            "added_ms": {"p50": pct(diffs, .5), "p95": pct(diffs, .95),
                         "mean": round(statistics.mean(diffs) * 1000, 3)},
            "marks_own_ms": {"p50": pct(own, .5), "p95": pct(own, .95), "count": len(own)}},
            indent=1))
    finally:
        vault.lock()


if __name__ == "__main__":
    main()
