"""The main window: navigation, lists, search, detail pane, auto-lock. Layer: ui. GUI thread.

Every vault call goes through ``ui.tasks``; the window refreshes from ``CoreBridge`` change
flags. Pages that other modules provide (inbox, consolidation, insights, settings, the forget
dialog) are imported lazily so a missing optional view never blocks the window.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal, Slot
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMainWindow,
    QProgressBar,
    QSplitter,
    QStackedWidget,
    QTableView,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.services.browse import LIVE, MemoryQuery, MemoryRow
from ui.models.memory_table import MemoryTableModel
from ui.tasks import run_query
from ui.views.detail import DetailPane
from ui.views.search import SearchBar, hit_rows, search_filters

log = logging.getLogger(__name__)

NAV_ROLE = Qt.ItemDataRole.UserRole
STORES = (("All memories", None), ("Short-term", "short_term"), ("Episodes", "episodic"),
          ("Facts", "semantic"), ("Procedures", "procedural"), ("Statistics", "implicit"))
INPUT_EVENTS = {QEvent.Type.KeyPress, QEvent.Type.MouseButtonPress, QEvent.Type.MouseMove,
                QEvent.Type.Wheel, QEvent.Type.TouchBegin}


class IdleWatcher(QObject):
    """Restarts the auto-lock timer on any input anywhere in the application."""

    def __init__(self, timer: QTimer) -> None:
        super().__init__()
        self.timer = timer

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt name)
        if event.type() in INPUT_EVENTS and self.timer.isActive():
            self.timer.start()
        return False


class BrowsePage(QWidget):
    """Search field, the lazy memory list and the detail pane."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__()
        self.window_ = window
        self.search_bar = SearchBar()
        self.search = self.search_bar.field
        self.title = QLabel()
        self.title.setObjectName("listTitle")
        self.model = MemoryTableModel(window.vault, self)
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.table.verticalHeader().setDefaultSectionSize(24)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for col, width in ((1, 90), (2, 130), (3, 50), (4, 70)):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.Fixed)
            header.resizeSection(col, width)
        self.table.setWordWrap(False)
        self.detail = DetailPane(window)
        left = QWidget()
        lay = QVBoxLayout(left)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.search_bar)
        lay.addWidget(self.title)
        lay.addWidget(self.table)
        split = QSplitter()
        split.addWidget(left)
        split.addWidget(self.detail)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        split.setSizes([620, 360])
        outer = QHBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(split)
        self.search.returnPressed.connect(self._on_search_return_pressed)
        self.search_bar.as_of_changed.connect(self._on_search_bar_as_of_changed)
        self.table.selectionModel().currentRowChanged.connect(self._on_table_row_changed)
        self.model.count_known.connect(self._on_model_count_known)
        self._label = ""
        self._query = MemoryQuery()
        self._search_generation = 0

    def show_query(self, label: str, query: MemoryQuery) -> None:
        self._label = label
        self._query = query
        self.title.setText(label)
        self.search.blockSignals(True)
        self.search.clear()
        self.search.blockSignals(False)
        self.model.set_query(query)

    @Slot(int)
    def _on_model_count_known(self, n: int) -> None:
        self.title.setText(f"{self._label}: {n:,} memories")

    @Slot()
    def _on_search_return_pressed(self) -> None:
        text = self.search.text().strip()
        if not text:
            self.window_.refresh_current()
            return
        self._search_generation += 1
        gen = self._search_generation
        vault = self.window_.vault
        # In the Archive, search the Archive; the as-of control: what was said and true then.
        filters = search_filters(self._query.status, self.search_bar.as_of())
        where = (" in the Archive" if filters.only_archived else "") + self.search_bar.describe()
        self.title.setText(f"Searching for “{text}”{where}…")

        def search() -> list[MemoryRow]:
            return hit_rows(vault.recall(text, k=50, touch=False, filters=filters))

        def done(rows: list[MemoryRow]) -> None:
            if gen != self._search_generation:
                return
            self.model.clear()
            self.model.beginResetModel()
            self.model.rows = rows
            self.model.endResetModel()
            self.title.setText(f"{len(rows)} results for “{text}”{where}, best first")
        run_query(self, search, done)

    @Slot()
    def _on_search_bar_as_of_changed(self) -> None:
        if self.search.text().strip():
            self._on_search_return_pressed()

    @Slot(object, object)
    def _on_table_row_changed(self, current: Any, _previous: Any) -> None:
        row = self.model.row_at(current.row()) if current.isValid() else None
        self.detail.show_memory(row.id if row else None)


