"""Applying the merged sync state to this vault (issue 29 items 2-3; docs/sync_ops.md#applying).
Layer: app. Runs on: the sync engine's thread (one at a time per vault); writes go through the
vault's one writer, through the services the person's own acts use.

``Replica.apply`` says which items changed (``Delta.changed``) and which to erase
(``Delta.erased``); ``Applier`` makes this vault show the merged state of those items:

- **erase first**: the gids become tombstones (``sync_forgotten``), every unsent journal op and
  every merged op about them is deleted, then the local memories go through the person's own
  forget path (``Vault.forget`` with a plan of their ids: rows, history, FTS, vectors and the RAM
  index). A gid already forgotten here is dropped and never written again.
- **a new gid** becomes a memory (a fact: a semantic memory with its subject, predicate and
  object) saved with its name (``sync_gids``) and the version it shows (``sync_heads``) in the
  same transaction, so a crash leaves both or neither. Many new gids go in one transaction
  (``IngestService.remember_many``): catching up 10k ops is one transaction per 500.
- **a new head** (an edit, or the winner of concurrent edits) becomes a correction of the local
  memory: the version it replaced stays in the history, and the name moves to the new row in
  the same transaction. Many go in one transaction (``IngestService.correct_many``), their
  vectors queued after the last batch like the creates'.
- **status**: a fact with a successor here is superseded by it; a retracted one is archived.
- **Inbox**: a question gets a local Inbox item (``sync_questions`` names it); a decision taken on
  another device is applied with the same resolve the window uses; a reject closes it.

Everything is a comparison of the merged state with what this vault shows (the heads), so
applying the same delta twice, or again after a crash, changes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from app import ports
from app.domain.memory import Draft, MemoryId, Store
from app.errors import AppError
from app.sync.merge import Item, Question, State
from app.sync.ops import FactAssert, FactSupersede, Gid, MemoryCreate

log = logging.getLogger(__name__)

BATCH = 500  # new memories per transaction when catching up


class ApplyRows(Protocol):
    """``storage/sync_apply.py`` (migration 0033) and the journal's ``sync_gids``."""

    def heads(self, conn: ports.Connection, gids: Sequence[str] | None = None
              ) -> dict[str, str]: ...
    def set_head(self, conn: ports.Connection, gid: str, version: str) -> None: ...
    def move_gid(self, conn: ports.Connection, gid: str, memory_id: int) -> None: ...
    def keep_ops(self, conn: ports.Connection, ops: Sequence[dict[str, Any]],
                 targets: Sequence[Iterable[str]]) -> None: ...
    def kept_ops(self, conn: ports.Connection) -> list[dict[str, Any]]: ...
    def drop_ops_about(self, conn: ports.Connection, gids: Iterable[str]) -> int: ...
    def sources_of(self, conn: ports.Connection, ids: Sequence[int]) -> dict[int, list[int]]: ...
    def question(self, conn: ports.Connection, item: str) -> int | None: ...
    def name_question(self, conn: ports.Connection, item: str, cid: int) -> None: ...
    def question_of(self, conn: ports.Connection, cid: int) -> str | None: ...
    def contradiction_of(self, conn: ports.Connection, a: int, b: int) -> int | None: ...
    def adopt_device(self, conn: ports.Connection, device: str) -> None: ...
    def identity(self, conn: ports.Connection) -> tuple[str, str, bytes, str, bytes] | None: ...
    def certificates(self, conn: ports.Connection) -> list[bytes]: ...
    def revocations(self, conn: ports.Connection) -> bytes | None: ...
    def epoch_keys(self, conn: ports.Connection) -> dict[int, bytes]: ...
    def cursors(self, conn: ports.Connection) -> dict[str, tuple[int, bytes]]: ...
    def put_cursor(self, conn: ports.Connection, device: str, last_seq: int, last_hash: bytes,
                   now: float) -> None: ...


class Ingest(Protocol):
    def remember_many(self, drafts: Sequence[Draft],
                      also: Callable[[ports.Connection, list[MemoryId]], None], *,
                      later: list[tuple[int, str]] | None = None) -> list[MemoryId]: ...
    def follow(self, work: list[tuple[int, str]]) -> None: ...
    def correct(self, mid: int, text: str, *, by: str | None = None,
                also: Callable[[ports.Connection, MemoryId], None] | None = None
                ) -> MemoryId: ...
    def correct_many(self, edits: Sequence[tuple[int, str, str | None]],
                     also: Callable[[ports.Connection, dict[int, MemoryId], set[int]], None],
                     *, later: list[tuple[int, str]] | None = None
                     ) -> dict[int, MemoryId]: ...


@dataclass(frozen=True)
class VaultSide:
    """What applying needs of one unlocked vault (built by ``Vault._sync_side``)."""

    db: ports.Database
    ingest: Ingest
    rows: ports.MemoryRows
    lifecycle: ports.Lifecycle
    inbox: Any                                    # ports' inbox rows (add_contradiction...)
    journal: Any                                  # app.sync.journal.Journal
    journal_rows: Any                             # app.sync.journal.JournalRows
    clock: ports.Clock
    forget_ids: Callable[[Sequence[int]], None]   # the person's forget, for these ids
    resolve: Callable[[int, str, str | None], object]  # the window's Inbox resolve
    validate: Callable[[Draft], Draft]
    changed: Callable[[], None]                   # tell the window and assistants


