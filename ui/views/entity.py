"""The entity card above the memory list: a person's, company's, project's, area's or
resource's summary and its facts (docs/memory-model.md#people-and-projects: each with a generated
summary and its facts). Layer: ui. GUI thread; loads through ``Page.load``.

Shown while the list shows one entity's memories (the window's "People & Projects" items);
the list below keeps every memory that mentions it, episodes included."""

from __future__ import annotations

import html

from PySide6.QtWidgets import QFrame, QLabel, QListWidget, QSizePolicy, QVBoxLayout, QWidget

from app.api import EntityRow, MemoryQuery, MemoryRow, Store, VaultAPI
from app.changes import Changes
from ui import theme
from ui.bridge import CoreBridge
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
        frame = QFrame()
        frame.setFrameShape(QFrame.Shape.StyledPanel)
        inner = QVBoxLayout(frame)
        for w in (self.heading, self.summary, self.facts_label, self.facts):
            inner.addWidget(w)
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

        def load() -> tuple[EntityRow | None, tuple[MemoryRow, ...]]:
            row = next((e for e in vault.entities() if e.id == eid), None)
            facts = vault.page_memories(MemoryQuery(entity_id=eid, store=Store.SEMANTIC),
                                        limit=FACTS_SHOWN).rows
            return row, facts
        self.load(load, self._fill)

    def _fill(self, result: tuple[EntityRow | None, tuple[MemoryRow, ...]]) -> None:
        row, facts = result
        if row is None:  # forgotten or undone meanwhile
            self.hide()
            return
        kind = KIND_NAMES.get(row.kind, row.kind)
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

    def wants(self, changes: Changes) -> bool:
        return self.entity_id is not None and (changes.entities or changes.memories)

    def clear(self) -> None:
        self.show_entity(None)
        self.heading.clear()
        self.summary.clear()
        self.facts.clear()
