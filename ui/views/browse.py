"""The memory list page: the search bar, the lazy memory list and the detail pane.
Layer: ui. GUI thread; the list pages in through ``MemoryTableModel``, searches run through
``ui.tasks``."""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import QModelIndex, QObject, Qt, Slot
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSplitter,
    QStyle,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from app import words
from app.api import ALL_MEMORIES, LIVE, MemoryQuery, MemoryRow, Status, Store, VaultAPI
from app.changes import Changes
from app.domain.memory import Tier
from ui import fit, theme
from ui.bridge import CoreBridge
from ui.models.memory_table import HEADERS, Column, MemoryTableModel
from ui.views.detail import DetailPane
from ui.views.entity import EntityCard
from ui.views.page import Page
from ui.views.search import FilterChips, SearchBar, hit_rows, search_filters

# The memory column shows at least this many average characters (issue 25: the first 30 of
# a memory, with room for the wider letters of real text); with the other columns and the
# detail pane this still fits a 1024 px window.
MEMORY_CHARS = 34


def column_samples() -> dict[Column, list[str]]:
    """What each column but the memory text can show at its widest."""
    return {Column.STORE: [n for s, n in words.STORE_ONE.items() if s != Store.WORKING],
            Column.WHEN: ["28 Sep 2026, 22:00", "yesterday 22:00"],
            Column.TIER: [words.tier_word(t) for t in Tier],
            Column.SCORE: [words.strength_word(x) for x in (0.0, 0.5, 1.0)],
            Column.RELEVANCE: [words.relevance_word(x, 1.0) for x in (0.0, 0.7, 1.0)]}


# The sort box: the keyboard's way to the orders a header click gives (Tab to it, arrows).
Sorts = tuple[tuple[str, Column, Qt.SortOrder], ...]
LIST_SORTS: Sorts = (("Newest first", Column.WHEN, Qt.SortOrder.DescendingOrder),
              ("Oldest first", Column.WHEN, Qt.SortOrder.AscendingOrder),
              ("Strongest first", Column.SCORE, Qt.SortOrder.DescendingOrder),
              ("Weakest first", Column.SCORE, Qt.SortOrder.AscendingOrder))
SEARCH_SORTS: Sorts = (("Best match first", Column.RELEVANCE, Qt.SortOrder.DescendingOrder),
                *LIST_SORTS)


