"""Qt's first-use costs paid while the person types the password (issue 25: the main window's
first paint at 100k no worse than before the window grew icons, filters and panes). Layer: ui.
GUI thread.

The first widget of a kind that a process builds costs far more than the next one: PySide6
creates its Python types lazily, the style polishes the kind once, and the SVG renderer and
the item views set themselves up once. Profiled under bench/ui_responsiveness.py (100k, cold
process), the memory list's page took about 35 ms to build the first time and 16-19 ms after
one throwaway table with a selection model, one scroll area with a widget, one search field
with its clear button and one tree had been built (3-8 ms for those). The unlock dialog leaves
the GUI thread idle while the person types and the key is derived, so ``warm_widgets`` builds
such throwaways then (``ui.main.Controller.ask_unlock``), once per process.
"""

from __future__ import annotations

_done = False


def warm_widgets() -> None:
    """Build and drop one widget of each kind the main window opens with (see the module)."""
    global _done
    if _done:
        return
    _done = True
    from PySide6.QtCore import QSize
    from PySide6.QtGui import QStandardItemModel
    from PySide6.QtWidgets import (
        QLineEdit,
        QScrollArea,
        QSplitter,
        QStackedWidget,
        QTableView,
        QTreeWidget,
        QTreeWidgetItem,
        QWidget,
    )

    from ui import icons

    host = QWidget()  # owns the throwaways: one deleteLater frees them all
    table = QTableView(host)
    table.setModel(QStandardItemModel(2, 2, table))
    table.selectionModel()
    area = QScrollArea(host)
    area.setWidget(QWidget())
    field = QLineEdit(host)
    field.setClearButtonEnabled(True)
    tree = QTreeWidget(host)
    QTreeWidgetItem(tree, ["warm"])
    QSplitter(host).addWidget(QStackedWidget())
    for name in sorted(set(icons.NAV_ICONS.values()))[:1]:  # the SVG renderer's set-up
        icons.icon(name).pixmap(QSize(16, 16))
    host.deleteLater()
