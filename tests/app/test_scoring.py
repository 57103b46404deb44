"""Scores, tiers and reinforcement (DESIGN.md section 5): the pure functions, then the same
rules through ``Vault.recall(touch=True)`` on a real vault with a fixed clock."""

from __future__ import annotations

import math

import pytest

from app import policy
from app.clock import FixedClock
from app.domain.memory import Store, Tier
from app.facade import Vault
from app.services import scoring
from tests.app.conftest import DAY, HOUR, T0, neutral, remember, row

# --- tiers ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("days", "accesses", "expected"), [
    (0, 0, Tier.HOT), (7, 0, Tier.HOT), (7.01, 0, Tier.WARM), (30, 0, Tier.WARM),
    (30.01, 0, Tier.COLD), (400, 0, Tier.COLD),
    # exactly 10 accesses is not "more than 10": no resistance yet
    (8, 10, Tier.WARM), (31, 10, Tier.COLD),
    # > 10 accesses: hot <= 10 d, warm <= 45 d
    (8, 11, Tier.HOT), (10, 11, Tier.HOT), (10.5, 11, Tier.WARM), (45, 11, Tier.WARM),
    (46, 11, Tier.COLD),
    # > 20 accesses: hot <= 14 d, warm <= 60 d
    (14, 21, Tier.HOT), (15, 21, Tier.WARM), (60, 21, Tier.WARM), (61, 21, Tier.COLD),
    (12, 20, Tier.WARM),
])
def test_tier_with_frequency_resistance(days: float, accesses: int, expected: Tier) -> None:
    assert scoring.tier(days, accesses) is expected


# --- recency ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("cls", "rate", "half_life_h"), [
    ("working", 0.8, 2.0), ("episodic", 0.3, 168.0), ("semantic", 0.1, 720.0),
    ("social", 0.2, 336.0), ("emotional", 0.4, 72.0),
])
def test_recency_per_decay_class(cls: str, rate: float, half_life_h: float) -> None:
    d = policy.DECAY[cls]
    assert (d.rate, d.half_life_h) == (rate, half_life_h)
    assert scoring.recency(cls, 0) == 1.0
    assert scoring.recency(cls, -5) == 1.0          # a future access time never exceeds 1
    # 002 formula: exp(-ln2 / half_life * hours * rate)
    assert scoring.recency(cls, half_life_h) == pytest.approx(0.5 ** rate)
    assert scoring.recency(cls, half_life_h / rate) == pytest.approx(0.5)
    assert scoring.recency(cls, 3 * half_life_h / rate) == pytest.approx(0.125)
    assert scoring.recency(cls, 10.0) > scoring.recency(cls, 11.0)


def test_decay_classes_fade_in_the_documented_order() -> None:
    week = 7 * 24.0
    r = {c: scoring.recency(c, week) for c in policy.DECAY}
    assert r["working"] < r["emotional"] < r["episodic"] < r["social"] < r["semantic"]
    assert r["working"] < 1e-6
    assert r["semantic"] == pytest.approx(math.exp(-math.log(2) / 720 * week * 0.1))


def test_store_decay_mapping_and_unknown_class() -> None:
    assert policy.STORE_DECAY["procedural"] == "semantic"
    assert policy.STORE_DECAY["short_term"] == "working"
    assert scoring.recency("no-such-class", 100) == scoring.recency("episodic", 100)


# --- frequency, composite -----------------------------------------------------------------------

def test_frequency_is_logarithmic_and_saturates_at_20() -> None:
    values = [scoring.frequency(n) for n in range(0, 25)]
    assert values[0] == 0.0
    assert all(a < b for a, b in zip(values[:20], values[1:21], strict=True))
    assert values[20] == pytest.approx(1.0)
    assert scoring.frequency(21) == scoring.frequency(500) == 1.0
    assert scoring.frequency(-3) == 0.0
    assert scoring.frequency(10) == pytest.approx(math.log(11) / math.log(21))
    # logarithmic: the first accesses count most
    assert values[1] - values[0] > values[11] - values[10]


