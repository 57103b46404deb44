"""``kept rate`` (issue 27 item 8) and ``kept insights`` (item 9) in process, on a real
vault: a rating lands on the event, a bad one is refused with one clear error and changes
nothing; insights prints 002's five numbers with their explanations, as JSON too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.domain.memory import Draft, Store
from tests.app.cli.conftest import PW, kept_in_process


def _vault(folder: Path) -> tuple[Path, int, int]:
    from app.facade import Vault
    from storage.crypto import KdfParams
    v = Vault.create(folder, PW, kdf=KdfParams(m=65_536, t=3, p=4), load_model=False,
                     threaded=False, use_chroma=False).vault
    try:
        event = int(v.remember(Draft(text="We went to the coast for the weekend.",
                                     store=Store.EPISODIC)).value)
        fact = int(v.remember(Draft(text="Ana lives in Porto.", store=Store.SEMANTIC)).value)
    finally:
        v.lock()
    return folder, event, fact


def _extra(folder: Path, mid: int) -> dict[str, object]:
    from app.facade import Vault
    v = Vault.open(folder, PW, load_model=False, threaded=False, use_chroma=False)
    try:
        return dict(v.get(mid).extra)
    finally:
        v.lock()


@pytest.mark.slow  # five vault opens (Argon2id each): ~5 s under load
def test_kept_rate_and_its_refusals(tmp_path: Path) -> None:
    folder, event, fact = _vault(tmp_path / "v")
    r = kept_in_process(folder, "rate", str(event), "badly", "--outcome", "rained all weekend")
    assert r.returncode == 0 and "went badly" in r.stdout
    bad = kept_in_process(folder, "rate", str(fact), "well")
    assert bad.returncode != 0 and "not an episode" in bad.stderr
    wrong = kept_in_process(folder, "rate", str(event), "superb")  # refused before unlocking
    assert wrong.returncode == 2 and "invalid choice" in wrong.stderr
    e = _extra(folder, event)
    assert (e["rating"], e["outcome"], e["outcome_by"]) == (-1, "rained all weekend", "person")
    assert "rating" not in _extra(folder, fact)


def test_kept_insights_text_and_json(tmp_path: Path) -> None:
    folder, _event, _fact = _vault(tmp_path / "v")
    r = kept_in_process(folder, "insights")
    assert r.returncode == 0 and "Strong memories" in r.stdout
    assert "No assistant searched yet" in r.stdout
    r = kept_in_process(folder, "insights", "--json")
    out = json.loads(r.stdout)
    assert [m["key"] for m in out["metrics"]] == [
        "retrieval_efficiency", "layer_utilisation", "promotion_rate", "archive_rate",
        "quality_ratio"]
    assert all(m["tip"] for m in out["metrics"])
    assert out["by_store"] == {"episodic": 1, "semantic": 1}
