"""Inbox: what waits for the person, and what was settled. Layer: ui. GUI thread; every vault
call goes through ``ui.tasks``.

- Contradictions: the two facts side by side and the four answers (keep A, keep B, both true
  at different times, edit).
- Review requests (an LLM asked to forget a memory): a one-sided card, answered with still
  true, edit, or forget, which opens the normal forget plan and its confirmation (never a
  direct delete).
- Forget requests from assistants (``Vault.request_forget``), at the top: "Review and
  forget…" opens the forget dialog with the request's plan (confirming forgets it and closes
  the request; cancelling leaves it waiting), "Decline" closes it and forgets nothing. They
  reload on ``Changes.agents`` alone (one query), not with the lists below.
- Below, what the policy resolved on its own (with its rule) and what the person resolved,
  each with Undo.

Each list is paged (issue 12: a widget per item froze the window for 39 s at 2,435 settled
items). A page is read ids first with batched rows (``Vault.inbox_page``, off the GUI thread).
Settled lists are model/views painted by a delegate (no widget per row); open items are cards,
built a slice at a time between turns of the event loop, and kept as they are when a reload
brings the same items. Measured with ``bench/ui_responsiveness.py --parts inbox``. The view
refreshes from ``Changes.contradictions``/``memories`` while shown, and on showing after a
change.
"""

from __future__ import annotations

import html
import json
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import shiboken6
from PySide6.QtCore import (
    QAbstractItemModel,
    QAbstractListModel,
    QEvent,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QPoint,
    QRect,
    QSize,
    Qt,
    QTimer,
    Signal,
    Slot,
)
from PySide6.QtGui import QFontMetrics, QKeyEvent, QMouseEvent, QPainter, QPalette, QShowEvent
from PySide6.QtWidgets import (
    QApplication,
    QFrame,
    QHBoxLayout,
    QLabel,
    QListView,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionButton,
    QStyleOptionViewItem,
    QVBoxLayout,
    QWidget,
)

from app import words
from app.api import (
    ContradictionItem,
    ForgetReport,
    InboxPage,
    InboxStatus,
    MemoryId,
    MemoryView,
    PendingForget,
    ResolveChoice,
    Result,
    VaultAPI,
)
from app.changes import Changes
from ui import errors, theme
from ui.bridge import CoreBridge
from ui.tasks import run_op
from ui.views.page import Page

if TYPE_CHECKING:
    from ui.dialogs.forget import ForgetDialog

log = logging.getLogger(__name__)

# Building stays under the stall budget: a page's widgets are made a slice at a time, each
# slice ending once it has taken this long, then the event loop runs (paints, input).
SLICE_SECONDS = 0.008
REASONS = {"facts disagree": "These two facts disagree.",
           "update over time": "This looks like a change over time."}
KEEP_WORDS = {"a": "kept A", "b": "kept B", "both": "both true at different times",
              "edit": "replaced by your edit", "still_true": "still true"}
# Cards are heavy (a dozen widgets each), rows light: sizes keep building one page well
# under the 100 ms stall budget (bench/ui_responsiveness.py --parts inbox).
PAGE_SIZE: dict[InboxStatus, int] = {"open": 10, "auto": 25, "resolved": 25}
_STATUS = "kept_inbox_status"  # the property a list's Pager carries
_ASKED_BY = "kept_asked_by"  # the property a review's forget dialog carries: who asked


def _panel(frame: QFrame, *, base: bool) -> None:
    """A bordered panel drawn by the style. Not a style sheet: one on the page sent every
    label of every card through QStyleSheetStyle, and polishing was most of a page's build
    time (issue 12)."""
    frame.setFrameShape(QFrame.Shape.StyledPanel)
    if base:
        frame.setAutoFillBackground(True)
        frame.setBackgroundRole(QPalette.ColorRole.Base)


def day_text(ts: float | None) -> str:
    """ "today", "yesterday", "15 June 2026" (local time)."""
    return words.day(ts or None)


def on_day(ts: float | None) -> str:
    """ "today", "on 15 June 2026": a day after a verb ("said on ...")."""
    d = day_text(ts)
    return d if d in ("today", "yesterday") else f"on {d}"


def short(text: str, n: int = 90) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def sources_text(side: MemoryView) -> str:
    """Where a fact came from, in words; the conversation refs (an assistant's own turn
    names, e.g. "s4:9") are in ``sources_tip``."""
    refs, sources = side.refs, side.sources
    if sources and refs:
        return "learned from what was said in a conversation"
    if sources:
        return "learned from " + words.count(len(sources), "earlier memory", "earlier memories")
    if refs:
        return "said in a conversation"
    return "told directly (no earlier source)"


def sources_tip(side: MemoryView) -> str:
    refs = side.refs
    return ("The assistant's name for the conversation turn" + ("s" if len(refs) > 1 else "")
            + ": " + ", ".join(refs)) if refs else ""


