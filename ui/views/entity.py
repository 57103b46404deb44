"""The entity card above the memory list: a person's, company's, project's, area's or
resource's summary and its facts (docs/memory-model.md#people-and-projects: each with a generated
summary and its facts). Layer: ui. GUI thread; loads through ``Page.load``.

Shown while the list shows one entity's memories (the window's "People & Projects" items);
the list below keeps every memory that mentions it, episodes included."""

from __future__ import annotations

import html

from PySide6.QtCore import Slot
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from app import words
from app.api import EntityMergeRow, EntityRow, MemoryQuery, MemoryRow, Result, Store, VaultAPI
from app.changes import Changes
from ui import theme
from ui.bridge import CoreBridge
from ui.errors import show_error
from ui.tasks import run_op
from ui.views.page import Page

KIND_NAMES = {"person": "Person", "pet": "Pet", "place": "Place", "company": "Organisation",
              "project": "Project", "area": "Area", "resource": "Resource",
              "work": "Book, film or song", "archive": "Archived"}
FACTS_SHOWN = 50
NO_SUMMARY = ("No summary yet. A summary holds its facts said, learned or read in the last "
              "30 days; the weekly synthesis or Run consolidation now writes it.")


class EntityCard(Page):
    """One entity: its kind, name, summary and facts. Owned by the browse page."""

    def __init__(self, vault: VaultAPI, bridge: CoreBridge, parent: QWidget | None = None
                 ) -> None:
        super().__init__(vault, bridge, parent)
        self.entity_id: int | None = None
        self.heading = QLabel()
        self.heading.setObjectName("entityHeading")
        self.summary = theme.plain(QLabel())  # built from fact texts
        self.summary.setObjectName("entitySummary")
        self.summary.setWordWrap(True)
        self.facts_label = QLabel("Facts")
        theme.set_muted(self.facts_label)
        self.facts = QListWidget()
        self.facts.setAccessibleName("Facts")
        self.facts.setObjectName("entityFacts")
        self.facts.setMaximumHeight(110)
        self.facts.setWordWrap(True)
        # issue 27 item 3: a merge Kept made, and the person's way back
        self.merge: EntityMergeRow | None = None
        self.merge_note = theme.plain(QLabel())
        self.merge_note.setObjectName("entityMerge")
        self.merge_note.setWordWrap(True)
        self.apart_button = QPushButton("These are different things")
        self.apart_button.setToolTip("Undo the merge and never merge these two again")
        self.apart_button.clicked.connect(self._on_apart_button_clicked)
        self.undo_button = QPushButton("Undo merge")
        self.undo_button.setToolTip("Undo the merge; a later consolidation may merge them again")
        self.undo_button.clicked.connect(self._on_undo_button_clicked)
        self.merge_row = QWidget()
        row = QHBoxLayout(self.merge_row)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.merge_note, 1)
        row.addWidget(self.apart_button)
        row.addWidget(self.undo_button)
        self.merge_row.hide()
        frame = QFrame()
        frame.setFrameShape(QFrame.Shape.StyledPanel)
        inner = QVBoxLayout(frame)
        for w in (self.heading, self.merge_row, self.summary, self.facts_label, self.facts):
            inner.addWidget(w)
        # Keyboard (issue 25): Tab in reading order (the merge row sits above the facts), and
        # Enter on a focused button presses it as on a dialog (a pane's buttons ignore Enter).
        QWidget.setTabOrder(self.apart_button, self.undo_button)
        QWidget.setTabOrder(self.undo_button, self.facts)
        for b in (self.apart_button, self.undo_button):
            b.setAutoDefault(True)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, theme.XS)
        lay.addWidget(frame)
        # as tall as its content: the memory list below takes the rest
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        self.hide()

    def show_entity(self, eid: int | None) -> None:
        """Load and show entity ``eid``; None hides the card."""
        self.entity_id = eid
        if eid is None:
            self.drop_loads()
            self.hide()
            return
        self.refresh()

    def refresh(self) -> None:
        eid, vault = self.entity_id, self.vault
        if eid is None:
            return

        def load() -> tuple[EntityRow | None, tuple[MemoryRow, ...], list[EntityMergeRow]]:
            row = next((e for e in vault.entities() if e.id == eid), None)
            facts = vault.page_memories(MemoryQuery(entity_id=eid, store=Store.SEMANTIC),
                                        limit=FACTS_SHOWN).rows
            return row, facts, [m for m in vault.entity_merges(eid) if m.kept == eid]
        self.load(load, self._fill)

    def _fill(self, result: tuple[EntityRow | None, tuple[MemoryRow, ...],
                                  list[EntityMergeRow]]) -> None:
        row, facts, merges = result
        self._show_merge(merges[0] if merges else None)
        if row is None:  # forgotten or undone meanwhile
            self.hide()
            return
        kind = KIND_NAMES.get(row.kind, row.kind) if row.kind != "archive" else \
            words.entity_kind(row.kind, row.was_kind, row.ended_at, row.ended_how).capitalize()
        noun = "memory mentions" if row.mentions == 1 else "memories mention"
        self.heading.setText(f"<b>{html.escape(row.name)}</b> · {kind} · {row.mentions:,} "
                             f"{noun} it")
        self.summary.setText(row.summary or NO_SUMMARY)
        self.summary.setStyleSheet("" if row.summary else theme.NOTE_STYLE)
        self.facts.clear()
        for f in facts:
            self.facts.addItem(f.text)
        if not facts:
            self.facts.addItem("No facts about it yet")
        self.show()

    def _show_merge(self, merge: EntityMergeRow | None) -> None:
        self.merge = merge
        self.merge_row.setVisible(merge is not None)
        self.apart_button.setEnabled(merge is not None)
        self.undo_button.setEnabled(merge is not None)
        if merge is not None:
            why = words.MERGE_REASONS.get(merge.reason, merge.reason)
            self.merge_note.setText(f"Kept merged “{merge.merged_name}” into this one "
                                    f"({why}) on {words.day(merge.merged_at)}.")

    @Slot()
    def _on_apart_button_clicked(self) -> None:
        self._unmerge(different=True)

    @Slot()
    def _on_undo_button_clicked(self) -> None:
        self._unmerge(different=False)

    def _unmerge(self, *, different: bool) -> None:
        merge, vault = self.merge, self.vault
        if merge is None:
            return
        self.apart_button.setEnabled(False)
        self.undo_button.setEnabled(False)

        def done(_: Result[None]) -> None:
            self.refresh()

        def failed(exc: BaseException) -> None:
            show_error(self, exc)
            self.refresh()
        run_op(self, lambda: vault.undo_entity_merge(merge.id, different=different), done,
               self.bridge, failed)

    def wants(self, changes: Changes) -> bool:
        return self.entity_id is not None and (changes.entities or changes.memories)

    def clear(self) -> None:
        self._show_merge(None)
        self.show_entity(None)
        self.heading.clear()
        self.summary.clear()
        self.facts.clear()
