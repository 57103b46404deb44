"""Forget (plan, then execute), correct, history, archive and restore (DESIGN 8).
Layer: app. Runs on: any worker thread.

Forget cannot be undone. The plan lists everything that will go; execution deletes exactly
that in one transaction, checkpoints the WAL (TRUNCATE) so no copy is left in the log, and
drops the ids from the in-RAM index. A plan carries a fingerprint of what it saw; if the vault
changed in between, execution refuses and asks for a new plan.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from typing import Any

from app.errors import AppError, NotFound, ValidationError
from storage import lifecycle

log = logging.getLogger(__name__)

KIND_LABELS = {
    "memory": "memories", "memory_fts": "full-text rows", "vector": "vectors",
    "link": "links", "history": "history entries", "entity": "people and projects",
    "entity_mention": "entity mentions", "contradiction": "contradictions",
    "llm_reply": "stored LLM replies", "llm_reply_source": "LLM reply sources",
    "run_change": "consolidation log entries", "episode": "episode details",
    "fact": "fact details", "procedure": "procedure details", "statistic": "statistics",
}


class PlanOutdated(AppError):
    user_message = "The vault changed since this forget plan was made; review the new plan."
    exit_code = 2


@dataclass(frozen=True, slots=True)
class PlanItem:
    id: int
    store: str
    status: str
    text: str
    role: str  # matched | version | derived | source | staying
    # For a matched memory: how it was matched, "id", "entity" or the field the query was
    # found in ("text", "speaker", "session name", "ref", "agent", ...); for one that stays:
    # the reason it stays.
    reason: str = ""

    @property
    def why(self) -> str:
        """What the plan shows next to the item ("" when it goes without saying)."""
        if self.role == "staying":
            return self.reason
        if self.role == "matched" and self.reason not in ("", "id", "entity", "text"):
            return f"found in its {self.reason}"
        return ""


@dataclass(frozen=True, slots=True)
class ForgetPlan:
    items: tuple[PlanItem, ...]
    entity_ids: tuple[int, ...]
    include_sources: bool
    rows: dict[str, int]            # rows that will be deleted, per table
    index_entries: int              # ids in the in-RAM vector index
    entity_summaries: int           # summaries cleared and regenerated
    statistics_to_recompute: int
    fingerprint: str
    staying: tuple[PlanItem, ...] = ()  # linked to what goes but not going, with reasons

    @property
    def memory_ids(self) -> tuple[int, ...]:
        return tuple(i.id for i in self.items)

    @property
    def total_rows(self) -> int:
        return sum(self.rows.values())

    def groups(self) -> dict[str, int]:
        """Counts by kind, as shown to the person."""
        out: dict[str, int] = {}
        for role in ("matched", "version", "derived", "source"):
            n = sum(1 for i in self.items if i.role == role)
            if n:
                out[{"matched": "matched memories", "version": "earlier versions",
                     "derived": "derived facts and procedures",
                     "source": "source turns and episodes"}[role]] = n
        for table, n in self.rows.items():
            if n and table != "memory":
                out[KIND_LABELS.get(table, table)] = n
        if self.index_entries:
            out["search index entries"] = self.index_entries
        if self.entity_summaries:
            out["entity summaries to rewrite"] = self.entity_summaries
        if self.statistics_to_recompute:
            out["statistics to recompute"] = self.statistics_to_recompute
        return out


@dataclass(frozen=True, slots=True)
class ForgetReport:
    deleted: dict[str, int]
    memories: int
    total_rows: int
    checkpoint_busy: int
    index_removed: int
    note: str = "Forgotten for good: this cannot be undone."


@dataclass(frozen=True, slots=True)
class Version:
    id: int
    text: str
    status: str
    created_at: float
    user_validated: bool
    confidence: float


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    memory_id: int
    at: float
    action: str
    text: str | None
    detail: str | None


@dataclass(frozen=True, slots=True)
class History:
    id: int
    versions: tuple[Version, ...]
    entries: tuple[HistoryEntry, ...]


def _fingerprint(conn: Any, ids: set[int]) -> str:
    h = hashlib.sha256()
    for mid, store, status, text in lifecycle.describe(conn, ids):
        h.update(f"{mid}|{store}|{status}|{len(text)}\n".encode())
    counts = lifecycle.table_counts(conn)
    h.update(repr(sorted(counts.items())).encode())
    return h.hexdigest()


def plan(vault: Any, *, ids: tuple[int, ...] = (), query: str | None = None,
         entity: str | None = None, include_sources: bool = True) -> ForgetPlan:
    """What goes: the matched memories; the earlier versions the person replaced by typing a
    correction (one memory's history); unless kept, the turns and episodes they came from;
    then, until nothing changes, what was derived only from what goes, with its own corrected
    versions. A chain is followed only that far (issue 11, item 6): a newer version learned
    from its own source, a correction the person typed, an older fact with its own source,
    stay, and are listed as staying with the reason."""
    if not ids and not query and not entity:
        raise ValidationError("Say what to forget: ids, a query or an entity.")

    def build(conn: Any) -> ForgetPlan:
        why: dict[int, str] = {}
        entity_ids: set[int] = set()
        if ids:
            known = {r[0] for r in lifecycle.describe(conn, ids)}
            missing = set(int(i) for i in ids) - known
            if missing:
                raise NotFound(f"No memory with id {', '.join(map(str, sorted(missing)))}.")
            why.update({i: "id" for i in known})
        if query:
            for mid, field in lifecycle.match_fields(conn, query).items():
                why.setdefault(mid, field)
        if entity:
            ents, mems = lifecycle.entity_members(conn, entity)
            entity_ids |= ents
            for mid in mems:
                why.setdefault(mid, "entity")
        matched = set(why)
        vers = lifecycle.corrected_versions(conn, matched) - matched
        core = matched | vers
        sources = lifecycle.ancestors(conn, core) - core if include_sources else set()
        gone = core | sources
        derived: set[int] = set()
        while True:
            new = lifecycle.derived_only_from(conn, gone)
            new |= lifecycle.corrected_versions(conn, new | derived)
            new -= gone
            if not new:
                break
            derived |= new
            gone |= new
        roles = {**{i: "source" for i in sources}, **{i: "derived" for i in derived},
                 **{i: "version" for i in vers}, **{i: "matched" for i in matched}}
        items = tuple(PlanItem(mid, store, status, text, roles[mid], why.get(mid, ""))
                      for mid, store, status, text in lifecycle.describe(conn, gone))
        staying = _staying(conn, gone, include_sources)
        rows = lifecycle.dependent_counts(conn, gone, entity_ids)
        orphans = lifecycle.orphaned_entities(conn, gone) | entity_ids
        resum = lifecycle.entities_to_resummarise(conn, gone, orphans)
        stats = int(conn.execute("SELECT count(*) FROM statistic").fetchone()[0])
        return ForgetPlan(items, tuple(sorted(entity_ids)), include_sources,
                          {k: v for k, v in rows.items() if v},
                          sum(1 for i in gone if i in vault.index), len(resum),
                          stats if gone else 0, _fingerprint(conn, gone), staying)
    return vault.db.read(build)  # type: ignore[no-any-return]


def _staying(conn: Any, gone: set[int], include_sources: bool) -> tuple[PlanItem, ...]:
    """Memories joined to what goes by a version, provenance or contradiction link that stay,
    each with the reason, then the sources of those versions (so "the present" is listed whole:
    the newer fact and the turn it was learned from)."""
    reasons: dict[int, str] = {}
    links = lifecycle.boundary_links(conn, gone)
    typed = lifecycle.typed_corrections(conn, {s for s, _d, _k in links})
    back = lifecycle.reinstated(conn, gone)

    def own_sources(mid: int) -> str:
        srcs = sorted(lifecycle.parents(conn, [mid]) - gone)
        if not srcs:
            return "not learned from anything that goes"
        return ("its own source " if len(srcs) == 1 else "its own sources ") + \
            ", ".join(f"#{i}" for i in srcs) + " stay" + ("s" if len(srcs) == 1 else "")

    for src, dst, kind in links:
        if kind != "SUPERSEDES":
            continue
        if src not in gone:      # a newer version stays
            reasons.setdefault(src, f"your typed correction of #{dst}: its own source"
                               if src in typed else f"newer version; {own_sources(src)}")
        else:                    # an older version stays
            again = "; current again" if dst in back else ""
            reasons.setdefault(dst, f"older version; {own_sources(dst)}{again}")
    for src, dst, kind in links:
        if kind in ("DERIVED_FROM", "PROMOTED_FROM"):
            if src not in gone:  # learned from something that goes, and from more
                reasons.setdefault(src, "your typed correction: its own source"
                                   if src in typed else f"also learned from more; "
                                   f"{own_sources(src)}")
            else:
                reasons.setdefault(dst, "a source: kept, as you asked" if not include_sources
                                   else "a source that stays")
        elif kind == "CONTRADICTS":
            other, keep = (dst, src) if src not in gone else (src, dst)
            reasons.setdefault(keep, f"disagreed with #{other}; not learned from it")
    for mid in list(reasons):
        for anc in sorted(lifecycle.ancestors(conn, [mid]) - gone):
            reasons.setdefault(anc, f"source of #{mid}, which stays")
    # In the order found: the versions first, then what else they touch, their sources last.
    order = {mid: n for n, mid in enumerate(reasons)}
    return tuple(sorted((PlanItem(mid, store, status, text, "staying", reasons[mid])
                         for mid, store, status, text in lifecycle.describe(conn, reasons)),
                        key=lambda i: order[i.id]))


def execute(vault: Any, p: ForgetPlan) -> ForgetReport:
    ids = set(p.memory_ids)
    entity_ids = set(p.entity_ids)

    def run(conn: Any) -> dict[str, int]:
        if _fingerprint(conn, ids) != p.fingerprint:
            raise PlanOutdated()
        return lifecycle.execute_forget(conn, ids, entity_ids)
    deleted = vault.db.write_sync(run)
    in_index = [i for i in ids if i in vault.index]
    vault.index.remove(sorted(ids))
    busy, _log, _done = vault.db.checkpoint()
    if busy:
        log.warning("forget checkpoint was busy; it completes when readers close")
    memories = deleted.get("memory", 0)
    total = sum(v for k, v in deleted.items() if k != "entity_summaries_cleared")
    log.info("forgot %d memories (%d rows)", memories, total)
    return ForgetReport(deleted, memories, total, busy, len(in_index))


def history(vault: Any, mid: int) -> History:
    def run(conn: Any) -> History:
        found = lifecycle.describe(conn, [mid])
        if not found:
            raise NotFound()
        chain = lifecycle.versions(conn, [mid])
        rows = conn.execute(
            "SELECT id, text, status, created_at, user_validated, confidence FROM memory "
            f"WHERE id IN ({','.join('?' * len(chain))}) ORDER BY created_at, id",
            sorted(chain)).fetchall()
        versions = tuple(Version(r[0], r[1], r[2], r[3], bool(r[4]), r[5]) for r in rows)
        entries = tuple(HistoryEntry(*r) for r in lifecycle.history_rows(conn, chain))
        return History(mid, versions, entries)
    return vault.db.read(run)  # type: ignore[no-any-return]