class FactSide(QFrame):
    """One side of a contradiction: text, date, confidence, sources and refs."""

    def __init__(self, label: str, side: MemoryView) -> None:
        super().__init__()
        self.setObjectName("side")
        _panel(self, base=False)
        self.fact_id = int(side.id)
        status = side.status
        state = {"archived": "in the Archive", "superseded": "replaced by a newer version"}
        head = QLabel(f"<b>{label}</b>"
                      + (f" · {state.get(status, status)}"
                         if status not in (None, "", "active") else ""))
        self.text = QLabel(side.text or "")
        self.text.setObjectName("factText")
        self.text.setTextFormat(Qt.TextFormat.PlainText)  # memory text is never markup
        self.text.setWordWrap(True)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        font = self.text.font()
        font.setPixelSize(14)
        self.text.setFont(font)
        conf = side.confidence
        conf_text = words.confidence_word(conf) if isinstance(conf, (int, float)) else ""
        said = f"said {on_day(side.occurred_at)}"
        self.meta = QLabel(" · ".join(p for p in (said, conf_text) if p))
        self.meta.setToolTip(words.confidence_tip(conf))
        self.sources = QLabel(sources_text(side))
        self.sources.setToolTip(sources_tip(side))
        self.sources.setTextFormat(Qt.TextFormat.PlainText)
        self.sources.setWordWrap(True)
        for w in (self.meta, self.sources):
            theme.set_muted(w)
        lay = QVBoxLayout(self)
        lay.addWidget(head)
        lay.addWidget(self.text)
        lay.addWidget(self.meta)
        lay.addWidget(self.sources)
        lay.addStretch(1)


class _EditableCard(QFrame):
    """What both cards share: the error line and an edit row made on first use (a text editor
    per card was a third of building a page of cards)."""

    resolution_chosen = Signal(int, str, str)

    # Made by the subclass: the button that opens the edit row.
    edit_btn: QPushButton

    def __init__(self, item: ContradictionItem) -> None:
        super().__init__()
        self.setObjectName("card")
        _panel(self, base=True)
        self.cid = int(item.id)
        self.item = item
        self._edit_row: QWidget | None = None
        self._editor: QPlainTextEdit | None = None
        self._save_btn: QPushButton | None = None
        self._cancel_btn: QPushButton | None = None
        self.error = theme.plain(QLabel())
        self.error.setObjectName("error")
        theme.set_error_color(self.error)
        self.error.setWordWrap(True)
        self.error.hide()
        self.lay = QVBoxLayout(self)

    def _edit_text(self) -> str:
        raise NotImplementedError

    def _answer_buttons(self) -> tuple[QPushButton, ...]:
        raise NotImplementedError

    def _make_edit_row(self) -> QWidget:
        if self._edit_row is None:
            self._editor = QPlainTextEdit()
            self._editor.setTabChangesFocus(True)  # Tab moves on; it never types a tab
            self._editor.setObjectName("editor")
            self._editor.setPlaceholderText("What is true now")
            self._editor.setMaximumHeight(70)
            self._save_btn = QPushButton("Save")
            self._cancel_btn = QPushButton("Cancel")
            row = QWidget()
            er = QHBoxLayout(row)
            er.setContentsMargins(0, 0, 0, 0)
            er.addWidget(self._editor, 1)
            er.addWidget(self._save_btn)
            er.addWidget(self._cancel_btn)
            row.hide()
            self.lay.insertWidget(self.lay.indexOf(self.error), row)
            self._save_btn.clicked.connect(self._on_save_btn_clicked)
            self._cancel_btn.clicked.connect(self._on_cancel_btn_clicked)
            self._edit_row = row
        return self._edit_row

    @property
    def edit_row(self) -> QWidget:
        return self._make_edit_row()

    @property
    def editor(self) -> QPlainTextEdit:
        self._make_edit_row()
        assert self._editor is not None
        return self._editor

    @property
    def save_btn(self) -> QPushButton:
        self._make_edit_row()
        assert self._save_btn is not None
        return self._save_btn

    @property
    def cancel_btn(self) -> QPushButton:
        self._make_edit_row()
        assert self._cancel_btn is not None
        return self._cancel_btn

    @property
    def buttons(self) -> tuple[QPushButton, ...]:
        extra = (self._save_btn, self._cancel_btn) if self._edit_row is not None else ()
        return (*self._answer_buttons(), *(b for b in extra if b is not None))

    def busy(self, on: bool) -> None:
        for b in self.buttons:
            b.setEnabled(not on)
        if self._editor is not None:
            self._editor.setReadOnly(on)

    def show_error(self, text: str) -> None:
        self.error.setText(text)
        self.error.setVisible(bool(text))

    def _choose(self, keep: ResolveChoice, text: str = "") -> None:
        self.show_error("")
        self.resolution_chosen.emit(self.cid, keep, text)

    @Slot()
    def _on_edit_btn_clicked(self) -> None:
        self.editor.setPlainText(self._edit_text())
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
        try:  # pure and cheap, no I/O (docs/architecture.md#errors): inline
            text = Vault.validate_draft(Draft(text=self.editor.toPlainText())).text
        except ValidationError as exc:
            self.show_error(exc.user_message)
            return
        self._choose("edit", text)


