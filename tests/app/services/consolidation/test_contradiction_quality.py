"""Contradiction detection quality on labelled fact pairs (issue: "precision >= 0.9").

The numbers come from tests/app/services/consolidation/contradiction_eval.py; to see every miss
and false alarm run ``python -m tests.app.services.consolidation.contradiction_eval --errors``
(``--holdout``, ``--stress`` for the other two sets).

- tests/data/fact_pairs.jsonl (84 pairs): the issue's labelled set; the rules were tuned on it.
- tests/data/fact_pairs_holdout.jsonl (24): written with it, never used for tuning.
- tests/data/fact_pairs_stress.jsonl (32): compatible near-misses and new phrasings, written
  after tuning; its first run found two false alarms (fixed since, see git log).
"""

from __future__ import annotations

import json

import pytest

from tests.app.services.consolidation.contradiction_eval import (
    DATA,
    HOLDOUT,
    LABELS,
    STRESS,
    evaluate,
    load,
)

PRECISION_FLOOR = 0.9
# Measured recall with the rules of commit 4bf60f7: main 0.963 (52 of 54 conflicts), holdout 0.938
# (15 of 16), stress 0.714 (10 of 14). Each floor allows about two pairs to regress before it
# fails, so a change that loses a phrasing is seen in review rather than as a flaky test.
RECALL_FLOOR = {DATA: 0.92, HOLDOUT: 0.85, STRESS: 0.64}
# Among detected true conflicts, update vs contradiction was right in all of them.
TYPE_ACCURACY_FLOOR = 0.9


def test_dataset_is_big_enough_and_balanced() -> None:
    rows = load()
    assert len(rows) >= 75
    assert len({r["id"] for r in rows}) == len(rows)
    for label in LABELS:
        n = sum(r["label"] == label for r in rows)
        assert n >= len(rows) // 4, (label, n)
    for r in rows:
        for side in ("a", "b"):
            assert r[side]["text"].strip() and r[side]["speaker"] and r[side]["at"]


@pytest.mark.parametrize("path", [DATA, HOLDOUT, STRESS], ids=lambda p: p.stem)
def test_detection_precision_and_recall(path: object) -> None:
    report = evaluate(load(path))  # type: ignore[arg-type]
    summary = {k: report[k] for k in ("pairs", "detection", "type_accuracy", "confusion",
                                      "extraction")}
    print(path, json.dumps(summary, indent=2))
    det = report["detection"]
    assert det["precision"] >= PRECISION_FLOOR, report["errors"]
    assert det["recall"] >= RECALL_FLOOR[path], report["errors"]  # type: ignore[index]
    assert report["type_accuracy"]["accuracy"] >= TYPE_ACCURACY_FLOOR, report["errors"]
