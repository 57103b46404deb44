"""Plain-data views for the window: pages of memories, entities, the timeline, insights.
Layer: app. Runs on: any worker thread (reads only)."""

from __future__ import annotations

from app.api import (  # noqa: F401  (re-exported: the old import paths)
    LIVE,
    EntityId,
    EntityRow,
    Insights,
    MemoryId,
    MemoryQuery,
    MemoryRecord,
    MemoryRow,
    Page,
    StatisticRow,
)
from app.clock import Clock
from app.domain.memory import Status, Store
from app.ports import BrowseRow, BrowseRows, Connection, Database
from app.services import scoring


def _row(r: BrowseRow, now: float) -> MemoryRow:
    tier = scoring.tier_at(now, r.occurred_at, r.created_at, r.last_accessed_at,
                           r.access_count)
    return MemoryRow(MemoryId(r.id), Store(r.store), r.text, r.occurred_at, r.speaker,
                     Status(r.status),
                     r.composite, r.confidence, bool(r.user_validated), tier, r.agent)


class BrowseService:
    """The window's lists, keyset-paged (never OFFSET). ``rows``: the queries
    (``storage.browse``)."""

    def __init__(self, db: Database, clock: Clock, rows: BrowseRows) -> None:
        self.db = db
        self.clock = clock
        self.rows = rows

    def page(self, q: MemoryQuery, after: tuple[float, int] | None, limit: int) -> Page:
        now = self.clock.now()
        found = self.db.read(lambda c: self.rows.page(
            c, store=q.store, status=q.status, entity_id=q.entity_id, day=q.day_range(),
            after=after, limit=limit, fold=q.fold, session_of=q.session_of, order=q.order,
            ids=q.ids))
        out = tuple(_row(r, now) for r in found)
        nxt = None
        if len(out) == limit:  # the keyset cursor: the last row's sort key and id
            last = out[-1]
            key = last.composite if q.order in ("strongest", "weakest") else last.occurred_at
            nxt = (key, int(last.id))
        return Page(out, nxt)

    def count(self, q: MemoryQuery) -> int:
        return int(self.db.read(lambda c: self.rows.count(
            c, store=q.store, status=q.status, entity_id=q.entity_id, day=q.day_range(),
            fold=q.fold, session_of=q.session_of, ids=q.ids)))

    def export_page(self, q: MemoryQuery, after: int, limit: int) -> list[MemoryRecord]:
        """Whole memories for an export, by id (``storage.browse.export_page``)."""
        limit = max(1, min(int(limit), 1000))
        return list(self.db.read(lambda c: self.rows.export_page(
            c, store=q.store, status=q.status, entity_id=q.entity_id, day=q.day_range(),
            after=int(after), limit=limit)))

    def entities(self, kinds: tuple[str, ...]) -> list[EntityRow]:
        return self.db.read(lambda c: self.rows.entities(c, kinds))

    def timeline_days(self, limit: int) -> list[tuple[str, int]]:
        return list(self.db.read(lambda c: self.rows.timeline_days(c, limit)))

    def insights(self) -> Insights:
        now = self.clock.now()
        rows = self.rows

        def read(c: Connection) -> Insights:
            by_store: dict[str, int] = {}
            by_tier = {"hot": 0, "warm": 0, "cold": 0}
            for r in rows.tier_inputs(c):
                by_store[r.store] = by_store.get(r.store, 0) + 1
                by_tier[scoring.tier_at(now, r.occurred_at, r.created_at, r.last_accessed_at,
                                        r.access_count).value] += 1
            return Insights(by_store, by_tier, rows.health(c), tuple(rows.statistics(c)))
        return self.db.read(read)
