"""The natural development set of issue 15 (tests/data/natural_pairs.jsonl, described in
tests/data/natural_pairs.md) is well formed, big enough and balanced, its LoCoMo references
resolve against ../shared/bench/locomo_dev.json, it stores no LoCoMo text, and the scorer
(bench/natural_pairs.py) runs end to end on it and keeps the issue's targets on it."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from bench.natural_pairs import (
    DATA,
    KINDS,
    LABELS,
    LOCOMO,
    SetError,
    evaluate,
    load,
    locomo_turns,
)

# The development data lives in ../shared (CC BY-NC, never copied here): without it these
# tests fail, never skip (issue 23 item 9), as CI runs with ../shared beside the clone.


def test_set_is_big_enough_balanced_and_covers_every_kind() -> None:
    rows = load(DATA, locomo=None)
    assert len(rows) >= 150
    labels = Counter(r["label"] for r in rows)
    assert set(labels) == set(LABELS)
    assert labels["compatible"] * 3 >= len(rows), labels  # precision needs negatives
    assert labels["contradiction"] >= 20 and labels["update"] >= 20, labels
    kinds = Counter(r["kind"] for r in rows)
    assert set(kinds) == set(KINDS), kinds
    assert sum(r["source"] != "written" for r in rows) >= 50
    for r in rows:
        assert r["a"]["speaker"] == r["b"]["speaker"], r["id"]
        assert r["a"]["ts"] <= r["b"]["ts"], r["id"]  # a is the earlier turn


def test_locomo_references_resolve_and_no_locomo_text_is_stored() -> None:
    rows = load(DATA, LOCOMO)
    referenced = [r for r in rows if r["source"] != "written"]
    assert len(referenced) >= 50
    for r in referenced:
        for side in ("a", "b"):
            assert r[side]["text"], r["id"]
    real = {t["text"].strip() for t in locomo_turns(LOCOMO).values()}
    for line in DATA.read_text(encoding="utf-8").splitlines():
        raw = json.loads(line)
        for side in ("a", "b"):
            assert raw[side].get("text", "").strip() not in real, raw["id"]


def test_a_reference_that_does_not_resolve_is_refused(tmp_path: Path) -> None:
    row = json.loads(DATA.read_text(encoding="utf-8").splitlines()[0])
    assert row["source"] == "locomo"
    wrong_turn = dict(row, a=dict(row["a"], locomo={"sample": "conv-30", "dia_id": "D99:1"}))
    wrong_speaker = dict(row, a=dict(row["a"], speaker="Gina"))
    wrong_date = dict(row, a=dict(row["a"], at="2023-01-21T16:04:00Z"))
    with_text = dict(row, a=dict(row["a"], text="copied"))
    for bad in (wrong_turn, wrong_speaker, wrong_date, with_text):
        path = tmp_path / "bad.jsonl"
        path.write_text(json.dumps(bad) + "\n", encoding="utf-8")
        with pytest.raises(SetError):
            load(path, LOCOMO)


def test_scorer_runs_end_to_end_and_its_counts_add_up() -> None:
    rows = load(DATA, LOCOMO)
    report = evaluate(rows)
    c = report["conflicts"]
    conflicts = sum(r["label"] != "compatible" for r in rows)
    assert c["tp"] + c["fn"] == conflicts
    assert c["fp"] + c["tn"] == len(rows) - conflicts
    assert sum(k["pairs"] for k in report["by_kind"].values()) == len(rows)
    assert 0 < report["extraction"]["with_fact"] < report["extraction"]["turns"]
    # The labels are the ground truth: the pipeline's verdicts must not leak into them.
    assert {e["id"] for e in report["errors"]} <= {r["id"] for r in rows}


# Recall the pipeline keeps on each DEVELOPMENT set (none is a held-out score: all were used
# while writing the rules): the natural pairs, their rewordings (written before anything ran on
# them) and real LoCoMo pairs. Issue 23 item 9 found the rules at .82 on the first and .13 on
# the second; the rules written for one sentence were made general (.78 and .16 now). The gap
# is what a stronger model would have to close (see the closing note of issue 23).
FLOORS = {"natural_pairs.jsonl": 0.77, "natural_pairs_reworded.jsonl": 0.15,
          "natural_pairs_real.jsonl": 0.05}


@pytest.mark.parametrize("name", sorted(FLOORS))
def test_the_pipeline_keeps_its_figures_on_the_development_sets(name: str,
                                                                 shared_model: None) -> None:
    """A regression guard, not a held-out score: precision >= .95 and recall at least what
    was measured, update vs contradiction >= .90; facts alone stay at precision 1."""
    from bench.natural_pairs import embedding_similarity
    rows = load(DATA.with_name(name), LOCOMO)
    similarity = embedding_similarity()
    assert similarity is not None
    report = evaluate(rows, similarity=similarity)
    c = report["conflicts"]
    assert c["precision"] >= 0.95 and c["recall"] >= FLOORS[name], c
    assert (report["type_accuracy"]["accuracy"] or 0) >= 0.90
    facts_only = evaluate(rows)["conflicts"]
    assert facts_only["fp"] == 0 and facts_only["recall"] <= c["recall"]
