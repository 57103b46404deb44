"""The main window: navigation, lists, search, detail pane, auto-lock. Layer: ui. GUI thread.

Every vault call goes through ``ui.tasks``; the window and its pages refresh from
``CoreBridge`` change flags. The pages live in ``ui/views`` (``ui/views/registry.py`` names
them); each gets the vault and the bridge, and asks the window for anything else through its
signals (``ui.views.page.Page``). Long work shows its progress through ``ui.progress``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal, Slot
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QLabel,
    QProgressBar,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app import words
from app.api import (
    ALL_MEMORIES,
    LIVE,
    CancelToken,
    EntityRow,
    MemoryQuery,
    Result,
    RunReport,
    RunSummary,
    Status,
    Store,
    SyncActivity,
    SyncStatus,
    VaultAPI,
    VaultStatus,
)
from app.changes import Changes
from app.eta import Rate, duration_words, progress_words
from ui import access, errors, icons, theme
from ui.bridge import CoreBridge
from ui.progress import DelayedProgress, ProgressBox
from ui.tasks import run_op, run_query
from ui.views.browse import BrowsePage
from ui.views.page import Page
from ui.views.registry import page_class
from ui.work_window import WorkWindow

if TYPE_CHECKING:
    from app.jobs import JobOutcome

log = logging.getLogger(__name__)

NAV_ROLE = Qt.ItemDataRole.UserRole
SYNC_NOTE_MS = 30_000  # the status bar's sync words follow the folder this often (a few listings)
SYNC_ACTIVITY_MS = 2_000  # and the owner's sync job this often (memory only, and one count)
# What a navigation item leads to, as its NAV_ROLE data holds it (and as a page's
# ``navigate_requested`` names an item): ("store", store or None, label), ("entity", id, name),
# ("day", "YYYY-MM-DD"), ("archive",), ("page", name), or ("none",) for a heading.
NavKey = (tuple[Literal["store"], Store | None, str] | tuple[Literal["entity"], int, str]
          | tuple[Literal["day"], str] | tuple[Literal["archive"]] | tuple[Literal["page"], str]
          | tuple[Literal["none"]])
STORES: tuple[tuple[str, Store | None], ...] = (
    ("All memories", None),
    *((words.STORE_NAMES[s], s) for s in (Store.SHORT_TERM, Store.EPISODIC, Store.SEMANTIC,
                                          Store.PROCEDURAL, Store.IMPLICIT)))
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


class MainWindow(WorkWindow):
    lock_requested = Signal()

    def __init__(self, vault: VaultAPI, bridge: CoreBridge, *, idle_minutes: float = 5,
                 folder: Path | None = None) -> None:
        super().__init__()
        self.vault = vault
        self.folder = folder
        self.bridge = bridge
        self._cleared = False  # set on lock: late background results are dropped
        self._work: _Work | None = None
        self._page_running = False  # a page runs a consolidation (Consolidation's Run now)
        # never memory text in a title (docs/security.md#someone-who-sees-the-screen)
        self.setWindowTitle(f"Kept — {vault.folder.name}")
        self._fit_to_screen(1200, 760)
        self._build_central()
        self._build_status_bar()
        self._build_actions()
        self._build_nav()
        self.nav.currentItemChanged.connect(self._on_nav_current_item_changed)
        self.bridge.changes_applied.connect(self._on_bridge_changes_applied)
        self.bridge.job_finished.connect(self._on_bridge_job_finished)
        self.bridge.job_started.connect(self._on_bridge_job_started)
        self._start_auto_lock(idle_minutes)
        self.nav.setCurrentItem(self.all_memories_item)
        self.refresh_status()
        self.refresh_runs_note()
        self.refresh_pending_note()
        self.refresh_sync_note()
        access.tab_between_controls(self)

    def _fit_to_screen(self, width: int, height: int) -> None:
        """Open at ``width`` x ``height``, or at what the screen has room for (1024x640 and
        the like): never larger than the screen."""
        from PySide6.QtGui import QGuiApplication
        screen = QGuiApplication.primaryScreen()
        if screen is not None:  # less a title bar's height: the frame is not known yet
            room = screen.availableGeometry()
            width = min(width, room.width())
            height = min(height, room.height() - 2 * self.fontMetrics().height())
        self.resize(width, height)

    def _build_central(self) -> None:
        """The navigation, the page stack (the memory list first) and the banner."""
        self.nav = QTreeWidget()
        self.nav.setHeaderHidden(True)
        self.nav.setAccessibleName("Navigation")
        self.nav.setMinimumWidth(140)
        self.nav.setMaximumWidth(260)
        self.stack = QStackedWidget()
        self.browse = BrowsePage(self.vault, self.bridge)
        self.stack.addWidget(self.browse)
        self.pages: dict[str, Page] = {"browse": self.browse}
        split = QSplitter()
        split.addWidget(self.nav)
        split.addWidget(self.stack)
        split.setStretchFactor(1, 1)
        split.setSizes([210, 990])
        self.banner = theme.plain(QLabel())
        self.banner.setObjectName("banner")
        self.banner.setWordWrap(True)
        self.banner.setStyleSheet(theme.BANNER_STYLE)
        self.banner.hide()
        central = QWidget()
        cl = QVBoxLayout(central)
        cl.setContentsMargins(theme.XS, theme.XS, theme.XS, theme.XS)
        cl.addWidget(self.banner)
        cl.addWidget(split, 1)
        self.setCentralWidget(central)

    def _build_status_bar(self) -> None:
        """The vault's figures, what is still being prepared, and long work's progress."""
        from ui.status_bar import StatusBar, SyncButton
        self.setStatusBar(StatusBar(self))
        self.status_label = theme.plain(QLabel())  # may name a file
        self.statusBar().addPermanentWidget(self.status_label)
        # Sync in a few words, a button to Settings > Devices (issue 29; ui/status_bar.py).
        self.sync_button = SyncButton()
        self.statusBar().addPermanentWidget(self.sync_button)
        self.sync_button.clicked.connect(self._on_sync_button_clicked)
        # Long work (import, consolidation): a bar in the status bar (ui.progress).
        self.progress_bar = QProgressBar()
        self.progress_bar.setMaximumWidth(220)
        self.progress = DelayedProgress(self.progress_bar, self)  # hides the bar
        self.statusBar().addPermanentWidget(self.progress_bar)
        self.progress.polled.connect(self._on_progress_polled)
        # An import can be stopped; what it imported stays (issue 28).
        self.cancel_button = QPushButton("Cancel import")
        self.cancel_button.setToolTip("Stop after the batch under way. The turns already "
                                      "imported stay; importing the same file again adds the "
                                      "rest.")
        self.cancel_button.hide()
        self.cancel_button.clicked.connect(self._on_cancel_button_clicked)
        # In the status bar only while an import runs: even hidden, it would make the bar
        # 1 px taller and every page shorter.
        self._cancel_in_bar = False
        # What is still being prepared after unlock (self-test, text index, vector index).
        self._status_rest = ""  # after the count: the search words and the idle lock
        self.memory_figure = ""  # "23 memories (+2 archived or earlier versions)", as shown
        self._background = ""
        self._runs_note = ""  # "last consolidation had N failed batches", or ""
        self._pending_note = ""  # "N forget requests from assistants wait in the Inbox"
        self._sync_note = ""  # "Synced 12 s ago" while this device syncs (the sync button)
        self._sync_status: SyncStatus | None = None  # the folder's side, every SYNC_NOTE_MS
        self._sync_timer = QTimer(self)  # last seen and what waits change with the folder
        self._sync_timer.setInterval(SYNC_NOTE_MS)
        self._sync_timer.timeout.connect(self.refresh_sync_note)
        self._activity_timer = QTimer(self)  # the owner's sync job: "Synced 12 s ago"
        self._activity_timer.setInterval(SYNC_ACTIVITY_MS)
        self._activity_timer.timeout.connect(self.refresh_sync_activity)
        self._bg_timer = QTimer(self)
        self._bg_timer.setInterval(500)
        self._bg_timer.timeout.connect(self._poll_background)
        self._bg_timer.start()

    def _start_auto_lock(self, idle_minutes: float) -> None:
        """Auto-lock after idle (docs/security.md#20-auto-lock-and-memory-hygiene): any input
        restarts the timer."""
        self.idle_timer = QTimer(self)
        self.idle_timer.setSingleShot(True)
        self.idle_timer.timeout.connect(self._on_idle_timer_timeout)
        self.set_idle_minutes(idle_minutes)
        self._idle_watcher = IdleWatcher(self.idle_timer)
        app = QApplication.instance()
        assert app is not None, "a window exists only inside a QApplication"
        app.installEventFilter(self._idle_watcher)

    # --- structure ----------------------------------------------------------------------
    def _build_actions(self) -> None:
        tb = self.addToolBar("Main")
        tb.setObjectName("mainToolbar")
        tb.setMovable(False)
        tb.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.lock_action = QAction("Lock", self)
        self.lock_action.setShortcut(QKeySequence("Ctrl+L"))
        self.lock_action.triggered.connect(self.lock_requested)
        self.run_action = QAction("Run consolidation now", self)
        self.run_action.triggered.connect(self._on_run_action_triggered)
        self.run_action.changed.connect(self._on_run_action_changed)
        from ui.file_menu import FileMenu
        self.files = FileMenu(self, self.folder)
        from ui.menus import WindowMenus
        self.menus = WindowMenus(self)
        # An empty vault's three ways to begin (``BrowsePage.welcome``).
        self.browse.import_btn.clicked.connect(self.files.import_action.trigger)
        self.browse.connect_btn.clicked.connect(self.pair_assistant)
        self.browse.write_btn.clicked.connect(self.menus.add_memory)
        self.import_action = self.files.import_action
        self.import_action.setToolTip("Import chats or notes: a ChatGPT or Claude data export, "
                                      "Markdown or text notes, or Kept's JSON Lines")
        tb.addAction(self.lock_action)
        tb.addAction(self.run_action)
        tb.addAction(self.import_action)
        icons.decorate_actions(self)

    def _item(self, parent: QTreeWidget | QTreeWidgetItem, label: str, key: NavKey
              ) -> QTreeWidgetItem:
        item = QTreeWidgetItem(parent, [label])
        item.setData(0, NAV_ROLE, key)
        return item

    def _build_nav(self) -> None:
        self.nav.clear()
        mem = self._item(self.nav, "Memories", ("none",))
        stores = [self._item(mem, label, ("store", store, label)) for label, store in STORES]
        self.all_memories_item = stores[0]
        self.people_item = self._item(self.nav, "People & Projects", ("none",))
        self.timeline_item = self._item(self.nav, "Timeline", ("none",))
        self.inbox_item = self._item(self.nav, "Inbox", ("page", "inbox"))
        self._item(self.nav, "Archive", ("archive",))
        self._item(self.nav, "Consolidation", ("page", "consolidation"))
        self._item(self.nav, "Insights", ("page", "insights"))
        self._item(self.nav, "Settings", ("page", "settings"))
        mem.setExpanded(True)
        icons.decorate_nav(self.nav)
        self.reload_nav_children()

    def reload_nav_children(self) -> None:
        vault = self.vault

        def load() -> tuple[list[EntityRow], list[tuple[str, int]], int]:
            return (vault.entities(), vault.timeline_days(120), vault.inbox_count())

        def done(result: tuple[list[EntityRow], list[tuple[str, int]], int]) -> None:
            if self._cleared:  # locked while loading: the items are gone
                return
            ents, days, inbox = result
            people: list[tuple[str, NavKey, str]] = []
            for e in ents[:200]:
                kind = e.kind if e.kind != "archive" else words.entity_kind(
                    e.kind, e.was_kind, e.ended_at, e.ended_how)
                people.append((f"{e.name} ({kind}, {e.mentions})", ("entity", e.id, e.name), ""))
            timeline: list[tuple[str, NavKey, str]] = [(f"{_nav_day(day)} ({n})", ("day", day),
                         f"{words.calendar_day(day)}: {words.count(n, 'memory', 'memories')}")
                        for day, n in days]
            self._set_nav_children(self.people_item, people)
            self._set_nav_children(self.timeline_item, timeline)
            self.inbox_item.setText(0, f"Inbox ({inbox})" if inbox else "Inbox")
        run_query(self, load, done)

    def _set_nav_children(self, parent: QTreeWidgetItem,
                          want: list[tuple[str, NavKey, str]]) -> None:
        """``parent``'s children become ``want`` (label, key, tooltip), changing only what
        differs: an import refreshes the navigation every second, and rebuilding 320 items
        each time cost the GUI thread tens of milliseconds (issue 25); the selection and the
        scroll position stay where they were."""
        for i, (label, key, tip) in enumerate(want):
            item = parent.child(i)
            if item is None:
                item = self._item(parent, label, key)
            else:
                if item.text(0) != label:
                    item.setText(0, label)
                if item.data(0, NAV_ROLE) != key:
                    item.setData(0, NAV_ROLE, key)
            if item.toolTip(0) != tip:
                item.setToolTip(0, tip)
        while parent.childCount() > len(want):
            parent.takeChild(parent.childCount() - 1)

    # --- navigation ---------------------------------------------------------------------
    @Slot(object, object)
    def _on_nav_current_item_changed(self, item: QTreeWidgetItem | None,
                                     _prev: QTreeWidgetItem | None) -> None:
        if item is not None:
            self.navigate(item.data(0, NAV_ROLE))

    def navigate(self, key: NavKey) -> None:
        match key:
            # Every list but one store's own shows one row per thing said (MemoryQuery.fold):
            # a store's own list (the Conversation's turns, the Patterns) shows all it holds.
            case ("store", store, label):
                self.stack.setCurrentWidget(self.browse)
                self.browse.show_query(label, MemoryQuery(store=store) if store is not None
                                       else ALL_MEMORIES)
            case ("entity", eid, name):
                self.stack.setCurrentWidget(self.browse)
                self.browse.show_query(name, MemoryQuery(entity_id=eid, fold=True))
            case ("day", day):
                self.stack.setCurrentWidget(self.browse)
                # Every memory of that day the person has not forgotten, archived ones too.
                self.browse.show_query(words.calendar_day(day),
                                       MemoryQuery(day=day, status=LIVE, fold=True))
            case ("archive",):
                self.stack.setCurrentWidget(self.browse)
                self.browse.show_query("Archive", MemoryQuery(status=Status.ARCHIVED,
                                                              fold=True))
            case ("page", name):
                self.stack.setCurrentWidget(self.page(name))

    def page(self, name: str) -> Page:
        """The page ``name`` of ``ui.views.registry``, made on first use."""
        if name not in self.pages:
            page = page_class(name)(self.vault, self.bridge)
            page.navigate_requested.connect(self._on_page_navigate_requested)
            page.running_changed.connect(self._on_page_running_changed)
            page.idle_minutes_changed.connect(self._on_page_idle_minutes_changed)
            page.set_run_allowed(self.run_action.isEnabled())
            access.tab_between_controls(page)
            self.pages[name] = page
            self.stack.addWidget(page)
        return self.pages[name]

    @Slot(object)
    def _on_page_navigate_requested(self, key: NavKey) -> None:
        self.go(key)

    def go(self, key: NavKey) -> None:
        """Select the navigation item of ``key`` (as a click would), at any depth."""
        items = [self.nav.topLevelItem(i) for i in range(self.nav.topLevelItemCount())]
        while items:
            item = items.pop(0)
            if item is None:
                continue
            if item.data(0, NAV_ROLE) == key:
                self.nav.setCurrentItem(item)
                return
            items.extend(item.child(i) for i in range(item.childCount()))

    def store_items(self) -> list[tuple[str, NavKey]]:
        """(label, key) of each store in the navigation, "All memories" first."""
        return [(label, ("store", store, label)) for label, store in STORES]

    @Slot()
    def pair_assistant(self) -> None:
        """Settings, with its pairing dialog open."""
        self.go(("page", "settings"))
        settings = self.pages.get("settings")
        assistants = getattr(settings, "assistants", None)
        if assistants is not None:
            assistants.pair_btn.click()

    def vault_name(self) -> str:
        """The open vault as dialogs name it: its folder's name ("" for the demo)."""
        return self.folder.name if self.folder is not None else ""

    @Slot(int)
    def show_added(self, mid: int) -> None:
        """A memory the person just added: in the list of all memories, selected."""
        key: NavKey = ("store", None, "All memories")
        if self.nav.currentItem() is self.all_memories_item:
            self.navigate(key)  # already chosen (maybe showing a search): list it again
        else:
            self.go(key)
        self.browse.select_when_listed(mid)

    @Slot(bool)
    def _on_page_running_changed(self, running: bool) -> None:
        self._page_running = running
        self._update_run_actions()

    @Slot(float)
    def _on_page_idle_minutes_changed(self, minutes: float) -> None:
        self.set_idle_minutes(minutes)
        self.refresh_status()

    @Slot()
    def _on_run_action_changed(self) -> None:
        allowed = self.run_action.isEnabled()
        for page in self.pages.values():
            page.set_run_allowed(allowed)

    def _update_run_actions(self) -> None:
        """One consolidation at a time, and no import during the window's own work."""
        self.import_action.setEnabled(self._work is None)
        self.run_action.setEnabled(self._work is None and not self._page_running)

    def show_banner(self, text: str) -> None:
        self.banner.setText(text)
        self.banner.setVisible(bool(text))

    # --- status, jobs, changes ----------------------------------------------------------
    def refresh_status(self) -> None:
        vault = self.vault
        run_query(self, lambda: (vault.status(), vault.count_memories(ALL_MEMORIES)),
                  self._show_status)

    def _show_status(self, result: tuple[VaultStatus, int]) -> None:
        # The same figure as the "All memories" list (one row per thing said, active ones);
        # what is archived or replaced said apart.
        st, listed = result
        other = sum(n for v in st.counts.values() for s, n in v.items() if s != "active")
        kept = words.count(listed, "memory", "memories") + (
            f" (+{other:,} archived or earlier versions)" if other else "")
        self.memory_figure = kept
        search = "semantic + lexical search" if st.semantic_search else \
            "lexical search only (no embedding model found)"
        search = self._model_words(st, search)
        self._status_rest = (f"{search} · locks after "
                             f"{self.idle_timer.interval() // 60000} min idle")
        self._render_status()

    def _model_words(self, st: VaultStatus, search: str) -> str:
        """The model in use (or why none is) after the search words, and in full in the status
        bar's tooltip (issue 28: the window says which model is in use)."""
        from app.model_words import model_line, short_name, vectors_line
        self.status_label.setToolTip("Embedding model: " + model_line(st) + (
            f"\nVectors {vectors_line(st.vector_models)}" if st.vector_models else ""))
        if st.semantic_search and st.model:
            return f"{search}, {short_name(st.model)}"
        if st.model_problem:
            return f"lexical search only (semantic search off: {st.model_problem})"
        return search

    def refresh_runs_note(self) -> None:
        """The newest consolidation run's failed batches, kept in the status bar until a
        run without failures (issue 12: a failing batch was only logged)."""
        vault = self.vault
        run_query(self, lambda: vault.runs(1), self._show_runs_note)

    def _show_runs_note(self, runs: list[RunSummary]) -> None:
        if self._cleared:  # locked meanwhile
            return
        report = runs[0].report if runs else None
        n = int(report.failed_batches) if report is not None else 0
        self._runs_note = (f"last consolidation had {n} failed batch{'es' if n != 1 else ''}"
                           if n else "")
        self._render_status()

    def refresh_pending_note(self) -> None:
        """Assistants' forget requests waiting for the person (answered in the Inbox)."""
        vault = self.vault
        run_query(self, lambda: len(vault.pending_forgets("pending")), self._show_pending_note)

    def _show_pending_note(self, n: int) -> None:
        if self._cleared:  # locked meanwhile
            return
        self._pending_note = (f"{n} forget request{'s' if n != 1 else ''} from assistants "
                              f"wait{'s' if n == 1 else ''} in the Inbox" if n else "")
        self._render_status()

    def refresh_sync_note(self) -> None:
        """Sync in a few words (issue 29): nothing while this device does not sync. The
        folder's side (devices, what waits) every ``SYNC_NOTE_MS``; the owner's job's
        (``sync_activity``: memory only) every ``SYNC_ACTIVITY_MS``."""
        if self._cleared or self.vault.locked:
            self._sync_timer.stop()
            self._activity_timer.stop()
            return
        vault = self.vault
        run_query(self, lambda: (vault.sync_status(), vault.sync_activity()), self._show_sync,
                  lambda _exc: self._show_sync_words("Sync: its state cannot be read", ""))

    @Slot()
    def refresh_sync_activity(self) -> None:
        if self._cleared or self.vault.locked or self._sync_status is None:
            self._activity_timer.stop()
            return
        vault = self.vault
        run_query(self, vault.sync_activity, self._show_activity)

    def _show_sync(self, got: tuple[SyncStatus, SyncActivity]) -> None:
        if self._cleared:
            return
        st, act = got
        self._sync_status = st if st.set_up else None
        if st.set_up:
            for timer in (self._sync_timer, self._activity_timer):
                if not timer.isActive():
                    timer.start()
        else:
            self._activity_timer.stop()
        self._show_activity(act)

    def _show_activity(self, act: SyncActivity) -> None:
        from app.sync import device_words
        if self._cleared:
            return
        st = self._sync_status
        if st is None:
            self._show_sync_words("", "")
            return
        detail = [device_words.summary(st)] + [f.words for f in act.forgets]
        if act.findings:
            n = len(act.findings)
            detail.append(f"{n} {'file' if n == 1 else 'files'} in the folder waited for or "
                          "refused (Settings > Devices, kept sync status)")
        self._show_sync_words(device_words.activity(st, act), "\n".join(detail))

    def _show_sync_words(self, text: str, detail: str) -> None:
        self._sync_note = text
        self.sync_button.say(text, detail)

    @Slot()
    def _on_sync_button_clicked(self) -> None:
        self.show_devices()

    def show_devices(self) -> None:
        """Settings, scrolled to Devices."""
        from PySide6.QtWidgets import QScrollArea
        self.go(("page", "settings"))
        devices = getattr(self.pages.get("settings"), "devices", None)
        if devices is None:
            return
        area = devices.parentWidget()
        while area is not None and not isinstance(area, QScrollArea):
            area = area.parentWidget()
        if area is not None and area.widget() is not None:
            from PySide6.QtCore import QPoint
            # Its top at the top: the table and the forgets' lines below it come into view.
            top = devices.mapTo(area.widget(), QPoint(0, 0)).y()
            area.verticalScrollBar().setValue(top)

    def _render_status(self) -> None:
        # What is under way right after the count, before the search and lock words: at 1,024
        # pixels the end of the line is cut off, and there "finding meaning: 0 of 41, about 1
        # min left" lost its estimate (issue 28).
        parts = [self.memory_figure, f"{self._background}…" if self._background else "",
                 self._status_rest, self._runs_note, self._pending_note]
        self.status_label.setText(" · ".join(p for p in parts if p))

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

    def watch_background(self) -> None:
        """Poll ``background_work`` again: a file import's vectors follow it (issue 28), and
        the status bar says "finding meaning: N of M, about X min left" until they are made."""
        if not self._cleared and not self.vault.locked and not self._bg_timer.isActive():
            self._bg_timer.start()

    # --- long work with progress --------------------------------------------------------
    def _begin_work(self, label: str, unit: str) -> ProgressBox:
        self._work = _Work(label, unit)
        self._update_run_actions()
        self.statusBar().showMessage(f"{label}…")
        return self.progress.start()

    def _end_work(self) -> None:
        self.progress.stop()
        self._work = None
        self._update_run_actions()
        if self._cancel_in_bar:
            self.statusBar().removeWidget(self.cancel_button)  # hides it
            self._cancel_in_bar = False
        self.cancel_button.hide()
        self.progress_bar.setFormat("%p%")

    def _begin_import_work(self) -> tuple[ProgressBox, CancelToken]:
        """An import's work: turns with a rate and a time estimate, and a Cancel."""
        box = self._begin_work("Importing", "turns")
        assert self._work is not None
        self._work.rate, self._work.cancel = Rate(), CancelToken()
        self.cancel_button.setText("Cancel import")
        self.cancel_button.setEnabled(True)
        if not self._cancel_in_bar:
            self.statusBar().addPermanentWidget(self.cancel_button)
            self._cancel_in_bar = True
        self.cancel_button.show()
        return box, self._work.cancel

    @Slot()
    def _on_cancel_button_clicked(self) -> None:
        work = self._work
        if work is None or work.cancel is None:
            return
        work.cancel.cancel()
        self.cancel_button.setEnabled(False)
        self.cancel_button.setText("Cancelling…")
        work.label = "Stopping after the batch under way (what is imported stays)"

    @Slot(int, int, bool)
    def _on_progress_polled(self, done: int, total: int, changed: bool) -> None:
        work = self._work
        if work is None:
            return
        if total and work.unit == "MB":  # progress in bytes
            self.statusBar().showMessage(
                f"{work.label}… {done / 1e6:,.1f} of {total / 1e6:,.1f} MB")
        elif total and work.rate is not None:  # an import: with its rate and time left
            estimate = work.rate.update(done, total)
            self.statusBar().showMessage(f"{work.label}… {progress_words(estimate, work.unit)}")
            if estimate.left_s is not None and done < total:
                self.progress_bar.setFormat(f"%p% · {duration_words(estimate.left_s)} left")
        elif total:
            self.statusBar().showMessage(f"{work.label}… {done:,} of {total:,} {work.unit}")
        # Imported turns show up while the import runs, at most once a second.
        if changed and work.unit == "turns" and time.monotonic() - work.refreshed >= 1.0:
            work.refreshed = time.monotonic()
            self.bridge.apply_changes(Changes(memories=True), None)

    def start_import(self, path: Path) -> None:
        """Import a file of chats or notes with progress (``FileMenu.import_file``)."""
        self.files.import_file(path)

    @Slot(object, object)
    def _on_bridge_changes_applied(self, changes: Changes, _initiator: QObject | None) -> None:
        """The window's own parts; each page follows the bridge itself (``Page.on_changes``)."""
        if changes.lock:
            return
        if changes.memories or changes.entities or changes.contradictions:
            self.reload_nav_children()
            self.refresh_status()
        if changes.runs:
            self.refresh_runs_note()
        if changes.agents:
            self.refresh_pending_note()
        if changes.settings:
            self.refresh_sync_note()

    @Slot(str, object)
    def _on_bridge_job_started(self, job: str, box: ProgressBox) -> None:
        """A scheduled job with progress (a backup): its bar, unless the window's own work
        holds the bar; the job runs either way."""
        if self._work is None and not self._cleared:
            self._work = _Work("Scheduled backup" if job == "backup" else job, "MB", job=job)
            self._update_run_actions()
            self.statusBar().showMessage(f"{self._work.label}…")
            self.progress.start(box)

    @Slot(object)
    def _on_bridge_job_finished(self, outcome: JobOutcome) -> None:
        if self._work is not None and self._work.job == outcome.job:
            self._end_work()
        self.refresh_runs_note()
        label = "Scheduled backup" if outcome.job == "backup" else outcome.job
        text = f"{label}: " + (f"done{f' ({outcome.detail})' if outcome.detail else ''}"
                               if outcome.ok else f"problem ({outcome.error or 'see log'})")
        self.statusBar().showMessage(text, 10_000)

    @Slot()
    def _on_run_action_triggered(self) -> None:
        self.run_consolidation()

    def run_consolidation(self) -> None:
        box = self._begin_work("Consolidating", "steps")
        vault = self.vault

        def done(result: Result[RunReport]) -> None:
            self._end_work()
            r = result.value
            self.statusBar().showMessage(
                f"Consolidation run {r.run_id}: {sum(r.counts.values())} changes in "
                f"{r.seconds:.1f} s", 10_000)

        def failed(exc: BaseException) -> None:
            self._end_work()
            errors.show_error(self, exc)
        run_op(self, lambda: vault.consolidate(progress=box.report), done, self.bridge, failed)

    # --- auto-lock ----------------------------------------------------------------------
    def set_idle_minutes(self, minutes: float) -> None:
        self.idle_timer.setInterval(int(minutes * 60_000))
        self.idle_timer.start()

    @Slot()
    def _on_idle_timer_timeout(self) -> None:
        log.info("auto-lock after idle")
        self.lock_requested.emit()

    def clear_for_lock(self) -> None:
        """Drop every model and cache that could hold memory text
        (docs/security.md#20-auto-lock-and-memory-hygiene)."""
        self._cleared = True
        self.idle_timer.stop()
        self.progress.stop()
        self._bg_timer.stop()
        self.browse.clear()
        for name, page in list(self.pages.items()):
            if name != "browse":
                self.stack.removeWidget(page)
                page.deleteLater()
                del self.pages[name]
        self.nav.clear()
        self.status_label.clear()
        self._sync_timer.stop()
        self._activity_timer.stop()
        self.sync_button.hide()
        self._stop_idle_watch()

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 (Qt name)
        self.idle_timer.stop()
        self._stop_idle_watch()
        super().closeEvent(event)

    def _stop_idle_watch(self) -> None:
        app = QApplication.instance()
        if app is not None:  # None once the application is being torn down
            app.removeEventFilter(self._idle_watcher)


@dataclass(slots=True)
class _Work:
    """The window's long job under way (its progress is in ``MainWindow.progress``)."""

    label: str
    unit: str
    refreshed: float = 0.0  # when imported turns were last shown (time.monotonic)
    job: str | None = None  # a scheduled job's name when the work is that job's
    rate: Rate | None = None  # an import's rate and time left (app.eta)
    cancel: CancelToken | None = None  # an import's Cancel


def _nav_day(day: str) -> str:
    """A Timeline day as the navigation shows it, short enough for its width with its count:
    "Sat 11 Jul 2026" (the whole day in the item's tooltip and the page's title)."""
    d = words.iso_day(day)
    return day if d is None else f"{d:%a} {d.day} {d:%b %Y}"
