"""The memory list: a lazy, append-paged table model (docs/architecture.md#lists). Layer: ui. GUI
thread.

``data()`` is a pure lookup; ``fetchMore`` asks the vault for the next keyset page on the
thread pool; rows arrive with beginInsertRows/endInsertRows. A generation counter drops pages
that belong to an older query. Stays smooth at 100k rows: nothing loads more than a page.
"""

from __future__ import annotations

from dataclasses import replace
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
from app.api import ListOrder, MemoryQuery, MemoryRow, Page, VaultAPI
from ui.tasks import assert_gui_thread, run_query

PAGE = 200
Index = QModelIndex | QPersistentModelIndex


class Column(IntEnum):
    TEXT = 0
    STORE = 1
    WHEN = 2
    TIER = 3
    SCORE = 4
    RELEVANCE = 5  # search results only (the browse page hides it in a list)


_COLUMNS = tuple(Column)  # by number: data() is hot, Column(n) is an enum call
_DISPLAY = int(Qt.ItemDataRole.DisplayRole)
_USER = int(Qt.ItemDataRole.UserRole)
_TOOLTIP = int(Qt.ItemDataRole.ToolTipRole)
_ROLES_ANSWERED = frozenset((_DISPLAY, _USER, _TOOLTIP))

HEADERS = {Column.TEXT: "Memory", Column.STORE: "Kind", Column.WHEN: "When",
           Column.TIER: "Freshness", Column.SCORE: "Strength", Column.RELEVANCE: "Relevance"}

# What each column means, on its header (a cell's tip gives that memory's number).
HEADER_TIPS = {
    Column.TEXT: "What was said or learned; hover a row for the whole text.",
    Column.STORE: "What kind of memory it is: a conversation turn, an event, a fact, a habit "
                  "or a pattern.",
    Column.WHEN: "When it happened, in this computer's time zone.",
    Column.TIER: "Fresh: new or used in the last 7 days. Quiet: within a month. Fading: "
                 "older; fading memories are archived in time.",
    Column.SCORE: "How strongly Kept holds it (importance, recency, use, feeling and people): "
                  "strong memories come first in recall and are archived last.",
    Column.RELEVANCE: "How well it matches this search, beside the best match."}

# A list sorts in the vault (keyset paging, MemoryQuery.order) by these columns; search
# results (a page at most) sort here by any column.
LIST_ORDERS: dict[tuple[Column, Qt.SortOrder], ListOrder] = {
    (Column.WHEN, Qt.SortOrder.DescendingOrder): "newest",
    (Column.WHEN, Qt.SortOrder.AscendingOrder): "oldest",
    (Column.SCORE, Qt.SortOrder.DescendingOrder): "strongest",
    (Column.SCORE, Qt.SortOrder.AscendingOrder): "weakest"}


def currency_mark(row: MemoryRow) -> str:
    """"Earlier" or "No longer true" for a search result that something later replaced."""
    c = row.currency
    if c is None or c.state == "current":
        return ""
    if c.state == "pending":
        return "Change waiting"
    return "Earlier" if c.state == "earlier" else "No longer true"


def currency_tip(row: MemoryRow) -> str:
    c = row.currency
    if c is None or c.state == "current":
        return ""
    if c.state == "earlier":
        when = words.day(c.later_at, never="later")
        when = when if when in ("today", "yesterday", "later") else f"on {when}"
        return f"Said earlier: the same was spoken of again {when}, shown above it."
    if c.state == "pending" and c.pending is not None:
        return (f"{c.pending.by} says this changed to “{c.pending.value}”: "
                "it waits for you in the Inbox.")
    ended = words.day(c.ended_at, never="")
    return f"No longer true{' since ' + ended if ended else ''}."


def agent_mark(row: MemoryRow) -> str:
    """"from NAME" for a memory an assistant wrote (``kept mcp --agent NAME``), else ""."""
    agent = row.agent
    return f"from {agent}" if agent and agent != "global" else ""


def _sort_key(col: Column, row: MemoryRow) -> tuple[object, ...]:
    tiers = {"hot": 0, "warm": 1, "cold": 2}
    keys: dict[Column, object] = {
        Column.TEXT: row.text.casefold(), Column.STORE: words.store_one(row.store),
        Column.WHEN: row.occurred_at, Column.TIER: tiers.get(row.tier or "", 3),
        Column.SCORE: row.composite, Column.RELEVANCE: row.relevance or 0.0}
    return (keys[col], int(row.id))


