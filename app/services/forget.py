"""Forget (plan, then execute), correct, history, archive and restore
(docs/memory-model.md#forgetting). Layer: app. Runs on: any worker thread.

Forget cannot be undone. The plan lists everything that will go; execution deletes exactly
that in one transaction, checkpoints the WAL (TRUNCATE) so no copy is left in the log, and
drops the ids from the in-RAM index. A plan carries a fingerprint of what it saw; if the vault
changed in between, execution refuses and asks for a new plan.
"""

from __future__ import annotations

import hashlib
import logging

from app import words
from app.api import (  # noqa: F401  (re-exported: the old import paths)
    KIND_LABELS,
    EntityId,
    ForgetPlan,
    ForgetReport,
    History,
    HistoryEntry,
    MemoryId,
    PlanItem,
    PlanRole,
    Version,
)
from app.domain.memory import Status, Store
from app.errors import AppError, NotFound, ValidationError
from app.ports import Connection, Database, ForgetRows, VectorIndex

log = logging.getLogger(__name__)


class PlanOutdated(AppError):
    user_message = "The vault changed since this forget plan was made; review the new plan."
    exit_code = 2


def _fingerprint(lifecycle: ForgetRows, conn: Connection, ids: set[int]) -> str:
    h = hashlib.sha256()
    for mid, store, status, text in lifecycle.describe(conn, ids):
        h.update(f"{mid}|{store}|{status}|{len(text)}\n".encode())
    counts = lifecycle.table_counts(conn)
    # A remembered memory's vector is made after the call returned (issue 28,
    # app/services/vector_follow.py): its arrival changes nothing a plan lists, and the forget
    # deletes the vectors of what it forgets whenever they came.
    counts.pop("vector", None)
    h.update(repr(sorted(counts.items())).encode())
    return h.hexdigest()


class ForgetService:
    """Forget plans and their execution, and a memory's history. ``rows``: the queries
    (``storage.lifecycle``); ``index``: the in-RAM vectors, which forget also drops."""

    def __init__(self, db: Database, index: VectorIndex, rows: ForgetRows) -> None:
        self.db = db
        self.index = index
        self.rows = rows

    def plan(self, *, ids: tuple[int, ...] = (), query: str | None = None,
             entity: str | None = None, include_sources: bool = True) -> ForgetPlan:
        return _plan(self.rows, self.db, self.index, ids=ids, query=query, entity=entity,
                     include_sources=include_sources)

    def forget(self, p: ForgetPlan) -> ForgetReport:
        """Delete exactly ``p`` in one transaction (``PlanOutdated`` if the vault changed
        since), drop the ids from the index, checkpoint the WAL. Cannot be undone."""
        return _forget(self.rows, self.db, self.index, p)

    def history(self, mid: int) -> History:
        return _history(self.rows, self.db, mid)


def _plan(lifecycle: ForgetRows, db: Database, index: VectorIndex, *, ids: tuple[int, ...],
          query: str | None, entity: str | None, include_sources: bool) -> ForgetPlan:
    """What goes: the matched memories; the earlier versions the person replaced by typing a
    correction (one memory's history); unless kept, the turns and episodes they came from;
    then, until nothing changes, what was derived only from what goes, with its own corrected
    versions. A chain is followed only that far (issue 11, item 6): a newer version learned
    from its own source, a correction the person typed, an older fact with its own source,
    stay, and are listed as staying with the reason."""
    if not ids and not query and not entity:
        raise ValidationError("Say what to forget: ids, a query or an entity.")

    def build(conn: Connection) -> ForgetPlan:
        why: dict[int, str] = {}
        entity_ids: set[int] = set()
        if ids:
            known = {r.id for r in lifecycle.describe(conn, ids)}
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
        roles: dict[int, PlanRole] = {
            **{i: "source" for i in sources}, **{i: "derived" for i in derived},
            **{i: "version" for i in vers}, **{i: "matched" for i in matched}}
        items = tuple(PlanItem(MemoryId(mid), Store(store), Status(status), text, roles[mid],
                               why.get(mid, ""))
                      for mid, store, status, text in lifecycle.describe(conn, gone))
        staying = _staying(lifecycle, conn, gone, include_sources)
        rows = lifecycle.dependent_counts(conn, gone, entity_ids)
        orphans = lifecycle.orphaned_entities(conn, gone) | entity_ids
        resum = lifecycle.entities_to_resummarise(conn, gone, orphans)
        stats = lifecycle.statistic_count(conn)
        return ForgetPlan(items, tuple(EntityId(e) for e in sorted(entity_ids)), include_sources,
                          {k: v for k, v in rows.items() if v},
                          sum(1 for i in gone if i in index), len(resum),
                          stats if gone else 0, _fingerprint(lifecycle, conn, gone), staying)
    return db.read(build)


