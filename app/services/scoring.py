"""Scores, tiers and reinforcement (DESIGN.md section 5, reference 002 and 000). Layer: app.
Pure functions; no I/O.
"""

from __future__ import annotations

import math

from app import policy
from app.domain.memory import Tier


def recency(decay_class: str, hours_since_access: float) -> float:
    """002: exp(-ln2 / half_life * hours * rate)."""
    d = policy.DECAY.get(decay_class, policy.DECAY["episodic"])
    hours = max(0.0, hours_since_access)
    return math.exp(-math.log(2) / d.half_life_h * hours * d.rate)


def frequency(access_count: int) -> float:
    """Logarithmic, saturating at 1.0 near 20 accesses."""
    n = max(0, access_count)
    return min(1.0, math.log1p(n) / math.log1p(policy.FREQUENCY_SATURATION))


def composite(importance: float, recency_: float, frequency_: float, emotional: float,
              social: float) -> float:
    return (policy.W_IMPORTANCE * importance + policy.W_RECENCY * recency_
            + policy.W_FREQUENCY * frequency_ + policy.W_EMOTIONAL * emotional
            + policy.W_SOCIAL * social)


def tier(days_since_access: float, access_count: int) -> Tier:
    hot, warm = policy.HOT_DAYS, policy.WARM_DAYS
    if access_count > policy.RESIST_20[0]:
        hot, warm = policy.RESIST_20[1], policy.RESIST_20[2]
    elif access_count > policy.RESIST_10[0]:
        hot, warm = policy.RESIST_10[1], policy.RESIST_10[2]
    if days_since_access <= hot:
        return Tier.HOT
    if days_since_access <= warm:
        return Tier.WARM
    return Tier.COLD


def reinforce(importance: float, emotional: float, access_count: int,
              last_accessed_at: float | None, reinforced_at: float | None,
              emotional_reinforced_at: float | None, now: float
              ) -> tuple[float, float | None, float | None]:
    """002 reinforcement on access. Returns (importance, reinforced_at, emotional_reinforced_at).

    - accessed twice within 24 h: importance x1.15, at most once per 24 h;
    - emotional > .5 and accessed within 48 h: x1.2, at most once per 48 h.
    """
    new_importance = importance
    r_at, e_at = reinforced_at, emotional_reinforced_at
    if last_accessed_at is not None:
        since_h = (now - last_accessed_at) / policy.HOUR
        if since_h <= policy.REINFORCE_WINDOW_H and (
                r_at is None or now - r_at >= policy.REINFORCE_WINDOW_H * policy.HOUR):
            new_importance *= policy.REINFORCE_FACTOR
            r_at = now
        if (emotional > policy.EMOTIONAL_REINFORCE_THRESHOLD
                and since_h <= policy.EMOTIONAL_WINDOW_H
                and (e_at is None or now - e_at >= policy.EMOTIONAL_WINDOW_H * policy.HOUR)):
            new_importance *= policy.EMOTIONAL_FACTOR
            e_at = now
    return min(1.0, new_importance), r_at, e_at


def confidence(source_reliability: float, corroboration: float, recency_: float,
               user_validated: bool, usage_success: float) -> float:
    """003 weighted confidence."""
    return (policy.CONF_SOURCE * source_reliability + policy.CONF_CORROBORATION * corroboration
            + policy.CONF_RECENCY * recency_ + policy.CONF_USER * (1.0 if user_validated else 0.0)
            + policy.CONF_USAGE * usage_success)