class MemoryTableModel(QAbstractTableModel):
    """A lazy list of a ``MemoryQuery`` (``set_query``), or a search's results
    (``set_results``: a page at most, sorted here)."""

    page_loaded = Signal(int)      # rows now loaded
    count_known = Signal(int)
    # The order shown changed (column, Qt.SortOrder): the header and the sort box follow.
    order_changed = Signal(int, object)

    def __init__(self, vault: VaultAPI, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.vault = vault
        self.rows: list[MemoryRow] = []
        self.query: MemoryQuery | None = None
        self._cursor: tuple[float, int] | None = None
        self._exhausted = True
        self._in_flight = False
        self._generation = 0
        self.searching = False  # rows are a search's results, not a list's pages
        self.best = 0.0  # the best relevance among the results
        self.sort_column = Column.WHEN
        self.sort_order = Qt.SortOrder.DescendingOrder

    # --- query ------------------------------------------------------------------------
    def set_query(self, query: MemoryQuery) -> None:
        assert_gui_thread()
        self._generation += 1
        self.searching = False
        self.sort_column, self.sort_order = next(
            (k for k, v in LIST_ORDERS.items() if v == query.order),
            (Column.WHEN, Qt.SortOrder.DescendingOrder))
        self.order_changed.emit(int(self.sort_column), self.sort_order)
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

    def set_results(self, rows: list[MemoryRow]) -> None:
        """Show a search's results, best first (then sorted as the person asks)."""
        assert_gui_thread()
        self._generation += 1
        self.searching = True
        self.best = max((r.relevance or 0.0 for r in rows), default=0.0)
        self.beginResetModel()
        self.rows = list(rows)
        self._exhausted = True
        self._in_flight = False
        self.endResetModel()
        self.sort_column, self.sort_order = Column.RELEVANCE, Qt.SortOrder.DescendingOrder
        self.order_changed.emit(int(self.sort_column), self.sort_order)

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        """Search results sort here by any column; a list asks the vault again in the order
        of ``LIST_ORDERS`` (the other columns of a list do not sort: the order stays)."""
        col = Column(column)
        if self.searching:
            self.layoutAboutToBeChanged.emit()
            self.rows.sort(key=lambda r: _sort_key(col, r),
                           reverse=order == Qt.SortOrder.DescendingOrder)
            self.sort_column, self.sort_order = col, order
            self.layoutChanged.emit()
        elif (col, order) in LIST_ORDERS and self.query is not None:
            want = LIST_ORDERS[(col, order)]
            if want != self.query.order:
                self.set_query(replace(self.query, order=want))
                return
        self.order_changed.emit(int(self.sort_column), self.sort_order)

    def clear(self) -> None:
        self._generation += 1
        self.searching = False
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
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.ToolTipRole:
            return HEADER_TIPS.get(Column(section)) if 0 <= section < len(Column) else None
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> object:
        # Asked for every role of every visible cell at each repaint and refresh (an import
        # refreshes once a second): the roles answered here are plain ints compared first,
        # and every other role (fonts, colours, alignment...) returns at once.
        if role not in _ROLES_ANSWERED or not index.isValid():
            return None
        r = index.row()
        if r >= len(self.rows):
            return None
        row = self.rows[r]
        col = _COLUMNS[index.column()]
        if role == _DISPLAY:
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
                return words.tier_word(row.tier)
            if col is Column.SCORE:
                return words.strength_word(row.composite)
            if col is Column.RELEVANCE:
                return (words.relevance_word(row.relevance, self.best)
                        if row.relevance is not None else "")
            return None
        if role == _USER:
            return row
        # the tooltip role
        if col is Column.WHEN:
            return words.when(row.occurred_at) or None
        if col is Column.TIER:
            return words.tier_tip(row.tier) or None
        if col is Column.RELEVANCE and row.relevance is not None:
            return words.relevance_tip(row.relevance, self.best)
        if col is Column.SCORE:
            return words.strength_tip(row.composite)
        if col is Column.TEXT:
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
