"""Working memory: the context assembled for one request (docs/memory-model.md#context-assembly),
and docs/memory-model.md#explain. Layer: app. Runs on: any worker thread. Working memory is never
persisted.
"""

from __future__ import annotations

from collections.abc import Sequence

from app import policy
from app.api import (  # noqa: F401  (re-exported: the old import path)
    SECTIONS,
    Context,
    ContextItem,
    ContextSection,
    Explanation,
    Filters,
    Hit,
    LinkView,
    RoutingView,
    SourceView,
)
from app.clock import to_iso
from app.domain.memory import Memory, MemoryId, Store
from app.errors import NotFound
from app.ports import Connection, ContextRows, Database
from app.services import confidence, currency, scoring
from app.services.recall import RecallService
from app.services.text import approx_tokens

PEOPLE_IN_CONTEXT = 5  # entity summaries at most, from the entities the hits mention


def _with(text: str, aside: str) -> str:
    return f"{text} {aside}" if aside else text


def _line(hit: Hit) -> str:
    when = to_iso(hit.occurred_at)
    who = f"{hit.speaker}: " if hit.speaker else ""
    return f"({when[:10] if when else '?'}) {who}{hit.text}"


def fill_with_quotas(entries: Sequence[tuple[int, str]], budget: int) -> set[int]:
    """Which entries (cost in tokens, store or "people"), in priority order, a briefing of
    ``budget`` takes (DESIGN section 6, ``policy.CONTEXT_STORE_SHARE``): whole items only (one
    that does not fit is left out, never cut, and a smaller one after it may still fit), each
    store's group at most its share of the budget, the shares counted among the groups that
    have something to brief (facts and episodes alone: half each); then budget a group left
    unused (it had fewer items than its share) goes to what the quotas left out, in the same
    order. Returns their indexes."""
    present = {policy.CONTEXT_QUOTA_GROUP.get(store, store) for _cost, store in entries}
    total = sum(policy.CONTEXT_STORE_SHARE.get(g, 0.0) for g in present) or 1.0
    quota = {g: share / total * budget for g, share in policy.CONTEXT_STORE_SHARE.items()}
    spent: dict[str, int] = {}
    chosen: set[int] = set()
    waiting: list[int] = []
    used = 0
    for n, (cost, store) in enumerate(entries):
        if used + cost > budget:
            continue
        group = policy.CONTEXT_QUOTA_GROUP.get(store, store)
        if spent.get(group, 0) + cost > quota.get(group, budget):
            waiting.append(n)
            continue
        spent[group] = spent.get(group, 0) + cost
        chosen.add(n)
        used += cost
    for n in waiting:
        if used + entries[n][0] <= budget:
            chosen.add(n)
            used += entries[n][0]
    return chosen


