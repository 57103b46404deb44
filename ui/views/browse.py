"""The memory list page: the search bar, the lazy memory list and the detail pane.
Layer: ui. GUI thread; the list pages in through ``MemoryTableModel``, searches run through
``ui.tasks``."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QObject, Slot
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QSplitter,
    QStyle,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from app.api import MemoryQuery, MemoryRow, VaultAPI
from app.changes import Changes
from app.domain.memory import Tier
from ui import fit, theme
from ui.bridge import CoreBridge
from ui.models.memory_table import HEADERS, STORE_LABELS, Column, MemoryTableModel
from ui.views.detail import DetailPane
from ui.views.entity import EntityCard
from ui.views.page import Page
from ui.views.search import SearchBar, hit_rows, search_filters

# The memory column shows at least this many average characters (issue 25: the first 30 of
# a memory, with room for the wider letters of real text); with the other columns and the
# detail pane this still fits a 1024 px window.
MEMORY_CHARS = 36


def column_samples() -> dict[Column, list[str]]:
    """What each column but the memory text can show at its widest."""
    return {Column.STORE: list(STORE_LABELS.values()),
            Column.WHEN: ["0000-00-00 00:00"],
            Column.TIER: [str(t) for t in Tier],
            Column.SCORE: ["0.00"]}


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
        lay.addWidget(self.title)
        lay.addWidget(self.entity)
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
        self._label = ""
        self._query = MemoryQuery()

    def _make_table(self) -> QTableView:
        table = QTableView()
        table.setModel(self.model)
        table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
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
            fixed += width + pad
        scroll = table.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent)
        table.setMinimumWidth(fixed + fit.chars(table, MEMORY_CHARS) + scroll
                              + 2 * table.frameWidth())
        table.setWordWrap(False)
        return table

    def show_query(self, label: str, query: MemoryQuery) -> None:
        self._label = label
        self._query = query
        self.title.setText(label)
        self.search.blockSignals(True)
        self.search.clear()
        self.search.blockSignals(False)
        self.entity.show_entity(query.entity_id)
        self.model.set_query(query)

    def clear(self) -> None:
        """Drop every row, the detail and the search text (lock)."""
        self.drop_loads()
        self.model.clear()
        self.detail.clear()
        self.entity.clear()
        self.search.clear()

    def on_changes(self, changes: Changes, initiator: QObject | None = None) -> None:
        if changes.lock or initiator is self:
            return
        if (changes.memories or changes.entities or changes.contradictions) and self.shown():
            self.model.refresh()

    @Slot(int)
    def _on_model_count_known(self, n: int) -> None:
        self.title.setText(f"{self._label}: {n:,} memories")

    @Slot()
    def _on_search_return_pressed(self) -> None:
        text = self.search.text().strip()
        if not text:
            self.show_query(self._label, self._query)
            return
        vault = self.vault
        self.entity.show_entity(None)  # the results are the whole vault's, not the entity's
        # In the Archive, search the Archive; the as-of control: what was said and true then.
        filters = search_filters(self._query.status, self.search_bar.as_of())
        where = (" in the Archive" if filters.only_archived else "") + self.search_bar.describe()
        self.title.setText(f"Searching for “{text}”{where}…")

        def search() -> list[MemoryRow]:
            return hit_rows(vault.recall(text, k=50, touch=False, filters=filters))

        def done(rows: list[MemoryRow]) -> None:
            self.model.clear()
            self.model.beginResetModel()
            self.model.rows = rows
            self.model.endResetModel()
            self.title.setText(f"{len(rows)} results for “{text}”{where}, best first")
        self.load(search, done, kind="search")

    @Slot()
    def _on_search_bar_as_of_changed(self) -> None:
        if self.search.text().strip():
            self._on_search_return_pressed()

    @Slot(object, object)
    def _on_table_row_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        row = self.model.row_at(current.row()) if current.isValid() else None
        self.detail.show_memory(row.id if row else None)
