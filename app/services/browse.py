"""Plain-data views for the window: pages of memories, entities, insights. Layer: app."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from app.domain.memory import MemoryId
from app.services import scoring
from storage import browse

LIVE = browse.LIVE


@dataclass(frozen=True, slots=True)
class MemoryQuery:
    """What a list shows: a store, a status (active / archived / ``LIVE`` = active or archived,
    what the person has not forgotten or replaced / None = all), an entity, a day."""

    store: str | None = None
    status: str | None = "active"
    entity_id: int | None = None
    day: str | None = None  # YYYY-MM-DD

    def day_range(self) -> tuple[float, float] | None:
        if not self.day:
            return None
        start = datetime.fromisoformat(self.day).replace(tzinfo=UTC)
        return start.timestamp(), (start + timedelta(days=1)).timestamp()


@dataclass(frozen=True, slots=True)
class MemoryRow:
    id: MemoryId
    store: str
    text: str
    occurred_at: float
    speaker: str | None
    status: str
    composite: float
    confidence: float
    user_validated: bool
    tier: str


@dataclass(frozen=True, slots=True)
class Page:
    rows: tuple[MemoryRow, ...]
    next: tuple[float, int] | None  # cursor for the next page, None when exhausted


def _row(r: tuple[Any, ...], now: float) -> MemoryRow:
    reference = max(x for x in (r[3], r[10]) if x is not None)
    tier = scoring.tier((now - reference) / 86400, r[9]).value
    return MemoryRow(MemoryId(r[0]), r[1], r[2], r[3], r[4], r[5], r[6], r[7], bool(r[8]), tier)


def page(vault: Any, q: MemoryQuery, after: tuple[float, int] | None, limit: int) -> Page:
    now = vault.clock.now()
    rows = vault.db.read(lambda c: browse.page(c, store=q.store, status=q.status,
                                              entity_id=q.entity_id, day=q.day_range(),
                                              after=after, limit=limit))
    out = tuple(_row(r, now) for r in rows)
    nxt = (out[-1].occurred_at, int(out[-1].id)) if len(out) == limit else None
    return Page(out, nxt)


def count(vault: Any, q: MemoryQuery) -> int:
    return int(vault.db.read(lambda c: browse.count(c, store=q.store, status=q.status,
                                                   entity_id=q.entity_id, day=q.day_range())))


@dataclass(frozen=True, slots=True)
class EntityRow:
    id: int
    kind: str
    name: str
    summary: str | None
    mentions: int


def entities(vault: Any, kinds: tuple[str, ...]) -> list[EntityRow]:
    return [EntityRow(*r) for r in vault.db.read(lambda c: browse.entities(c, kinds))]


@dataclass(frozen=True, slots=True)
class Insights:
    by_store: dict[str, int]
    by_tier: dict[str, int]
    health: dict[str, float]
    statistics: tuple[tuple[str, float, int, str], ...]


def insights(vault: Any) -> Insights:
    now = vault.clock.now()

    def read(c: Any) -> Insights:
        by_store: dict[str, int] = {}
        by_tier = {"hot": 0, "warm": 0, "cold": 0}
        for store, occurred, last, count_ in browse.tier_inputs(c):
            by_store[store] = by_store.get(store, 0) + 1
            reference = max(x for x in (occurred, last) if x is not None)
            by_tier[scoring.tier((now - reference) / 86400, count_).value] += 1
        return Insights(by_store, by_tier, browse.health(c), tuple(browse.statistics(c)))
    return vault.db.read(read)  # type: ignore[no-any-return]