class ContextService:
    """Context assembly and explain over ``recall``; ``rows``: the queries (``storage.repo``).
    Stateless apart from its collaborators."""

    def __init__(self, db: Database, recall: RecallService, rows: ContextRows) -> None:
        self.db = db
        self.recall = recall
        self.rows = rows

    def assemble(self, query: str, hits: Sequence[Hit], *, budget: int, now: float) -> Context:
        """Fill the budget in priority order: procedures and preferences, entity summaries,
        facts, a timeline (chronological when the query is temporal), then the latest
        turns."""
        plan = self.recall.analyze(query, now)
        buckets: dict[ContextSection, list[tuple[int, str]]] = {s: [] for s in SECTIONS}
        marks = {int(h.id): h.currency for h in hits}
        by_id = {int(h.id): h for h in hits}
        for h in hits:
            aside = currency.note(h.currency)
            if h.store == "procedural":
                buckets["procedures"].append((h.id, _with(h.text, aside)))
            elif h.store in ("semantic", "implicit"):
                buckets["facts"].append((h.id, _with(h.text, aside)))
            elif h.store == "episodic":
                buckets["timeline"].append((h.id, _with(_line(h), aside)))
            elif h.store == "short_term":
                buckets["recent"].append((h.id, _with(_line(h), aside)))
        if plan.temporal:
            order = {h.id: h.occurred_at for h in hits}
            buckets["timeline"].sort(key=lambda item: order[MemoryId(item[0])])
        ids = [h.id for h in hits]
        people = self.db.read(
            lambda c: self.rows.entity_summaries(c, ids, PEOPLE_IN_CONTEXT)) if ids else []
        entities = {}
        for e in people:
            # An entity has no memory id: its item names it (``entity``), never a made-up id.
            entities[-int(e.id)] = e
            buckets["people"].append((-int(e.id), f"{e.name}: {e.summary}"))
        items: list[ContextItem] = []
        used = 0
        entries = [(section, mid, text, approx_tokens(text) + 4,
                    "people" if mid < 0 else by_id[MemoryId(mid)].store.value)
                   for section in SECTIONS for mid, text in buckets[section]]
        chosen = fill_with_quotas([(cost, store) for _s, _m, _t, cost, store in entries], budget)
        for n, (section, mid, text, cost, _store) in enumerate(entries):
            if n in chosen:
                ent = entities.get(mid) if mid < 0 else None
                if ent is not None:
                    items.append(ContextItem(None, section, text, cost, None, ent.name,
                                             ent.kind))
                else:
                    hit = by_id.get(mid)
                    items.append(ContextItem(
                        mid, section, text, cost, marks.get(mid),
                        confirmed_by_person=hit.confirmed_by_person if hit else False,
                        written_by=hit.written_by if hit else "person"))
                used += cost
        return Context(query, budget, used, tuple(items))

    def _live_scores(self, m: Memory, now: float) -> dict[str, float]:
        """The scores as they stand at ``now`` (issue 27 item 6): recency and frequency from the
        last access or occurrence with the policy's decay rates (what recall ranks by), never
        the value stored at the last run; confidence with its two moving factors (user
        validation, usage success; unknown shows as ``policy.CONF_UNKNOWN``)."""
        s = m.scores
        rec, freq, comp = scoring.live(m.decay_class, m.occurred_at, m.last_accessed_at,
                                       m.access_count, s.importance, s.emotional, s.social, now)
        found = self.db.read(lambda c: self.rows.factor_rows(c, [int(m.id)]))
        conf, user, usage = (confidence.live(found[0]) if found
                             else (m.confidence, None, None))
        unknown = policy.CONF_UNKNOWN
        return {"importance": s.importance, "recency": rec, "frequency": freq,
                "emotional": s.emotional, "social": s.social, "composite": comp,
                "confidence": conf,
                "user_validation": unknown if user is None else user,
                "usage_success": unknown if usage is None else usage,
                "access_count": float(m.access_count)}

    def explain(self, mid: int, query: str | None, now: float, viewer: str | None = None
                ) -> Explanation:
        """``viewer``: the assistant asking (a pending change shows only if it can see the
        value proposed); None: the person."""
        rows = self.rows
        m = self.db.read(lambda c: rows.get_memory(c, mid))
        if m is None:
            raise NotFound()
        breakdown = None
        mark = None
        if query:
            hits = self.recall.recall(query, k=200, now=now,
                                      filters=Filters(include_archived=True,
                                                      include_superseded=True),
                                      dedupe=False)
            hit = next((h for h in hits if h.id == mid), None)
            breakdown = dict(hit.breakdown) if hit else {"final": 0.0,
                                                         "note_not_in_top_200": 1.0}
            mark = hit.currency if hit else None
        tier = scoring.tier_at(now, m.occurred_at, m.created_at, m.last_accessed_at,
                               m.access_count)

        def sources(conn: Connection) -> tuple[list[SourceView], list[LinkView],
                                               RoutingView | None]:
            chain = rows.provenance(conn, [mid])[mid]
            found = rows.get_memories(conn, chain)
            srcs = [SourceView(s.id, s.store, s.text, s.ref, s.speaker,
                               to_iso(s.occurred_at))
                    for s in (found[MemoryId(x)] for x in chain if MemoryId(x) in found)]
            return srcs, rows.links_of(conn, mid), _routing(rows.routing_of(conn, mid))
        srcs, links, routing = self.db.read(sources)
        from app.services import assistant_change as ac
        if mark is not None and mark.state == "pending":
            mark = None  # described again below, for this viewer
        if mark is None:  # no query, or not among its hits: the memory's own standing
            mark = ac.own_currency(m.status.value, m.superseded_by, m.valid_until)
        d = ac.describe(self.db, rows, [ac.Said(int(m.id), m.agent, m.store.value,
                                                bool(m.user_validated), mark)], viewer)[int(m.id)]
        return Explanation(
            id=m.id, store=m.store, text=m.text, status=m.status, tier=tier,
            scores=self._live_scores(m, now),
            breakdown=breakdown, sources=tuple(srcs), links=tuple(links), currency=d.currency,
            confirmed_by_person=d.confirmed_by_person, written_by=d.written_by,
            routing=routing)


def _routing(found: tuple[float, Sequence[str], str, str] | None) -> RoutingView | None:
    """The salience routing of a turn, or of the turn an episode was made from (as
    ``ContextRows.routing_of`` read it in explain's one read)."""
    if found is None:
        return None
    score, stores, reason, by = found
    return RoutingView(score, tuple(Store(s) for s in stores), reason, by)