def draft_of(item: Item, sources: Sequence[int]) -> Draft:
    """The local memory an item shows: its head's text on its create's other fields."""
    c = item.created
    head = item.head
    if isinstance(c, MemoryCreate):
        extra: dict[str, object] = dict(c.side)
        return Draft(
            text=head.text, store=Store(c.store), occurred_at=c.occurred_at, agent=c.agent,
            context=c.context, ref=c.ref, session=c.session, speaker=c.speaker, seq=c.turn,
            importance=c.importance, emotional=c.emotional, social=c.social,
            confidence=head.confidence, user_validated=head.user_validated,
            valid_from=c.valid_from, valid_until=c.valid_to, extra=extra,
            derived_from=tuple(MemoryId(s) for s in sources))
    assert isinstance(c, (FactAssert, FactSupersede))
    return Draft(
        text=head.text, store=Store.SEMANTIC, occurred_at=c.occurred_at, agent=c.agent,
        context=c.context, confidence=head.confidence, user_validated=head.user_validated,
        valid_from=c.valid_from, valid_until=c.valid_to,
        extra={"subject": c.subject, "predicate": c.predicate, "object": c.object,
               "category": c.category},
        derived_from=tuple(MemoryId(s) for s in sources))


class Applier:
    """Makes one vault show a merged ``State``. Stateless between calls but for the answers
    already given (so the Inbox is not re-read each tick); safe to call again after a crash."""

    def __init__(self, side: VaultSide, rows: ApplyRows) -> None:
        self.side = side
        self.rows = rows
        self._answered: dict[Gid, str | None] = {}

    # --- forgets ----------------------------------------------------------------------------
    def tombstone(self, conn: ports.Connection, gids: Iterable[Gid]) -> None:
        """In the caller's transaction: the gids are forgotten for good here, and no unsent or
        merged op about them is kept."""
        todo = sorted(set(gids))
        if todo:
            self.side.journal_rows.forget(conn, todo, keep=None)
            self.rows.drop_ops_about(conn, todo)

    def erase(self, gids: Iterable[Gid]) -> int:
        """Erase the local memories of forgotten gids through the person's forget path (the
        RAM index included); the number of memories erased."""
        todo = sorted(set(gids))
        if not todo:
            return 0
        self.side.db.write_sync(lambda c: self.tombstone(c, todo))
        local = self.side.db.read(lambda c: self.side.journal_rows.memory_ids(c, todo))
        ids = sorted(set(local.values()))
        if ids:
            self.side.forget_ids(ids)
        return len(ids)

    # --- items ------------------------------------------------------------------------------
    def write(self, state: State, gids: Iterable[Gid]) -> set[Gid]:
        """Make the local memories of ``gids`` show ``state``; returns the gids done (an item
        whose write failed stays for the next tick; the error is logged without content)."""
        todo = sorted(g for g in set(gids) if g in state.items and g not in state.forgotten)
        if not todo:
            return set()
        jr = self.side.journal_rows
        local: dict[str, int] = self.side.db.read(lambda c: jr.memory_ids(c, todo))
        heads = self.side.db.read(lambda c: self.rows.heads(c, todo))
        done: set[Gid] = set()
        new = [g for g in todo if g not in local]
        # Creates in dependency order: a supersede after the fact it replaces, so its status
        # can point at it; sources first when they are new too.
        new.sort(key=lambda g: (state.items[g].replaces is not None, g))
        fresh = set(new)  # not the list: 8k creates x 9k items compared pairwise took ~2 s
        edits = [g for g in todo if g in local and g not in fresh]
        done |= {g for g in edits if heads.get(g, g) == state.items[g].head.id}
        edits = [g for g in edits if g not in done]
        later: list[tuple[int, str]] = []
        try:
            for i in range(0, len(new), BATCH):
                done |= self._create(state, new[i:i + BATCH], local, later)
            for i in range(0, len(edits), BATCH):
                done |= self._update(state, edits[i:i + BATCH], local, later)
        finally:
            self.side.ingest.follow(later)  # vectors after the last batch, not between
        self._statuses(state, todo, local)
        return done

    def _create(self, state: State, gids: list[Gid], local: dict[str, int],
                later: list[tuple[int, str]]) -> set[Gid]:
        items = [state.items[g] for g in gids]
        src_gids = sorted({s for it in items for s in it.created.sources})
        jr = self.side.journal_rows
        src = self.side.db.read(lambda c: jr.memory_ids(c, src_gids)) if src_gids else {}
        drafts = []
        for it in items:
            drafts.append(self.side.validate(draft_of(
                it, sorted({src[s] for s in it.created.sources if s in src}))))

        def name(conn: ports.Connection, ids: list[MemoryId]) -> None:
            for it, mid in zip(items, ids, strict=True):
                jr.name(conn, int(mid), it.gid)
                self.rows.set_head(conn, it.gid, it.head.id)
        ids = self.side.ingest.remember_many(drafts, name, later=later)
        local.update({it.gid: int(m) for it, m in zip(items, ids, strict=True)})
        return set(gids)

    def _update(self, state: State, gids: list[Gid], local: dict[str, int],
                later: list[tuple[int, str]]) -> set[Gid]:
        """New heads of memories shown here: one transaction for the batch
        (``IngestService.correct_many``), each a correction of the local row; the name moves
        to the new row and the head is recorded in the same transaction. A row the
        correction refuses (superseded or archived here: a fact replaced meanwhile) keeps
        its own newer version; the edit's text is in the merged history, the head is
        recorded."""
        items = [state.items[g] for g in gids]
        by_mid = {local[it.gid]: it for it in items}
        edits = [(local[it.gid], it.head.text,
                  None if it.head.user_validated else it.created.agent) for it in items]

        def moved(conn: ports.Connection, new: dict[int, MemoryId], refused: set[int]) -> None:
            for mid, it in by_mid.items():
                if mid in new:
                    self.rows.move_gid(conn, it.gid, int(new[mid]))
                elif mid in refused:
                    log.info("sync: edit of memory %s not shown here", mid)
                else:
                    continue
                self.rows.set_head(conn, it.gid, it.head.id)
        new = self.side.ingest.correct_many(edits, moved, later=later)
        local.update({by_mid[m].gid: int(n) for m, n in new.items()})
        return set(gids)

    def _statuses(self, state: State, gids: Sequence[Gid], local: dict[str, int]) -> None:
        """A superseded fact points at its (first present) successor; a retracted one is
        archived. Only rows whose status differs are written."""
        lc = self.side.lifecycle
        changes: list[tuple[int, int | None]] = []
        for g in gids:
            it = state.items.get(g)
            if it is None or g not in local:
                continue
            if it.status == "superseded":
                succ = next((local[s] for s in it.successors if s in local), None)
                if succ is not None:
                    changes.append((local[g], succ))
            elif it.status == "retracted":
                changes.append((local[g], None))
        if not changes:
            return
        now = self.side.clock.now()
        rows = self.side.rows

        def run(conn: ports.Connection) -> None:
            for mid, succ in changes:
                m = rows.get_memory(conn, mid)
                if m is None:
                    continue
                if succ is not None and m.status.value == "active":
                    lc.supersede(conn, mid, succ, now)
                elif succ is None and m.status.value == "active":
                    lc.set_status(conn, mid, "archived")
                    rows.add_history(conn, mid, now, "archived", None, "retracted on a device")
        self.side.db.write_sync(run)

    # --- the Inbox --------------------------------------------------------------------------
    def questions(self, state: State) -> None:
        """Open questions get a local Inbox item; decided ones are settled here too."""
        for item, q in state.inbox.items():
            if self._answered.get(item, "-") == q.verdict and item in self._answered:
                continue
            try:
                self._question(q, state)
            except AppError as exc:
                log.info("sync: Inbox item not applied (%s)", type(exc).__name__)
                continue
            self._answered[item] = q.verdict

    def _question(self, q: Question, state: State) -> None:
        jr, db = self.side.journal_rows, self.side.db
        cid = db.read(lambda c: self.rows.question(c, q.item))
        if cid is None:
            about = db.read(lambda c: jr.memory_ids(c, list(q.about)))
            if any(g not in about for g in q.about):
                return  # a memory it is about has not arrived here yet
            a = about[q.about[0]]
            b = about[q.about[1]] if len(q.about) > 1 else a
            if q.verdict is not None and q.kind in ("edit_conflict", "successor_conflict"):
                return  # raised and settled by the merge itself: nothing to ask here
            now = self.side.clock.now()
            inbox = self.side.inbox

            def ask(conn: ports.Connection) -> int | None:
                if a == b:
                    inbox.add_review(conn, a, q.reason, now)
                else:
                    inbox.add_contradiction(conn, a, b, q.reason, None, now)
                found = self.rows.contradiction_of(conn, a, b)
                if found is not None and self.rows.question_of(conn, found) is None:
                    self.rows.name_question(conn, q.item, found)
                return found
            cid = db.write_sync(ask)
            self.side.changed()
            if cid is None:
                return
        if q.verdict is None:
            return
        entry = db.read(lambda c: self.side.inbox.get(c, cid))
        if entry is None or entry[2] != "open":
            return
        if q.verdict == "accept" and q.choice is not None:
            self.side.resolve(cid, q.choice, q.text)
        else:
            now = self.side.clock.now()
            db.write_sync(lambda c: self.side.inbox.settle(c, cid, "resolved",
                                                           "rejected on another device", now))
        self.side.changed()


def op_targets(op: dict[str, Any]) -> list[str]:
    """What a merged op is about, for ``sync_received.targets`` (a forget: nothing, so a later
    forget of the same gids never deletes the forget itself)."""
    body = op.get("body") or {}
    kind = op.get("kind")
    if kind == "forget":
        return []
    out = {str(body[k]) for k in ("gid", "replaces", "a", "b", "item") if body.get(k)}
    out |= {str(s) for s in body.get("sources") or ()}
    return sorted(out)