class MainWindow(QMainWindow):
    lock_requested = Signal()

    def __init__(self, vault: Any, bridge: Any, *, idle_minutes: int = 5) -> None:
        super().__init__()
        self.vault = vault
        self.bridge = bridge
        self._cleared = False  # set on lock: late background results are dropped
        self.setWindowTitle("Kept")  # never memory text in a title (SECURITY.md D)
        self.resize(1200, 760)
        self.nav = QTreeWidget()
        self.nav.setHeaderHidden(True)
        self.nav.setMinimumWidth(190)
        self.nav.setMaximumWidth(260)
        self.stack = QStackedWidget()
        self.browse = BrowsePage(self)
        self.stack.addWidget(self.browse)
        self.pages: dict[str, QWidget] = {"browse": self.browse}
        split = QSplitter()
        split.addWidget(self.nav)
        split.addWidget(self.stack)
        split.setStretchFactor(1, 1)
        split.setSizes([210, 990])
        self.banner = QLabel()
        self.banner.setObjectName("banner")
        self.banner.setWordWrap(True)
        self.banner.setStyleSheet("background: #fff4ce; padding: 6px; border: 1px solid #e0c97a")
        self.banner.hide()
        central = QWidget()
        cl = QVBoxLayout(central)
        cl.setContentsMargins(4, 4, 4, 4)
        cl.addWidget(self.banner)
        cl.addWidget(split, 1)
        self.setCentralWidget(central)
        self.status_label = QLabel()
        self.statusBar().addPermanentWidget(self.status_label)
        # Long work (import, consolidation): a bar in the status bar, fed by a 100 ms poll of
        # what the worker stored (STYLE B5.4); the worker never touches a widget.
        self.progress_bar = QProgressBar()
        self.progress_bar.setMaximumWidth(220)
        self.progress_bar.hide()
        self.statusBar().addPermanentWidget(self.progress_bar)
        self._work: _WorkProgress | None = None
        self._work_timer = QTimer(self)
        self._work_timer.setInterval(100)
        self._work_timer.timeout.connect(self._poll_work)
        # What is still being prepared after unlock (self-test, text index, vector index).
        self._status_base = ""
        self._background = ""
        self._runs_note = ""  # "last consolidation had N failed batches", or ""
        self._bg_timer = QTimer(self)
        self._bg_timer.setInterval(500)
        self._bg_timer.timeout.connect(self._poll_background)
        self._bg_timer.start()
        self._build_actions()
        self._build_nav()
        self.nav.currentItemChanged.connect(self._on_nav_current_item_changed)
        self.bridge.changes_applied.connect(self._on_bridge_changes_applied)
        self.bridge.job_finished.connect(self._on_bridge_job_finished)
        # Auto-lock after idle (SECURITY.md requirement 20).
        self.idle_timer = QTimer(self)
        self.idle_timer.setSingleShot(True)
        self.idle_timer.timeout.connect(self._on_idle_timer_timeout)
        self.set_idle_minutes(idle_minutes)
        self._idle_watcher = IdleWatcher(self.idle_timer)
        QApplication.instance().installEventFilter(self._idle_watcher)
        self.nav.setCurrentItem(self.nav.topLevelItem(0).child(0))
        self.refresh_status()
        self.refresh_runs_note()

    # --- structure ----------------------------------------------------------------------
    def _build_actions(self) -> None:
        tb = self.addToolBar("Main")
        tb.setObjectName("mainToolbar")
        tb.setMovable(False)
        self.lock_action = QAction("Lock", self)
        self.lock_action.setShortcut(QKeySequence("Ctrl+L"))
        self.lock_action.triggered.connect(self.lock_requested)
        self.run_action = QAction("Run consolidation now", self)
        self.run_action.triggered.connect(self._on_run_action_triggered)
        self.import_action = QAction("Import…", self)
        self.import_action.setToolTip("Import a conversation (JSON Lines, one turn a line)")
        self.import_action.triggered.connect(self._on_import_action_triggered)
        tb.addAction(self.lock_action)
        tb.addAction(self.run_action)
        tb.addAction(self.import_action)

    def _item(self, parent: Any, label: str, key: tuple[Any, ...]) -> QTreeWidgetItem:
        item = QTreeWidgetItem(parent, [label])
        item.setData(0, NAV_ROLE, key)
        return item

    def _build_nav(self) -> None:
        self.nav.clear()
        mem = self._item(self.nav, "Memories", ("none",))
        for label, store in STORES:
            self._item(mem, label, ("store", store, label))
        self.people_item = self._item(self.nav, "People & Projects", ("none",))
        self.timeline_item = self._item(self.nav, "Timeline", ("none",))
        self.inbox_item = self._item(self.nav, "Inbox", ("page", "inbox"))
        self._item(self.nav, "Archive", ("archive",))
        self._item(self.nav, "Consolidation", ("page", "consolidation"))
        self._item(self.nav, "Insights", ("page", "insights"))
        self._item(self.nav, "Settings", ("page", "settings"))
        mem.setExpanded(True)
        self.reload_nav_children()

    def reload_nav_children(self) -> None:
        vault = self.vault

        def load() -> tuple[list[Any], list[tuple[str, int]], int]:
            return (vault.entities(), vault.timeline_days(120), vault.inbox_count())

        def done(result: tuple[list[Any], list[tuple[str, int]], int]) -> None:
            if self._cleared:  # locked while loading: the items are gone
                return
            ents, days, inbox = result
            for parent in (self.people_item, self.timeline_item):
                parent.takeChildren()
            for e in ents[:200]:
                self._item(self.people_item, f"{e.name} ({e.kind}, {e.mentions})",
                           ("entity", e.id, e.name))
            for day, n in days:
                self._item(self.timeline_item, f"{day} ({n})", ("day", day))
            self.inbox_item.setText(0, f"Inbox ({inbox})" if inbox else "Inbox")
        run_query(self, load, done)

    # --- navigation ---------------------------------------------------------------------
    @Slot(object, object)
    def _on_nav_current_item_changed(self, item: QTreeWidgetItem | None, _prev: Any) -> None:
        if item is not None:
            self.navigate(item.data(0, NAV_ROLE))

    def navigate(self, key: tuple[Any, ...]) -> None:
        kind = key[0]
        if kind == "store":
            self.stack.setCurrentWidget(self.browse)
            self.browse.show_query(key[2], MemoryQuery(store=key[1]))
        elif kind == "entity":
            self.stack.setCurrentWidget(self.browse)
            self.browse.show_query(key[2], MemoryQuery(entity_id=key[1]))
        elif kind == "day":
            self.stack.setCurrentWidget(self.browse)
            # Every memory of that day the person has not forgotten, archived ones too.
            self.browse.show_query(f"Timeline {key[1]}", MemoryQuery(day=key[1], status=LIVE))
        elif kind == "archive":
            self.stack.setCurrentWidget(self.browse)
            self.browse.show_query("Archive", MemoryQuery(status="archived"))
        elif kind == "page":
            self.stack.setCurrentWidget(self.page(key[1]))

    def page(self, name: str) -> QWidget:
        if name not in self.pages:
            widget = self._make_page(name)
            self.pages[name] = widget
            self.stack.addWidget(widget)
        return self.pages[name]

    def _make_page(self, name: str) -> QWidget:
        try:
            if name == "inbox":
                from ui.views.inbox import InboxView
                return InboxView(self)
            if name == "consolidation":
                from ui.views.consolidation import ConsolidationView
                return ConsolidationView(self)
            if name == "insights":
                from ui.views.insights import InsightsView
                return InsightsView(self)
            if name == "settings":
                from ui.views.settings import SettingsView
                return SettingsView(self)
        except ImportError:
            log.exception("view %s unavailable", name)
        label = QLabel(f"{name.title()} is not available in this build.")
        label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        return label

    def show_banner(self, text: str) -> None:
        self.banner.setText(text)
        self.banner.setVisible(bool(text))

    def refresh_current(self) -> None:
        item = self.nav.currentItem()
        if item is not None:
            self.navigate(item.data(0, NAV_ROLE))

    # --- status, jobs, changes ----------------------------------------------------------
    def refresh_status(self) -> None:
        vault = self.vault
        run_query(self, vault.status, self._show_status)

    def _show_status(self, st: Any) -> None:
        # The same figure as the "All memories" list (active ones); the rest said apart.
        active = sum(v.get("active", 0) for v in st.counts.values())
        other = sum(st.totals.values()) - active
        kept = f"{active:,} memories" + (f" (+{other:,} archived or earlier versions)"
                                         if other else "")
        search = "semantic + lexical search" if st.semantic_search else \
            "lexical search only (no embedding model found)"
        self._status_base = (f"{kept} · {search} · locks after "
                             f"{self.idle_timer.interval() // 60000} min idle")
        self._render_status()

    def refresh_runs_note(self) -> None:
        """The newest consolidation run's failed batches, kept in the status bar until a
        run without failures (issue 12: a failing batch was only logged)."""
        vault = self.vault
        run_query(self, lambda: vault.runs(1), self._show_runs_note)

    def _show_runs_note(self, runs: list[dict[str, Any]]) -> None:
        if self._cleared:  # locked meanwhile
            return
        report = (runs[0].get("report") or {}) if runs else {}
        n = int(report.get("failed_batches") or 0)
        self._runs_note = (f"last consolidation had {n} failed batch{'es' if n != 1 else ''}"
                           if n else "")
        self._render_status()

    def _render_status(self) -> None:
        extra = f" · {self._background}…" if self._background else ""
        extra += f" · {self._runs_note}" if self._runs_note else ""
        self.status_label.setText(self._status_base + extra)

    @Slot()
    def _poll_background(self) -> None:
        if self._cleared or self.vault.locked:
            self._bg_timer.stop()
            return
        work = self.vault.background_work()
        text = ", ".join(work)
        if text != self._background:
            self._background = text
            self._render_status()
        if not work:
            self._bg_timer.stop()

    # --- long work with progress --------------------------------------------------------
    def _begin_work(self, label: str, unit: str) -> _WorkProgress:
        self._work = _WorkProgress(label, unit)
        self.import_action.setEnabled(False)
        self.run_action.setEnabled(False)
        self.progress_bar.setRange(0, 0)  # busy until the first report
        self.progress_bar.show()
        self.statusBar().showMessage(f"{label}…")
        self._work_timer.start()
        return self._work

    def _end_work(self) -> None:
        self._work_timer.stop()
        self._work = None
        self.progress_bar.hide()
        self.import_action.setEnabled(True)
        self.run_action.setEnabled(True)

    @Slot()
    def _poll_work(self) -> None:
        work = self._work
        if work is None:
            return
        done, total, changed = work.take()
        if total:
            self.progress_bar.setRange(0, total)
            self.progress_bar.setValue(done)
            self.statusBar().showMessage(f"{work.label}… {done:,} of {total:,} {work.unit}")
        # Imported turns show up while the import runs, at most once a second.
        if changed and work.unit == "turns" and time.monotonic() - work.refreshed >= 1.0:
            work.refreshed = time.monotonic()
            from app.changes import Changes
            self.bridge.apply_changes(Changes(memories=True), None)

    def _on_import_action_triggered(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Import a conversation", "", "JSON Lines (*.jsonl);;All files (*)")
        if path:
            self.start_import(Path(path))

    def start_import(self, path: Path) -> None:
        """Import a JSON Lines file of turns (the format of ``kept import``) with progress.
        A malformed file is refused whole, with its bad line numbers; nothing is written."""
        from ui.tasks import run_op
        vault = self.vault
        work = self._begin_work("Importing", "turns")

        def run() -> Any:
            from app.errors import ValidationError
            from app.services.importer import parse_import
            try:
                with path.open(encoding="utf-8") as fh:
                    turns = parse_import(fh)
            except UnicodeDecodeError as exc:
                raise ValidationError(f"{path.name} is not UTF-8 text.") from exc
            except OSError as exc:
                raise ValidationError(f"Cannot read {path.name}: {exc.strerror}.") from exc
            return vault.import_turns(turns, progress=work.report)

        def done(result: Any) -> None:
            self._end_work()
            r = result.value
            self.statusBar().showMessage(
                f"Imported {r.added:,} turns from {path.name}"
                + (f" ({r.skipped_duplicates:,} were already there)" if r.skipped_duplicates
                   else ""), 15_000)

        def failed(exc: BaseException) -> None:
            self._end_work()
            self.statusBar().clearMessage()
            from ui.errors import show_error
            show_error(self, exc)
        run_op(self, run, done, self.bridge, failed)

    @Slot(object, object)
    def _on_bridge_changes_applied(self, changes: Any, initiator: Any) -> None:
        if getattr(changes, "lock", False):
            return
        if changes.memories or changes.entities or changes.contradictions:
            self.reload_nav_children()
            if self.stack.currentWidget() is self.browse and initiator is not self.browse:
                self.browse.model.refresh()
            self.refresh_status()
        if changes.runs:
            self.refresh_runs_note()
        for page in self.pages.values():
            refresh = getattr(page, "on_changes", None)
            if refresh is not None:
                refresh(changes)

    @Slot(object)
    def _on_bridge_job_finished(self, outcome: Any) -> None:
        self.refresh_runs_note()
        text = f"{outcome.job}: " + ("done" if outcome.ok else f"problem ({outcome.error or 'see log'})")
        self.statusBar().showMessage(text, 10_000)

    @Slot()
    def _on_run_action_triggered(self) -> None:
        self.run_consolidation()

    def run_consolidation(self) -> None:
        from ui.tasks import run_op
        work = self._begin_work("Consolidating", "steps")
        vault = self.vault

        def done(result: Any) -> None:
            self._end_work()
            r = result.value
            self.statusBar().showMessage(
                f"Consolidation run {r.run_id}: {sum(r.counts.values())} changes in "
                f"{r.seconds:.1f} s", 10_000)

        def failed(exc: BaseException) -> None:
            self._end_work()
            from ui.errors import show_error
            show_error(self, exc)
        run_op(self, lambda: vault.consolidate(progress=work.report), done, self.bridge, failed)

    # --- auto-lock ----------------------------------------------------------------------
    def set_idle_minutes(self, minutes: float) -> None:
        self.idle_timer.setInterval(int(minutes * 60_000))
        self.idle_timer.start()

    @Slot()
    def _on_idle_timer_timeout(self) -> None:
        log.info("auto-lock after idle")
        self.lock_requested.emit()

    def clear_for_lock(self) -> None:
        """Drop every model and cache that could hold memory text (requirement 20)."""
        self._cleared = True
        self.idle_timer.stop()
        self._work_timer.stop()
        self._bg_timer.stop()
        self.browse.model.clear()
        self.browse.detail.clear()
        self.browse.search.clear()
        for name, page in list(self.pages.items()):
            if name != "browse":
                self.stack.removeWidget(page)
                page.deleteLater()
                del self.pages[name]
        self.nav.clear()
        self.status_label.clear()
        QApplication.instance().removeEventFilter(self._idle_watcher)

    def closeEvent(self, event: Any) -> None:  # noqa: N802 (Qt name)
        self.idle_timer.stop()
        QApplication.instance().removeEventFilter(self._idle_watcher)
        super().closeEvent(event)


class _WorkProgress:
    """Progress of one long job: written by the worker thread, read by the GUI's poll."""

    def __init__(self, label: str, unit: str) -> None:
        self.label = label
        self.unit = unit
        self.refreshed = 0.0
        self._lock = threading.Lock()
        self._done = self._total = 0
        self._changed = False

    def report(self, done: int, total: int) -> None:  # worker thread: store only
        with self._lock:
            self._done, self._total, self._changed = done, total, True

    def take(self) -> tuple[int, int, bool]:
        with self._lock:
            changed, self._changed = self._changed, False
            return self._done, self._total, changed
