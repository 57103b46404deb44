"""The consolidation step ``scores`` (issue 27 item 6, docs/memory-model.md#scores): 002's scheduled
boosters, 003's confidence factors that move, and the working -> episodic promotion of what a
request used. Layer: app. Runs on: the consolidation worker, inside the pipeline's write
transactions; every change is logged with its inverse, so undoing the run reverts it.

The rules are app/services/scoring.py's and the numbers app/policy.py's; the rows are
storage/scores.py's (through ``ConsolidationRows``).
"""

from __future__ import annotations

from app import policy
from app.domain.memory import Draft, LinkKind, MemoryId, Store
from app.ports import Connection, ConsolidationRows
from app.services import scoring
from app.services.confidence import refresh_confidence
from app.services.consolidation.runlog import RunLog
from app.services.ingest import IngestService


def boost(conn: Connection, rows: ConsolidationRows, rl: RunLog, now: float) -> int:
    """002 scheduled boosters: each active episode, fact and habit whose composite puts it in a
    band (> .8 daily, .6-.8 every 3 days, .4-.6 weekly) and whose interval has passed since its
    last boost gets ``policy.BOOSTER_FACTOR`` on its importance (at most 1.0). Returns how many."""
    updates: list[tuple[float, float | None, int]] = []
    for r in rows.boost_rows(conn, policy.BOOSTED_STORES):
        if not scoring.booster_due(r.composite, r.boosted_at, r.created_at, now):
            continue
        updates.append((min(1.0, r.importance * policy.BOOSTER_FACTOR), now, r.id))
        rl.change(conn, "boost", r.id, importance=r.importance, boosted_at=r.boosted_at)
    rows.set_boosts(conn, updates)
    rl.counts["boosted"] += len(updates)
    return len(updates)


def promote_used_turns(conn: Connection, rows: ConsolidationRows, ingest: IngestService,
                       rl: RunLog, now: float
                       ) -> list[tuple[MemoryId, Draft]]:
    """Working -> episodic (DESIGN section 5, ``policy.PROMOTE_WORKING_ACCESSES``): a turn
    kept short-term only that a request used becomes an episode of its own time, speaker and
    scope, with PROMOTED_FROM to the turn. Returns the new episodes and their drafts (the caller
    embeds them after the transaction)."""
    out: list[tuple[MemoryId, Draft]] = []
    for mid in rows.used_turns_unpromoted(conn, policy.PROMOTE_WORKING_ACCESSES):
        turn = rows.get_memory(conn, mid)
        if turn is None:
            continue
        d = Draft(text=turn.text, store=Store.EPISODIC, occurred_at=turn.occurred_at,
                  speaker=turn.speaker, session=turn.session, seq=turn.seq, ref=turn.ref,
                  agent=turn.agent, context=turn.context,
                  extra={"event_type": "conversation", "actors": [turn.speaker]}
                  if turn.speaker else {"event_type": "conversation"})
        new = ingest.insert(conn, d, now)
        rows.add_link(conn, new, mid, LinkKind.PROMOTED_FROM, now)
        rl.change(conn, "created", new)
        rl.ids["created"].append(new)
        rl.counts["promoted"] += 1
        out.append((new, d))
    return out


__all__ = ["boost", "promote_used_turns", "refresh_confidence"]
