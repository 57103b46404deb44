"""The memory list: a lazy, append-paged table model (docs/architecture.md#lists). Layer: ui. GUI
thread.

``data()`` is a pure lookup; ``fetchMore`` asks the vault for the next keyset page on the
thread pool; rows arrive with beginInsertRows/endInsertRows. A generation counter drops pages
that belong to an older query. Stays smooth at 100k rows: nothing loads more than a page.
"""

from __future__ import annotations

from enum import IntEnum

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
    Signal,
)

from app import words
from app.api import MemoryQuery, MemoryRow, Page, VaultAPI
from ui.tasks import assert_gui_thread, run_query

PAGE = 200
Index = QModelIndex | QPersistentModelIndex


class Column(IntEnum):
    TEXT = 0
    STORE = 1
    WHEN = 2
    TIER = 3
    SCORE = 4


HEADERS = {Column.TEXT: "Memory", Column.STORE: "Kind", Column.WHEN: "When",
           Column.TIER: "Freshness", Column.SCORE: "Strength"}


def currency_mark(row: MemoryRow) -> str:
    """"Earlier" or "No longer true" for a search result that something later replaced."""
    c = row.currency
    if c is None or c.state == "current":
        return ""
    return "Earlier" if c.state == "earlier" else "No longer true"


def currency_tip(row: MemoryRow) -> str:
    c = row.currency
    if c is None or c.state == "current":
        return ""
    if c.state == "earlier":
        when = words.day(c.later_at, never="later")
        when = when if when in ("today", "yesterday", "later") else f"on {when}"
        return f"Said earlier: the same was spoken of again {when}, shown above it."
    ended = words.day(c.ended_at, never="")
    return f"No longer true{' since ' + ended if ended else ''}."


def agent_mark(row: MemoryRow) -> str:
    """"from NAME" for a memory an assistant wrote (``kept mcp --agent NAME``), else ""."""
    agent = row.agent
    return f"from {agent}" if agent and agent != "global" else ""


class MemoryTableModel(QAbstractTableModel):
    page_loaded = Signal(int)      # rows now loaded
    count_known = Signal(int)

    def __init__(self, vault: VaultAPI, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.vault = vault
        self.rows: list[MemoryRow] = []
        self.query: MemoryQuery | None = None
        self._cursor: tuple[float, int] | None = None
        self._exhausted = True
        self._in_flight = False
        self._generation = 0

    # --- query ------------------------------------------------------------------------
    def set_query(self, query: MemoryQuery) -> None:
        assert_gui_thread()
        self._generation += 1
        self.beginResetModel()
        self.query = query
        self.rows = []
        self._cursor = None
        self._exhausted = False
        self._in_flight = False
        self.endResetModel()
        self.fetchMore(QModelIndex())
        gen = self._generation
        vault = self.vault
        run_query(self, lambda: vault.count_memories(query),
                  lambda n: self.count_known.emit(n) if gen == self._generation else None)

    def refresh(self) -> None:
        if self.query is not None:
            self.set_query(self.query)

    def clear(self) -> None:
        self._generation += 1
        self.beginResetModel()
        self.rows = []
        self._exhausted = True
        self.endResetModel()

    # --- Qt model -----------------------------------------------------------------------
    def rowCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(Column)

    def headerData(self, section: int, orientation: Qt.Orientation,
                   role: int = Qt.ItemDataRole.DisplayRole) -> object:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return HEADERS.get(Column(section)) if 0 <= section < len(Column) else None
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> object:
        if not index.isValid() or index.row() >= len(self.rows):
            return None
        row = self.rows[index.row()]
        col = Column(index.column())
        if role == Qt.ItemDataRole.DisplayRole:
            if col is Column.TEXT:
                text = row.text.replace("\n", " ")
                if row.speaker and row.store in ("short_term", "episodic"):
                    text = f"{row.speaker}: {text}"
                marks = [m for m in (currency_mark(row), agent_mark(row)) if m]
                return " · ".join([*marks, text])
            if col is Column.STORE:
                return words.store_one(row.store)
            if col is Column.WHEN:
                return words.when(row.occurred_at, short=True)
            if col is Column.TIER:
                return words.tier_word(row.tier)  # a search result has no tier
            if col is Column.SCORE:
                return words.strength_word(row.composite)
        if role == Qt.ItemDataRole.UserRole:
            return row
        if role == Qt.ItemDataRole.ToolTipRole and col is Column.WHEN:
            return words.when(row.occurred_at) or None
        if role == Qt.ItemDataRole.ToolTipRole and col is Column.TIER:
            return words.tier_tip(row.tier) or None
        if role == Qt.ItemDataRole.ToolTipRole and col is Column.SCORE:
            return words.strength_tip(row.composite)
        if role == Qt.ItemDataRole.ToolTipRole and col is Column.TEXT:
            mark = agent_mark(row)
            tip = f"Written by an assistant ({mark}):\n{row.text}" if mark else row.text
            when = currency_tip(row)
            return f"{when}\n{tip}" if when else tip
        return None

    def flags(self, index: Index) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable

    def canFetchMore(self, parent: Index = QModelIndex()) -> bool:
        return not parent.isValid() and not self._exhausted and not self._in_flight

    def fetchMore(self, parent: Index = QModelIndex()) -> None:
        if not self.canFetchMore(parent) or self.query is None:
            return
        self._in_flight = True
        gen, query, cursor, vault = self._generation, self.query, self._cursor, self.vault
        run_query(self, lambda: vault.page_memories(query, after=cursor, limit=PAGE),
                  lambda page: self._on_page(gen, page), lambda exc: self._on_failed(gen, exc))

    def _on_page(self, gen: int, page: Page) -> None:
        if gen != self._generation:
            return  # a stale page of an older query
        self._in_flight = False
        if page.rows:
            first = len(self.rows)
            self.beginInsertRows(QModelIndex(), first, first + len(page.rows) - 1)
            self.rows.extend(page.rows)
            self.endInsertRows()
        self._cursor = page.next
        self._exhausted = page.next is None
        self.page_loaded.emit(len(self.rows))

    def _on_failed(self, gen: int, exc: BaseException) -> None:
        if gen == self._generation:
            self._in_flight = False
            self._exhausted = True
            from ui.errors import show_error
            show_error(None, exc)

    @property
    def loading(self) -> bool:
        """A page is on its way (``page_loaded`` follows)."""
        return self._in_flight

    def row_at(self, row: int) -> MemoryRow | None:
        return self.rows[row] if 0 <= row < len(self.rows) else None