class ContradictionCard(_EditableCard):
    """An open contradiction with its four answers. Emits ``resolution_chosen(cid, keep,
    text)``; the view runs the operation and calls ``busy``/``show_error`` back."""

    def __init__(self, item: ContradictionItem) -> None:
        super().__init__(item)
        found = theme.muted_html(f"(found {day_text(item.created_at)})")
        why = html.escape(REASONS.get(item.reason, item.reason))
        reason = QLabel(f"<b>{why}</b> Which is true? {found}")
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
        self.lay.addWidget(reason)
        self.lay.addLayout(sides)
        self.lay.addLayout(more)
        self.lay.addWidget(self.error)
        self.keep_a_btn.clicked.connect(self._on_keep_a_btn_clicked)
        self.keep_b_btn.clicked.connect(self._on_keep_b_btn_clicked)
        self.both_btn.clicked.connect(self._on_both_btn_clicked)
        self.edit_btn.clicked.connect(self._on_edit_btn_clicked)

    def _answer_buttons(self) -> tuple[QPushButton, ...]:
        return (self.keep_a_btn, self.keep_b_btn, self.both_btn, self.edit_btn)

    def _edit_text(self) -> str:
        return str(self.item.b.text or "")

    @Slot()
    def _on_keep_a_btn_clicked(self) -> None:
        self._choose("a")

    @Slot()
    def _on_keep_b_btn_clicked(self) -> None:
        self._choose("b")

    @Slot()
    def _on_both_btn_clicked(self) -> None:
        self._choose("both")


class ChangeCard(_EditableCard):
    """An assistant says one of the person's facts changed (issue 26): the value held now, the
    new one, and one click (or Enter / Space) to accept it. Accepting makes the new value the
    person's, confirmed, and ends the old one when the change took effect; keeping the current
    value makes the assistant's an earlier version. Emits ``resolution_chosen(cid, keep, text)``
    with keep "b" (accept) or "a" (keep)."""

    def __init__(self, item: ContradictionItem) -> None:
        super().__init__(item)
        found = theme.muted_html(f"(found {day_text(item.created_at)})")
        self.reason = QLabel(f"<b>{html.escape(item.reason)}.</b> Accept the new value? {found}")
        self.reason.setWordWrap(True)
        self.side_a = FactSide("Now", item.a)
        self.side_b = FactSide("New", item.b)
        self.accept_btn = QPushButton("Accept the change")
        self.accept_btn.setToolTip("The new value becomes yours, confirmed; the current one "
                                   "ends when the change took effect (nothing is deleted).")
        self.accept_btn.setAutoDefault(True)  # Enter accepts, as Space does
        self.keep_btn = QPushButton("Keep the current value")
        self.keep_btn.setToolTip("The assistant's value becomes an earlier version.")
        self.keep_btn.setAutoDefault(True)
        self.edit_btn = QPushButton("Edit…")
        self.edit_btn.setToolTip("Write what is actually true; it replaces both.")
        sides = QHBoxLayout()
        sides.addWidget(self.side_a, 1)
        sides.addWidget(self.side_b, 1)
        answers = QHBoxLayout()
        for b in (self.accept_btn, self.keep_btn, self.edit_btn):
            answers.addWidget(b)
        answers.addStretch(1)
        self.lay.addWidget(self.reason)
        self.lay.addLayout(sides)
        self.lay.addLayout(answers)
        self.lay.addWidget(self.error)
        self.accept_btn.clicked.connect(self._on_accept_btn_clicked)
        self.keep_btn.clicked.connect(self._on_keep_btn_clicked)
        self.edit_btn.clicked.connect(self._on_edit_btn_clicked)

    def _answer_buttons(self) -> tuple[QPushButton, ...]:
        return (self.accept_btn, self.keep_btn, self.edit_btn)

    def _edit_text(self) -> str:
        return str(self.item.b.text or "")

    @Slot()
    def _on_accept_btn_clicked(self) -> None:
        self._choose("b")

    @Slot()
    def _on_keep_btn_clicked(self) -> None:
        self._choose("a")


class ReviewCard(_EditableCard):
    """A review request: an LLM asked to forget one memory. One side, three answers: still
    true, edit, forget. Emits ``resolution_chosen(cid, keep, text)`` for the first two and
    ``forget_requested(mid)`` for the third; the view opens the forget dialog (its plan and
    confirmation), so nothing is ever deleted from here."""

    forget_requested = Signal(int)

    def __init__(self, item: ContradictionItem) -> None:
        super().__init__(item)
        self.memory_id = int(item.a.id)
        because = f" ({item.reason})" if item.reason else ""
        asked = theme.muted_html(f"(asked {day_text(item.created_at)})")
        self.reason = QLabel(f"<b>The assistant asked to forget this memory"
                             f"{html.escape(because)}.</b> Is it still true? {asked}")
        self.reason.setWordWrap(True)
        self.side = FactSide("Memory", item.a)
        self.still_true_btn = QPushButton("Still true")
        self.still_true_btn.setToolTip("Keep it as it is, confirmed by you.")
        self.edit_btn = QPushButton("Edit…")
        self.edit_btn.setToolTip("Write what is true now; it replaces this memory (the old "
                                 "version stays in the history).")
        self.forget_btn = QPushButton("Forget…")
        self.forget_btn.setToolTip("Shows everything that would go and asks you to confirm.")
        answers = QHBoxLayout()
        for b in (self.still_true_btn, self.edit_btn, self.forget_btn):
            answers.addWidget(b)
        answers.addStretch(1)
        self.lay.addWidget(self.reason)
        self.lay.addWidget(self.side)
        self.lay.addLayout(answers)
        self.lay.addWidget(self.error)
        self.still_true_btn.clicked.connect(self._on_still_true_btn_clicked)
        self.edit_btn.clicked.connect(self._on_edit_btn_clicked)
        self.forget_btn.clicked.connect(self._on_forget_btn_clicked)

    def _answer_buttons(self) -> tuple[QPushButton, ...]:
        return (self.still_true_btn, self.edit_btn, self.forget_btn)

    def _edit_text(self) -> str:
        return str(self.item.a.text or "")

    @Slot()
    def _on_still_true_btn_clicked(self) -> None:
        self._choose("still_true")

    @Slot()
    def _on_forget_btn_clicked(self) -> None:
        self.forget_requested.emit(self.memory_id)


