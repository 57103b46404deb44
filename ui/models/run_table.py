"""The recent consolidation runs: a small table model (docs/architecture.md#lists). Layer: ui. GUI
thread.

Rows are frozen ``RunRow`` values built from ``Vault.runs()`` items by the view's query (on the
thread pool); ``data()`` is a pure lookup. The model also answers which run may be undone: only
the newest finished run that is not undone yet, because undoing an older one first would
rewrite history a later run built on (``ConsolidationService.undo`` refuses it too).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, Qt

from app import words
from app.api import RunSummary
from ui.tasks import assert_gui_thread

Index = QModelIndex | QPersistentModelIndex


class Column(IntEnum):
    RUN = 0
    KIND = 1
    STARTED = 2
    CHANGES = 3
    STATUS = 4
    UNDO = 5


HEADERS = {Column.RUN: "Run", Column.KIND: "Kind", Column.STARTED: "When",
           Column.CHANGES: "What it changed", Column.STATUS: "Status", Column.UNDO: ""}

# Report count keys -> words (one, many): the one table in app/words.py (the CLI says the same).
COUNT_LABELS: dict[str, tuple[str, str]] = words.RUN_COUNT_WORDS


# Why an LLM batch fell back to the rules (the error classes of app/services/llm/).
LLM_REASONS = {"LlmUnavailable": "endpoint unreachable or failing",
               "ConsentRequired": "no consent to send to this endpoint",
               "ParseError": "replies not understood"}


def when_text(ts: float | None) -> str:
    """ "today 09:14", "15 June 2026, 20:00" (local time)."""
    return words.when(ts)


def counts_text(counts: dict[str, int], *, limit: int | None = None) -> str:
    """Non-zero counts as words, largest first: "7 facts learned, 5 patterns updated"
    (``words.run_counts``)."""
    return words.run_counts(counts, limit=limit)


@dataclass(frozen=True, slots=True)
class RunRow:
    id: int
    kind: str
    started_at: float
    finished_at: float | None
    status: str
    counts: dict[str, int]
    seconds: float | None
    failed_batches: int
    undone_at: float | None
    # (step, error class) of each failed batch; LLM batches that fell back to the rules, by
    # error class. Neither holds any memory text.
    failures: tuple[tuple[str, str], ...] = ()
    llm_fallbacks: tuple[tuple[str, int], ...] = ()

    @classmethod
    def from_run(cls, run: RunSummary) -> RunRow:
        """From a ``Vault.runs()`` item."""
        report = run.report
        failures = tuple((str(f.step), str(f.error)) for f in report.failures) if report else ()
        fallbacks = tuple(sorted((str(k), int(v)) for k, v in report.llm_fallbacks.items())
                          ) if report else ()
        return cls(int(run.id), str(run.kind), float(run.started_at), run.finished_at,
                   str(run.status or "running"), dict(report.counts) if report else {},
                   report.seconds if report else None,
                   int(report.failed_batches) if report else 0, run.undone_at, failures,
                   fallbacks)

    @property
    def problems_text(self) -> str:
        """What went wrong in this run, in words ("" when nothing did)."""
        out = []
        if self.failed_batches:
            n = self.failed_batches
            where = ", ".join(f"{step} ({error})" for step, error in dict.fromkeys(self.failures))
            out.append(f"{n} batch{'es' if n != 1 else ''} failed"
                       + (f" in {where}" if where else "")
                       + "; retried on the next run, details in the log.")
        if self.llm_fallbacks:
            n = sum(c for _, c in self.llm_fallbacks)
            why = ", ".join(LLM_REASONS.get(e, e) for e, _ in self.llm_fallbacks)
            out.append(f"The LLM endpoint could not be used for {n} batch"
                       f"{'es' if n != 1 else ''} ({why}); the offline rules were used. "
                       "Check the endpoint in Settings.")
        return " ".join(out)

    @property
    def finished(self) -> bool:
        return self.finished_at is not None and self.status != "running"

    @property
    def status_text(self) -> str:
        if self.undone_at is not None:
            return f"undone {when_text(self.undone_at)}"  # "undone today 09:14"
        if self.status == "partial":
            n = self.failed_batches
            return f"partial ({n} batch{'es' if n != 1 else ''} failed, retried next run)"
        return {"done": "done", "cancelled": "cancelled (finished steps kept)",
                "running": "running…"}.get(self.status, self.status)


class RunTableModel(QAbstractTableModel):
    """The last runs, newest first."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.rows: list[RunRow] = []

    def set_rows(self, rows: Sequence[RunRow]) -> None:
        assert_gui_thread()
        self.beginResetModel()
        self.rows = list(rows)
        self.endResetModel()

    def row_at(self, row: int) -> RunRow | None:
        return self.rows[row] if 0 <= row < len(self.rows) else None

    def undoable_id(self) -> int | None:
        """The newest finished run that is not undone, if any."""
        for r in self.rows:
            if r.undone_at is None:
                return r.id if r.finished else None
        return None

    def undo_state(self, row: int) -> tuple[bool, str]:
        """(may undo, why or why not) for the run in ``row``."""
        r = self.row_at(row)
        if r is None:
            return False, ""
        if r.undone_at is not None:
            return False, f"Run {r.id} was already undone ({when_text(r.undone_at)})."
        if not r.finished:
            return False, "This run is still going; wait for it to finish."
        newest = self.undoable_id()
        if newest == r.id:
            return True, f"Undo everything run {r.id} changed."
        later = [x.id for x in self.rows if x.id > r.id and x.undone_at is None]
        return False, (f"Undo the newer run{'s' if len(later) > 1 else ''} "
                       f"{', '.join(str(i) for i in sorted(later, reverse=True))} first: "
                       "runs are undone newest first.")

    # --- Qt model API -----------------------------------------------------------------
    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: N802 (Qt name)
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: N802 (Qt name)
        return 0 if parent.isValid() else len(Column)

    def headerData(self, section: int, orientation: Qt.Orientation,  # noqa: N802 (Qt name)
                   role: int = Qt.ItemDataRole.DisplayRole) -> object:
        if (orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole
                and 0 <= section < len(Column)):
            return HEADERS[Column(section)]
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> object:
        if not index.isValid() or not 0 <= index.row() < len(self.rows):
            return None
        r = self.rows[index.row()]
        col = Column(index.column())
        if role == Qt.ItemDataRole.DisplayRole:
            if col is Column.RUN:
                return str(r.id)  # the number the undo messages name ("run 12")
            if col is Column.KIND:
                return words.run_kind(r.kind)
            if col is Column.STARTED:
                return when_text(r.started_at)
            if col is Column.CHANGES:
                return counts_text(r.counts, limit=3) if r.finished else ""
            if col is Column.STATUS:
                return r.status_text
            return None
        if role == Qt.ItemDataRole.ToolTipRole:
            if col is Column.STATUS and r.problems_text:
                return r.problems_text
            if col is Column.CHANGES and r.finished:
                secs = f" in {r.seconds:.1f} s" if r.seconds is not None else ""
                return f"Run {r.id}{secs}: {counts_text(r.counts)}"
            if col is Column.UNDO:
                return self.undo_state(index.row())[1]
            return None
        if role == Qt.ItemDataRole.TextAlignmentRole and col is Column.RUN:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def flags(self, index: Index) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
