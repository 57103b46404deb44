"""The memory list's search bar: the field and an as-of control (time travel,
docs/memory-model.md#time-travel), plus what a search asks recall for. Layer: ui. GUI thread; the
recall itself runs through ``ui.tasks`` in the page that owns the bar.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from PySide6.QtCore import QDate, Signal, Slot
from PySide6.QtWidgets import (
    QCheckBox,
    QDateEdit,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QWidget,
)

from app import words
from app.api import LIVE, Filters, Hit, MemoryQuery, MemoryRow, Status, Store
from ui import theme


def end_of_day(day: QDate) -> float:
    """The last moment of ``day`` on the person's clock (like the Timeline's days), as epoch
    seconds."""
    start = datetime(day.year(), day.month(), day.day())
    return (start + timedelta(days=1)).timestamp() - 0.001


# The relevance cut-off of the window's search (``Filters.min_share``): hits scoring below
# this share of the best are left out. Measured on the demo vault (issue 25: "film" gave 16
# hits, the two films first at 1.23 and everything else below 0.69, mostly under 0.18): .35
# keeps the films and what shares their words (3), "coffee" 2, "where do I work" 5.
SEARCH_MIN_SHARE = 0.35
# What "All memories" searches: the things said (statistics are Insights').
SAID_STORES = tuple(s.value for s in Store if s not in (Store.WORKING, Store.IMPLICIT))


def search_filters(scope: MemoryQuery, as_of: float | None) -> Filters:
    """A search inside what the list shows: its store (or the things said), person or
    project, day, the Archive; ``as_of``: what was said and true then. Searching the Archive
    finds archived memories only; a day, archived ones too; anywhere else, recall's default
    (what decay archived is found, ranked lower)."""
    day = scope.day_range()
    stores = (scope.store.value,) if scope.store else SAID_STORES if scope.fold else None
    return Filters(stores=stores, entity_id=scope.entity_id,
                   since=day[0] if day else None, until=day[1] if day else None,
                   only_archived=scope.status == Status.ARCHIVED,
                   include_archived=scope.status == LIVE, as_of=as_of,
                   min_share=SEARCH_MIN_SHARE)


def hit_rows(hits: Sequence[Hit], listed: Sequence[MemoryRow]) -> list[MemoryRow]:
    """Recall hits as list rows, best first: the memory's own freshness and strength (its
    list row, ``listed``) beside the search's relevance."""
    rows = {int(r.id): r for r in listed}
    out = []
    for h in hits:
        row = rows.get(int(h.id)) or MemoryRow(  # forgotten meanwhile: what the hit says
            h.id, h.store, h.text, h.occurred_at, h.speaker, h.status,
            h.breakdown.get("composite", 0.0), 0.0, False, None, h.agent)
        out.append(replace(row, relevance=h.score, currency=h.currency))
    return out


_CHIP_KEY = "kept_chip_key"  # the property a chip's × button carries


class FilterChips(QWidget):
    """The limits a search is inside, one chip each ("Facts ×"); the × (a button, reached
    with Tab, pressed with Space) asks to drop that limit (``removed`` with its key).
    Owned by the browse page; GUI thread."""

    removed = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("filterChips")
        self._lay = QHBoxLayout(self)
        self._lay.setContentsMargins(0, 0, 0, 0)
        self._lay.setSpacing(theme.S)
        self.chips: dict[str, QPushButton] = {}  # key -> its × button
        self.after: QWidget | None = None  # what the chips follow in the Tab order
        self.texts: list[str] = []  # the words of each chip, in order
        self.setVisible(False)

    def set_chips(self, chips: Sequence[tuple[str, str]], after: QWidget | None = None
                  ) -> None:
        """(key, words) of each limit, in order; none hides the row. ``after``: the widget
        the chips' × buttons follow when Tab is pressed."""
        self.after = after
        while (item := self._lay.takeAt(0)) is not None:
            if (w := item.widget()) is not None:
                w.deleteLater()
        self.chips = {}
        self.texts = [text for _key, text in chips]
        if chips:
            lead = QLabel("Searching only in:")
            self._lay.addWidget(lead)
        for key, text in chips:
            chip = QFrame()
            chip.setObjectName("chip")
            chip.setFrameShape(QFrame.Shape.StyledPanel)
            row = QHBoxLayout(chip)
            row.setContentsMargins(theme.S, 0, 0, 0)
            row.setSpacing(theme.XXS)
            row.addWidget(QLabel(text))
            x = QPushButton("×")
            x.setFlat(True)
            x.setFixedWidth(x.fontMetrics().horizontalAdvance("×") + 16)
            x.setAccessibleName(f"Remove the limit {text}")
            x.setToolTip(f"Search without the limit “{text}”")
            # A slot of this bar, the key on the button: a lambda over ``self`` would keep
            # the bar alive from its own button (see ui.views.devices).
            x.setProperty(_CHIP_KEY, key)
            x.clicked.connect(self._on_chip_clicked)
            row.addWidget(x)
            self._lay.addWidget(chip)
            if self.after is not None:  # Tab from the search bar reaches them next
                QWidget.setTabOrder(self.after, x)
                self.after = x
            self.chips[key] = x
        self._lay.addStretch(1)
        self.setVisible(bool(chips))

    @Slot()
    def _on_chip_clicked(self) -> None:
        x = self.sender()
        if x is not None:
            self.removed.emit(str(x.property(_CHIP_KEY)))


class SearchBar(QWidget):
    """Owned by the browse page; GUI thread. ``as_of_changed`` fires when the as-of control
    is switched or its day changes, so the page can search again."""

    as_of_changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.field = QLineEdit()
        self.field.setPlaceholderText("Search everything (Enter)")
        self.field.setClearButtonEnabled(True)
        self.field.setAccessibleName("Search")
        self.as_of_check = QCheckBox("As of")
        self.as_of_check.setToolTip(
            "Search what was said and true on that day: what had happened by then, and facts "
            "as they stood then (a later change is left out)")
        self.as_of_date = QDateEdit(QDate.currentDate())
        self.as_of_date.setCalendarPopup(True)
        self.as_of_date.setDisplayFormat("yyyy-MM-dd")
        self.as_of_date.setVisible(False)  # shown while the control is on
        self.as_of_date.setAccessibleName("As of day")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.field, 1)
        lay.addWidget(self.as_of_check)
        lay.addWidget(self.as_of_date)
        self.as_of_check.toggled.connect(self._on_as_of_check_toggled)
        self.as_of_date.dateChanged.connect(self._on_as_of_date_date_changed)

    def as_of(self) -> float | None:
        return end_of_day(self.as_of_date.date()) if self.as_of_check.isChecked() else None

    def describe(self) -> str:
        """' as of 1 February 2026' when the control is on, else ''."""
        if not self.as_of_check.isChecked():
            return ""
        return f" as of {words.calendar_day(self.as_of_date.date().toString('yyyy-MM-dd'))}"

    @Slot(bool)
    def _on_as_of_check_toggled(self, on: bool) -> None:
        self.as_of_date.setVisible(on)
        self.as_of_changed.emit()

    @Slot(QDate)
    def _on_as_of_date_date_changed(self, _day: QDate) -> None:
        if self.as_of_check.isChecked():
            self.as_of_changed.emit()
