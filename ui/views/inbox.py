"""Inbox: contradictions waiting for the person, each with the two facts side by side and the
four answers (keep A, keep B, both true at different times, edit); below, what the policy
resolved on its own (with the rule it used) and what the person resolved, each with Undo.
Layer: ui. GUI thread; every vault call goes through ``ui.tasks``.

The lists are short (a handful of cards), so they are plain widgets rebuilt on each refresh
rather than a model; the view refreshes from ``Changes.contradictions``/``memories``.
"""

from __future__ import annotations

import html
import json
import logging
from datetime import datetime
from typing import Any

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from ui.tasks import run_op, run_query

log = logging.getLogger(__name__)

ERROR_STYLE = "color: #b00020"
CARD_STYLE = ("QFrame#card { border: 1px solid #c8c8c8; border-radius: 6px; background: palette(base); }"
              " QFrame#side { border: 1px solid #e2e2e2; border-radius: 4px; }")
REASONS = {"facts disagree": "These two facts disagree.",
           "update over time": "This looks like a change over time."}
KEEP_WORDS = {"a": "kept A", "b": "kept B", "both": "both true at different times",
              "edit": "replaced by your edit"}


def day_text(ts: float | None) -> str:
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d") if ts else "unknown date"


def short(text: str, n: int = 90) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def sources_text(side: dict[str, Any]) -> str:
    refs = side.get("refs") or []
    sources = side.get("sources") or []
    parts = []
    if refs:
        parts.append(("source turn " if len(refs) == 1 else "source turns ") + ", ".join(refs))
    if sources:
        parts.append("learned from memories " + ", ".join(f"#{s}" for s in sources))
    return "; ".join(parts) if parts else "told directly (no earlier source)"


class FactSide(QFrame):
    """One side of a contradiction: text, date, confidence, sources and refs."""

    def __init__(self, label: str, side: dict[str, Any]) -> None:
        super().__init__()
        self.setObjectName("side")
        self.fact_id = int(side["id"])
        head = QLabel(f"<b>{label}</b> · memory #{self.fact_id}"
                      + (f" · {side['status']}" if side.get("status") not in (None, "",
                                                                              "active") else ""))
        self.text = QLabel(side.get("text") or "")
        self.text.setObjectName("factText")
        self.text.setTextFormat(Qt.TextFormat.PlainText)  # memory text is never markup
        self.text.setWordWrap(True)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.text.setStyleSheet("font-size: 14px")
        conf = side.get("confidence")
        conf_text = f"confidence {conf:.2f}" if isinstance(conf, (int, float)) else ""
        self.meta = QLabel(" · ".join(p for p in (f"said on {day_text(side.get('occurred_at'))}",
                                                  conf_text) if p))
        self.sources = QLabel(sources_text(side))
        self.sources.setTextFormat(Qt.TextFormat.PlainText)
        self.sources.setWordWrap(True)
        for w in (self.meta, self.sources):
            w.setStyleSheet("color: palette(placeholder-text)")
        lay = QVBoxLayout(self)
        lay.addWidget(head)
        lay.addWidget(self.text)
        lay.addWidget(self.meta)
        lay.addWidget(self.sources)
        lay.addStretch(1)


