"""An episode's outcome and the person's rating (issue 27 item 8, migration 0024). Layer:
storage. Runs on: the db-writer (writes) or a reader thread (reads); every function takes
the connection it is lent. ``storage.repo`` (the facade's ``MemoryRows``) and
``storage.consolidation_rows`` (the pipeline's) re-export what each uses.
"""

from __future__ import annotations

from app.ports import EpisodeOutcome, OutcomeTurn
from storage.sqlcipher import Connection


def episode_outcome(conn: Connection, mid: int) -> EpisodeOutcome:
    row = conn.execute("SELECT rating, outcome, outcome_by, rated_at FROM episode "
                       "WHERE memory_id = ?", (mid,)).fetchone()
    if row is None:
        return EpisodeOutcome(None, None, None, None)
    return EpisodeOutcome(None if row[0] is None else int(row[0]),
                          None if row[1] is None else str(row[1]),
                          None if row[2] is None else str(row[2]),
                          None if row[3] is None else float(row[3]))


def set_episode_outcome(conn: Connection, mid: int, rating: int | None, outcome: str | None,
                        outcome_by: str | None, at: float | None) -> None:
    """Write the four values as given (an episode without its side row gets one)."""
    conn.execute(
        "INSERT INTO episode (memory_id, rating, outcome, outcome_by, rated_at) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT(memory_id) DO UPDATE SET rating = excluded.rating, "
        "outcome = excluded.outcome, outcome_by = excluded.outcome_by, "
        "rated_at = excluded.rated_at", (mid, rating, outcome, outcome_by, at))


def episode_outcomes(conn: Connection) -> dict[int, EpisodeOutcome]:
    """Every active episode the person rated or whose outcome is known, by id."""
    return {int(r[0]): EpisodeOutcome(None if r[1] is None else int(r[1]),
                                      None if r[2] is None else str(r[2]),
                                      None if r[3] is None else str(r[3]),
                                      None if r[4] is None else float(r[4]))
            for r in conn.execute(
                "SELECT e.memory_id, e.rating, e.outcome, e.outcome_by, e.rated_at FROM episode e "
                "JOIN memory m ON m.id = e.memory_id WHERE m.status = 'active' AND "
                "(e.rating IS NOT NULL OR e.outcome_by IS NOT NULL)")}


def outcome_turns(conn: Connection) -> list[OutcomeTurn]:
    """Active episodes said in a conversation, in conversation and turn order."""
    return [OutcomeTurn(int(r[0]), str(r[1]), str(r[2]), str(r[3]), float(r[4]))
            for r in conn.execute(
                "SELECT id, text, coalesce(speaker, ''), session, occurred_at FROM memory "
                "WHERE store = 'episodic' AND status = 'active' AND session IS NOT NULL "
                "ORDER BY session, coalesce(seq, 0), occurred_at, id")]
