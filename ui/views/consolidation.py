"""Consolidation page: what the last run changed, "Run now" with progress and cancel, the last
runs with undo for the newest one, and the job schedule. Layer: ui. GUI thread; every vault
call goes through ``ui.tasks``.

Progress goes through ``ui.progress`` (docs/architecture.md#background-work-and-progress): the
pipeline's callback only stores the latest value; the bar appears once a run has taken 600 ms.
"""

from __future__ import annotations

import html
import logging
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from app import words
from app.api import CancelToken, Result, RunReport, UndoReport, VaultAPI
from app.changes import Changes
from ui import errors, theme
from ui.bridge import CoreBridge
from ui.dialogs import confirm
from ui.models.run_table import Column, RunRow, RunTableModel, counts_text, when_text
from ui.progress import DelayedProgress
from ui.tasks import run_op, run_query
from ui.views.page import Page, setting_int

if TYPE_CHECKING:
    from app.jobs import JobOutcome

log = logging.getLogger(__name__)

RUNS_SHOWN = 10
WEEKDAYS = words.WEEKDAYS
# What undoing a run does, by change-log kind: the one table in app/words.py (`kept undo` says
# the same).
UNDO_PLAN_WORDS = words.UNDO_CHANGE_WORDS


def undo_plan_text(run_id: int, counts: dict[str, int], *, done: bool = False) -> str:
    """The Undo question (``done``: the report after) in words (``words.undo_text``)."""
    return words.undo_text(run_id, counts, done=done)


SCHEDULE_KEYS = ("consolidation.heartbeat_minutes", "consolidation.interval_minutes",
                 "consolidation.decay_hour", "consolidation.synthesis_weekday")


def minutes_text(minutes: int) -> str:
    if minutes % 1440 == 0:
        n = minutes // 1440
        return "day" if n == 1 else f"{n} days"
    if minutes % 60 == 0:
        n = minutes // 60
        return "hour" if n == 1 else f"{n} hours"
    return "minute" if minutes == 1 else f"{minutes} minutes"


_RUN_ID = "kept_run_id"  # the property an Undo button carries