class ContradictionCard(QFrame):
    """An open contradiction with its four answers. Emits ``resolution_chosen(cid, keep,
    text)``; the view runs the operation and calls ``busy``/``show_error`` back."""

    resolution_chosen = Signal(int, str, str)

    def __init__(self, item: Any) -> None:
        super().__init__()
        self.setObjectName("card")
        self.cid = int(item.id)
        self.item = item
        reason = QLabel(f"<b>{REASONS.get(item.reason, item.reason)}</b> Which is true? "
                        f"<span style='color:gray'>(found {day_text(item.created_at)})</span>")
        reason.setWordWrap(True)
        self.side_a = FactSide("A", item.a)
        self.side_b = FactSide("B", item.b)
        self.keep_a_btn = QPushButton("Keep A")
        self.keep_a_btn.setToolTip("A is right; B becomes an earlier version (nothing is "
                                   "deleted).")
        self.keep_b_btn = QPushButton("Keep B")
        self.keep_b_btn.setToolTip("B is right; A becomes an earlier version (nothing is "
                                   "deleted).")
        self.both_btn = QPushButton("Both true at different times")
        self.both_btn.setToolTip("The older one was true until the newer one.")
        self.edit_btn = QPushButton("Edit…")
        self.edit_btn.setToolTip("Write what is actually true; it replaces both.")
        col_a = QVBoxLayout()
        col_a.addWidget(self.side_a, 1)
        col_a.addWidget(self.keep_a_btn)
        col_b = QVBoxLayout()
        col_b.addWidget(self.side_b, 1)
        col_b.addWidget(self.keep_b_btn)
        sides = QHBoxLayout()
        sides.addLayout(col_a, 1)
        sides.addLayout(col_b, 1)
        more = QHBoxLayout()
        more.addWidget(self.both_btn)
        more.addWidget(self.edit_btn)
        more.addStretch(1)
        self.editor = QPlainTextEdit()
        self.editor.setObjectName("editor")
        self.editor.setPlaceholderText("What is true now")
        self.editor.setMaximumHeight(70)
        self.save_btn = QPushButton("Save")
        self.cancel_btn = QPushButton("Cancel")
        self.edit_row = QWidget()
        er = QHBoxLayout(self.edit_row)
        er.setContentsMargins(0, 0, 0, 0)
        er.addWidget(self.editor, 1)
        er.addWidget(self.save_btn)
        er.addWidget(self.cancel_btn)
        self.error = QLabel()
        self.error.setObjectName("error")
        self.error.setStyleSheet(ERROR_STYLE)
        self.error.setWordWrap(True)
        self.error.hide()
        lay = QVBoxLayout(self)
        lay.addWidget(reason)
        lay.addLayout(sides)
        lay.addLayout(more)
        lay.addWidget(self.edit_row)
        lay.addWidget(self.error)
        self.edit_row.hide()
        self.keep_a_btn.clicked.connect(self._on_keep_a_btn_clicked)
        self.keep_b_btn.clicked.connect(self._on_keep_b_btn_clicked)
        self.both_btn.clicked.connect(self._on_both_btn_clicked)
        self.edit_btn.clicked.connect(self._on_edit_btn_clicked)
        self.save_btn.clicked.connect(self._on_save_btn_clicked)
        self.cancel_btn.clicked.connect(self._on_cancel_btn_clicked)

    @property
    def buttons(self) -> tuple[QPushButton, ...]:
        return (self.keep_a_btn, self.keep_b_btn, self.both_btn, self.edit_btn, self.save_btn,
                self.cancel_btn)

    def busy(self, on: bool) -> None:
        for b in self.buttons:
            b.setEnabled(not on)
        self.editor.setReadOnly(on)

    def show_error(self, text: str) -> None:
        self.error.setText(text)
        self.error.setVisible(bool(text))

    def _choose(self, keep: str, text: str = "") -> None:
        self.show_error("")
        self.resolution_chosen.emit(self.cid, keep, text)

    @Slot()
    def _on_keep_a_btn_clicked(self) -> None:
        self._choose("a")

    @Slot()
    def _on_keep_b_btn_clicked(self) -> None:
        self._choose("b")

    @Slot()
    def _on_both_btn_clicked(self) -> None:
        self._choose("both")

    @Slot()
    def _on_edit_btn_clicked(self) -> None:
        self.editor.setPlainText(self.item.b.get("text") or "")
        self.edit_row.show()
        self.edit_btn.setEnabled(False)
        self.editor.setFocus()
        self.editor.selectAll()

    @Slot()
    def _on_cancel_btn_clicked(self) -> None:
        self.edit_row.hide()
        self.edit_btn.setEnabled(True)
        self.show_error("")

    @Slot()
    def _on_save_btn_clicked(self) -> None:
        from app.domain.memory import Draft
        from app.errors import ValidationError
        from app.facade import Vault
        text = self.editor.toPlainText()
        try:  # pure and cheap, no I/O (STYLE B8): inline
            text = Vault.validate_draft(Draft(text=text)).text
        except ValidationError as exc:
            self.show_error(exc.user_message)
            return
        self._choose("edit", text)


