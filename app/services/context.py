"""Working memory: the context assembled for one request (DESIGN 6.4), and explain (6.6).
Layer: app. Runs on: any worker thread. Working memory is never persisted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.clock import to_iso
from app.domain.memory import MemoryId
from app.errors import NotFound
from app.services.text import approx_tokens
from storage import repo

SECTIONS = ("procedures", "people", "facts", "timeline", "recent")


@dataclass(frozen=True, slots=True)
class ContextItem:
    id: int
    section: str
    text: str
    tokens: int


@dataclass(frozen=True, slots=True)
class Context:
    query: str
    budget: int
    used: int
    items: tuple[ContextItem, ...]

    def render(self) -> str:
        titles = {"procedures": "How the person works", "people": "People and projects",
                  "facts": "Facts", "timeline": "Timeline", "recent": "Recent conversation"}
        out = []
        for section in SECTIONS:
            items = [i for i in self.items if i.section == section]
            if items:
                out.append(f"## {titles[section]}")
                out += [f"- [{i.id}] {i.text}" for i in items]
        return "\n".join(out)


def _line(hit: Any) -> str:
    when = to_iso(hit.occurred_at)
    who = f"{hit.speaker}: " if hit.speaker else ""
    return f"({when[:10] if when else '?'}) {who}{hit.text}"


def assemble(vault: Any, query: str, hits: list[Any], *, budget: int, now: float) -> Context:
    """Fill the budget in priority order: procedures and preferences, entity summaries, facts,
    a timeline (chronological when the query is temporal), then the latest turns."""
    plan = vault.recall_service.analyze(query, now)
    buckets: dict[str, list[tuple[int, str]]] = {s: [] for s in SECTIONS}
    for h in hits:
        if h.store == "procedural":
            buckets["procedures"].append((h.id, h.text))
        elif h.store in ("semantic", "implicit"):
            buckets["facts"].append((h.id, h.text))
        elif h.store == "episodic":
            buckets["timeline"].append((h.id, _line(h)))
        elif h.store == "short_term":
            buckets["recent"].append((h.id, _line(h)))
    if plan.temporal:
        order = {h.id: h.occurred_at for h in hits}
        buckets["timeline"].sort(key=lambda item: order[item[0]])
    marks = ",".join("?" * len(hits))
    people = vault.db.read(lambda c: c.execute(
        "SELECT DISTINCT e.id, e.name, e.summary FROM entity e JOIN entity_mention em "
        f"ON em.entity_id = e.id WHERE em.memory_id IN ({marks}) AND e.summary IS NOT NULL "
        "LIMIT 5", [h.id for h in hits]).fetchall()) if hits else []
    for eid, name, summary in people:
        buckets["people"].append((-int(eid), f"{name}: {summary}"))
    items: list[ContextItem] = []
    used = 0
    for section in SECTIONS:
        for mid, text in buckets[section]:
            cost = approx_tokens(text) + 4
            if used + cost > budget:
                continue
            items.append(ContextItem(mid, section, text, cost))
            used += cost
    return Context(query, budget, used, tuple(items))


@dataclass(frozen=True, slots=True)
class Explanation:
    id: MemoryId
    store: str
    text: str
    status: str
    tier: str
    scores: dict[str, float]
    breakdown: dict[str, float] | None
    sources: tuple[dict[str, Any], ...]
    links: tuple[dict[str, Any], ...]


def explain(vault: Any, mid: int, query: str | None, now: float) -> Explanation:
    from app.services import scoring
    m = vault.db.read(lambda c: repo.get_memory(c, mid))
    if m is None:
        raise NotFound()
    breakdown = None
    if query:
        from app.services.recall import Filters
        hits = vault.recall_service.recall(query, k=200, now=now,
                                           filters=Filters(include_archived=True,
                                                           include_superseded=True),
                                           dedupe=False)
        hit = next((h for h in hits if h.id == mid), None)
        breakdown = dict(hit.breakdown) if hit else {"final": 0.0, "note_not_in_top_200": 1.0}
    reference = max(x for x in (m.occurred_at, m.last_accessed_at) if x is not None)
    days = (now - reference) / 86400
    tier = scoring.tier(days, m.access_count).value

    def sources(conn: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        chain = repo.provenance(conn, [mid])[mid]
        found = repo.get_memories(conn, chain)
        srcs = [{"id": s.id, "store": s.store.value, "text": s.text, "ref": s.ref,
                 "speaker": s.speaker, "occurred_at": to_iso(s.occurred_at)}
                for s in (found[MemoryId(x)] for x in chain if MemoryId(x) in found)]
        links = [{"src": r[0], "dst": r[1], "kind": r[2], "weight": r[3]} for r in conn.execute(
            "SELECT src, dst, kind, weight FROM link WHERE src = ? OR dst = ?", (mid, mid))]
        return srcs, links
    srcs, links = vault.db.read(sources)
    s = m.scores
    return Explanation(
        id=m.id, store=m.store.value, text=m.text, status=m.status.value, tier=tier,
        scores={"importance": s.importance, "recency": s.recency, "frequency": s.frequency,
                "emotional": s.emotional, "social": s.social, "composite": s.composite,
                "confidence": m.confidence, "access_count": float(m.access_count)},
        breakdown=breakdown, sources=tuple(srcs), links=tuple(links))
