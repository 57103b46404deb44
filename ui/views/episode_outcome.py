"""How an episode went (issue 27 item 8): a row of the memory detail pane, shown for events
only. "How it went" (not rated, went well, mixed, went badly) saves when chosen; "In your
words" saves on Enter. Layer: ui. GUI thread; reads and writes go through ``ui.tasks``.
"""

from __future__ import annotations

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import QComboBox, QFormLayout, QLabel, QLineEdit, QWidget

from app.api import Memory, Result, VaultAPI
from app.words import EPISODE_RATINGS as RATINGS
from ui import errors, theme
from ui.bridge import CoreBridge
from ui.tasks import run_op, run_query

# (label, rating) in the order the choice lists them; None: not rated
CHOICES: tuple[tuple[str, int | None], ...] = (
    ("Not rated", None), ("Went well", 1), ("Mixed", 0), ("Went badly", -1))
INFERRED_NOTE = "Kept read this from what you said later; choose to set it yourself."


class EpisodeOutcomeBox(QWidget):
    """Owned by ``DetailPane``; lives on the GUI thread."""

    saved = Signal(int)  # the episode's id, once its rating or words are saved

    def __init__(self, vault: VaultAPI, bridge: CoreBridge, parent: QWidget | None = None
                 ) -> None:
        super().__init__(parent)
        self.vault = vault
        self.bridge = bridge
        self.memory_id: int | None = None
        self._gen = 0
        # One save at a time, in the order chosen; a choice made meanwhile waits (the latest
        # only). A load that read the vault before a save wrote would put the old choice back,
        # so while one is under way loads are dropped, and the last save reloads.
        self._saving = False
        self._queued: tuple[int, int | None, str | None] | None = None
        self.choice = QComboBox()
        self.choice.setObjectName("episodeRating")
        self.choice.setAccessibleName("How it went")
        for label, _r in CHOICES:
            self.choice.addItem(label)
        self.choice.setToolTip("Your word on how this went. Habits count an event that went "
                               "badly as a miss at the next consolidation.")
        self.words = QLineEdit()
        self.words.setObjectName("episodeOutcome")
        self.words.setAccessibleName("What happened, in your words")
        self.words.setPlaceholderText("What happened (Enter saves)")
        self.note = theme.plain(QLabel())
        self.note.setObjectName("episodeOutcomeNote")
        self.note.setWordWrap(True)
        theme.set_muted(self.note)
        form = QFormLayout(self)
        form.setContentsMargins(0, 0, 0, 0)
        form.addRow("How it went", self.choice)
        form.addRow("In your words", self.words)
        form.addRow(self.note)
        self.choice.activated.connect(self._on_choice_activated)
        self.words.returnPressed.connect(self._on_words_return_pressed)
        self.hide()

    def show_for(self, mid: int, store: str) -> None:
        """Show episode ``mid``'s outcome; hide for any other kind of memory."""
        self._gen += 1
        self.memory_id = mid if store == "episodic" else None
        if self.memory_id is None:
            self.hide()
            return
        gen, vault = self._gen, self.vault

        def fill(m: Memory) -> None:
            if gen == self._gen and not self._saving:
                self._fill(m)
        run_query(self, lambda: vault.get(mid), fill)

    def _fill(self, m: Memory) -> None:
        rating = m.extra.get("rating")
        by = m.extra.get("outcome_by")
        outcome = m.extra.get("outcome")
        index = next((i for i, (_l, r) in enumerate(CHOICES)
                      if r == rating and (rating is not None or by != "person")), 0)
        self.choice.setCurrentIndex(index)
        own = by == "person" and outcome and outcome != (
            RATINGS.get(rating) if isinstance(rating, int) else None)
        self.words.setText(str(outcome) if own else "")
        inferred = by == "inferred" and outcome
        self.note.setText(f"Kept's reading: it {outcome}. {INFERRED_NOTE}" if inferred else "")
        self.note.setVisible(bool(inferred))
        self.show()

    def rating(self) -> int | None:
        return CHOICES[self.choice.currentIndex()][1]

    @Slot(int)
    def _on_choice_activated(self, _index: int) -> None:
        self._save()

    @Slot()
    def _on_words_return_pressed(self) -> None:
        self._save()

    def _save(self) -> None:
        if self.memory_id is None:
            return
        want = (self.memory_id, self.rating(), self.words.text().strip() or None)
        if self._saving:
            self._queued = want
        else:
            self._send(*want)

    def _send(self, mid: int, rating: int | None, said: str | None) -> None:
        self._saving, vault = True, self.vault

        def finished(reload: bool) -> None:
            self._saving = False
            queued, self._queued = self._queued, None
            if queued is not None:
                self._send(*queued)
            elif reload and self.memory_id is not None:  # show what the vault now holds
                self.show_for(self.memory_id, "episodic")

        def done(_r: Result[None]) -> None:
            self.saved.emit(mid)
            finished(True)

        def failed(exc: BaseException) -> None:
            errors.report_error(self, exc, self.note.setText)
            self.note.show()
            finished(False)  # a reload would clear the message
        run_op(self, lambda: vault.rate_episode(mid, rating, said), done, self.bridge, failed)