class ResolvedRow(QFrame):
    """A contradiction resolved by the policy or by the person, with Undo (reopen)."""

    undo_requested = Signal(int)

    def __init__(self, item: Any) -> None:
        super().__init__()
        self.setObjectName("card")
        self.cid = int(item.id)
        try:
            res = json.loads(item.resolution or "{}")
        except ValueError:
            res = {}
        a, b = item.a, item.b
        if item.status == "auto":
            kept = res.get("kept")
            winner, loser = (a, b) if kept == a["id"] else (b, a)
            what = (f"Kept <b>{html.escape(short(winner['text']))}</b> over "
                    f"<s>{html.escape(short(loser['text']))}</s>")
            how = f"Rule: {res.get('rule') or 'policy'}"
        else:
            keep = res.get("keep", "")
            what = (f"<b>{html.escape(short(a['text']))}</b> vs <b>{html.escape(short(b['text']))}</b>: "
                    f"{KEEP_WORDS.get(keep, keep)}")
            how = "Your choice"
        self.label = QLabel(f"{what}<br><span style='color:gray'>{how} · "
                            f"{day_text(item.created_at)}</span>")
        self.label.setObjectName("resolvedText")
        self.label.setWordWrap(True)
        self.rule = str(res.get("rule") or "")
        self.undo_btn = QPushButton("Undo")
        self.undo_btn.setToolTip("Put both memories back as they were and move this to the "
                                 "list above.")
        lay = QHBoxLayout(self)
        lay.addWidget(self.label, 1)
        lay.addWidget(self.undo_btn, 0, Qt.AlignmentFlag.AlignTop)
        self.undo_btn.clicked.connect(self._on_undo_btn_clicked)

    @Slot()
    def _on_undo_btn_clicked(self) -> None:
        self.undo_btn.setEnabled(False)
        self.undo_requested.emit(self.cid)


