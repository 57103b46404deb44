"""002's monitoring numbers for Insights and ``kept insights`` (issue 27 item 9): retrieval
efficiency, layer utilisation, promotion rate, archive rate and the quality ratio, each said
in plain words with a tooltip that explains it. Layer: app. Pure: the counts come from
``storage.browse.monitoring``.

Where Kept differs from 002 on purpose: retrieval efficiency counts a recalled memory as
used when the same assistant then opens it (``explain``) or gets it in a context within the
hour, because Kept never sees the assistant's answer; layer utilisation counts assistants'
reads (recall, context, explain), not the window's searches; promotion is episodic ->
semantic (002's working -> episodic has no stored working memory to promote here).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app import policy, words
from app.api import InsightMetric


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%"


def metrics(raw: Mapping[str, Any], period_d: int = policy.INSIGHTS_PERIOD_D
            ) -> tuple[InsightMetric, ...]:
    """The five numbers, in 002's order, from ``storage.browse.monitoring``'s counts."""
    span = f"the last {period_d} days"
    recalls, recalled, used = int(raw["recalls"]), int(raw["recalled"]), int(raw["used"])
    reads: dict[str, int] = dict(raw["reads_by_store"])
    total_reads = sum(reads.values())
    active, high = int(raw["active"]), int(raw["high_quality"])
    promoted, archived = int(raw["promoted"]), int(raw["archived"])
    weeks = period_d / 7

    eff = InsightMetric(
        "retrieval_efficiency", "Recalled memories used",
        used / recalled if recalled else None,
        (f"{_pct(used, recalled)} ({used:,} of {recalled:,}; "
         f"{recalled / recalls:.1f} a search, {words.count(recalls, 'search', 'searches')})"
         if recalled else "No assistant searched yet"),
        f"Of the memories assistants' searches returned in {span}, the share the same "
        "assistant then opened or put in its context within the hour. Higher means searches "
        "find what is needed; low means they return much that is not used.")
    top = sorted(reads.items(), key=lambda kv: (-kv[1], kv[0]))
    layers = InsightMetric(
        "layer_utilisation", "What assistants read, by kind",
        top[0][1] / total_reads if total_reads else None,
        (", ".join(f"{words.store_name(s)} {_pct(n, total_reads)}" for s, n in top)
         if total_reads else "Nothing read by an assistant yet"),
        f"Which kinds of memory assistants read in {span} (searches, contexts and "
        "explanations), as shares of all their reads. The number is the largest share.")
    promo = InsightMetric(
        "promotion_rate", "Events that became lasting memories",
        promoted / weeks,
        f"{promoted:,} in {span} ({promoted / weeks:.1f} a week)",
        "Important events used often enough that Kept kept them as lasting memories "
        "(consolidation links each to its event). A handful a week is normal; none means "
        "nothing was used that often.")
    arch = InsightMetric(
        "archive_rate", "Archived",
        archived / period_d,
        f"{archived:,} in {span} ({archived / period_d:.1f} a day)",
        "Memories moved to the Archive in that time, by you or because they faded unused. "
        "Archived memories are kept and can be restored; nothing is deleted.")
    quality = InsightMetric(
        "quality_ratio", "Strong memories",
        high / active if active else None,
        (f"{_pct(high, active)} ({high:,} of {active:,} in your lists)" if active
         else "No memories yet"),
        "The share of the memories in your lists whose strength is above "
        f"{policy.QUALITY_COMPOSITE:.1f} (importance, recency, use, feeling and people together, as at the last "
        "consolidation). Higher means more of what Kept holds is fresh and used.")
    return eff, layers, promo, arch, quality