class BrowsePage(Page):
    """Search field, the lazy memory list and the detail pane. The window says what to list
    (``show_query``); the list reloads from change flags while it is shown (showing it again
    always comes with a ``show_query``, so nothing is kept stale)."""

    def __init__(self, vault: VaultAPI, bridge: CoreBridge, parent: QWidget | None = None
                 ) -> None:
        super().__init__(vault, bridge, parent)
        self.search_bar = SearchBar()
        self.search = self.search_bar.field
        self.title = theme.plain(QLabel())  # quotes what was searched for
        self.title.setObjectName("listTitle")
        self.title.setWordWrap(True)  # a long search fits on two lines
        self.model = MemoryTableModel(vault, self)
        self.table = self._make_table()
        self.detail = DetailPane(vault, bridge)
        self.entity = EntityCard(vault, bridge)  # shown while one entity's memories are listed
        left = QWidget()
        lay = QVBoxLayout(left)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.search_bar)
        self.chips = FilterChips()  # the limits a search is inside, each with its ×
        lay.addWidget(self.chips)
        self.sort_box = QComboBox()
        self.sort_box.setAccessibleName("Order of the list")
        self.sort_box.setToolTip("The order of the list (or click a column's header)")
        title_row = QHBoxLayout()
        title_row.addWidget(self.title, 1)
        title_row.addWidget(self.sort_box, 0, Qt.AlignmentFlag.AlignTop)
        lay.addLayout(title_row)
        lay.addWidget(self.entity)
        self.welcome = self._make_welcome()
        lay.addWidget(self.welcome)
        lay.addWidget(self.table)
        split = QSplitter()
        split.addWidget(left)
        split.addWidget(self.detail)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        split.setSizes([fit.chars(self, 88), fit.chars(self, 51)])
        outer = QHBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(split)
        self.search.returnPressed.connect(self._on_search_return_pressed)
        self.search_bar.as_of_changed.connect(self._on_search_bar_as_of_changed)
        self.table.selectionModel().currentRowChanged.connect(self._on_table_row_changed)
        self.model.count_known.connect(self._on_model_count_known)
        self.model.page_loaded.connect(self._on_model_page_loaded)
        self.detail.corrected.connect(self._on_detail_corrected)
        self.detail.memory_requested.connect(self._on_detail_memory_requested)
        self.detail.conversation_requested.connect(self._on_detail_conversation_requested)
        self.chips.removed.connect(self._on_chips_removed)
        self.model.order_changed.connect(self._on_model_order_changed)
        self.sort_box.activated.connect(self._on_sort_box_activated)
        self._sorts: Sorts = LIST_SORTS
        self._fill_sort_box()
        self._label = ""
        self._query = ALL_MEMORIES
        # The memory to select once the list holds it: the one selected before a reload, or
        # a correction's new version (the list never loses what the detail pane shows).
        self._select_id: int | None = None
        self._select_said = False  # say so if it is not in this list at all
        self._searched = ""  # the search whose results the list shows, or ""
        self._scope = ALL_MEMORIES  # what the search is inside (the chips drop limits)
        self._scope_label = ""  # the person's or project's name, for its chip

    def _make_welcome(self) -> QWidget:
        """What an empty vault shows instead of an empty list: three ways to begin, each one
        click (or Tab and Space) away. The window wires the buttons (``MainWindow``)."""
        box = QWidget()
        box.setObjectName("welcome")
        lay = QVBoxLayout(box)
        lay.setContentsMargins(theme.XL, theme.XL, theme.XL, theme.XL)
        lay.setSpacing(theme.M)
        head = QLabel("Your vault is empty. Three ways to begin:")
        head.setObjectName("welcomeTitle")
        font = head.font()
        font.setPointSizeF(font.pointSizeF() * 1.3)
        font.setBold(True)
        head.setFont(font)
        lay.addWidget(head)
        self.import_btn = QPushButton("Import a chat export…")
        self.connect_btn = QPushButton("Connect an assistant…")
        self.write_btn = QPushButton("Write a first memory…")
        for btn, why in (
                (self.import_btn, "Bring in what you already said: a ChatGPT or Claude data "
                 "export, Markdown or text notes."),
                (self.connect_btn, "Let Claude, Cursor or another assistant remember and "
                 "recall through Kept while it is open."),
                (self.write_btn, "Write down something Kept should know, in your own words.")):
            row = QHBoxLayout()
            btn.setMinimumWidth(220)
            row.addWidget(btn)
            note = QLabel(why)
            note.setWordWrap(True)
            theme.set_muted(note)
            row.addWidget(note, 1)
            lay.addLayout(row)
        lay.addStretch(1)
        box.hide()
        return box

    def _show_welcome(self, n: int) -> None:
        """The welcome instead of the list while the whole vault is empty (not a search, not
        one store or day that happens to be empty)."""
        empty = (n == 0 and not self._searched and self._query == ALL_MEMORIES)
        self.welcome.setVisible(empty)
        self.table.setVisible(not empty)

    def _make_table(self) -> QTableView:
        table = QTableView()
        table.setModel(self.model)
        table.setAccessibleName("Memories")
        table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        # Several at once (Shift or Ctrl with a click or an arrow) for Archive and Forget;
        # the detail pane shows the current one.
        table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        table.verticalHeader().setVisible(False)
        table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        table.verticalHeader().setDefaultSectionSize(fit.lines(table, 1) + 9)
        header = table.horizontalHeader()
        header.setSectionResizeMode(Column.TEXT, QHeaderView.ResizeMode.Stretch)
        # The other columns as wide as the widest thing they can hold, in this font; the
        # list is never so narrow that the memory text gets fewer than MEMORY_CHARS.
        pad = fit.chars(table, 1.5)  # the cell's and the header's margins
        fixed = 0
        for col, texts in column_samples().items():
            width = max(fit.text_width(table, texts), fit.text_width(header, [HEADERS[col]]))
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.Fixed)
            header.resizeSection(col, width + pad)
            # Relevance shows with search results only: it takes its room from the memory
            # text then, rather than making the window too wide for a 1024 px screen.
            fixed += 0 if col == Column.RELEVANCE else width + pad
        scroll = table.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent)
        table.setMinimumWidth(fixed + fit.chars(table, MEMORY_CHARS) + scroll
                              + 2 * table.frameWidth())
        table.setWordWrap(False)
        table.setColumnHidden(Column.RELEVANCE, True)  # search results only
        header.setSortIndicator(Column.WHEN, Qt.SortOrder.DescendingOrder)
        header.setSortIndicatorShown(True)
        table.setSortingEnabled(True)  # a header click calls model.sort
        return table

    def _fill_sort_box(self) -> None:
        self.sort_box.blockSignals(True)
        self.sort_box.clear()
        for label, _col, _order in self._sorts:
            self.sort_box.addItem(label)
        self.sort_box.blockSignals(False)
        self._on_model_order_changed(int(self.model.sort_column), self.model.sort_order)

    @Slot(int)
    def _on_sort_box_activated(self, n: int) -> None:
        if 0 <= n < len(self._sorts):
            _label, col, order = self._sorts[n]
            self.table.sortByColumn(col, order)

    @Slot(int, object)
    def _on_model_order_changed(self, column: int, order: Qt.SortOrder) -> None:
        """The header's arrow and the sort box show the order the list is in."""
        header = self.table.horizontalHeader()
        if (header.sortIndicatorSection(), header.sortIndicatorOrder()) != (column, order):
            header.blockSignals(True)
            header.setSortIndicator(column, order)
            header.blockSignals(False)
        n = next((i for i, (_l, c, o) in enumerate(self._sorts) if (c, o) == (column, order)),
                 -1)
        self.sort_box.setCurrentIndex(n)

    def _set_searching(self, on: bool) -> None:
        self.table.setColumnHidden(Column.RELEVANCE, not on)
        sorts = SEARCH_SORTS if on else LIST_SORTS
        if sorts is not self._sorts:
            self._sorts = sorts
            self._fill_sort_box()
        if not on:
            self.chips.set_chips([])

    def show_query(self, label: str, query: MemoryQuery) -> None:
        if query != self._query:  # another list: the pane never keeps a memory it may not hold
            self.detail.clear()
        self._label = label
        self._query = query
        self._scope, self._scope_label = query, label
        self.title.setText(label)
        self._searched = ""
        self._set_searching(False)
        self.search.blockSignals(True)
        self.search.clear()
        self.search.blockSignals(False)
        self.entity.show_entity(query.entity_id)
        self.model.set_query(query)

    def clear(self) -> None:
        """Drop every row, the detail and the search text (lock)."""
        self._searched = ""
        self._select_id = None
        self.drop_loads()
        self._set_searching(False)
        self.model.clear()
        self.detail.clear()
        self.entity.clear()
        self.search.clear()

    def on_changes(self, changes: Changes, initiator: QObject | None = None) -> None:
        if changes.lock or initiator is self:
            return
        if (changes.memories or changes.entities or changes.contradictions) and self.shown():
            if self._select_id is None:
                current = self.model.row_at(self.table.currentIndex().row())
                self._select_id = current.id if current is not None else None
            if self._searched:  # showing search results: search again, stay on them
                self._search(self._searched)
            else:
                self.model.refresh()

    def selected_ids(self) -> list[int]:
        """The memories selected in the list, in list order (the current one when none is
        selected but one is shown)."""
        rows = sorted({i.row() for i in self.table.selectionModel().selectedRows()})
        ids = [int(r.id) for n in rows if (r := self.model.row_at(n)) is not None]
        if not ids and self.detail.memory_id is not None:
            ids = [self.detail.memory_id]
        return ids

    def select_when_listed(self, mid: int) -> None:
        """Select ``mid`` once the (re)loading list holds it."""
        self._select_id = mid
        self._select_pending(final=False)

    @Slot(int)
    def _on_detail_corrected(self, new_id: int) -> None:
        """A correction replaced the selected memory: select its new version (in this list,
        where it stands), or say where it went."""
        # The list reloads from the correction's change flags, before or after this: look
        # now, and again when the reloaded rows land (only they may say it is not there).
        self._select_said = True
        self.select_when_listed(new_id)

    @Slot(int)
    def _on_model_page_loaded(self, _rows: int) -> None:
        self._select_pending()

    def _select_pending(self, *, final: bool = True) -> None:
        want = self._select_id
        if want is None:
            return
        for n, row in enumerate(self.model.rows):
            if row.id == want:
                self._select_id = None
                self.table.selectRow(n)
                self.table.scrollTo(self.model.index(n, 0))
                return
        if self.model.canFetchMore():
            self.model.fetchMore()  # pages in until it is found or the list ends
            return
        if self.model.loading or not final:  # look again when the rows land
            return
        self._select_id = None
        if self._select_said:
            self._select_said = False
            self.title.setText(f"{self.title.text()} · the corrected memory is not in this "
                               "list; it is shown on the right")

    @Slot(int)
    def _on_model_count_known(self, n: int) -> None:
        self._show_welcome(n)
        self.title.setText(f"{self._label}: {words.count(n, 'memory', 'memories')}")

    @Slot()
    def _on_search_return_pressed(self) -> None:
        text = self.search.text().strip()
        if not text:
            self.show_query(self._label, self._query)
            return
        self._search(text)

    def scope_chips(self) -> list[tuple[str, str]]:
        """(key, words) of each limit the search is inside: the list's store, person or
        project, day, the Archive, and the as-of day."""
        q, out = self._scope, []
        if q.store is not None:
            out.append(("store", words.STORE_NAMES.get(q.store, words.store_one(q.store))))
        if q.entity_id is not None:
            out.append(("entity", f"about {self._scope_label}"))
        if q.day:
            out.append(("day", words.calendar_day(q.day)))
        if q.session_of is not None:
            out.append(("session", "this conversation"))
        if q.status == Status.ARCHIVED:
            out.append(("archive", "the Archive"))
        if (as_of := self.search_bar.describe()):
            out.append(("as_of", as_of.strip()))
        return out

    @Slot(str)
    def _on_chips_removed(self, key: str) -> None:
        """Drop one limit and search again (focus stays on the limits left, or the field)."""
        q = self._scope
        if key == "as_of":
            self.search_bar.as_of_check.setChecked(False)  # searches again itself
            self.search.setFocus()
            return
        drop = {"store": {"store": None}, "entity": {"entity_id": None}, "day": {"day": None},
                "session": {"session_of": None}, "archive": {"status": Status.ACTIVE}}[key]
        q = replace(q, **drop)  # type: ignore[arg-type]
        # Without a store, a list of everything is one row per thing said.
        self._scope = replace(q, fold=True) if q.store is None else q
        if self._searched:
            self._search(self._searched)
        self.search.setFocus()

    def _search(self, text: str) -> None:
        vault = self.vault
        self.entity.show_entity(None)  # the results are shown as a list of their own
        scope = self._scope
        filters = search_filters(scope, self.search_bar.as_of())
        self.chips.set_chips(self.scope_chips(), after=self.search_bar.as_of_date)
        self.title.setText(f"Searching for “{text}”…")

        def search() -> list[MemoryRow]:
            hits = vault.recall(text, k=50, touch=False, filters=filters)
            ids = tuple(int(h.id) for h in hits)
            listed = vault.page_memories(MemoryQuery(ids=ids, status=None),
                                         limit=max(1, len(ids))).rows if ids else ()
            return hit_rows(hits, listed)

        def done(rows: list[MemoryRow]) -> None:
            self._searched = text
            self._show_welcome(len(rows))
            self._set_searching(True)
            self.model.set_results(rows)
            self.title.setText(f"{words.count(len(rows), 'result', 'results')} for “{text}”, "
                               "best first")
            self._select_pending()
        self.load(search, done, kind="search")

    @Slot()
    def _on_search_bar_as_of_changed(self) -> None:
        if self.search.text().strip():
            self._on_search_return_pressed()

    @Slot(object, object)
    def _on_table_row_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        row = self.model.row_at(current.row()) if current.isValid() else None
        # A search result: the pane says why it was found (``VaultAPI.explain``).
        query = self._searched if self.model.searching else None
        self.detail.show_memory(row.id if row else None, query=query)

    @Slot(int)
    def _on_detail_memory_requested(self, mid: int) -> None:
        """A source or link was opened in the detail pane: select it where the list holds
        it, else show it in the pane (the list stays as it is)."""
        for n, row in enumerate(self.model.rows):
            if int(row.id) == mid:
                self.table.selectRow(n)
                self.table.scrollTo(self.model.index(n, 0))
                return
        self.table.clearSelection()
        self.detail.show_memory(mid)

    @Slot(int, bool)
    def _on_detail_conversation_requested(self, mid: int, turn: bool) -> None:
        """The conversation a memory was said in, in order, with that memory selected (one
        row per thing said; a turn's own, as its turns, the Conversation's way)."""
        self.show_query("The conversation it was said in",
                        MemoryQuery(session_of=mid, status=LIVE, fold=not turn,
                                    order="oldest"))
        self.select_when_listed(mid)
