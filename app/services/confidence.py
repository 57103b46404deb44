"""003 confidence factors that move (docs/memory-model.md#confidence, issue 27 item 6): user
validation from the person's confirmations and corrections, usage success from being used by
recall or a context briefing and not contradicted since. Layer: app. Runs on: whichever thread
holds the write transaction it is given (recall's touch, the consolidation step ``scores``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from app import policy
from app.ports import Connection, ConsolidationRows, FactorRow, RecallRows
from app.services import scoring

if TYPE_CHECKING:
    from app.services.consolidation.runlog import RunLog


def factors(r: FactorRow) -> tuple[float | None, float | None]:
    """(user validation, usage success) of one memory, None where unknown."""
    return (scoring.user_validation(bool(r.user_validated), bool(r.corrected)),
            scoring.usage_success(r.access_count, bool(r.contradicted)))


def confidence_updates(found: Sequence[FactorRow]
                       ) -> list[tuple[FactorRow, tuple[float, float | None, float | None, int]]]:
    """The facts and habits whose confidence factors moved, with their new (confidence,
    user validation, usage success, id). What the person confirmed keeps 1.0: their word is the
    whole of it (``Vault.confirm``), not one factor of five."""
    out = []
    for r in found:
        if r.store not in policy.CONFIDENCE_STORES:
            continue
        user, usage = factors(r)
        if (user, usage) == (r.applied_user, r.applied_usage):
            continue
        conf = 1.0 if r.user_validated else scoring.moved_confidence(
            r.confidence, r.applied_user, r.applied_usage, user, usage)
        out.append((r, (conf, user, usage, r.id)))
    return out


def refresh_confidence(conn: Connection, rows: ConsolidationRows | RecallRows,
                       ids: Sequence[int] | None, rl: RunLog | None = None) -> int:
    """Move the confidence of ``ids`` (None: every active fact and habit) to their current
    factors; logged with the old values when ``rl`` is given. Returns how many moved."""
    found = rows.factor_rows(conn, ids, policy.CONFIDENCE_STORES)
    moved = confidence_updates(found)
    if rl is not None:
        for r, _new in moved:
            rl.change(conn, "confidence_factors", r.id, old=r.confidence, user=r.applied_user,
                      usage=r.applied_usage)
        rl.counts["confidence_moved"] += len(moved)
    rows.set_confidence_factors(conn, [new for _r, new in moved])
    return len(moved)


def live(r: FactorRow) -> tuple[float, float | None, float | None]:
    """(confidence, user validation, usage success) as they stand now, for explain: what the
    next touch or run would store, so explain never shows a factor gone stale."""
    for _r, (conf, user, usage, _id) in confidence_updates([r]):
        return conf, user, usage
    return r.confidence, r.applied_user, r.applied_usage
