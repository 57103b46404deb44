"""What each assistant holds (issue 27 item 10): under Settings > Assistants, a choice of
paired assistant and its workspace, the memories in its own scope (its facts, its events,
its habits), grouped by day, newest first, beside the person's own memories it also reads.
Layer: ui. GUI thread; reads go through ``ui.tasks`` (``Vault.agents``,
``Vault.agent_memories``).
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import (
    QComboBox,
    QGroupBox,
    QLabel,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app import words
from app.api import AgentRow, MemoryRow, VaultAPI
from app.api import Page as RowsPage
from app.changes import Changes
from ui import theme
from ui.bridge import CoreBridge
from ui.views.page import Page

SHOWN = 500  # memories listed per assistant (newest first); the export has them all


class WorkspacePanel(Page):
    """Owned by ``AssistantsPanel``; lives on the GUI thread. Reloads on memory and agent
    changes (an assistant writes under its name)."""

    def __init__(self, vault: VaultAPI, bridge: CoreBridge, parent: QWidget | None = None
                 ) -> None:
        super().__init__(vault, bridge, parent)
        self.names: list[str] = []
        self.rows_shown: list[MemoryRow] = []
        group = QGroupBox("What each assistant holds")
        note = QLabel("Each assistant writes its own facts, events and habits under its name; "
                      "only it and you see them (it also reads your memories). Choose one to "
                      "see its workspace, by day.")
        note.setWordWrap(True)
        self.choice = QComboBox()
        self.choice.setObjectName("workspaceAgent")
        self.choice.setAccessibleName("Assistant")
        self.summary = theme.plain(QLabel())
        self.summary.setObjectName("workspaceSummary")
        self.summary.setWordWrap(True)
        self.tree = QTreeWidget()
        self.tree.setObjectName("workspace")
        self.tree.setAccessibleName("The assistant's memories by day")
        self.tree.setHeaderHidden(True)
        self.tree.setWordWrap(True)
        self.tree.setUniformRowHeights(False)
        self.empty = QLabel("No assistant is paired yet.")
        theme.set_muted(self.empty)
        gl = QVBoxLayout(group)
        gl.addWidget(note)
        gl.addWidget(self.choice)
        gl.addWidget(self.summary)
        gl.addWidget(self.tree)
        gl.addWidget(self.empty)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(group)
        self.choice.currentIndexChanged.connect(self._on_choice_current_index_changed)
        self.refresh()

    # --- loading ------------------------------------------------------------------------
    def wants(self, changes: Changes) -> bool:
        return changes.agents or changes.memories

    def refresh(self) -> None:
        self.load(self.vault.agents, self._fill_names, kind="agents")

    def _fill_names(self, rows: list[AgentRow]) -> None:
        names = [r.name for r in rows]
        if names != self.names:
            current = self.agent()
            self.names = names
            self.choice.blockSignals(True)
            self.choice.clear()
            self.choice.addItems(names)
            if current in names:
                self.choice.setCurrentIndex(names.index(current))
            self.choice.blockSignals(False)
        self.choice.setVisible(bool(names))
        self.tree.setVisible(bool(names))
        self.summary.setVisible(bool(names))
        self.empty.setVisible(not names)
        self._load_memories()

    def agent(self) -> str | None:
        n = self.choice.currentIndex()
        return self.names[n] if 0 <= n < len(self.names) else None

    @Slot(int)
    def _on_choice_current_index_changed(self, _index: int) -> None:
        self._load_memories()

    def _load_memories(self) -> None:
        name, vault = self.agent(), self.vault
        if name is None:
            self.tree.clear()
            self.rows_shown = []
            return
        self.load(lambda: vault.agent_memories(name, None, SHOWN),
                  lambda page: self._fill(name, page), kind="memories")

    def _fill(self, name: str, page: RowsPage) -> None:
        self.rows_shown = list(page.rows)
        self.tree.clear()
        days: dict[str, QTreeWidgetItem] = {}
        for row in page.rows:
            label = words.day(row.occurred_at)
            day = days.get(label)
            if day is None:
                day = QTreeWidgetItem([label])
                day.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable)
                self.tree.addTopLevelItem(day)
                days[label] = day
            archived = " (archived)" if row.status == "archived" else ""
            item = QTreeWidgetItem([f"{words.store_one(row.store)}: {row.text}{archived}"])
            item.setData(0, Qt.ItemDataRole.UserRole, int(row.id))
            item.setToolTip(0, words.when(row.occurred_at))
            day.addChild(item)
        self.tree.expandAll()
        n = len(page.rows)
        more = " (the newest)" if page.next is not None else ""
        self.summary.setText(f"{name} holds {words.count(n, 'memory', 'memories')} of its "
                             f"own{more}." if n else
                             f"{name} holds nothing of its own yet.")

    def texts(self) -> list[str]:
        """Every line of the tree, day lines and memory lines, in order (for tests)."""
        out: list[str] = []
        for i in range(self.tree.topLevelItemCount()):
            day = self.tree.topLevelItem(i)
            assert day is not None
            out.append(day.text(0))
            for j in range(day.childCount()):
                child = day.child(j)
                assert child is not None
                out.append(child.text(0))
        return out