class ConsolidationView(Page):
    """Owned by the main window's page stack; lives on the GUI thread."""

    def __init__(self, vault: VaultAPI, bridge: CoreBridge, parent: QWidget | None = None
                 ) -> None:
        super().__init__(vault, bridge, parent)
        self._running = False
        self._run_allowed = True  # the window's own run (toolbar) is not under way
        self._cancel: CancelToken | None = None
        title = QLabel("<h2>Consolidation</h2>")
        intro = QLabel("In the background Kept turns conversations into facts, finds habits "
                       "and contradictions, and lets unused memories fade. Every run is "
                       "recorded and the newest one can be undone.")
        intro.setWordWrap(True)
        lay = QVBoxLayout(self)
        lay.addWidget(title)
        lay.addWidget(intro)
        lay.addWidget(self._build_status())
        lay.addWidget(self._build_runs(), 1)
        lay.addWidget(self._build_schedule())
        self.progress_helper = DelayedProgress(self.progress, self)
        self.run_btn.clicked.connect(self._on_run_btn_clicked)
        self.cancel_btn.clicked.connect(self._on_cancel_btn_clicked)
        self.settings_btn.clicked.connect(self._on_settings_btn_clicked)
        bridge.job_finished.connect(self._on_bridge_job_finished)
        self.refresh()

    def _build_status(self) -> QGroupBox:
        """The last run in words, its problems, Run now / Cancel and the progress bar."""
        self.last_run = QLabel("Loading…")
        self.last_run.setObjectName("lastRun")
        self.last_changes = QLabel()
        self.last_changes.setObjectName("lastChanges")
        self.last_changes.setWordWrap(True)
        # Failed batches and LLM fallbacks of the last run: said, never only logged.
        self.last_problems = QLabel()
        self.last_problems.setObjectName("lastProblems")
        self.last_problems.setWordWrap(True)
        self.last_problems.setStyleSheet(theme.PROBLEM_STYLE)
        self.last_problems.hide()
        self.run_btn = QPushButton("Run now")
        self.run_btn.setToolTip("Run the whole pipeline once now (the window stays usable).")
        self.cancel_btn = QPushButton("Cancel")
        self.cancel_btn.setToolTip("Stop after the current batch; what was finished is kept.")
        self.cancel_btn.hide()
        self.progress = QProgressBar()
        self.progress.setTextVisible(False)
        self.progress.setMaximumHeight(14)
        self.progress.hide()
        self.message = theme.plain(QLabel())
        self.message.setObjectName("message")
        self.message.setWordWrap(True)
        self.message.hide()
        run_row = QHBoxLayout()
        run_row.addWidget(self.run_btn)
        run_row.addWidget(self.cancel_btn)
        run_row.addWidget(self.progress, 1)
        status_box = QGroupBox("Status")
        sl = QVBoxLayout(status_box)
        sl.addWidget(self.last_run)
        sl.addWidget(self.last_changes)
        sl.addWidget(self.last_problems)
        sl.addLayout(run_row)
        sl.addWidget(self.message)
        return status_box

    def _build_runs(self) -> QGroupBox:
        """The last runs, each with its Undo button."""
        self.model = RunTableModel(self)
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.table.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.table.verticalHeader().setDefaultSectionSize(30)
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(Column.CHANGES, QHeaderView.ResizeMode.Stretch)
        for col, width in ((Column.RUN, 50), (Column.KIND, 110), (Column.STARTED, 130),
                           (Column.STATUS, 150), (Column.UNDO, 80)):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.Fixed)
            header.resizeSection(col, width)
        self.undo_buttons: dict[int, QPushButton] = {}
        self.runs_empty = QLabel("No runs yet. The first one starts on schedule, or press "
                                 "Run now.")
        self.runs_empty.hide()
        runs_box = QGroupBox(f"Last {RUNS_SHOWN} runs")
        rl = QVBoxLayout(runs_box)
        rl.addWidget(self.runs_empty)
        rl.addWidget(self.table)
        return runs_box

    def _build_schedule(self) -> QGroupBox:
        """When the jobs run, and the way to Settings to change it."""
        self.schedule = {key: QLabel("…") for key in SCHEDULE_KEYS}
        self.settings_btn = QPushButton("Change the schedule in Settings…")
        schedule_box = QGroupBox("Schedule")
        form = QFormLayout(schedule_box)
        form.addRow("Heartbeat (new conversation → facts)", self.schedule[SCHEDULE_KEYS[0]])
        form.addRow("Consolidation (merge, contradictions, habits)",
                    self.schedule[SCHEDULE_KEYS[1]])
        form.addRow("Decay and archival", self.schedule[SCHEDULE_KEYS[2]])
        form.addRow("Weekly synthesis (summaries)", self.schedule[SCHEDULE_KEYS[3]])
        form.addRow(self.settings_btn)
        return schedule_box

    def _say(self, text: str) -> None:
        self.message.setText(text)
        self.message.setVisible(bool(text))

    # --- loading ------------------------------------------------------------------------
    def refresh(self) -> None:
        vault = self.vault

        def load() -> tuple[list[RunRow], dict[str, int]]:
            rows = [RunRow.from_run(run) for run in vault.runs(RUNS_SHOWN)]
            return rows, {k: setting_int(vault.setting(k)) for k in SCHEDULE_KEYS}
        self.load(load, self._fill)

    def _fill(self, result: tuple[list[RunRow], dict[str, int]]) -> None:
        rows, schedule = result
        self.model.set_rows(rows)
        self._make_undo_buttons()
        self.table.setVisible(bool(rows))
        self.runs_empty.setVisible(not rows)
        last = rows[0] if rows else None
        problems = last.problems_text if last is not None and last.finished else ""
        self.last_problems.setText(f"<b>Problems:</b> {html.escape(problems)}" if problems
                                   else "")
        self.last_problems.setVisible(bool(problems))
        if last is None:
            self.last_run.setText("<b>Never run yet.</b>")
            self.last_changes.clear()
        elif not last.finished:
            self.last_run.setText(f"<b>Run {last.id} ({words.run_kind(last.kind)}) is "
                                  "running</b>, started "
                                  f"{when_text(last.started_at)}.")
            self.last_changes.clear()
        else:
            secs = f" in {last.seconds:.1f} s" if last.seconds is not None else ""
            self.last_run.setText(f"<b>Last run:</b> {when_text(last.started_at)}, "
                                  f"{words.run_kind(last.kind)}{secs}, {last.status_text}.")
            self.last_changes.setText(f"<b>What it changed:</b> {counts_text(last.counts)}.")
        beat, interval, hour, weekday = (schedule[k] for k in SCHEDULE_KEYS)
        self.schedule[SCHEDULE_KEYS[0]].setText(f"every {minutes_text(beat)}")
        self.schedule[SCHEDULE_KEYS[1]].setText(f"every {minutes_text(interval)}, or from "
                                                "Run now")
        self.schedule[SCHEDULE_KEYS[2]].setText(f"daily at {words.hour_text(hour)}")
        self.schedule[SCHEDULE_KEYS[3]].setText(
            f"{WEEKDAYS[weekday % 7]}s at {words.hour_text(0)}")

    def _make_undo_buttons(self) -> None:
        self.undo_buttons.clear()
        for row in range(self.model.rowCount()):
            run = self.model.row_at(row)
            assert run is not None
            ok, why = self.model.undo_state(row)
            btn = QPushButton("Undo")
            btn.setEnabled(ok and not self._running)
            btn.setToolTip(why)
            # A slot of this page, the run's id on the button: a lambda over ``self`` would
            # keep the page alive from its own button (see ui.views.devices).
            btn.setProperty(_RUN_ID, run.id)
            btn.clicked.connect(self._on_undo_btn_clicked)
            self.table.setIndexWidget(self.model.index(row, Column.UNDO), btn)
            self.undo_buttons[run.id] = btn

    # --- refresh from change flags --------------------------------------------------------
    def wants(self, changes: Changes) -> bool:
        return changes.runs or changes.settings

    @Slot(object)
    def _on_bridge_job_finished(self, _outcome: JobOutcome) -> None:
        self.on_changes(Changes(runs=True))

    def set_run_allowed(self, allowed: bool) -> None:
        # The toolbar's "Run consolidation now" and this button never start two runs at once.
        self._run_allowed = allowed
        self.run_btn.setEnabled(not self._running and allowed)

    # --- Run now ----------------------------------------------------------------------------
    @Slot()
    def _on_run_btn_clicked(self) -> None:
        if self._running:
            return
        self._cancel = cancel = CancelToken()
        self._set_running(True)
        self._say("Running…")
        box = self.progress_helper.start()
        vault = self.vault
        run_op(self, lambda: vault.consolidate(cancel=cancel, progress=box.report),
               self._on_run_done, self.bridge, self._on_run_failed)

    @Slot()
    def _on_cancel_btn_clicked(self) -> None:
        if self._cancel is not None:
            self._cancel.cancel()
            self.cancel_btn.setEnabled(False)
            self._say("Stopping after the current batch…")

    def _set_running(self, on: bool) -> None:
        self._running = on
        self.run_btn.setText("Running…" if on else "Run now")
        self.run_btn.setEnabled(not on)
        self.running_changed.emit(on)
        self.cancel_btn.setVisible(on)
        self.cancel_btn.setEnabled(on)
        for btn in self.undo_buttons.values():
            if on:
                btn.setEnabled(False)
        if not on:
            self.progress_helper.stop()
            self._cancel = None

    def _on_run_done(self, result: Result[RunReport]) -> None:
        r = result.value
        self._set_running(False)
        verb = "stopped early" if r.cancelled else "finished"
        failed = f" It had {r.failure_text}, retried on the next run." if r.failed_batches else ""
        self._say(f"Run {r.run_id} {verb} in {r.seconds:.1f} s: "
                  f"{counts_text(r.counts)}.{failed}")
        # The run list refreshes from the change flags (on_changes), not from here.

    def _on_run_failed(self, exc: BaseException) -> None:
        self._set_running(False)
        self._say("The run did not finish; what was finished is kept.")
        errors.show_error(self, exc)
        self.refresh()

    # --- undo ---------------------------------------------------------------------------
    @Slot()
    def _on_undo_btn_clicked(self) -> None:
        btn = self.sender()
        if btn is not None:
            self.undo_run(int(btn.property(_RUN_ID)))

    def undo_run(self, run_id: int) -> None:
        """Ask first, saying in words what undoing will change (``undo_plan``), then undo."""
        vault = self.vault

        def planned(plan: UndoReport) -> None:
            confirm.ask(self, "Undo a consolidation run", undo_plan_text(run_id, plan.counts),
                        detail="The conversations and notes it learned from stay as they are.",
                        action="&Undo this run", then=lambda: self._undo_now(run_id))
        def refused(exc: BaseException) -> None:  # "undo the later runs first", inline
            errors.report_error(self, exc, self._say)
        run_query(self, lambda: vault.undo_plan(run_id), planned, refused)

    def _undo_now(self, run_id: int) -> None:
        for btn in self.undo_buttons.values():
            btn.setEnabled(False)
        self.run_btn.setEnabled(False)
        self._say(f"Undoing run {run_id}…")
        vault = self.vault

        def done(result: Result[UndoReport]) -> None:
            self.run_btn.setEnabled(self._run_allowed)
            self._say(undo_plan_text(run_id, result.value.counts, done=True))

        def failed(exc: BaseException) -> None:
            self.run_btn.setEnabled(self._run_allowed)
            errors.report_error(self, exc, self._say)  # e.g. "undo the later runs first": inline
            self.refresh()
        run_op(self, lambda: vault.undo_run(run_id), done, self.bridge, failed)

    @Slot()
    def _on_settings_btn_clicked(self) -> None:
        self.navigate_requested.emit(("page", "settings"))