class PendingCard(QFrame):
    """An assistant's forget request: who asks, how many memories, its reason, and two
    answers. Emits ``review_requested(pid)`` and ``decline_requested(pid)``; the view opens
    the forget dialog (plan and confirmation) or declines, so nothing is deleted from here."""

    review_requested = Signal(int)
    decline_requested = Signal(int)

    def __init__(self, req: PendingForget) -> None:
        super().__init__()
        _panel(self, base=True)
        self.req = req
        self.pid = int(req.id)
        n = len(req.memory_ids)
        reason = f": {req.reason}" if req.reason else ""
        asked = theme.muted_html(f"(asked {day_text(req.created_at)})")
        things = words.count(n, "memory", "memories")
        if req.agent == "you":  # said in a conversation: "please forget what I told you ..."
            self.label = QLabel(f"<b>You asked to forget</b> {things}{html.escape(reason)} "
                                f"{asked}")
        else:
            self.label = QLabel(f"<b>{html.escape(req.agent)}</b> asks to forget {things}"
                                f"{html.escape(reason)} {asked}")
        self.label.setWordWrap(True)
        self.note = QLabel("Nothing is forgotten unless you confirm it. Review shows every "
                           "memory that would go.")
        self.note.setWordWrap(True)
        theme.set_muted(self.note)
        self.review_btn = QPushButton("Review and forget…")
        self.decline_btn = QPushButton("Decline")
        self.decline_btn.setToolTip("Keep the memories; the assistant's request is closed.")
        buttons = QHBoxLayout()
        buttons.addWidget(self.review_btn)
        buttons.addWidget(self.decline_btn)
        buttons.addStretch(1)
        lay = QVBoxLayout(self)
        lay.addWidget(self.label)
        lay.addWidget(self.note)
        lay.addLayout(buttons)
        self.review_btn.clicked.connect(self._on_review_btn_clicked)
        self.decline_btn.clicked.connect(self._on_decline_btn_clicked)

    @Slot()
    def _on_review_btn_clicked(self) -> None:
        self.review_requested.emit(self.pid)

    @Slot()
    def _on_decline_btn_clicked(self) -> None:
        self.decline_requested.emit(self.pid)


@dataclass(frozen=True, slots=True)
class SettledRow:
    """What one settled item shows: ``what`` was decided, ``how`` (the policy's rule or the
    person's choice) and when."""
    cid: int
    what: str
    how: str
    rule: str


def settled_row(item: ContradictionItem) -> SettledRow:
    try:
        res = json.loads(item.resolution or "{}")
    except ValueError:
        res = {}
    a, b = item.a, item.b
    how = "Your choice"
    if item.kind == "review":
        keep = res.get("keep", "")
        what = f"Asked to forget “{short(a.text)}”: {KEEP_WORDS.get(keep, keep)}"
    elif item.kind == "change" and item.status == "resolved":
        keep = res.get("keep", "")
        what = (f"{item.reason}: “{short(b.text)}” accepted" if keep == "b" else
                f"{item.reason}: kept “{short(a.text)}”" if keep == "a" else
                f"{item.reason}: {KEEP_WORDS.get(keep, keep)}")
    elif item.status == "auto":
        winner, loser = (a, b) if res.get("kept") == a.id else (b, a)
        what = f"Kept “{short(winner.text)}” over “{short(loser.text)}”"
        how = f"Rule: {res.get('rule') or 'policy'}"
    else:
        keep = res.get("keep", "")
        what = (f"“{short(a.text)}” vs “{short(b.text)}”: "
                f"{KEEP_WORDS.get(keep, keep)}")
    return SettledRow(int(item.id), what, f"{how} · {day_text(item.created_at)}",
                      str(res.get("rule") or ""))


