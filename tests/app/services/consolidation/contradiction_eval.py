"""Quality of contradiction detection on a labelled set (tests/data/fact_pairs.jsonl).

Each pair is two things a person said to the assistant, labelled by hand as ``contradiction``
(cannot both be true, no change stated), ``update`` (the later one states a change over time) or
``compatible`` (both can hold; agreeing paraphrases count here). The pipeline under test is the
one consolidation runs (``_store_facts``): ``extract()`` on each episode, then ``classify()`` on
every pair of facts across the two episodes. A pair is predicted a conflict when any fact pair is
an update or a contradiction; its predicted type is ``update`` if any fact pair is an update.

    python -m tests.app.services.consolidation.contradiction_eval            # JSON report
    python -m tests.app.services.consolidation.contradiction_eval --errors   # with every miss
                                                                             # and false alarm
    python -m tests.app.services.consolidation.contradiction_eval --holdout  # the 24 pairs
                                                      # written before the rules were tuned
    python -m tests.app.services.consolidation.contradiction_eval --stress   # 32 pairs written
                                      # after tuning, mostly compatible near-misses
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

from app.domain.fact import EpisodeView, FactCandidate
from app.services.contradiction import FactView, classify
from app.services.extract import extract
from tests import ROOT

DATA = ROOT / "tests" / "data" / "fact_pairs.jsonl"
# Written at the same time as DATA, before any rule was changed, and never used to tune them.
HOLDOUT = DATA.with_name("fact_pairs_holdout.jsonl")
# Written after the rules were tuned, before running them: near-misses for precision.
STRESS = DATA.with_name("fact_pairs_stress.jsonl")
LABELS = ("contradiction", "update", "compatible")
CONFLICT = ("contradiction", "update")


def load(path: Path = DATA) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]
    for r in rows:
        assert r["label"] in LABELS, r
    return rows


def _ts(at: str | float) -> float:
    if isinstance(at, (int, float)):
        return float(at)
    return datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp()


def _view(f: FactCandidate, at: float, i: int) -> FactView:
    # As _store_facts builds it: occurred_at is the source episode's time.
    return FactView(i, f.subject, f.predicate, f.object, f.qualifier, at, f.confidence,
                    False, f.negated, f.change)


def predict(pair: dict[str, Any]) -> dict[str, Any]:
    """Run the pipeline on one pair: facts of each side, verdicts, and the predicted label."""
    sides = []
    for eid, key in ((1, "a"), (2, "b")):
        s = pair[key]
        at = _ts(s["at"])
        facts = extract(EpisodeView(eid, s["text"], s.get("speaker"), at))
        sides.append([_view(f, at, eid * 100 + n) for n, f in enumerate(facts)])
    verdicts = [(fa, fb, classify(fa, fb)) for fa in sides[0] for fb in sides[1]]
    kinds = {v for _, _, v in verdicts}
    if "update" in kinds:
        predicted = "update"
    elif "contradiction" in kinds:
        predicted = "contradiction"
    else:
        predicted = "compatible"

    def show(v: FactView) -> str:
        q = f"[{v.qualifier}]" if v.qualifier else ""
        flags = ("!neg" if v.negated else "") + ("!chg" if v.change else "")
        return f"{v.subject}|{v.predicate}{q}|{v.object}{flags}"

    return {"predicted": predicted, "facts_a": [show(v) for v in sides[0]],
            "facts_b": [show(v) for v in sides[1]],
            "verdicts": [f"{show(x)} ~ {show(y)}: {v}" for x, y, v in verdicts
                         if v != "compatible"]}


def evaluate(rows: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    rows = load() if rows is None else rows
    confusion: dict[str, Counter[str]] = {lab: Counter() for lab in LABELS}
    tp = fp = fn = tn = 0
    type_right = type_total = 0
    no_fact = 0
    sentences = 0
    errors = []
    for r in rows:
        p = predict(r)
        label, pred = r["label"], p["predicted"]
        confusion[label][pred] += 1
        sentences += 2
        no_fact += (not p["facts_a"]) + (not p["facts_b"])
        truth, said = label in CONFLICT, pred in CONFLICT
        if truth and said:
            tp += 1
            type_total += 1
            type_right += label == pred
        elif said:
            fp += 1
        elif truth:
            fn += 1
        else:
            tn += 1
        if label != pred:
            errors.append({"id": r["id"], "label": label, "predicted": pred,
                           "a": r["a"]["text"], "b": r["b"]["text"], **{
                               k: p[k] for k in ("facts_a", "facts_b", "verdicts")}})
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    return {
        "pairs": len(rows),
        "by_label": dict(Counter(r["label"] for r in rows)),
        "detection": {"tp": tp, "fp": fp, "fn": fn, "tn": tn,
                      "precision": round(precision, 3), "recall": round(recall, 3),
                      "f1": round(2 * precision * recall / (precision + recall), 3)
                      if precision + recall else 0.0},
        "type_accuracy": {"right": type_right, "of": type_total,
                          "accuracy": round(type_right / type_total, 3) if type_total else None},
        "confusion": {lab: {p: confusion[lab][p] for p in LABELS} for lab in LABELS},
        "extraction": {"sentences": sentences, "no_fact": no_fact,
                       "coverage": round(1 - no_fact / sentences, 3) if sentences else None},
        "errors": errors,
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    path = HOLDOUT if "--holdout" in argv else STRESS if "--stress" in argv else DATA
    report = evaluate(load(path))
    if "--errors" not in argv:
        report["errors"] = [f"{e['id']}: {e['label']} -> {e['predicted']}"
                            for e in report["errors"]]
    print(json.dumps(report, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
