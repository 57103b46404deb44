"""Consolidation's run log and undo (docs/memory-model.md#undo). Layer: app. Runs on: the
consolidation worker (the log) and any worker thread (undo, the list of runs).

Every change a run makes is logged in ``run_change`` with its inverse (ids and numbers only,
never text, so forgetting leaves no copy there), and :meth:`RunLogService.undo` reverts a
run by applying those inverses newest first. Runs are undone newest first: a run cannot be
undone while a later run that changed something still stands.
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from app.api import BatchFailure, RunOutcome, RunReport, RunSummary
from app.domain.memory import RunId
from app.errors import NotFound, ValidationError
from app.ports import Clock, ConsolidationRows, Database, RunLogRows, VectorIndex

log = logging.getLogger(__name__)

WATERMARK = "consolidation.extracted_upto"  # the highest episode id extraction has read
RETRY = "consolidation.retry_ids"           # episodes of failed batches, read again next run

__all__ = ["RETRY", "WATERMARK", "BatchFailure", "RunLog", "RunLogService", "RunReport"]


@dataclass(slots=True)
class RunLog:
    """What one run has done so far: counts, ids, failures, and the change log it writes
    (through ``store``) as it goes. Owned by the run's thread."""
    run_id: int
    store: RunLogRows
    seq: int = 0
    counts: Counter[str] = field(default_factory=Counter)
    ids: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    failures: list[BatchFailure] = field(default_factory=list)
    # LLM extraction batches that fell back to the rules, by the error's class.
    llm_fallbacks: Counter[str] = field(default_factory=Counter)
    # Episodes whose facts met an older fact as an update or contradiction in this run: their
    # turns are not paired again (said_change), so one change is not reported twice.
    conflicted: set[int] = field(default_factory=set)
    # The person's own turns that correct something ("sorry, I meant Thursday"): what their
    # facts contradict is settled for them at once (issue 23 item 5).
    corrections: set[int] = field(default_factory=set)
    # said_change's earlier turns by scope: id -> (speaker, occurred_at), and the speakers read.
    said_by: dict[tuple[str, str | None], tuple[dict[int, tuple[str, float]], set[str]]] = \
        field(default_factory=dict)

    def failed(self, step: str, exc: BaseException, items: int = 0) -> None:
        log.error("consolidation %s: a batch of %d failed: %s", step, items,
                  type(exc).__name__)
        self.failures.append(BatchFailure(step, type(exc).__name__, items))

    def change(self, conn: Any, kind: str, memory_id: int | None, /, **payload: Any) -> None:
        """Log one change, inside the transaction that makes it; ``payload`` is what undo
        needs to put it back."""
        self.seq += 1
        self.store.add_change(conn, self.run_id, self.seq, kind, memory_id, payload)


class RunLogService:
    """Undo and the list of runs. Owner: ``ConsolidationService`` (one per unlocked vault)."""

    def __init__(self, db: Database, clock: Clock, index: VectorIndex, rows: ConsolidationRows,
                 runlog: RunLogRows, resummarise: Callable[[float], int]) -> None:
        self.db = db
        self.clock = clock
        self.index = index
        self.rows = rows
        self.runlog = runlog
        self._resummarise = resummarise  # entity summaries, after undo removed facts

    def _check_undoable(self, conn: Any, run_id: int) -> None:
        runlog = self.runlog
        run = runlog.get(conn, run_id)
        if run is None:
            raise NotFound("No consolidation run with that id.")
        if run.undone_at is not None:
            raise ValidationError(f"Run {run_id} was already undone.")
        later = runlog.later_runs_with_changes(conn, run_id)
        if later:
            raise ValidationError(
                f"Undo the later runs first ({', '.join(str(r) for r in later)}).")

    def plan(self, run_id: int) -> dict[str, int]:
        """What ``undo(run_id)`` would revert, counted as it counts (nothing changes); the
        same refusals."""
        def read(conn: Any) -> dict[str, int]:
            self._check_undoable(conn, run_id)
            return dict(Counter(change.kind for change in self.runlog.changes(conn, run_id)))
        return self.db.read(read)

    def undo(self, run_id: int) -> dict[str, int]:
        """Revert ``run_id`` (one transaction): counts of the changes reverted, by kind."""
        rows, runlog = self.rows, self.runlog
        now = self.clock.now()

        def write(conn: Any) -> tuple[dict[str, int], set[int]]:
            self._check_undoable(conn, run_id)
            counts: Counter[str] = Counter()
            created: set[int] = set()
            for change in runlog.changes(conn, run_id):
                if change.kind == "created" and change.memory_id is not None:
                    created.add(change.memory_id)
                elif change.kind == "watermark":
                    rows.put_setting(conn, WATERMARK, change.payload["old"])
                    rows.put_setting(conn, RETRY, change.payload["retry"])
                else:
                    runlog.revert(conn, change)
                counts[change.kind] += 1
            if created:
                # What this run made goes entirely (it only ever described other memories).
                rows.forget(conn, created)
            runlog.mark_undone(conn, run_id, now)
            return dict(counts), created
        counts, created = self.db.write_sync(write)
        self.index.remove(sorted(created))
        self._resummarise(self.clock.now())
        return counts

    def runs(self, limit: int = 20) -> list[dict[str, Any]]:
        """The newest runs as plain dicts (the stored report parsed)."""
        return [{"id": r.id, "kind": r.kind, "started_at": r.started_at,
                 "finished_at": r.finished_at, "status": r.status,
                 "report": r.report_dict(), "undone_at": r.undone_at}
                for r in self.db.read(lambda c: self.runlog.recent(c, limit))]

    def run_summaries(self, limit: int = 20) -> list[RunSummary]:
        """The newest runs, typed (``app.api.RunSummary``)."""
        return [RunSummary(RunId(r.id), r.kind, r.started_at, r.finished_at,
                           r.status or "running",  # type: ignore[arg-type]
                           RunOutcome.from_json(r.report) if r.report else None, r.undone_at)
                for r in self.db.read(lambda c: self.runlog.recent(c, limit))]


def report_json(report: RunReport) -> dict[str, Any]:
    """What a finished run stores about itself (``run.report``; ``RunOutcome`` reads it)."""
    return {"counts": report.counts, "ids": report.ids,
            "failed_batches": report.failed_batches,
            "failures": [{"step": f.step, "error": f.error, "items": f.items}
                         for f in report.failures],
            "llm_fallbacks": report.llm_fallbacks, "seconds": report.seconds}