class SettledModel(QAbstractListModel):
    """One page of a settled list. ``data`` only looks rows up (docs/architecture.md#lists);
    ``pending``: the items whose Undo was clicked and is under way (their button is drawn
    disabled)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[SettledRow] = []
        self.pending: set[int] = set()

    def set_rows(self, rows: list[SettledRow]) -> None:
        self.beginResetModel()
        self.rows = rows
        self.pending = set()
        self.endResetModel()

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex(  # noqa: B008, N802
            )) -> int:
        return 0 if parent.isValid() else len(self.rows)

    def data(self, index: QModelIndex | QPersistentModelIndex,
             role: int = Qt.ItemDataRole.DisplayRole) -> object:
        if not index.isValid() or not 0 <= index.row() < len(self.rows):
            return None
        row = self.rows[index.row()]
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.AccessibleTextRole):
            return f"{row.what}\n{row.how}"
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"{row.what}\n{row.how}"
        if role == Qt.ItemDataRole.UserRole:
            return row
        return None

    def row_of(self, cid: int) -> int:
        return next((n for n, r in enumerate(self.rows) if r.cid == cid), -1)


class SettledDelegate(QStyledItemDelegate):
    """Paints a settled item in two lines, with an Undo button drawn by the style; a click on
    the button emits ``undo_requested(cid)``. No widget per row: a page of 25 is painted, not
    built (issue 12)."""

    undo_requested = Signal(int)
    PAD = 8

    def button_rect(self, rect: QRect, fm: QFontMetrics) -> QRect:
        w = fm.horizontalAdvance("Undo") + 28
        h = fm.height() + 10
        return QRect(rect.right() - self.PAD - w, rect.top() + self.PAD, w, h)

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex  # noqa: N802
                 ) -> QSize:
        return QSize(200, 2 * option.fontMetrics.height() + 2 * self.PAD + 6)

    def paint(self, painter: QPainter, option: QStyleOptionViewItem,
              index: QModelIndex | QPersistentModelIndex) -> None:
        row = index.data(Qt.ItemDataRole.UserRole)
        if row is None:
            return
        style = option.widget.style() if option.widget else QApplication.style()
        painter.save()
        r = option.rect.adjusted(2, 2, -2, -2)
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        painter.setPen(option.palette.color(
            QPalette.ColorRole.Highlight if selected else QPalette.ColorRole.Mid))
        painter.setBrush(option.palette.base())
        painter.drawRoundedRect(r, 5, 5)
        fm = option.fontMetrics
        button = self.button_rect(option.rect, fm)
        text_w = button.left() - r.left() - 2 * self.PAD
        x, y = r.left() + self.PAD, r.top() + self.PAD - 2
        painter.setPen(option.palette.color(QPalette.ColorRole.Text))
        painter.drawText(QRect(x, y, text_w, fm.height()), Qt.AlignmentFlag.AlignLeft,
                         fm.elidedText(row.what, Qt.TextElideMode.ElideRight, text_w))
        painter.setPen(option.palette.color(QPalette.ColorRole.PlaceholderText))
        painter.drawText(QRect(x, y + fm.height() + 4, text_w, fm.height()),
                         Qt.AlignmentFlag.AlignLeft,
                         fm.elidedText(row.how, Qt.TextElideMode.ElideRight, text_w))
        btn = QStyleOptionButton()
        btn.rect = button
        btn.text = "Undo"
        btn.palette = option.palette
        model = index.model()
        pending = isinstance(model, SettledModel) and row.cid in model.pending
        btn.state = QStyle.StateFlag.State_Raised | (
            QStyle.StateFlag.State_None if pending else QStyle.StateFlag.State_Enabled)
        style.drawControl(QStyle.ControlElement.CE_PushButton, btn, painter, option.widget)
        painter.restore()

    def editorEvent(self, event: QEvent, model: QAbstractItemModel,  # noqa: N802
                    option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
                    ) -> bool:
        if (event.type() == QEvent.Type.MouseButtonRelease and isinstance(event, QMouseEvent)
                and event.button() == Qt.MouseButton.LeftButton
                and self.button_rect(option.rect, option.fontMetrics).contains(
                    event.position().toPoint())):
            self.undo(model, index)
            return True
        return super().editorEvent(event, model, option, index)

    def undo(self, model: QAbstractItemModel, index: QModelIndex | QPersistentModelIndex
             ) -> None:
        row = index.data(Qt.ItemDataRole.UserRole)
        if isinstance(model, SettledModel) and row is not None and row.cid not in model.pending:
            model.pending.add(row.cid)
            model.dataChanged.emit(index, index)
            self.undo_requested.emit(row.cid)


class SettledList(QListView):
    """A page of settled items: a model/view list as tall as its page (the page scrolls, not
    the list), uniform rows."""

    def __init__(self) -> None:
        super().__init__()
        self.model_ = SettledModel()
        self.delegate = SettledDelegate(self)
        self.setModel(self.model_)
        self.setItemDelegate(self.delegate)
        self.setUniformItemSizes(True)
        self.setSelectionMode(QListView.SelectionMode.SingleSelection)
        self.setToolTip("Enter or Space undoes the selected item.")
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.viewport().setAutoFillBackground(False)
        self.setMouseTracking(True)
        self.hide()

    def set_rows(self, rows: list[SettledRow]) -> None:
        self.model_.set_rows(rows)
        h = self.sizeHintForRow(0) if rows else 0
        self.setFixedHeight(h * len(rows) + 2 * self.frameWidth())
        self.setVisible(bool(rows))

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 (Qt name)
        """Undo from the keyboard: Enter or Space on the selected item."""
        index = self.currentIndex()
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Space) \
                and index.isValid():
            self.delegate.undo(self.model_, index)
            return
        super().keyPressEvent(event)

    def button_center(self, cid: int) -> QPoint:
        """Where the Undo button of ``cid`` is, in viewport coordinates (for tests and
        accessibility tools)."""
        index = self.model_.index(self.model_.row_of(cid), 0)
        return self.delegate.button_rect(self.visualRect(index), self.fontMetrics()).center()


class Pager(QWidget):
    """Previous / "26–50 of 2,435" / Next for one list. ``page`` is the page shown; a click
    emits ``page_requested`` and the view loads that page (clamped by the vault)."""

    page_requested = Signal(int)

    def __init__(self) -> None:
        super().__init__()
        self.page = 0
        self.pages = 1
        self.prev_btn = QPushButton("‹ Newer")
        self.next_btn = QPushButton("Older ›")
        self.label = QLabel()
        self.label.setObjectName("pageLabel")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.prev_btn)
        lay.addWidget(self.label)
        lay.addWidget(self.next_btn)
        lay.addStretch(1)
        self.prev_btn.clicked.connect(self._on_prev_btn_clicked)
        self.next_btn.clicked.connect(self._on_next_btn_clicked)
        self.hide()

    def set_words(self, prev: str, next_: str) -> None:
        self.prev_btn.setText(prev)
        self.next_btn.setText(next_)

    def show_page(self, page: InboxPage) -> None:
        self.page, self.pages = page.page, page.pages
        first = page.page * page.size + 1
        last = min(page.total, first + page.size - 1)
        self.label.setText(f"{first:,}–{last:,} of {page.total:,}")
        self.prev_btn.setEnabled(page.page > 0)
        self.next_btn.setEnabled(page.page + 1 < page.pages)
        self.setVisible(page.total > page.size)

    def busy(self) -> None:
        self.prev_btn.setEnabled(False)
        self.next_btn.setEnabled(False)

    @Slot()
    def _on_prev_btn_clicked(self) -> None:
        self.busy()
        self.page_requested.emit(self.page - 1)

    @Slot()
    def _on_next_btn_clicked(self) -> None:
        self.busy()
        self.page_requested.emit(self.page + 1)


class InboxView(Page):
    """Owned by the main window's page stack; lives on the GUI thread."""

    def __init__(self, vault: VaultAPI, bridge: CoreBridge, parent: QWidget | None = None
                 ) -> None:
        super().__init__(vault, bridge, parent)
        self._loading: set[str] = set()
        self._pending_stale = False
        self._open_total: int | None = None  # open items, once the first page is known
        self.cards: dict[int, ContradictionCard | ReviewCard | ChangeCard] = {}
        self.pending_cards: dict[int, PendingCard] = {}  # assistants' forget requests, by id
        self.forget_dialog: ForgetDialog | None = None

        title = QLabel("<h2>Inbox</h2>")
        self.summary = QLabel("Loading…")
        self.summary.setObjectName("summary")
        self.summary.setWordWrap(True)
        self.empty = QLabel("Nothing waits for you. When two memories disagree and the policy "
                            "cannot tell which is true, or the assistant asks to forget "
                            "something, it appears here.")
        self.empty.setObjectName("empty")
        self.empty.setWordWrap(True)
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setStyleSheet(theme.EMPTY_STYLE)
        self.empty.hide()
        self.message = theme.plain(QLabel())
        self.message.setObjectName("message")
        self.message.setWordWrap(True)
        self.message.hide()
        self.open_box = QVBoxLayout()
        self.pending_box = QVBoxLayout()
        self.auto_title = QLabel("<h3>Resolved on its own by the policy</h3>")
        self.auto_note = QLabel("The newer or better-supported statement was kept; the other "
                                "became an earlier version. Undo if the policy got it wrong.")
        self.auto_note.setWordWrap(True)
        self.auto_empty = QLabel("Nothing was resolved automatically yet.")
        self.resolved_title = QLabel("<h3>Resolved by you</h3>")
        self.lists: dict[InboxStatus, SettledList] = {"auto": SettledList(),
                                                      "resolved": SettledList()}
        for status, settled in self.lists.items():
            settled.setAccessibleName("Resolved on its own" if status == "auto"
                                      else "Resolved by you")
            settled.delegate.undo_requested.connect(self._on_row_undo_requested)
        self.pagers: dict[InboxStatus, Pager] = {status: Pager() for status in PAGE_SIZE}
        self.pagers["open"].set_words("‹ Previous", "Next ›")
        self.titles: dict[InboxStatus, QLabel] = {
            "open": title, "auto": self.auto_title, "resolved": self.resolved_title}

        content = QWidget()
        cl = QVBoxLayout(content)
        cl.addWidget(title)
        cl.addLayout(self.pending_box)
        cl.addWidget(self.summary)
        cl.addWidget(self.message)
        cl.addWidget(self.empty)
        cl.addLayout(self.open_box)
        cl.addWidget(self.pagers["open"])
        cl.addWidget(self.auto_title)
        cl.addWidget(self.auto_note)
        cl.addWidget(self.auto_empty)
        cl.addWidget(self.lists["auto"])
        cl.addWidget(self.pagers["auto"])
        cl.addWidget(self.resolved_title)
        cl.addWidget(self.lists["resolved"])
        cl.addWidget(self.pagers["resolved"])
        cl.addStretch(1)
        # Not ``self.scroll``: that is QWidget.scroll(dx, dy), which the attribute shadowed.
        self._scroll_area = QScrollArea()
        self._scroll_area.setWidgetResizable(True)
        self._scroll_area.setFrameShape(QFrame.Shape.NoFrame)
        # A scroll bar that comes and goes as a page is replaced changes the content's width,
        # and every word-wrapped label is laid out again at the new width: always there.
        self._scroll_area.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOn)
        self._scroll_area.setWidget(content)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self._scroll_area)
        for status, pager in self.pagers.items():
            pager.setProperty(_STATUS, status)
            pager.page_requested.connect(self._on_pager_page_requested)
        # On the next turn: the page is shown (empty, "Loading…") before the loads start.
        QTimer.singleShot(0, self.refresh)

    @property
    def loading(self) -> bool:
        """A list's page is on its way or still being built."""
        return bool(self._loading)

    @property
    def auto_rows(self) -> dict[int, SettledRow]:
        """The page of what the policy settled, by item id."""
        return {r.cid: r for r in self.lists["auto"].model_.rows}

    @property
    def resolved_rows(self) -> dict[int, SettledRow]:
        return {r.cid: r for r in self.lists["resolved"].model_.rows}

    def _say(self, text: str) -> None:
        self.message.setText(text)
        self.message.setVisible(bool(text))

    # --- loading ------------------------------------------------------------------------
    def refresh(self) -> None:
        """Reload the page each list shows (clamped if the list shrank)."""
        self._load_pending()
        for status, pager in self.pagers.items():
            self._load(status, pager.page)

    def _load_pending(self) -> None:
        vault = self.vault
        self.load(lambda: vault.pending_forgets("pending"), self._fill_pending, kind="pending")

    def on_changes(self, changes: Changes, initiator: QObject | None = None) -> None:
        """An assistant's request, pairing or reads (``Changes.agents``) alone reload only the
        requests; the lists below reload with contradictions and memories."""
        if changes.lock:
            return
        if changes.agents and not self.wants(changes):
            if self.shown():
                self._load_pending()
            else:
                self._pending_stale = True
            return
        super().on_changes(changes, initiator)

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 (Qt name)
        stale_all = self.stale
        super().showEvent(event)
        if self._pending_stale and not stale_all:
            self._load_pending()
        self._pending_stale = False

    def _fill_pending(self, requests: list[PendingForget]) -> None:
        if [c.req for c in self.pending_cards.values()] == list(requests):
            return
        self._clear(self.pending_box)
        self.pending_cards = {}
        for req in requests:
            card = PendingCard(req)
            card.review_requested.connect(self._on_pending_review_requested)
            card.decline_requested.connect(self._on_pending_decline_requested)
            self.pending_box.addWidget(card)
            self.pending_cards[card.pid] = card
        self.empty.setVisible(self._open_total == 0 and not self.pending_cards)

    @Slot(int)
    def _on_pager_page_requested(self, page: int) -> None:
        pager = self.sender()
        if pager is not None:
            self._load(pager.property(_STATUS), page, True)

    def _load(self, status: InboxStatus, page: int, scroll: bool = False) -> None:
        self._loading.add(status)
        vault, size = self.vault, PAGE_SIZE[status]
        # One generation per list: each list's newest load is the one shown.
        self.load(lambda: vault.inbox_page(status, page, size),
                  lambda r: self._fill(status, r, scroll), kind=status)

    def wants(self, changes: Changes) -> bool:
        # While hidden (e.g. during an import) the base reloads once, when shown again.
        return changes.contradictions or changes.memories

    @staticmethod
    def _clear(box: QVBoxLayout) -> None:
        while box.count():
            item = box.takeAt(0)
            w = item.widget() if item is not None else None
            if w is not None:
                w.hide()
                w.deleteLater()

    def _fill(self, status: InboxStatus, page: InboxPage, scroll: bool) -> None:
        if status == "open":
            if [c.item for c in self.cards.values()] == list(page.items):
                self._show_summary(page)  # e.g. a change elsewhere: the same cards stay
                self._shown(status, page, scroll)
                return
            self.pagers[status].busy()  # until the page is built
            # A fresh holder per page: the old page goes at once (one layout pass), and the
            # new cards are added to the holder a slice at a time; each card is shown (and
            # polished) on its own turn of the event loop.
            holder = QWidget()
            layout = QVBoxLayout(holder)
            layout.setContentsMargins(0, 0, 0, 0)
            self._clear(self.open_box)
            self.open_box.addWidget(holder)
            self.cards = {}
            self._build_cards(self.generation("open"), list(page.items), page, scroll, holder)
            return
        # Settled lists are painted, not built: one model reset per page.
        self.lists[status].set_rows([settled_row(item) for item in page.items])
        if status == "auto":
            self.auto_empty.setVisible(not page.total)
        else:
            self.resolved_title.setVisible(bool(page.total))
        self._shown(status, page, scroll)

    def _shown(self, status: InboxStatus, page: InboxPage, scroll: bool) -> None:
        self._loading.discard(status)
        self.pagers[status].show_page(page)
        if scroll:
            self._scroll_area.ensureWidgetVisible(self.titles[status])

    def _build_cards(self, gen: int, todo: list[ContradictionItem], page: InboxPage,
                     scroll: bool, holder: QWidget) -> None:
        """Make the page's cards a slice at a time (SLICE_SECONDS), yielding to the event
        loop between slices; a newer load of the list drops what is left of this one."""
        if not shiboken6.isValid(self) or gen != self.generation("open") \
                or not shiboken6.isValid(holder):
            return
        layout = holder.layout()
        if layout is None:  # made with its layout in _fill; never without
            return
        deadline = time.perf_counter() + SLICE_SECONDS
        while todo and time.perf_counter() < deadline:
            item = todo.pop(0)
            card: ContradictionCard | ReviewCard | ChangeCard
            if item.kind == "review":
                card = ReviewCard(item)
                card.forget_requested.connect(self._on_card_forget_requested)
            elif item.kind == "change":
                card = ChangeCard(item)
            else:
                card = ContradictionCard(item)
            card.resolution_chosen.connect(self._on_card_resolution_chosen)
            layout.addWidget(card)
            # Shown (and polished) here, within the slice, rather than by the event Qt posts
            # for a widget added to a shown layout, which ran in one pass with the layout.
            card.show()
            self.cards[card.cid] = card
        if todo:
            # A real timer, not 0 ms: a 0 ms single shot is a posted event, handled in the
            # same pass as the cards' own show and layout events, with no paint or input
            # between slices.
            QTimer.singleShot(1, lambda: self._build_cards(gen, todo, page, scroll, holder))
            return
        self._show_summary(page)
        self._shown("open", page, scroll)

    def _show_summary(self, page: InboxPage) -> None:
        n, reviews = page.total, page.reviews
        parts = []
        if n - reviews:
            k = n - reviews
            parts.append(f"{k:,} contradiction{'s' if k != 1 else ''}")
        if reviews:
            parts.append(f"{reviews:,} review request{'s' if reviews != 1 else ''}")
        self.summary.setText(
            f"{' and '.join(parts)} need{'s' if n == 1 else ''} your answer. Nothing is "
            "deleted here: a memory you do not keep becomes an earlier version, every answer "
            "can be undone, and forgetting asks you first." if n else "")
        self.summary.setVisible(bool(n))
        self._open_total = n
        self.empty.setVisible(not n and not self.pending_cards)

    # --- actions ------------------------------------------------------------------------
    @Slot(int, str, str)
    def _on_card_resolution_chosen(self, cid: int, keep: str, text: str) -> None:
        # The signal carries a str; the cards emit only ResolveChoice values (``_choose``).
        choice = cast(ResolveChoice, keep)
        card = self.cards.get(cid)
        if card is not None:
            card.busy(True)
        vault = self.vault

        def done(_result: Result[MemoryId | None]) -> None:
            # The list itself refreshes from the change flags (on_changes).
            self._say(f"Resolved: {KEEP_WORDS.get(keep, keep)}. You can undo it below.")

        def failed(exc: BaseException) -> None:
            live = self.cards.get(cid)
            if live is not None and shiboken6.isValid(live):
                live.busy(False)  # the reload keeps unchanged cards as they are
            # e.g. resolved meanwhile: inline, then reload
            errors.report_error(self, exc, self._say, prefix="Not resolved: ")
            self.refresh()
        run_op(self, lambda: vault.resolve(cid, choice, text or None), done, self.bridge,
               failed)

    @Slot(int)
    def _on_card_forget_requested(self, mid: int) -> None:
        """The normal forget dialog: the whole plan, an explicit confirmation. Forgetting
        the memory removes its review request with it (and the change flags refresh us)."""
        from ui.dialogs.forget import ForgetDialog
        dlg = ForgetDialog(self.vault, self.bridge, self.window(), ids=[mid])
        dlg.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        # Slots of this page, not lambdas over it: the dialog deletes itself on close, and a
        # lambda it held could be this page's last reference (ui.views.devices).
        dlg.forgotten.connect(self._on_forget_dialog_forgotten)
        self.forget_dialog = dlg
        dlg.show()

    @Slot(int)
    def _on_pending_review_requested(self, pid: int) -> None:
        """The normal forget dialog with the request's plan; confirming closes the request,
        cancelling leaves it waiting."""
        from ui.dialogs.forget import ForgetDialog
        card = self.pending_cards.get(pid)
        agent = card.req.agent if card is not None else "the assistant"
        dlg = ForgetDialog(self.vault, self.bridge, self.window(), pending=pid)
        dlg.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dlg.setProperty(_ASKED_BY, agent)
        dlg.forgotten.connect(self._on_review_dialog_forgotten)
        self.forget_dialog = dlg
        dlg.show()

    @Slot(object)
    def _on_forget_dialog_forgotten(self, _report: object) -> None:
        self._say("The memory was forgotten.")

    @Slot(object)
    def _on_review_dialog_forgotten(self, report: ForgetReport) -> None:
        dlg = self.sender()
        agent = str(dlg.property(_ASKED_BY)) if dlg is not None else "the assistant"
        self._say(f"Forgot {words.count(report.memories, 'memory', 'memories')} as "
                  f"{'you' if agent == 'you' else agent} asked.")

    @Slot(int)
    def _on_pending_decline_requested(self, pid: int) -> None:
        card = self.pending_cards.get(pid)
        if card is not None:
            card.setEnabled(False)
        vault = self.vault

        def done(_result: Result[ForgetReport | None]) -> None:
            who = card.req.agent if card is not None else "the assistant"
            whose = "your" if who == "you" else f"{who}’s"
            self._say(f"Declined {whose} request: nothing was forgotten.")

        def failed(exc: BaseException) -> None:
            errors.report_error(self, exc, self._say, prefix="Not declined: ")
            self._load_pending()
        run_op(self, lambda: vault.close_pending_forget(pid, None), done, self.bridge, failed)

    @Slot(int)
    def _on_row_undo_requested(self, cid: int) -> None:
        vault = self.vault

        def done(_result: Result[None]) -> None:
            self._say("Undone: the memories are back as they were, and the item waits "
                      "above.")
        run_op(self, lambda: vault.reopen(cid), done, self.bridge)
