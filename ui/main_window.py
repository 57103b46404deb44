"""The main window: navigation, lists, search, detail pane, auto-lock. Layer: ui. GUI thread.

Every vault call goes through ``ui.tasks``; the window refreshes from ``CoreBridge`` change
flags. Pages that other modules provide (inbox, consolidation, insights, settings, the forget
dialog) are imported lazily so a missing optional view never blocks the window.
"""

from __future__ import annotations

import logging
from typing import Any

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal, Slot
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMainWindow,
    QSplitter,
    QStackedWidget,
    QTableView,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.services.browse import MemoryQuery, MemoryRow
from ui.models.memory_table import MemoryTableModel
from ui.tasks import run_query
from ui.views.detail import DetailPane

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
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search everything (Enter)")
        self.search.setClearButtonEnabled(True)
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
        lay.addWidget(self.search)
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
        self.table.selectionModel().currentRowChanged.connect(self._on_table_row_changed)
        self.model.count_known.connect(self._on_model_count_known)
        self._label = ""
        self._search_generation = 0

    def show_query(self, label: str, query: MemoryQuery) -> None:
        self._label = label
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
        self.title.setText(f"Searching for “{text}”…")

        def search() -> list[MemoryRow]:
            hits = vault.recall(text, k=50, touch=False)
            return [MemoryRow(h.id, h.store, h.text, h.occurred_at, h.speaker, "active",
                              h.score, 0.0, False, "") for h in hits]

        def done(rows: list[MemoryRow]) -> None:
            if gen != self._search_generation:
                return
            self.model.clear()
            self.model.beginResetModel()
            self.model.rows = rows
            self.model.endResetModel()
            self.title.setText(f"{len(rows)} results for “{text}”, best first")
        run_query(self, search, done)

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
        tb.addAction(self.lock_action)
        tb.addAction(self.run_action)

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
            return (vault.entities(), vault.timeline_days(120),
                    len(vault.contradictions()))

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
            self.browse.show_query(f"Timeline {key[1]}", MemoryQuery(day=key[1]))
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
        total = sum(st.totals.values())
        search = "semantic + lexical search" if st.semantic_search else \
            "lexical search only (no embedding model found)"
        self.status_label.setText(f"{total:,} memories · {search} · locks after "
                                  f"{self.idle_timer.interval() // 60000} min idle")

    @Slot(object, object)
    def _on_bridge_changes_applied(self, changes: Any, initiator: Any) -> None:
        if getattr(changes, "lock", False):
            return
        if changes.memories or changes.entities or changes.contradictions:
            self.reload_nav_children()
            if self.stack.currentWidget() is self.browse and initiator is not self.browse:
                self.browse.model.refresh()
            self.refresh_status()
        for page in self.pages.values():
            refresh = getattr(page, "on_changes", None)
            if refresh is not None:
                refresh(changes)

    @Slot(object)
    def _on_bridge_job_finished(self, outcome: Any) -> None:
        text = f"{outcome.job}: " + ("done" if outcome.ok else f"problem ({outcome.error or 'see log'})")
        self.statusBar().showMessage(text, 10_000)

    @Slot()
    def _on_run_action_triggered(self) -> None:
        self.run_consolidation()

    def run_consolidation(self) -> None:
        from ui.tasks import run_op
        self.run_action.setEnabled(False)
        self.statusBar().showMessage("Consolidating…")
        vault = self.vault

        def done(result: Any) -> None:
            self.run_action.setEnabled(True)
            r = result.value
            self.statusBar().showMessage(
                f"Consolidation run {r.run_id}: {sum(r.counts.values())} changes in "
                f"{r.seconds:.1f} s", 10_000)

        def failed(exc: BaseException) -> None:
            self.run_action.setEnabled(True)
            from ui.errors import show_error
            show_error(self, exc)
        run_op(self, lambda: vault.consolidate(), done, self.bridge, failed)

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