def test_composite_weights_sum_to_one() -> None:
    weights = (policy.W_IMPORTANCE, policy.W_RECENCY, policy.W_FREQUENCY, policy.W_EMOTIONAL,
               policy.W_SOCIAL)
    assert weights == (0.30, 0.25, 0.20, 0.15, 0.10)
    assert sum(weights) == pytest.approx(1.0)
    assert scoring.composite(1, 1, 1, 1, 1) == pytest.approx(1.0)
    assert scoring.composite(0, 0, 0, 0, 0) == 0.0
    for n, w in enumerate(weights):
        parts = [0.0] * 5
        parts[n] = 1.0
        assert scoring.composite(*parts) == pytest.approx(w)


# --- reinforcement (pure) -----------------------------------------------------------------------

def test_first_access_never_reinforces() -> None:
    assert scoring.reinforce(0.5, 0.9, 0, None, None, None, T0) == (0.5, None, None)


def test_second_access_within_24h_multiplies_importance_once_per_24h() -> None:
    imp, r_at, e_at = scoring.reinforce(0.5, 0.0, 1, T0, None, None, T0 + 2 * HOUR)
    assert imp == pytest.approx(0.575) and r_at == T0 + 2 * HOUR and e_at is None
    # accessed again 2 h later: already reinforced within 24 h
    again = scoring.reinforce(imp, 0.0, 2, T0 + 2 * HOUR, r_at, None, T0 + 4 * HOUR)
    assert again == (imp, r_at, None)
    # 24 h after the last reinforcement, with an access 20 h before: reinforced again
    later = scoring.reinforce(imp, 0.0, 3, T0 + 6 * HOUR, r_at, None, T0 + 26 * HOUR)
    assert later[0] == pytest.approx(imp * 1.15) and later[1] == T0 + 26 * HOUR
    # last access more than 24 h ago: not "twice within 24 h"
    assert scoring.reinforce(0.5, 0.0, 1, T0, None, None, T0 + 25 * HOUR) == (0.5, None, None)
    # exactly at the window edge still counts
    assert scoring.reinforce(0.5, 0.0, 1, T0, None, None, T0 + DAY)[0] == pytest.approx(0.575)


def test_emotional_reinforcement_within_48h_once_per_48h() -> None:
    # 30 h since the last access: too late for x1.15, in time for the emotional x1.2
    imp, r_at, e_at = scoring.reinforce(0.5, 0.8, 1, T0, None, None, T0 + 30 * HOUR)
    assert imp == pytest.approx(0.6) and r_at is None and e_at == T0 + 30 * HOUR
    # both rules at once
    both = scoring.reinforce(0.5, 0.8, 1, T0, None, None, T0 + HOUR)
    assert both[0] == pytest.approx(0.5 * 1.15 * 1.2)
    # emotional already applied 20 h ago: only the 24 h rule may apply
    again = scoring.reinforce(0.6, 0.8, 2, T0 + 30 * HOUR, None, e_at, T0 + 50 * HOUR)
    assert again[0] == pytest.approx(0.6 * 1.15) and again[2] == e_at
    # emotional at exactly .5 is not "> .5"
    assert scoring.reinforce(0.5, 0.5, 1, T0, None, None, T0 + 30 * HOUR)[0] == 0.5
    # beyond 48 h: nothing
    assert scoring.reinforce(0.5, 0.9, 1, T0, None, None, T0 + 49 * HOUR)[0] == 0.5


def test_reinforcement_caps_importance_at_one() -> None:
    assert scoring.reinforce(0.95, 0.9, 3, T0, None, None, T0 + HOUR)[0] == 1.0


# --- reinforcement through the vault --------------------------------------------------------------

def _state(vault: Vault, mid: int) -> dict[str, float | None]:
    r = row(vault, "SELECT importance, access_count, last_accessed_at, frequency, reinforced_at, "
            "emotional_reinforced_at FROM memory WHERE id = ?", mid)
    return dict(zip(("importance", "access_count", "last_accessed_at", "frequency",
                     "reinforced_at", "emotional_reinforced_at"), r, strict=True))


