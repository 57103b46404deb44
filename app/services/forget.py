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
    role: str  # matched | version | derived | source


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
    if not ids and not query and not entity:
        raise ValidationError("Say what to forget: ids, a query or an entity.")

    def build(conn: Any) -> ForgetPlan:
        matched: set[int] = set()
        entity_ids: set[int] = set()
        if ids:
            known = {r[0] for r in lifecycle.describe(conn, ids)}
            missing = set(int(i) for i in ids) - known
            if missing:
                raise NotFound(f"No memory with id {', '.join(map(str, sorted(missing)))}.")
            matched |= known
        if query:
            matched |= lifecycle.match_text(conn, query)
        if entity:
            ents, mems = lifecycle.entity_members(conn, entity)
            entity_ids |= ents
            matched |= mems
        vers = lifecycle.versions(conn, matched) - matched
        core = matched | vers
        sources = lifecycle.ancestors(conn, core) - core if include_sources else set()
        gone = core | sources
        derived = lifecycle.derived_only_from(conn, gone)
        gone |= derived
        # Versions of derived items go with them.
        extra_versions = lifecycle.versions(conn, derived) - gone
        gone |= extra_versions
        roles = {**{i: "source" for i in sources}, **{i: "derived" for i in derived | extra_versions},
                 **{i: "version" for i in vers}, **{i: "matched" for i in matched}}
        items = tuple(PlanItem(mid, store, status, text, roles[mid])
                      for mid, store, status, text in lifecycle.describe(conn, gone))
        rows = lifecycle.dependent_counts(conn, gone, entity_ids)
        orphans = lifecycle.orphaned_entities(conn, gone) | entity_ids
        resum = lifecycle.entities_to_resummarise(conn, gone, orphans)
        stats = int(conn.execute("SELECT count(*) FROM statistic").fetchone()[0])
        return ForgetPlan(items, tuple(sorted(entity_ids)), include_sources,
                          {k: v for k, v in rows.items() if v},
                          sum(1 for i in gone if i in vault.index), len(resum),
                          stats if gone else 0, _fingerprint(conn, gone))
    return vault.db.read(build)  # type: ignore[no-any-return]


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
