"""The detail pane: text, store, scores and tier, sources, links, history; actions correct,
confirm, archive/restore, forget. Layer: ui. GUI thread; loads through ``ui.tasks``."""

from __future__ import annotations

from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFormLayout,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QListView,
    QListWidget,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QStyle,
    QVBoxLayout,
    QWidget,
)

from app.api import Explanation, History, MemoryRead, VaultAPI
from app.changes import Changes
from app.clock import to_iso
from app.domain.memory import Draft
from app.errors import ValidationError
from ui import fit, theme
from ui.bridge import CoreBridge
from ui.tasks import run_op
from ui.views.page import Page

STORE_NAMES = {"short_term": "Short-term (conversation turn)", "episodic": "Episode",
               "semantic": "Fact", "procedural": "Procedure or preference",
               "implicit": "Statistic"}


def when_text(ts: float | None) -> str:
    """A history or read time as the pane lists it: '2026-02-01T10:00:00' (UTC)."""
    iso = to_iso(ts)
    return iso[:19] if iso is not None else "(no time)"


def wrap_lines(lst: QListWidget) -> None:
    """Long lines (a source's text, a version) wrap at the list's width instead of needing a
    horizontal scroll bar."""
    lst.setWordWrap(True)
    lst.setResizeMode(QListView.ResizeMode.Adjust)
    lst.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    lst.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)


