"""Rows for the scores of issue 27 item 6 (docs/memory-model.md#scores): 002's scheduled boosters,
003's moving confidence factors and the working -> episodic promotion of what a request used.
Layer: storage. Reads run on a reader; writes inside the caller's ``Database.write`` transaction.

Part of ``app.ports.ConsolidationRows``, ``RecallRows`` and ``ContextRows`` (re-exported by
storage/consolidation_rows.py and storage/repo.py). Nothing here decides: the bands, factors and
thresholds are app/services/scoring.py's and app/policy.py's.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.ports import BoostRow, FactorRow
from storage.batching import SQL_VARIABLES
from storage.sqlcipher import Connection

_FACTOR_COLUMNS = (
    "m.id, m.store, m.confidence, m.access_count, m.user_validated, m.conf_user, m.conf_usage, "
    "EXISTS (SELECT 1 FROM memory r WHERE r.id = m.superseded_by AND r.user_validated = 1), "
    "EXISTS (SELECT 1 FROM link l WHERE l.kind = 'CONTRADICTS' AND (l.src = m.id "
    "OR l.dst = m.id))")


def boost_rows(conn: Connection, stores: Sequence[str]) -> list[BoostRow]:
    """Active memories of ``stores`` with what the booster schedule needs."""
    marks = ",".join("?" * len(stores))
    return [BoostRow(*r) for r in conn.execute(
        "SELECT id, composite, importance, boosted_at, created_at FROM memory "
        f"WHERE status = 'active' AND store IN ({marks})", list(stores))]


def set_boosts(conn: Connection, updates: Sequence[tuple[float, float | None, int]]) -> None:
    """(importance, boosted_at, id) for each memory boosted (or, on undo, put back)."""
    conn.executemany("UPDATE memory SET importance = ?, boosted_at = ? WHERE id = ?", updates)


def factor_rows(conn: Connection, ids: Sequence[int] | None = None,
                stores: Sequence[str] = ()) -> list[FactorRow]:
    """The confidence factors' inputs: of ``ids`` (any status), or of every active memory of
    ``stores`` when ``ids`` is None."""
    if ids is None:
        marks = ",".join("?" * len(stores))
        return [FactorRow(*r) for r in conn.execute(
            f"SELECT {_FACTOR_COLUMNS} FROM memory m WHERE m.status != 'archived' "
            f"AND m.store IN ({marks})", list(stores))]
    out: list[FactorRow] = []
    unique = sorted({int(i) for i in ids})
    for start in range(0, len(unique), SQL_VARIABLES):
        chunk = unique[start:start + SQL_VARIABLES]
        marks = ",".join("?" * len(chunk))
        out += [FactorRow(*r) for r in conn.execute(
            f"SELECT {_FACTOR_COLUMNS} FROM memory m WHERE m.id IN ({marks})", chunk)]
    return out


def set_confidence_factors(conn: Connection,
                           updates: Sequence[tuple[float, float | None, float | None, int]]
                           ) -> None:
    """(confidence, conf_user, conf_usage, id): the confidence and the factors it now includes."""
    conn.executemany("UPDATE memory SET confidence = ?, conf_user = ?, conf_usage = ? "
                     "WHERE id = ?", updates)


def used_turns_unpromoted(conn: Connection, min_accesses: int) -> list[int]:
    """Active short-term turns used at least ``min_accesses`` times that have no episode: none
    derived at import (an episode's DERIVED_FROM points at its turn) and none promoted."""
    return [r[0] for r in conn.execute(
        "SELECT m.id FROM memory m WHERE m.store = 'short_term' AND m.status = 'active' "
        "AND m.access_count >= ? AND NOT EXISTS (SELECT 1 FROM link l JOIN memory e "
        "ON e.id = l.src WHERE l.dst = m.id AND e.store = 'episodic' "
        "AND l.kind IN ('DERIVED_FROM', 'PROMOTED_FROM')) ORDER BY m.id", (min_accesses,))]
