"""Plain-data views for the window: pages of memories, entities, the timeline, insights.
Layer: app. Runs on: any worker thread (reads only)."""

from __future__ import annotations

from app import policy
from app.api import (  # noqa: F401  (re-exported: the old import paths)
    LIVE,
    Currency,
    EntityCard,
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
from app.domain.memory import Memory, Status, Store
from app.errors import NotFound
from app.ports import BrowseRow, BrowseRows, Connection, Database, NamedEntity, ScopedRow
from app.services import monitoring, scoring


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

    def agent_page(self, agent: str, after: tuple[float, int] | None, limit: int) -> Page:
        """Assistant ``agent``'s own memories, newest first (``storage.browse.agent_page``)."""
        now = self.clock.now()
        found = self.db.read(lambda c: self.rows.agent_page(c, agent, after, limit))
        out = tuple(_row(r, now) for r in found)
        last = out[-1] if len(out) == limit else None
        return Page(out, None if last is None else (last.occurred_at, int(last.id)))

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

    def entity_names(self, ids: list[int]) -> dict[int, str]:
        """Entity id -> name, merged ones included (issue 27 item 3)."""
        return dict(self.db.read(lambda c: self.rows.entity_names(c, ids)))

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
            raw = rows.monitoring(c, now - period * policy.DAY, policy.USED_WITHIN_S,
                                  policy.QUALITY_COMPOSITE)
            return Insights(by_store, by_tier, rows.health(c), tuple(rows.statistics(c)),
                            monitoring.metrics(raw, period), dict(raw["reads_by_store"]),
                            period)
        period = policy.INSIGHTS_PERIOD_D
        return self.db.read(read)

    # --- assistants' browsing (issue 26): ``agent`` None is every scope -------------------
    def memory_row(self, m: Memory) -> MemoryRow:
        """One whole memory as a list row (its full text), with its currency mark."""
        now = self.clock.now()
        return MemoryRow(m.id, m.store, m.text, m.occurred_at, m.speaker, m.status,
                         m.scores.composite, m.confidence, m.user_validated,
                         scoring.tier_at(now, m.occurred_at, m.created_at, m.last_accessed_at,
                                         m.access_count), m.agent,
                         _currency(m.status, m.valid_until, m.superseded_by, now))

    def recent(self, agent: str | None, store: str | None, limit: int) -> list[MemoryRow]:
        now = self.clock.now()
        found = self.db.read(lambda c: self.rows.recent(c, agent=agent, store=store,
                                                        limit=limit))
        return [_scoped_row(r, now) for r in found]

    def entity_card(self, name: str, agent: str | None, limit: int) -> EntityCard:
        """The entities named ``name`` that ``agent`` sees and the facts about that name it
        sees: current first, then the earlier ones (replaced, ended or archived)."""
        key = name.strip().casefold()
        now = self.clock.now()

        def read(c: Connection) -> tuple[list[NamedEntity], list[ScopedRow]]:
            return (self.rows.entities_named(c, key, agent),
                    self.rows.entity_facts(c, key, agent, limit))
        named, facts = self.db.read(read)
        if not named and not facts:
            raise NotFound(f"Kept knows no one and nothing named {name.strip()!r}.",
                           hint="Try recall with the name, or another spelling.")
        rows = [_scoped_row(r, now) for r in facts]
        first = named[0] if named else None
        return EntityCard(
            name=first.name if first else name.strip(),
            kind=first.kind if first else None,  # type: ignore[arg-type]  # the table's CHECK
            summary=next((e.summary for e in named if e.summary), None),
            entity_ids=tuple(EntityId(e.id) for e in named),
            current=tuple(r for r in rows if r.currency is None),
            earlier=tuple(r for r in rows if r.currency is not None))


def _currency(status: str, valid_until: float | None, superseded_by: int | None, now: float
              ) -> Currency | None:
    """None while it holds (archived ones too: put aside, not untrue); else ``superseded``:
    replaced (a newer version, ``later_id``) or ended (``ended_at``)."""
    if status != Status.SUPERSEDED and (valid_until is None or valid_until > now):
        return None
    return Currency("superseded", None if superseded_by is None else MemoryId(superseded_by),
                    None, valid_until)


def _scoped_row(r: ScopedRow, now: float) -> MemoryRow:
    row = _row(r.row, now)
    return MemoryRow(row.id, row.store, row.text, row.occurred_at, row.speaker, row.status,
                     row.composite, row.confidence, row.user_validated, row.tier, row.agent,
                     _currency(r.row.status, r.valid_until, r.superseded_by, now))
