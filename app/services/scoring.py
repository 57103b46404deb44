"""Scores, tiers and reinforcement (docs/memory-model.md#scores, reference 002 and 000). Layer: app.
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


def retention_idle_days(occurred_at: float, last_accessed_at: float | None, learned_at: float,
                        now: float) -> float:
    """Days a memory has gone unused, for retention and archival
    (docs/memory-model.md#decay-and-archival): counted from the latest of when it happened, when it
    was last used and when Kept learned it, so importing years of history does not archive it on the
    first run (measured: 97% of a 3-year import disappeared from recall when only the first two
    counted)."""
    reference = max(x for x in (occurred_at, last_accessed_at, learned_at) if x is not None)
    return max(0.0, (now - reference) / policy.DAY)


def frequency(access_count: int, hours_since_access: float | None = None) -> float:
    """Logarithmic, saturating at 1.0 near 20 accesses. 002's weekly boost: a memory used
    >= 10 times scores +10% in any week it is used again (``hours_since_access`` within 7
    days); a boost, not a compounding multiplier, since the score is recomputed from the
    count at every access and every daily rescoring."""
    n = max(0, access_count)
    base = min(1.0, math.log1p(n) / math.log1p(policy.FREQUENCY_SATURATION))
    if (n >= policy.FREQUENT_ACCESSES and hours_since_access is not None
            and hours_since_access <= policy.FREQUENT_BOOST_WINDOW_H):
        base *= policy.FREQUENT_WEEKLY_BOOST
    return min(1.0, base)


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


def tier_at(now: float, occurred_at: float, learned_at: float | None,
            last_accessed_at: float | None, access_count: int) -> Tier:
    """A memory's tier at ``now``, counted from the latest of when it happened, when Kept
    learned it and when it was last read: a fact learned today from a conversation in May is
    hot today, not cold on day one (issue 15; retention counts from the later of happened and
    learned too, docs/memory-model.md#decay-and-archival). The one rule for summaries, the lists,
    Insights and Explain."""
    reference = max(x for x in (occurred_at, learned_at, last_accessed_at) if x is not None)
    return tier((now - reference) / policy.DAY, access_count)


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
               user_validated: bool | None, usage_success: float | None) -> float:
    """003 weighted confidence. ``user_validated`` None: not reviewed by the person yet;
    ``usage_success`` None: no feedback recorded (Kept records none yet). Unknown evidence
    counts as the neutral ``policy.CONF_UNKNOWN``, not as evidence against: with 0 an
    unreviewed fact could never pass .70, and the resolution rule "the newer fact wins above
    .7" (docs/memory-model.md#confidence) could never fire."""
    user = policy.CONF_UNKNOWN if user_validated is None else float(user_validated)
    usage = policy.CONF_UNKNOWN if usage_success is None else usage_success
    return round(policy.CONF_SOURCE * source_reliability
                 + policy.CONF_CORROBORATION * corroboration + policy.CONF_RECENCY * recency_
                 + policy.CONF_USER * user + policy.CONF_USAGE * usage, 4)


def corroboration(sources: int) -> float:
    """One source: 0; each further independent source halves the remaining doubt (2: .5,
    3: .75, 4: .875)."""
    return 1.0 - 0.5 ** max(0, sources - 1)


def derived_confidence(source_reliability: float, sources: int, decay_class: str,
                       hours_since_source: float) -> float:
    """The confidence of something consolidation derives (a fact, a habit): the extractor's
    reliability for the pattern, how many sources say it, how recent the newest source is;
    not reviewed by the person and never used yet."""
    return confidence(source_reliability, corroboration(sources),
                      recency(decay_class, hours_since_source), None, None)


def user_validation(confirmed: bool, corrected: bool) -> float | None:
    """003 user validation from what the person did (docs/memory-model.md#confidence): confirmed
    it: 1.0; corrected it (the replacement is theirs): 0.0; neither: None (unknown)."""
    if confirmed:
        return 1.0
    if corrected:
        return 0.0
    return None


def usage_success(uses: int, contradicted: bool) -> float | None:
    """003 usage success: None before any use; used ``uses`` times by recall or a context
    briefing and not contradicted since: 1 - .5 ** (uses + 1), rising from the neutral .5 as
    corroboration does; contradicted after being used: ``policy.USAGE_CONTRADICTED``."""
    if uses <= 0:
        return None
    if contradicted:
        return policy.USAGE_CONTRADICTED
    return 1.0 - 0.5 ** (uses + 1)


def moved_confidence(stored: float, applied_user: float | None, applied_usage: float | None,
                     user: float | None, usage: float | None) -> float:
    """The stored confidence with its user-validation and usage-success factors moved from the
    values it was computed with (``applied_*``; None = unknown) to the new ones: only their
    weighted difference changes, so source reliability, corroboration and recency stay as
    computed (they are not stored apart)."""
    def v(x: float | None) -> float:
        return policy.CONF_UNKNOWN if x is None else x
    moved = (stored + policy.CONF_USER * (v(user) - v(applied_user))
             + policy.CONF_USAGE * (v(usage) - v(applied_usage)))
    return round(min(1.0, max(0.0, moved)), 4)


def booster_interval_days(composite_: float) -> float | None:
    """002 scheduled boosters: days between boosts for a memory of this composite (> .8 daily,
    .6-.8 every 3 days, .4-.6 weekly), None below .4 (never boosted)."""
    (top, top_days), *rest = policy.BOOSTER_BANDS
    if composite_ > top:
        return top_days
    for lowest, days in rest:
        if composite_ >= lowest:
            return days
    return None


def booster_due(composite_: float, boosted_at: float | None, since: float, now: float) -> bool:
    """A boost is due when the memory's band has one and its interval has passed since the last
    boost (or, never boosted, since ``since``: when Kept learned it)."""
    days = booster_interval_days(composite_)
    if days is None:
        return False
    last = boosted_at if boosted_at is not None else since
    return now - last >= days * policy.DAY


def live(decay_class: str, occurred_at: float, last_accessed_at: float | None, access_count: int,
         importance: float, emotional: float, social: float, now: float
         ) -> tuple[float, float, float]:
    """(recency, frequency, composite) at ``now``, computed at read time from the later of when
    it happened and when it was last used (issue 27: a stored recency goes stale between
    runs). The one formula recall ranks by, explain shows and decay stores."""
    reference = max(x for x in (occurred_at, last_accessed_at) if x is not None)
    rec = recency(decay_class, (now - reference) / policy.HOUR)
    freq = frequency(access_count, (now - last_accessed_at) / policy.HOUR
                     if last_accessed_at is not None else None)
    return rec, freq, composite(importance, rec, freq, emotional, social)
