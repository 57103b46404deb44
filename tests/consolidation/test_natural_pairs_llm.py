"""The LLM extractor scored on the natural development set through recorded replies (issue
15, item 5): the bench's replay transport feeds the production ``LlmExtractor`` (prompt,
parsing, un-redaction) and never opens a socket; a turn whose reply is missing or broken falls
back to the rules and is counted. The replies here are written by hand in the OpenAI chat
completions shape; a real recording is made with ``--llm-record`` against a local server."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from bench.natural_pairs import DATA, LOCOMO, evaluate, llm_extractor, load, main


def _reply(facts: list[dict[str, object]]) -> str:
    body = {"facts": facts, "deletes": []}
    return json.dumps({"choices": [{"message": {"role": "assistant",
                                                "content": json.dumps(body)}}]})


def _coffee(source: int, negated: bool) -> dict[str, object]:
    return {"subject": "Val", "predicate": "likes", "object": "coffee", "qualifier": None,
            "statement": "Val " + ("no longer drinks" if negated else "loves") + " coffee",
            "category": "preference", "confidence": 0.9, "store": "semantic",
            "change": negated, "negated": negated, "source_ids": [source]}


def _recording(tmp_path: Path) -> Path:
    path = tmp_path / "replies.jsonl"
    lines = [
        {"turn": "n147/a", "reply": _reply([_coffee(1, False)])},
        {"turn": "n147/b", "reply": _reply([_coffee(2, True)])},
        # a reply that is not JSON, twice (the extractor retries once): rules for that turn
        {"turn": "n141/a", "reply": "Sure! Here are the facts: spin class"},
        {"turn": "n141/a", "reply": "still not JSON"},
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def test_recorded_replies_are_scored_and_fallbacks_counted(tmp_path: Path) -> None:
    rows = [r for r in load(DATA, None) if r["id"] in ("n141", "n147")]
    stats: Counter[str] = Counter()
    extractor = llm_extractor(_recording(tmp_path), False, "http://127.0.0.1:9/v1", "local",
                              stats)
    report = evaluate(rows, extractor)
    # The rules alone miss n147 (compatible); the recorded LLM facts find the update.
    assert "n147" in {e["id"] for e in evaluate(rows)["errors"]}
    assert "n147" not in {e["id"] for e in report["errors"]}
    assert stats["llm_batches"] == 2  # n147's two turns
    # n141/a: broken twice -> rules; n141/b: no reply at all -> rules
    assert sum(v for k, v in stats.items() if k.startswith("fallback:")) == 2


@pytest.mark.skipif(not LOCOMO.exists(), reason=f"needs {LOCOMO}")
def test_the_bench_refuses_a_recording_inside_the_repository(
        capsys: pytest.CaptureFixture[str]) -> None:
    inside = Path(__file__).resolve().parents[2] / "replies.jsonl"
    assert main(["--llm-replay", str(inside)]) == 2
    assert "outside the repository" in capsys.readouterr().out