def test_recall_touch_records_access_and_reinforces_once_per_day(
        vault: Vault, clock: FixedClock) -> None:
    mid = remember(vault, "The spare key is under the blue flowerpot", **neutral())
    q = "where is the spare key"
    assert _state(vault, mid)["access_count"] == 0

    assert mid in [h.id for h in vault.recall(q)]                      # T0: first access
    s = _state(vault, mid)
    assert (s["access_count"], s["last_accessed_at"], s["importance"]) == (1, T0, 0.5)
    assert s["frequency"] == pytest.approx(scoring.frequency(1))
    assert s["reinforced_at"] is None

    clock.advance(2 * HOUR)                                              # twice within 24 h
    vault.recall(q)
    s = _state(vault, mid)
    assert s["access_count"] == 2 and s["last_accessed_at"] == T0 + 2 * HOUR
    assert s["importance"] == pytest.approx(0.575)
    assert s["reinforced_at"] == T0 + 2 * HOUR
    assert s["frequency"] == pytest.approx(scoring.frequency(2))

    clock.advance(2 * HOUR)                                              # once per 24 h
    vault.recall(q)
    s = _state(vault, mid)
    assert s["access_count"] == 3 and s["importance"] == pytest.approx(0.575)

    clock.advance(23 * HOUR)        # 23 h after the last access, 25 h after the reinforcement
    vault.recall(q)
    s = _state(vault, mid)
    assert s["access_count"] == 4 and s["importance"] == pytest.approx(0.575 * 1.15)
    assert vault.get(mid).scores.importance == pytest.approx(0.575 * 1.15)


def test_recall_touch_applies_emotional_reinforcement(vault: Vault, clock: FixedClock) -> None:
    mid = remember(vault, "I cried with joy when the twins were born", emotional=0.9,
                   importance=0.5, social=0.0)
    q = "when the twins were born"
    vault.recall(q)                                                      # T0
    clock.advance(30 * HOUR)                                             # 24 h < 30 h <= 48 h
    vault.recall(q)
    s = _state(vault, mid)
    assert s["importance"] == pytest.approx(0.6)
    assert s["emotional_reinforced_at"] == T0 + 30 * HOUR and s["reinforced_at"] is None
    clock.advance(10 * HOUR)        # within 24 h: x1.15; emotional already applied 10 h ago
    vault.recall(q)
    s = _state(vault, mid)
    assert s["importance"] == pytest.approx(0.6 * 1.15)
    assert s["emotional_reinforced_at"] == T0 + 30 * HOUR


def test_recall_without_touch_and_recall_batch_change_nothing(
        vault: Vault, clock: FixedClock) -> None:
    mid = remember(vault, "The wifi password is on the fridge", **neutral())
    vault.recall("wifi password")                       # one real access, as a baseline
    clock.advance(HOUR)
    before = _state(vault, mid)
    for _ in range(3):
        assert mid in [h.id for h in vault.recall("wifi password", touch=False)]
        clock.advance(HOUR)
    out = vault.recall_batch([("q1", "wifi password", None), ("q2", "fridge", T0 + HOUR)])
    assert [qid for qid, _ in out] == ["q1", "q2"]
    assert all(mid in [h.id for h in hits] for _, hits in out)
    assert _state(vault, mid) == before
    assert before["access_count"] == 1 and before["importance"] == 0.5


def test_touch_changes_only_what_was_returned(vault: Vault) -> None:
    shown = remember(vault, "Grandma's lemon cake recipe uses two lemons", Store.PROCEDURAL,
                     **neutral())
    other = remember(vault, "Car insurance renews in March", **neutral())
    hits = vault.recall("lemon cake recipe", k=1)
    assert [h.id for h in hits] == [shown]
    assert _state(vault, shown)["access_count"] == 1
    assert _state(vault, other)["access_count"] == 0