def _staying(lifecycle: ForgetRows, conn: Connection, gone: set[int], include_sources: bool
             ) -> tuple[PlanItem, ...]:
    """Memories joined to what goes by a version, provenance or contradiction link that stay,
    each with the reason, then the sources of those versions (so "the present" is listed whole:
    the newer fact and the turn it was learned from)."""
    reasons: dict[int, str] = {}
    links = lifecycle.boundary_links(conn, gone)
    typed = lifecycle.typed_corrections(conn, {s for s, _d, _k in links})
    back = lifecycle.reinstated(conn, gone)

    named: dict[int, str] = {}

    def name(mid: int) -> str:
        """Another memory as the person reads it (issue 25: no ``#18``)."""
        if mid not in named:
            for i, store, _status, text in lifecycle.describe(conn, {mid}):
                named[int(i)] = f"the {words.store_noun(store)} “{words.short(text, 40)}”"
        return named.get(mid, "another memory")

    def own_sources(mid: int) -> str:
        srcs = sorted(lifecycle.parents(conn, [mid]) - gone)
        if not srcs:
            return "not learned from anything that goes"
        return ("its own source, " if len(srcs) == 1 else "its own sources, ") + \
            words.join([name(i) for i in srcs]) + (", stays" if len(srcs) == 1 else ", stay")

    for src, dst, kind in links:
        if kind != "SUPERSEDES":
            continue
        if src not in gone:      # a newer version stays
            reasons.setdefault(src, f"your typed correction of {name(dst)}: its own source"
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
            reasons.setdefault(keep, f"disagreed with {name(other)}; not learned from it")
    for mid in list(reasons):
        for anc in sorted(lifecycle.ancestors(conn, [mid]) - gone):
            reasons.setdefault(anc, f"source of {name(mid)}, which stays")
    # In the order found: the versions first, then what else they touch, their sources last.
    order = {mid: n for n, mid in enumerate(reasons)}
    return tuple(sorted((PlanItem(MemoryId(mid), Store(store), Status(status), text, "staying",
                                  reasons[mid])
                         for mid, store, status, text in lifecycle.describe(conn, reasons)),
                        key=lambda i: order[i.id]))


def _forget(lifecycle: ForgetRows, db: Database, index: VectorIndex, p: ForgetPlan
            ) -> ForgetReport:
    ids: set[int] = set(p.memory_ids)
    entity_ids: set[int] = set(p.entity_ids)

    def run(conn: Connection) -> dict[str, int]:
        if _fingerprint(lifecycle, conn, ids) != p.fingerprint:
            raise PlanOutdated()
        return lifecycle.execute_forget(conn, ids, entity_ids)
    deleted = db.write_sync(run)
    in_index = [i for i in ids if i in index]
    index.remove(sorted(ids))
    busy, _log, _done = db.checkpoint()
    if busy:
        log.warning("forget checkpoint was busy; it completes when readers close")
    memories = deleted.get("memory", 0)
    total = sum(v for k, v in deleted.items() if k != "entity_summaries_cleared")
    log.info("forgot %d memories (%d rows)", memories, total)
    return ForgetReport(deleted, memories, total, busy, len(in_index))


def _history(lifecycle: ForgetRows, db: Database, mid: int) -> History:
    def run(conn: Connection) -> History:
        found = lifecycle.describe(conn, [mid])
        if not found:
            raise NotFound()
        chain = lifecycle.versions(conn, [mid])
        return History(MemoryId(mid), tuple(lifecycle.version_rows(conn, chain)),
                       tuple(lifecycle.history_rows(conn, chain)))
    return db.read(run)
