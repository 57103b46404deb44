"""The detail pane: text, store, scores and tier, sources, links, history; actions correct,
confirm, archive/restore, forget. Layer: ui. GUI thread; loads through ``ui.tasks``."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFormLayout,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QListView,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QStyle,
    QVBoxLayout,
    QWidget,
)

from app import words
from app.api import Explanation, History, MemoryId, MemoryRead, Result, VaultAPI
from app.changes import Changes
from app.domain.memory import Draft, Memory
from app.errors import NotFound, ValidationError
from ui import fit, theme
from ui.bridge import CoreBridge
from ui.tasks import run_op
from ui.views.episode_outcome import EpisodeOutcomeBox
from ui.views.page import Page

# Links shown per memory: the others are read one by one (a fact has a handful; a busy
# conversation turn may have many SIMILAR_TO links, and the pane shows the first ones).
LINKS_SHOWN = 30
STATUS_WORDS = {"active": "", "archived": "in the Archive",
                "superseded": "replaced by a newer version"}
SHARE_LABEL = "Share with all assistants…"
UNSHARE_LABEL = "Undo sharing"
VIA_WORDS = {"recall": "in a search", "context": "for a conversation",
             "explain": "to explain it"}


def when_text(ts: float | None) -> str:
    """A history or read time as the pane lists it: "today 09:14", "15 June 2026, 20:00"."""
    return words.when(ts, never="(no time)")


# What the pane loads for one memory: the explanation, its versions and history, who wrote it,
# which assistants read it, and the memories its links point at (to name them in sentences).
# and whether it was said in a conversation (a session, to show around it).
Loaded = tuple[Explanation, History, str, list[MemoryRead], dict[int, Memory], bool]


def wrap_lines(lst: QListWidget) -> None:
    """Long lines (a source's text, a version) wrap at the list's width instead of needing a
    horizontal scroll bar."""
    lst.setWordWrap(True)
    lst.setResizeMode(QListView.ResizeMode.Adjust)
    lst.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    lst.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)


def link_line(kind: str, outgoing: bool, other: str, me: Memory | None,
              them: Memory | None) -> str:
    """A link as the pane says it: across conversations for a PRECEDED_BY between two, and
    naming who or what a RELATES_TO is about when both texts name them."""
    across = bool(me and them and me.session and them.session and me.session != them.session)
    # Who spoke is no topic (every turn of theirs names them); a fact's speaker is its holder.
    skip = [m.speaker for m in (me, them)
            if m and m.speaker and m.store in ("short_term", "episodic")]
    about = (words.shared_name(me.text, them.text, skip=skip)
             if me and them and kind == "RELATES_TO" else None)
    return words.link_sentence(kind, outgoing, other, across=across, about=about)


# A source or link line's memory (list items of ``sources`` and ``links``).
TARGET_ROLE = Qt.ItemDataRole.UserRole


class DetailPane(Page):
    """One memory in full, beside the memory list (owned by the browse page)."""

    corrected = Signal(int)  # the new version's id, once a correction is saved
    memory_changed = Signal()  # a memory is shown whole, or none (its actions follow)
    # A source or link was opened (click, or Enter on it): show that memory.
    memory_requested = Signal(int)
    # "Show the conversation": the memory's id, and whether it is a turn (not an event).
    conversation_requested = Signal(int, bool)

    def __init__(self, vault: VaultAPI, bridge: CoreBridge, parent: QWidget | None = None
                 ) -> None:
        super().__init__(vault, bridge, parent)
        self.memory_id: int | None = None
        self.status: str | None = None
        self.placeholder = QLabel("Select a memory to see where it came from, how strong it "
                                  "is, and its history.")
        self.placeholder.setWordWrap(True)
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.text = QPlainTextEdit()
        self.text.setTabChangesFocus(True)  # Tab moves on; it never types a tab
        self.text.setReadOnly(True)
        self.text.setAccessibleName("Memory text")
        self.text.setMaximumHeight(fit.lines(self.text, 7))
        self.meta = QLabel()
        self.meta.setWordWrap(True)
        self.origin = theme.plain(QLabel())  # "from NAME": an assistant wrote it
        self.origin.setObjectName("origin")
        self.origin.setWordWrap(True)
        theme.set_muted(self.origin)
        self.scores = QLabel()
        self.scores.setWordWrap(True)
        self.sources = QListWidget()
        self.links = QListWidget()
        self.history = QListWidget()
        self.reads = QListWidget()  # when which assistant read it (ids and times only)
        self.reads.setObjectName("reads")
        for lst in (self.sources, self.links, self.history, self.reads):
            wrap_lines(lst)
            lst.setMaximumHeight(fit.lines(lst, 7))
        self._make_search_parts()
        self.correct_btn = QPushButton("Correct…")
        self.confirm_btn = QPushButton("Confirm")
        self.archive_btn = QPushButton("Archive")
        self.forget_btn = QPushButton("Forget…")
        buttons = QGridLayout()  # two by two: the pane stays narrow beside the memory list
        for n, b in enumerate((self.correct_btn, self.confirm_btn, self.archive_btn,
                               self.forget_btn)):
            buttons.addWidget(b, n // 2, n % 2)
        self.editor = QPlainTextEdit()
        self.editor.setTabChangesFocus(True)  # Tab moves on; it never types a tab
        self.editor.setPlaceholderText("The corrected memory")
        self.editor.setAccessibleName("Corrected memory")
        self.editor.setMaximumHeight(fit.lines(self.editor, 5))
        self.save_btn = QPushButton("Save correction")
        self.cancel_btn = QPushButton("Cancel")
        self.edit_row = QWidget()
        er = QHBoxLayout(self.edit_row)
        er.setContentsMargins(0, 0, 0, 0)
        er.addWidget(self.save_btn)
        er.addWidget(self.cancel_btn)
        self.edit_error = theme.plain(QLabel())
        self.edit_error.setStyleSheet(theme.ERROR_STYLE)
        self.edit_error.setWordWrap(True)
        self.body = QWidget()
        form = QFormLayout(self.body)
        form.setContentsMargins(theme.XS, theme.XS, theme.XS, theme.XS)  # the pane is narrow beside the list
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapAllRows)  # names above lists
        form.addRow(self.text)
        form.addRow(self.meta)
        form.addRow(self.origin)
        form.addRow(self.scores)
        form.addRow(self.why_title)
        form.addRow(self.why)
        form.addRow(buttons)
        form.addRow(self.outcome, self.conversation_btn)  # "How it went" above, events only
        form.addRow(self.share_btn)
        form.addRow(self.editor)
        form.addRow(self.edit_row)
        form.addRow(self.edit_error)
        form.addRow("Sources", self.sources)
        form.addRow("Links", self.links)
        form.addRow("History", self.history)
        form.addRow("Read by assistants", self.reads)
        # The body scrolls (vertically only: its lines wrap) when the window is too short.
        self.body_scroll = QScrollArea()
        self.body_scroll.setWidgetResizable(True)
        self.body_scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.body_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.body_scroll.setWidget(self.body)
        # A scroll area asks for no width of its own: ask for the body's, or the splitter
        # beside the memory list squeezes the body under its buttons.
        self.body_scroll.setMinimumWidth(
            self.body.minimumSizeHint().width()
            + self.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent))
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)  # the body's form keeps its own margins
        lay.addWidget(self.placeholder)
        lay.addWidget(self.body_scroll)
        self._editing(False)
        self.body_scroll.hide()
        self.correct_btn.clicked.connect(self._on_correct_btn_clicked)
        self.save_btn.clicked.connect(self._on_save_btn_clicked)
        self.cancel_btn.clicked.connect(self._on_cancel_btn_clicked)
        self.confirm_btn.clicked.connect(self._on_confirm_btn_clicked)
        self.archive_btn.clicked.connect(self._on_archive_btn_clicked)
        self.forget_btn.clicked.connect(self._on_forget_btn_clicked)
        self.conversation_btn.clicked.connect(self._on_conversation_btn_clicked)
        self._show_why(None)

    def _make_share_button(self) -> None:
        """"Share with all assistants…" on an assistant's memory (asks first), "Undo sharing"
        on one the person shared (issue 26); hidden on every other memory."""
        self.share_btn = QPushButton(SHARE_LABEL)
        self.share_btn.setObjectName("shareButton")
        self.share_btn.setToolTip("Every assistant will see it, not only the one that wrote "
                                  "it. You can undo it here.")
        self.share_btn.hide()
        self.shared_from: str | None = None  # the assistant it was shared from (undoable)
        self.writer: str = "global"          # the assistant that holds it, or "global"
        self.share_btn.clicked.connect(self._on_share_btn_clicked)

    def _fill_sharing(self, agent: str, hist: History, mid: int, status: str) -> None:
        last = next((e for e in reversed(hist.entries) if e.memory_id == mid
                     and e.action in ("shared", "unshared")), None)
        self.writer = agent
        self.shared_from = (last.detail if agent == "global" and last is not None
                            and last.action == "shared" and last.detail else None)
        if self.shared_from:
            self.origin.setText(f"from {self.shared_from}: shared by you with all assistants")
            self.origin.setVisible(True)
        self.share_btn.setText(UNSHARE_LABEL if self.shared_from else SHARE_LABEL)
        self.share_btn.setVisible(status != "superseded"  # its newer version is shared
                                  and (agent != "global" or self.shared_from is not None))

    @Slot()
    def _on_share_btn_clicked(self) -> None:
        mid, vault = self.memory_id, self.vault
        if mid is None or self.share_btn.isHidden():
            return
        if self.shared_from:  # the undo: asks nothing, it only takes back what was given
            run_op(self, lambda: vault.unshare(mid), lambda _r: self.show_memory(mid),
                   self.bridge)
            return
        from ui.dialogs import confirm
        writer = self.writer

        def share() -> None:
            run_op(self, lambda: vault.share(mid), lambda _r: self.show_memory(mid),
                   self.bridge)
        confirm.ask(self.window(), "Share with all assistants",
                    f"Share this memory, written by the assistant {writer}, with all "
                    "assistants?",
                    detail=f"Today only {writer} sees it. Shared, it is yours: every "
                    "assistant you connect sees it. Undo sharing (here) gives it back to "
                    f"{writer} alone.", action="&Share it", then=share)

    def _make_search_parts(self) -> None:
        """"Why this result" (shown while the memory is a search result, from explain's
        parts), "Show the conversation", and sources and links that open their memory."""
        self.why_title = QLabel("<b>Why this result</b>")
        self.why = theme.plain(QLabel())
        self.why.setObjectName("why")
        self.why.setWordWrap(True)
        self.query: str | None = None
        self.conversation_btn = QPushButton("Show the conversation")
        self.conversation_btn.setToolTip("The conversation this was said in, in order, with "
                                         "this memory selected")
        self._turn = False
        for lst in (self.sources, self.links):
            # A line that names a memory opens it: a click, or Enter on it (itemActivated).
            lst.setToolTip("Click a line, or press Enter on it, to show that memory")
            lst.itemClicked.connect(self._on_target_item)
            lst.itemActivated.connect(self._on_target_item)
        self._make_share_button()  # beside "Show the conversation"
        # "How it went" on an event (issue 27 item 8), above "Show the conversation".
        self.outcome = EpisodeOutcomeBox(self.vault, self.bridge)

    def _show_why(self, lines: list[str] | None) -> None:
        self.why.setText("\n".join(lines or []))
        self.why_title.setVisible(bool(lines))
        self.why.setVisible(bool(lines))

    def clear(self) -> None:
        self.drop_loads()
        self.memory_id = None
        for w in (self.text, self.editor):
            w.clear()
        for lst in (self.sources, self.links, self.history, self.reads):
            lst.clear()
        self.meta.clear()
        self.origin.clear()
        self.scores.clear()
        self.outcome.show_for(0, "")
        self._show_why(None)
        self.body_scroll.hide()
        self.placeholder.show()
        self.memory_changed.emit()

    def show_memory(self, mid: int | None, query: str | None = None) -> None:
        """Show memory ``mid``; ``query``: it is a result of that search (the pane says why
        it was found)."""
        if mid is None:
            self.clear()
            return
        vault = self.vault
        self.query = query

        def load() -> Loaded:
            ex = vault.explain(mid, query) if query else vault.explain(mid)
            others: dict[int, Memory] = {}
            for link in ex.links[:LINKS_SHOWN]:
                other = int(link.dst if link.src == ex.id else link.src)
                if other not in others:
                    try:
                        others[other] = vault.get(other)
                    except NotFound:  # forgotten between the two reads
                        pass
            m = vault.get(mid)
            others.setdefault(int(mid), m)  # itself: its conversation and words, for links
            return (ex, vault.history(mid), m.agent, vault.memory_reads(mid), others,
                    m.session is not None)
        self.load(load, self._fill)

    # --- assistants' reads (refreshed on Changes.agents: one query for the shown memory) --
    def wants(self, changes: Changes) -> bool:
        return changes.agents and self.memory_id is not None

    def refresh(self) -> None:
        mid, vault = self.memory_id, self.vault
        if mid is not None:
            self.load(lambda: vault.memory_reads(mid),
                      lambda reads: self._fill_reads(reads) if self.memory_id == mid else None,
                      kind="reads")

    def _fill_reads(self, reads: list[MemoryRead]) -> None:
        self.reads.clear()
        for r in reads:
            self.reads.addItem(f"{when_text(r.at)} · {r.agent} {VIA_WORDS.get(r.via, r.via)}")
        if not reads:
            self.reads.addItem("Not read by an assistant")

    def _fill(self, result: Loaded) -> None:
        ex, hist, agent, reads, others, in_session = result
        self.memory_id = ex.id
        self._turn = ex.store == "short_term"
        self.conversation_btn.setVisible(in_session)
        routed = (words.routing_sentence(ex.routing.salience, ex.routing.stores,
                                         ex.routing.reason, ex.routing.by, score=False)
                  if ex.routing is not None else None)
        self._show_why(words.why_lines(ex.breakdown) + ([routed] if routed else [])
                       if ex.breakdown is not None else None)
        self.origin.setText(f"from {agent}: written by this assistant"
                            if agent != "global" else "")
        self.origin.setVisible(agent != "global")
        self._fill_reads(reads)
        self.status = ex.status
        self.text.setPlainText(ex.text)
        s = ex.scores
        confirmed = s["confidence"] >= 1.0
        parts = [f"<b>{words.store_one(ex.store)}</b>", STATUS_WORDS.get(ex.status, ex.status),
                 words.tier_word(ex.tier), words.confidence_word(s["confidence"])]
        self.meta.setText(" · ".join(p for p in parts if p))
        self.meta.setToolTip(f"{words.tier_tip(ex.tier)}\n"
                             f"{words.confidence_tip(s['confidence'])}")
        used = int(s["access_count"])
        self.scores.setText(
            f"Strength: {words.strength_word(s['composite'])} · "
            + ("never used by an assistant" if not used
               else f"used {words.count(used, 'time', 'times')}")
            + ("" if confirmed else " · not confirmed by you"))
        self.scores.setToolTip(words.strength_tip(s["composite"], s)
                               + (f"\n{routed}" if routed else ""))
        self.sources.clear()
        lines: dict[str, int] = {}
        for src in ex.sources:
            at = words.when_iso(src.occurred_at)
            who = f"{src.speaker} said" if src.speaker else words.store_one(src.store)
            # A turn and the event kept from it read the same: said once (the event opens).
            line = f"{at} · {who}: {src.text}" if at else f"{who}: {src.text}"
            if line not in lines or src.store == "episodic":
                lines[line] = int(src.id)
        for line, sid in lines.items():
            self._add_target(self.sources, line, sid)
        if not ex.sources:
            self.sources.addItem("Told directly (no earlier source)")
        self.links.clear()
        for link in ex.links[:LINKS_SHOWN]:
            other_id = int(link.dst if link.src == ex.id else link.src)
            m = others.get(other_id)
            other = (words.said(m.store, m.text, m.speaker, m.occurred_at) if m is not None
                     else "a memory that is gone")
            self._add_target(self.links, link_line(link.kind, link.src == ex.id, other,
                                                   others.get(int(ex.id)), m),
                             other_id if m is not None else None)
        if len(ex.links) > LINKS_SHOWN:
            self.links.addItem(f"and {len(ex.links) - LINKS_SHOWN:,} more")
        self.history.clear()
        for v in hist.versions:
            mark = ("current version" if v.status == "active" else "earlier version") + (
                " (this one)" if v.id == ex.id and len(hist.versions) > 1 else "")
            self.history.addItem(f"{when_text(v.created_at)} · {mark}: {v.text}")
        for e in hist.entries:
            self.history.addItem(words.history_line(e.action, e.memory_id == ex.id,
                                                    at=when_text(e.at)))
        self._fill_sharing(agent, hist, ex.id, ex.status)
        self.outcome.show_for(int(ex.id), str(ex.store))
        self.archive_btn.setText("Restore" if ex.status == "archived" else "Archive")
        self.correct_btn.setEnabled(ex.status != "superseded")
        self.confirm_btn.setEnabled(ex.scores["confidence"] < 1.0)
        self._editing(False)
        self.placeholder.hide()
        self.body_scroll.show()
        self.memory_changed.emit()

    @staticmethod
    def _add_target(lst: QListWidget, text: str, mid: int | None) -> None:
        item = QListWidgetItem(text)
        if mid is not None:
            item.setData(TARGET_ROLE, mid)
            font = item.font()
            font.setUnderline(True)  # reads as a link
            item.setFont(font)
        lst.addItem(item)

    @Slot(QListWidgetItem)
    def _on_target_item(self, item: QListWidgetItem) -> None:
        mid = item.data(TARGET_ROLE)
        if isinstance(mid, int) and mid != self.memory_id:
            self.memory_requested.emit(mid)

    @Slot()
    def _on_conversation_btn_clicked(self) -> None:
        if self.memory_id is not None:
            self.conversation_requested.emit(self.memory_id, self._turn)

    def _editing(self, on: bool) -> None:
        self.editor.setVisible(on)
        self.edit_row.setVisible(on)
        self.edit_error.setVisible(False)

    # --- actions ------------------------------------------------------------------------
    @Slot()
    def _on_correct_btn_clicked(self) -> None:
        self.editor.setPlainText(self.text.toPlainText())
        self._editing(True)
        self.editor.setFocus()

    @Slot()
    def _on_cancel_btn_clicked(self) -> None:
        self._editing(False)

    @Slot()
    def _on_save_btn_clicked(self) -> None:
        text = self.editor.toPlainText()
        try:  # pure validation inline, no I/O (docs/architecture.md#errors)
            self.vault.validate_draft(Draft(text=text))
        except ValidationError as exc:
            self.edit_error.setText(exc.user_message)
            self.edit_error.setVisible(True)
            return
        mid, vault = self.memory_id, self.vault
        if mid is None:  # cleared (locked, forgotten) meanwhile
            return
        def done(result: Result[MemoryId]) -> None:
            self.show_memory(int(result.value))
            self.corrected.emit(int(result.value))
        run_op(self, lambda: vault.correct(mid, text), done, self.bridge)

    @Slot()
    def _on_confirm_btn_clicked(self) -> None:
        mid, vault = self.memory_id, self.vault
        if mid is None:
            return
        run_op(self, lambda: vault.confirm(mid), lambda _r: self.show_memory(mid),
               self.bridge)

    @Slot()
    def _on_archive_btn_clicked(self) -> None:
        mid, vault = self.memory_id, self.vault
        if mid is None:
            return
        fn = vault.restore if self.status == "archived" else vault.archive
        run_op(self, lambda: fn(mid), lambda _r: self.show_memory(mid), self.bridge)

    @Slot()
    def _on_forget_btn_clicked(self) -> None:
        if self.memory_id is None:
            return
        from ui.dialogs.forget import ForgetDialog
        dlg = ForgetDialog(self.vault, self.bridge, self.window(), ids=[self.memory_id])
        dlg.forgotten.connect(self._on_forget_dialog_forgotten)  # not a lambda over self
        dlg.show()

    @Slot(object)
    def _on_forget_dialog_forgotten(self, _report: object) -> None:
        self.clear()
