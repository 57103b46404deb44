"""Every column of the memory list says on its header what it means (issue 25: "no tooltip
on Strength or Tier"); a person hovers the header and reads it, and the words are the window's
(Fresh, Quiet, Fading; strong memories first), never a bare number or an enum."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import QEvent, QPoint, Qt
from PySide6.QtGui import QHelpEvent
from PySide6.QtWidgets import QApplication, QToolTip

pytestmark = pytest.mark.gui


def hover_tip(qtbot: Any, header: Any, section: int) -> str:
    """The tooltip the header shows when the mouse rests on ``section``."""
    QToolTip.hideText()
    x = header.sectionViewportPosition(section) + header.sectionSize(section) // 2
    pos = QPoint(x, header.height() // 2)
    event = QHelpEvent(QEvent.Type.ToolTip, pos, header.viewport().mapToGlobal(pos))
    QApplication.sendEvent(header.viewport(), event)
    qtbot.waitUntil(QToolTip.isVisible, timeout=2_000)
    return QToolTip.text()


def test_hovering_each_header_explains_its_column(qtbot: Any, window: Any) -> None:
    from app.words import TIER_NAMES
    from ui.models.memory_table import HEADERS, Column
    window.resize(1200, 760)
    window.show()
    qtbot.waitExposed(window)
    header = window.browse.table.horizontalHeader()
    qtbot.waitUntil(lambda: window.browse.model.rowCount() > 0, timeout=10_000)
    tips = {}
    for col in Column:
        if header.isSectionHidden(col):
            continue
        tips[col] = hover_tip(qtbot, header, col)
        assert tips[col] and tips[col] != HEADERS[col], col
    assert set(tips) >= {Column.TEXT, Column.STORE, Column.WHEN, Column.TIER, Column.SCORE}
    assert all(name in tips[Column.TIER] for name in TIER_NAMES.values())
    assert "recall" in tips[Column.SCORE] and "0." not in tips[Column.SCORE]
    # A cell still gives that memory's own number.
    index = window.browse.model.index(0, Column.SCORE)
    assert "of 1" in window.browse.model.data(index, Qt.ItemDataRole.ToolTipRole)
    QToolTip.hideText()
