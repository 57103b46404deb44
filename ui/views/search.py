"""The memory list's search bar: the field and an as-of control (time travel,
docs/memory-model.md#time-travel), plus what a search asks recall for. Layer: ui. GUI thread; the
recall itself runs through ``ui.tasks`` in the page that owns the bar.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from PySide6.QtCore import QDate, Signal, Slot
from PySide6.QtWidgets import QCheckBox, QDateEdit, QHBoxLayout, QLineEdit, QWidget

from app.api import Filters, Hit, MemoryRow


def end_of_day(day: QDate) -> float:
    """The last moment of ``day`` (UTC, like the Timeline's days), as epoch seconds."""
    start = datetime(day.year(), day.month(), day.day(), tzinfo=UTC)
    return (start + timedelta(days=1)).timestamp() - 0.001


def search_filters(status: str | None, as_of: float | None) -> Filters:
    """Searching the Archive finds archived memories only; anywhere else, recall's default
    (what decay archived is found, ranked lower). ``as_of``: what was said and true then."""
    return Filters(only_archived=status == "archived", as_of=as_of)


def hit_rows(hits: Sequence[Hit]) -> list[MemoryRow]:
    """Recall hits as list rows, best first; the strength column shows the recall score."""
    return [MemoryRow(h.id, h.store, h.text, h.occurred_at, h.speaker, h.status, h.score, 0.0,
                      False, None, h.agent, h.currency) for h in hits]


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
        """' as of 2026-02-01' when the control is on, else ''."""
        if not self.as_of_check.isChecked():
            return ""
        return f" as of {self.as_of_date.date().toString('yyyy-MM-dd')}"

    @Slot(bool)
    def _on_as_of_check_toggled(self, on: bool) -> None:
        self.as_of_date.setVisible(on)
        self.as_of_changed.emit()

    @Slot(QDate)
    def _on_as_of_date_date_changed(self, _day: QDate) -> None:
        if self.as_of_check.isChecked():
            self.as_of_changed.emit()