class InboxView(QWidget):
    """Owned by the main window's page stack; lives on the GUI thread."""

    def __init__(self, window: Any) -> None:
        super().__init__()
        self.window_ = window
        self._generation = 0
        self.cards: dict[int, ContradictionCard] = {}
        self.auto_rows: dict[int, ResolvedRow] = {}
        self.resolved_rows: dict[int, ResolvedRow] = {}
        self.setStyleSheet(CARD_STYLE)

        title = QLabel("<h2>Inbox</h2>")
        self.summary = QLabel("Loading…")
        self.summary.setObjectName("summary")
        self.summary.setWordWrap(True)
        self.empty = QLabel("Nothing waits for you. When two memories disagree and the policy "
                            "cannot tell which is true, they appear here.")
        self.empty.setObjectName("empty")
        self.empty.setWordWrap(True)
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setStyleSheet("padding: 24px; color: palette(placeholder-text)")
        self.empty.hide()
        self.message = QLabel()
        self.message.setObjectName("message")
        self.message.setWordWrap(True)
        self.message.hide()
        self.open_box = QVBoxLayout()
        self.auto_title = QLabel("<h3>Resolved on its own by the policy</h3>")
        self.auto_note = QLabel("The newer or better-supported statement was kept; the other "
                                "became an earlier version. Undo if the policy got it wrong.")
        self.auto_note.setWordWrap(True)
        self.auto_empty = QLabel("Nothing was resolved automatically yet.")
        self.auto_box = QVBoxLayout()
        self.resolved_title = QLabel("<h3>Resolved by you</h3>")
        self.resolved_box = QVBoxLayout()

        content = QWidget()
        cl = QVBoxLayout(content)
        cl.addWidget(title)
        cl.addWidget(self.summary)
        cl.addWidget(self.message)
        cl.addWidget(self.empty)
        cl.addLayout(self.open_box)
        cl.addWidget(self.auto_title)
        cl.addWidget(self.auto_note)
        cl.addWidget(self.auto_empty)
        cl.addLayout(self.auto_box)
        cl.addWidget(self.resolved_title)
        cl.addLayout(self.resolved_box)
        cl.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(content)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(scroll)
        self.refresh()

    @property
    def vault(self) -> Any:
        return self.window_.vault

    def _say(self, text: str) -> None:
        self.message.setText(text)
        self.message.setVisible(bool(text))

    # --- loading ------------------------------------------------------------------------
    def refresh(self) -> None:
        self._generation += 1
        gen = self._generation
        vault = self.vault

        def load() -> tuple[list[Any], list[Any], list[Any]]:
            return (vault.contradictions("open"), vault.contradictions("auto"),
                    vault.contradictions("resolved"))
        run_query(self, load, lambda r: self._fill(gen, r))

    def on_changes(self, changes: Any) -> None:
        # Cheap (a handful of rows), so refresh even when not visible: the nav count and this
        # page then never disagree.
        if changes.contradictions or changes.memories:
            self.refresh()

    @staticmethod
    def _clear(box: QVBoxLayout) -> None:
        while box.count():
            item = box.takeAt(0)
            w = item.widget() if item is not None else None
            if w is not None:
                w.hide()
                w.deleteLater()

    def _fill(self, gen: int, result: tuple[list[Any], list[Any], list[Any]]) -> None:
        if gen != self._generation:
            return
        open_items, auto_items, resolved_items = result
        for box in (self.open_box, self.auto_box, self.resolved_box):
            self._clear(box)
        self.cards.clear()
        self.auto_rows.clear()
        self.resolved_rows.clear()
        for item in open_items:
            card = ContradictionCard(item)
            card.resolution_chosen.connect(self._on_card_resolution_chosen)
            self.open_box.addWidget(card)
            self.cards[card.cid] = card
        for item in reversed(auto_items):  # newest first
            row = ResolvedRow(item)
            row.undo_requested.connect(self._on_row_undo_requested)
            self.auto_box.addWidget(row)
            self.auto_rows[row.cid] = row
        for item in reversed(resolved_items):
            row = ResolvedRow(item)
            row.undo_requested.connect(self._on_row_undo_requested)
            self.resolved_box.addWidget(row)
            self.resolved_rows[row.cid] = row
        n = len(open_items)
        self.summary.setText(
            f"{n} contradiction{'s' if n != 1 else ''} need{'s' if n == 1 else ''} your "
            "answer. Nothing is deleted: the memory you do not keep becomes an earlier "
            "version, and every answer can be undone." if n else "")
        self.summary.setVisible(bool(n))
        self.empty.setVisible(not n)
        self.auto_empty.setVisible(not auto_items)
        self.resolved_title.setVisible(bool(resolved_items))

    # --- actions ------------------------------------------------------------------------
    @Slot(int, str, str)
    def _on_card_resolution_chosen(self, cid: int, keep: str, text: str) -> None:
        card = self.cards.get(cid)
        if card is not None:
            card.busy(True)
        vault = self.vault

        def done(_result: Any) -> None:
            # The list itself refreshes from the change flags (on_changes).
            self._say(f"Resolved: {KEEP_WORDS.get(keep, keep)}. You can undo it "
                                 "below.")

        def failed(exc: BaseException) -> None:
            from app.errors import AppError
            if isinstance(exc, AppError):  # e.g. resolved meanwhile: inline, then reload
                self._say(f"Not resolved: {exc.user_message}")
            else:
                from ui.errors import show_error
                show_error(self, exc)
            self.refresh()
        run_op(self, lambda: vault.resolve(cid, keep, text or None), done, self.window_.bridge,
               failed)

    @Slot(int)
    def _on_row_undo_requested(self, cid: int) -> None:
        vault = self.vault

        def done(_result: Any) -> None:
            self._say("Undone: both memories are back as they were, and the "
                                 "contradiction waits above.")
        run_op(self, lambda: vault.reopen(cid), done, self.window_.bridge)