class DetailPane(Page):
    """One memory in full, beside the memory list (owned by the browse page)."""

    def __init__(self, vault: VaultAPI, bridge: CoreBridge, parent: QWidget | None = None
                 ) -> None:
        super().__init__(vault, bridge, parent)
        self.memory_id: int | None = None
        self.status: str | None = None
        self.placeholder = QLabel("Select a memory to see where it came from, how strong it "
                                  "is, and its history.")
        self.placeholder.setWordWrap(True)
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.text = QPlainTextEdit()
        self.text.setReadOnly(True)
        self.text.setMaximumHeight(fit.lines(self.text, 7))
        self.meta = QLabel()
        self.meta.setWordWrap(True)
        self.origin = theme.plain(QLabel())  # "from NAME": an assistant wrote it
        self.origin.setObjectName("origin")
        self.origin.setWordWrap(True)
        theme.set_muted(self.origin)
        self.scores = QLabel()
        self.scores.setWordWrap(True)
        self.sources = QListWidget()
        self.links = QListWidget()
        self.history = QListWidget()
        self.reads = QListWidget()  # when which assistant read it (ids and times only)
        self.reads.setObjectName("reads")
        for lst in (self.sources, self.links, self.history, self.reads):
            wrap_lines(lst)
            lst.setMaximumHeight(fit.lines(lst, 7))
        self.correct_btn = QPushButton("Correct…")
        self.confirm_btn = QPushButton("Confirm")
        self.archive_btn = QPushButton("Archive")
        self.forget_btn = QPushButton("Forget…")
        buttons = QGridLayout()  # two by two: the pane stays narrow beside the memory list
        for n, b in enumerate((self.correct_btn, self.confirm_btn, self.archive_btn,
                               self.forget_btn)):
            buttons.addWidget(b, n // 2, n % 2)
        self.editor = QPlainTextEdit()
        self.editor.setPlaceholderText("The corrected memory")
        self.editor.setMaximumHeight(fit.lines(self.editor, 5))
        self.save_btn = QPushButton("Save correction")
        self.cancel_btn = QPushButton("Cancel")
        self.edit_row = QWidget()
        er = QHBoxLayout(self.edit_row)
        er.setContentsMargins(0, 0, 0, 0)
        er.addWidget(self.save_btn)
        er.addWidget(self.cancel_btn)
        self.edit_error = theme.plain(QLabel())
        self.edit_error.setStyleSheet(theme.ERROR_STYLE)
        self.edit_error.setWordWrap(True)
        self.body = QWidget()
        form = QFormLayout(self.body)
        form.setContentsMargins(6, 6, 6, 6)  # the pane is narrow beside the list
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapAllRows)  # names above lists
        form.addRow(self.text)
        form.addRow(self.meta)
        form.addRow(self.origin)
        form.addRow(self.scores)
        form.addRow(buttons)
        form.addRow(self.editor)
        form.addRow(self.edit_row)
        form.addRow(self.edit_error)
        form.addRow("Sources", self.sources)
        form.addRow("Links", self.links)
        form.addRow("History", self.history)
        form.addRow("Read by assistants", self.reads)
        # The body scrolls (vertically only: its lines wrap) when the window is too short.
        self.body_scroll = QScrollArea()
        self.body_scroll.setWidgetResizable(True)
        self.body_scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.body_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.body_scroll.setWidget(self.body)
        # A scroll area asks for no width of its own: ask for the body's, or the splitter
        # beside the memory list squeezes the body under its buttons.
        self.body_scroll.setMinimumWidth(
            self.body.minimumSizeHint().width()
            + self.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent))
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)  # the body's form keeps its own margins
        lay.addWidget(self.placeholder)
        lay.addWidget(self.body_scroll)
        self._editing(False)
        self.body_scroll.hide()
        self.correct_btn.clicked.connect(self._on_correct_btn_clicked)
        self.save_btn.clicked.connect(self._on_save_btn_clicked)
        self.cancel_btn.clicked.connect(self._on_cancel_btn_clicked)
        self.confirm_btn.clicked.connect(self._on_confirm_btn_clicked)
        self.archive_btn.clicked.connect(self._on_archive_btn_clicked)
        self.forget_btn.clicked.connect(self._on_forget_btn_clicked)

    def clear(self) -> None:
        self.drop_loads()
        self.memory_id = None
        for w in (self.text, self.editor):
            w.clear()
        for lst in (self.sources, self.links, self.history, self.reads):
            lst.clear()
        self.meta.clear()
        self.origin.clear()
        self.scores.clear()
        self.body_scroll.hide()
        self.placeholder.show()

    def show_memory(self, mid: int | None) -> None:
        if mid is None:
            self.clear()
            return
        vault = self.vault

        def load() -> tuple[Explanation, History, str, list[MemoryRead]]:
            return (vault.explain(mid), vault.history(mid), vault.get(mid).agent,
                    vault.memory_reads(mid))
        self.load(load, self._fill)

    # --- assistants' reads (refreshed on Changes.agents: one query for the shown memory) --
    def wants(self, changes: Changes) -> bool:
        return changes.agents and self.memory_id is not None

    def refresh(self) -> None:
        mid, vault = self.memory_id, self.vault
        if mid is not None:
            self.load(lambda: vault.memory_reads(mid),
                      lambda reads: self._fill_reads(reads) if self.memory_id == mid else None,
                      kind="reads")

    def _fill_reads(self, reads: list[MemoryRead]) -> None:
        self.reads.clear()
        for r in reads:
            self.reads.addItem(f"{when_text(r.at)} {r.agent} ({r.via})")
        if not reads:
            self.reads.addItem("Not read by an assistant")

    def _fill(self, result: tuple[Explanation, History, str, list[MemoryRead]]) -> None:
        ex, hist, agent, reads = result
        self.memory_id = ex.id
        self.origin.setText(f"from {agent}: written by this assistant"
                            if agent != "global" else "")
        self.origin.setVisible(agent != "global")
        self._fill_reads(reads)
        self.status = ex.status
        self.text.setPlainText(ex.text)
        confirmed = " · confirmed by you" if ex.scores["confidence"] >= 1.0 else ""
        self.meta.setText(f"<b>{STORE_NAMES.get(ex.store, ex.store)}</b> · {ex.status} · "
                          f"tier <b>{ex.tier}</b>{confirmed}")
        s = ex.scores
        self.scores.setText(
            f"strength {s['composite']:.2f} = importance {s['importance']:.2f}, recency "
            f"{s['recency']:.2f}, frequency {s['frequency']:.2f}, emotional {s['emotional']:.2f},"
            f" social {s['social']:.2f} · confidence {s['confidence']:.2f} · "
            f"{int(s['access_count'])} accesses")
        self.sources.clear()
        for src in ex.sources:
            ref = f" [{src.ref}]" if src.ref else ""
            self.sources.addItem(f"{src.occurred_at or ''} {STORE_NAMES.get(src.store, src.store)}"
                                 f"{ref}: {src.text}")
        if not ex.sources:
            self.sources.addItem("Told directly (no earlier source)")
        self.links.clear()
        for link in ex.links:
            other = link.dst if link.src == ex.id else link.src
            self.links.addItem(f"{link.kind} → #{other}")
        self.history.clear()
        for v in hist.versions:
            mark = " (current)" if v.status == "active" else f" ({v.status})"
            self.history.addItem(f"{when_text(v.created_at)} version #{v.id}{mark}: {v.text}")
        for e in hist.entries:
            self.history.addItem(f"{when_text(e.at)} #{e.memory_id} {e.action}"
                                 + (f" ({e.detail})" if e.detail else ""))
        self.archive_btn.setText("Restore" if ex.status == "archived" else "Archive")
        self.correct_btn.setEnabled(ex.status != "superseded")
        self.confirm_btn.setEnabled(ex.scores["confidence"] < 1.0)
        self._editing(False)
        self.placeholder.hide()
        self.body_scroll.show()

    def _editing(self, on: bool) -> None:
        self.editor.setVisible(on)
        self.edit_row.setVisible(on)
        self.edit_error.setVisible(False)

    # --- actions ------------------------------------------------------------------------
    @Slot()
    def _on_correct_btn_clicked(self) -> None:
        self.editor.setPlainText(self.text.toPlainText())
        self._editing(True)
        self.editor.setFocus()

    @Slot()
    def _on_cancel_btn_clicked(self) -> None:
        self._editing(False)

    @Slot()
    def _on_save_btn_clicked(self) -> None:
        text = self.editor.toPlainText()
        try:  # pure validation inline, no I/O (docs/architecture.md#errors)
            self.vault.validate_draft(Draft(text=text))
        except ValidationError as exc:
            self.edit_error.setText(exc.user_message)
            self.edit_error.setVisible(True)
            return
        mid, vault = self.memory_id, self.vault
        if mid is None:  # cleared (locked, forgotten) meanwhile
            return
        run_op(self, lambda: vault.correct(mid, text),
               lambda r: self.show_memory(int(r.value)), self.bridge)

    @Slot()
    def _on_confirm_btn_clicked(self) -> None:
        mid, vault = self.memory_id, self.vault
        if mid is None:
            return
        run_op(self, lambda: vault.confirm(mid), lambda _r: self.show_memory(mid),
               self.bridge)

    @Slot()
    def _on_archive_btn_clicked(self) -> None:
        mid, vault = self.memory_id, self.vault
        if mid is None:
            return
        fn = vault.restore if self.status == "archived" else vault.archive
        run_op(self, lambda: fn(mid), lambda _r: self.show_memory(mid), self.bridge)

    @Slot()
    def _on_forget_btn_clicked(self) -> None:
        if self.memory_id is None:
            return
        from ui.dialogs.forget import ForgetDialog
        dlg = ForgetDialog(self.vault, self.bridge, self.window(), ids=[self.memory_id])
        dlg.forgotten.connect(lambda _report: self.clear())
        dlg.show()
