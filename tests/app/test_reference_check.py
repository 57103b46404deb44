"""bench/reference_check.py's parts on a small real vault (the reference story alone, rules,
no model): its generated chat imports as Kept's format, and its checks read counts from the
vault (a link row says working only when that kind of link exists)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from app.clock import FixedClock, parse_iso
from app.facade import Vault
from app.services.importer import parse_import
from tests.conftest import new_vault

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import reference_check as rc  # noqa: E402


def test_generated_chat_is_valid_import_and_repeatable() -> None:
    turns = rc.chat_turns(90, per_session=30)
    assert turns == rc.chat_turns(90, per_session=30)  # the same seed, the same chat
    parsed = parse_import([json.dumps(t) for t in turns])
    assert len(parsed) == 90 and len({t.session for t in parsed}) == 3
    said = [t["text"] for t in turns]
    assert any(t in rc.CHATTER for t in said) and len(set(said)) > 30  # small talk and news


@pytest.fixture
def story_vault(vault_dir: Path, fast_kdf: object) -> Any:
    lines = [x for x in rc.OWN.read_text(encoding="utf-8").splitlines() if x.strip()]
    v = new_vault(vault_dir, "pw-refcheck", threaded=False, load_model=False,
                  clock=FixedClock(parse_iso("2026-04-10T00:00:00Z")), use_chroma=False)
    v.import_turns(parse_import(lines))
    v.consolidate(now=parse_iso("2026-04-09T00:00:00Z"))
    try:
        yield v
    finally:
        v.lock()


@pytest.mark.slow  # a 51-turn import and a consolidation run: ~5 s idle, 18 s under load
def test_rows_read_their_evidence_from_the_vault(story_vault: Vault) -> None:
    rows = rc.links(story_vault) + rc.routing(story_vault) + rc.para(story_vault)
    assert all(r["status"] in ("working", "partial", "missing") for r in rows)
    by_name = {r["capability"]: r for r in rows}
    within = by_name["Link: PRECEDED_BY within a conversation"]
    n = rc.link_count(story_vault, "PRECEDED_BY", "AND a.session = b.session")
    assert within["evidence"]["links"] == n > 0 and within["status"] == "working"
    # Turns counted are the vault's own.
    routing = by_name["Salience score on each incoming turn, shown by explain"]
    assert routing["evidence"]["turns"] == rc.one(
        story_vault, "SELECT count(*) FROM memory WHERE store = 'short_term'") == 51
    # Salience is read from the routing decisions (migration 0021), and explain shows them.
    assert routing["evidence"]["turns_with_salience"] == rc.one(
        story_vault, "SELECT count(*) FROM routing") > 0
    assert routing["evidence"]["explain_shows_routing"] is True
    # Insights: the five metrics by their keys.
    (ins,) = rc.insights(story_vault)
    assert ins["status"] == "working" and len(ins["evidence"]["metrics_found"]) == 5
    table = rc.markdown(rows)
    assert table.count("\n") == len(rows) + 1 and "| working |" in table
