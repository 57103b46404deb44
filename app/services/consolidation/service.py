"""``ConsolidationService``: the one object the facade holds for consolidation, built once
per unlocked vault by ``app/bootstrap.py``. Layer: app. Runs on: the caller's worker thread.

It composes the three parts along their seams and forwards to them: the pipeline
(``pipeline.py``), the inbox (``inbox.py``), the run log and undo (``runlog.py``). Its
collaborators are injected; the storage modules come typed by ``app.ports`` Protocols.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.api import (
    CancelToken,
    ContradictionItem,
    InboxPage,
    InboxStatus,
    RunReport,
    RunSummary,
)
from app.domain.fact import FactCandidate
from app.ports import Clock, ConsolidationRows, Database, InboxRows, RunLogRows, VectorIndex
from app.services.consolidation.inbox import InboxService
from app.services.consolidation.pipeline import Pipeline
from app.services.consolidation.runlog import RunLogService
from app.services.ingest import IngestService


class ConsolidationService:
    """Owner: the composition of one unlocked vault. Thread-safe as far as the Database is:
    each call runs its own transactions."""

    def __init__(self, db: Database, clock: Clock, index: VectorIndex, ingest: IngestService,
                 *, rows: ConsolidationRows, runlog: RunLogRows, inbox: InboxRows) -> None:
        self.pipeline = Pipeline(db, clock, index, ingest, rows, runlog, inbox)
        self.inbox = InboxService(db, clock, ingest, rows, inbox)
        self.runlog = RunLogService(db, clock, index, rows, runlog,
                                    self.pipeline.synthesise_summaries)

    # --- the pipeline ------------------------------------------------------------------
    def run(self, *, now: float | None = None, cancel: CancelToken | None = None,
            kind: str = "consolidation", steps: tuple[str, ...] | None = None,
            progress: Callable[[int, int], None] | None = None) -> RunReport:
        return self.pipeline.run(now=now, cancel=cancel, kind=kind, steps=steps,
                                 progress=progress)

    def store_assistant_fact(self, fact: FactCandidate, scope: tuple[str, str | None],
                             now: float) -> RunReport:
        return self.pipeline.store_assistant_fact(fact, scope, now)

    def store_assistant_change(self, fact: FactCandidate, scope: tuple[str, str | None],
                               now: float, replaces: int | None, *,
                               also: Callable[[Any, Any], None] | None = None
                               ) -> tuple[RunReport, Any]:
        return self.pipeline.store_assistant_change(fact, scope, now, replaces, also=also)

    def rename_owner(self, new: str, previous: str | None = None) -> int:
        """The person's name changed (Settings, or learned): facts about them follow."""
        return self.pipeline.rename_owner(new, previous)

    def recompute_statistics(self, now: float, *, create: bool = True) -> int:
        """Implicit statistics recomputed outside a run (after a forget: ``create=False``)."""
        return self.pipeline.recompute_statistics(now, create=create)

    def synthesise_summaries(self, now: float) -> int:
        return self.pipeline.synthesise_summaries(now)

    # --- the inbox ---------------------------------------------------------------------
    def contradictions(self, *, status: InboxStatus | None = "open"
                       ) -> list[ContradictionItem]:
        return self.inbox.contradictions(status=status)

    def inbox_page(self, status: InboxStatus, page: int = 0, size: int = 25) -> InboxPage:
        return self.inbox.inbox_page(status, page, size)

    def inbox_items(self, ids: list[int] | tuple[int, ...]) -> list[ContradictionItem]:
        return self.inbox.inbox_items(ids)

    def inbox_count(self) -> int:
        return self.inbox.inbox_count()

    def resolve(self, cid: int, keep: str, text: str | None = None, *,
                also: Callable[[Any], None] | None = None) -> int | None:
        return self.inbox.resolve(cid, keep, text, also=also)

    def reopen(self, cid: int) -> None:
        self.inbox.reopen(cid)

    # --- one entity per thing (issue 27 item 3) ---------------------------------------
    def entity_merges(self, eid: int) -> list[Any]:
        return self.pipeline.entity_merges(eid)

    def undo_entity_merge(self, merge_id: int, different: bool) -> bool:
        return self.pipeline.undo_entity_merge(merge_id, different)

    # --- the run log -------------------------------------------------------------------
    def undo(self, run_id: int) -> dict[str, int]:
        return self.runlog.undo(run_id)

    def undo_plan(self, run_id: int) -> dict[str, int]:
        return self.runlog.plan(run_id)

    def runs(self, limit: int = 20) -> list[dict[str, Any]]:
        return self.runlog.runs(limit)

    def run_summaries(self, limit: int = 20) -> list[RunSummary]:
        return self.runlog.run_summaries(limit)
