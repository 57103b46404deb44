"""The forget dialog: the whole plan grouped by kind with counts, a plain statement that it
cannot be undone, an explicit confirmation, progress, and a final report.
Layer: ui. GUI thread; the plan and the deletion run through ``ui.tasks``."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app import words
from app.api import ForgetPlan, ForgetReport, PlanItem, VaultAPI
from ui import errors, fit, theme
from ui.bridge import CoreBridge
from ui.tasks import run_op, run_query

# Each group of the tree carries what it is (a role of ``PlanItem``, "also", "staying") here;
# its words come from ``app.words`` and name what goes ("the fact", "2 earlier versions").
GROUP_ROLE = Qt.ItemDataRole.UserRole
ALSO_LABEL = "Also removed with them"
STAYING_LABEL = "What stays, and why"


class ForgetDialog(QDialog):
    """Forgets what ``ids``, ``query`` or ``entity`` name, after showing the plan and an
    explicit confirmation. GUI thread; ``parent`` only places the dialog.

    ``pending``: an assistant's forget request (``Vault.request_forget``): the plan is
    ``pending_forget_plan(pending)`` and confirming closes the request with it
    (``close_pending_forget``); cancelling leaves the request waiting."""

    forgotten = Signal(object)   # ForgetReport

    def __init__(self, vault: VaultAPI, bridge: CoreBridge, parent: QWidget | None = None, *,
                 ids: list[int] | None = None, query: str | None = None,
                 entity: str | None = None, pending: int | None = None) -> None:
        super().__init__(parent)
        self.pending = pending
        self.vault = vault
        self.bridge = bridge
        self.setWindowTitle(f"Forget for good from {theme.vault_name(vault.folder)}")
        self.resize(fit.chars(self, 92), fit.lines(self, 34))
        self.plan: ForgetPlan | None = None
        self.report: ForgetReport | None = None
        self._ids, self._query, self._entity = ids or [], query, entity
        self.summary = QLabel("Working out everything that would go…")
        self.summary.setWordWrap(True)
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["What goes", "Count"])
        self.tree.setAccessibleName("What goes")
        self.tree.setColumnWidth(0, fit.chars(self.tree, 68))
        self.keep_sources = QCheckBox("Keep the conversation it came from")
        # An assistant's request names its memories only: their sources are never in its plan.
        self.keep_sources.setVisible(pending is None)
        self.warning = QLabel("<b>This cannot be undone.</b> Everything listed is removed from "
                              "the vault physically, including the search index and the history. "
                              "Backups made earlier still hold it.")
        self.warning.setWordWrap(True)
        self.confirm = QCheckBox("I understand that this cannot be undone")
        self.progress = QProgressBar()
        self.progress.setRange(0, 0)
        self.progress.hide()
        self.forget_btn = QPushButton("Forget")
        self.forget_btn.setEnabled(False)
        self.cancel_btn = QPushButton("Cancel")
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.cancel_btn)
        buttons.addWidget(self.forget_btn)
        lay = QVBoxLayout(self)
        for w in (self.summary, self.tree, self.keep_sources, self.warning, self.confirm,
                  self.progress):
            lay.addWidget(w)
        lay.addLayout(buttons)
        fit.fit_to_text(self)
        self.confirm.toggled.connect(self._on_confirm_toggled)
        self.keep_sources.toggled.connect(self._on_keep_sources_toggled)
        self.forget_btn.clicked.connect(self._on_forget_btn_clicked)
        self.cancel_btn.clicked.connect(self.reject)
        self._load_plan()

    def _load_plan(self) -> None:
        self.forget_btn.setEnabled(False)
        vault, ids, query, entity = self.vault, list(self._ids), self._query, self._entity
        include = not self.keep_sources.isChecked()
        if self.pending is not None:
            pid = self.pending
            run_query(self, lambda: vault.pending_forget_plan(pid), self._show_plan,
                      self._on_plan_failed)
            return
        run_query(self, lambda: vault.forget_plan(ids=ids, query=query, entity=entity,
                                                  include_sources=include), self._show_plan)

    def _on_plan_failed(self, exc: BaseException) -> None:
        """E.g. the request was answered meanwhile, or its memories are gone already."""
        errors.report_error(self, exc, self.summary.setText, otherwise="Nothing was forgotten.")
        self.confirm.setEnabled(False)

    def _show_plan(self, plan: ForgetPlan) -> None:
        self.plan = plan
        self.tree.clear()
        by_role: dict[str, list[PlanItem]] = {}
        for item in plan.items:
            by_role.setdefault(item.role, []).append(item)
        labels = dict(zip((r for r in words.FORGET_ROLES if by_role.get(r)),
                          plan_groups(plan), strict=True))
        for role, (label, n) in labels.items():
            parent = self._group(label, n, role)
            for it in by_role[role]:
                where = f" ({it.why})" if it.why else ""
                QTreeWidgetItem(parent, [f"{words.store_one(it.store)}: {_short(it.text)}"
                                         f"{where}", ""])
        self._also({**plan.rows, "summaries": plan.entity_summaries})
        # Linked memories that do not go (a newer version with its own source, a correction
        # the person typed, ...), each with the reason: the plan is honest about its edges.
        if plan.staying:
            stays = self._group(STAYING_LABEL, len(plan.staying), "staying")
            for it in plan.staying:
                line = QTreeWidgetItem(stays, [f"{words.store_one(it.store)}: "
                                               f"{_short(it.text)}", ""])
                why = QTreeWidgetItem(line, [it.why, ""])
                why.setToolTip(0, it.why)
                line.setExpanded(True)
        # The list starts at its top for the keyboard, however soon the plan came (Qt picks a
        # current row on focus only if the rows were there when the focus came).
        top = self.tree.topLevelItem(0)
        if top is not None:
            self.tree.setCurrentItem(top)
        n = len(plan.items)
        their = "its" if n == 1 else "their"
        self.summary.setText(
            f"Forgets {words.forget_sentence(plan_groups(plan))}, with {their} links and "
            f"history and {their} words in the search index."
            + (" Patterns are counted again without it." if plan.statistics_to_recompute else "")
            if n else "Nothing matches; nothing would be forgotten.")
        self.forget_btn.setEnabled(bool(n) and self.confirm.isChecked())

    def _group(self, label: str, n: int, role: str) -> QTreeWidgetItem:
        item = QTreeWidgetItem(self.tree, [label, f"{n:,}"])
        item.setData(0, GROUP_ROLE, role)
        item.setExpanded(True)
        return item

    def _also(self, rows: dict[str, int]) -> QTreeWidgetItem:
        """ "Also removed with them": links, history entries... in the same words in the
        plan and in the report (``app.words.also_gone``)."""
        also = self._group(ALSO_LABEL, 0, "also")
        also.setText(1, "")
        for label, n in words.also_gone(rows):
            QTreeWidgetItem(also, [label, f"{n:,}"])
        also.setHidden(also.childCount() == 0)
        return also

    @Slot(bool)
    def _on_confirm_toggled(self, on: bool) -> None:
        self.forget_btn.setEnabled(on and self.plan is not None and bool(self.plan.items))

    @Slot(bool)
    def _on_keep_sources_toggled(self, _on: bool) -> None:
        self._load_plan()

    @Slot()
    def _on_forget_btn_clicked(self) -> None:
        if not self.confirm.isChecked() or self.plan is None:
            return
        for w in (self.forget_btn, self.confirm, self.keep_sources, self.cancel_btn):
            w.setEnabled(False)
        self.progress.show()
        self.summary.setText("Forgetting…")
        vault, plan, pid = self.vault, self.plan, self.pending
        if pid is None:
            run_op(self, lambda: vault.forget(plan), lambda r: self._on_forgotten(r.value),
                   self.bridge, self._on_failed)
        else:
            run_op(self, lambda: vault.close_pending_forget(pid, plan),
                   lambda r: self._on_forgotten(r.value), self.bridge, self._on_failed)

    def _on_forgotten(self, report: ForgetReport | None) -> None:
        self.report = report
        self.progress.hide()
        self.tree.clear()
        if report is None:  # a confirmed plan always forgets; said if it ever did not
            self.summary.setText("Nothing was forgotten.")
        else:
            # The report in the plan's words: the groups it showed (forget deletes exactly
            # the plan, or refuses), then what else went, counted as it was counted before.
            plan = self.plan
            groups = plan_groups(plan) if plan is not None else []
            if sum(n for _w, n in groups) != report.memories:  # never expected; said plainly
                groups = [(words.count(report.memories, "memory", "memories"),
                           report.memories)]
            for label, n in groups:
                self._group(label, n, "gone")
            self._also({**report.deleted,
                        "summaries": report.deleted.get("entity_summaries_cleared", 0)})
            self.summary.setText(f"Forgot {words.forget_sentence(groups)}. {report.note}")
        self.cancel_btn.setText("Close")
        self.cancel_btn.setEnabled(True)
        self.cancel_btn.setDefault(True)
        self.forget_btn.hide()  # done: nothing is left to forget here
        self.warning.hide()
        self.confirm.hide()
        self.keep_sources.hide()
        if report is not None:
            self.forgotten.emit(report)

    def _on_failed(self, exc: BaseException) -> None:
        self.progress.hide()
        self.cancel_btn.setEnabled(True)
        self.summary.setText("Nothing was forgotten.")
        errors.show_error(self, exc)
        self._load_plan()
        self.confirm.setEnabled(True)
        self.keep_sources.setEnabled(True)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 (Qt name)
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            return  # Enter never forgets: the button must be clicked
        super().keyPressEvent(event)


def plan_groups(plan: ForgetPlan) -> list[tuple[str, int]]:
    """What the plan forgets in words, per role (``app.words.forget_groups``)."""
    return words.forget_groups((i.role, i.store) for i in plan.items)


def _short(text: str) -> str:
    return text if len(text) < 120 else text[:117] + "…"
