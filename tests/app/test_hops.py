"""Recall's second hop (issue 27 item 7, app/services/hops.py): off by default; switched on,
the memories linked to the best hit (or naming the same topic) gain a share of its relevance,
recorded as ``hop`` in the hit's parts. A real vault, consolidated (its links step)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from app.clock import FixedClock, parse_iso
from app.facade import Vault
from app.services import hops
from tests.conftest import turns_vault
from tests.inside import inside

NOW = parse_iso("2026-09-16T00:00:00Z")


@pytest.fixture
def falcon(vault_dir: Path, fast_kdf: object) -> Any:
    v = turns_vault(vault_dir, fast_kdf, "pw-hops", [
        ("s1", "2026-09-01T10:00:00Z", "Maya", "We kicked off Project Falcon at work today."),
        ("s1", "2026-09-01T10:01:00Z", "Maya", "Lunch was a sad sandwich."),
        ("s2", "2026-09-08T09:00:00Z", "Maya", "Coffee first, then the standup."),
        ("s2", "2026-09-08T09:05:00Z", "Maya", "Project Falcon slipped a week, again."),
        ("s3", "2026-09-15T09:00:00Z", "Maya", "Project Falcon shipped to customers!"),
        ("s3", "2026-09-15T09:01:00Z", "Maya", "The customers loved the new dashboard.")],
        load_model=False, clock=FixedClock(parse_iso("2026-10-01T00:00:00Z")))
    v.consolidate(now=NOW)
    try:
        yield v
    finally:
        v.lock()


def _parts(v: Vault, query: str, **tune: Any) -> dict[str, dict[str, float]]:
    rec = inside(v).recall
    rec.tuning = replace(rec.tuning, **tune)
    return {h.text: h.breakdown for h in v.recall(query, now=NOW, touch=False, k=10)}


def test_a_hit_linked_to_the_best_one_gains_a_share_of_it(falcon: Vault) -> None:
    # Off by default: no hit has a hop.
    assert all("hop" not in b for b in _parts(falcon, "Falcon shipped customers").values())
    off = _parts(falcon, "Falcon shipped customers", hop_weight=0.0)
    best = max(off, key=lambda t: off[t]["final"])
    assert "shipped" in best
    on = _parts(falcon, "Falcon shipped customers", hop_weight=0.5, hop_seeds=1,
                hop_entities=0.0)
    # The turn before it on the topic (another conversation, PRECEDED_BY) and the turn after
    # it in its own conversation (FOLLOWED_BY: the same link read backwards) gain.
    slipped = "Project Falcon slipped a week, again."
    after = "The customers loved the new dashboard."
    for text in (slipped, after):
        assert on[text]["hop"] == pytest.approx(0.5 * on[best]["relevance"], abs=1e-3)
        assert on[text]["final"] > off[text]["final"]
    # Two links away, with entities off: nothing.
    assert "hop" not in on["We kicked off Project Falcon at work today."]
    assert "hop" not in on[best]  # the seed lends, it does not borrow
    # Through the project both name, the first mention gains too.
    both = _parts(falcon, "Falcon shipped customers", hop_weight=0.5, hop_seeds=1,
                  hop_entities=1.0)
    assert both["We kicked off Project Falcon at work today."].get("hop", 0) > 0


def test_lend_keeps_the_largest_offer_and_moves_only_candidates() -> None:
    scored = {1: {"relevance": 1.0, "final": 1.0}, 2: {"relevance": 0.5, "final": 0.5},
              3: {"relevance": 0.1, "final": 0.1}}
    near = {1: {3, 99}, 2: {3}}  # 99 is no candidate: never brought in
    moved = hops.lend(scored, hops.Hops(0.2, 2, False, 40),
                      [lambda ids: {i: near.get(i, set()) for i in ids}])
    assert moved == 1 and 99 not in scored
    assert scored[3]["hop"] == pytest.approx(0.2) and scored[3]["final"] == pytest.approx(0.3)
    assert hops.lend(scored, hops.Hops(0.0, 2, False, 40), [lambda ids: near]) == 0
