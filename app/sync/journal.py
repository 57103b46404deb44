"""The sync journal: the ops this vault writes for its own changes (issue 29, step 2 of
docs/sync_ops.md). Layer: app. Runs on: the caller's thread; every write goes through the
vault's one writer (``Database.write_sync``). An act and its ops are one transaction: the
``*_in`` methods (``create_in``, ``edit_in``, ``creates_in``, ``decide_in``) run inside the
transaction of the act they journal (remember, correct, an assistant's change, an Inbox
answer), and a forget's op is committed before its erase (a kill -9 in between leaves it queued
and the next tick erases); ``record_*`` are each one transaction of their own.

Off unless the setting ``sync.journal`` is on; the facade asks ``Vault._sync_journal()``,
which is None when off, so a vault that does not sync writes nothing here.

Recorded: ``remember`` (a ``memory.create`` with a new gid), ``forget`` (a ``forget`` of the
gids of everything the plan deleted, plus tombstones, plus the removal of every unsent and
merged op about those gids, so no journal row keeps forgotten text; a gid forgotten already is
not forgotten twice), ``correct`` (``memory.edit``), facts, imports and consolidation's new
memories (``record_creates``), Inbox answers (``record_decide``). docs/sync_ops.md lists the
hook points.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from app import ports
from app.domain.memory import Memory
from app.sync.hlc import HybridClock, Stamp
from app.sync.ops import (
    MAX_FORGET_GIDS,
    SIDE,
    Body,
    Forget,
    Gid,
    InboxDecide,
    MemoryCreate,
    Op,
    OpInvalid,
    OpWriter,
    body_from_mapping,
    derived_gid,
    new_gid,
)
from app.validation import MAX_LABEL

log = logging.getLogger(__name__)


class JournalRows(Protocol):
    """``storage/sync_journal.py`` (migration 0030)."""

    def clock(self, conn: ports.Connection) -> tuple[str, int, str | None] | None: ...
    def save_clock(self, conn: ports.Connection, device: str, next_seq: int,
                   last_hlc: str) -> None: ...
    def gids(self, conn: ports.Connection, memory_ids: Sequence[int]) -> dict[int, str]: ...
    def memory_ids(self, conn: ports.Connection, gids: Sequence[str]) -> dict[str, int]: ...
    def name(self, conn: ports.Connection, memory_id: int, gid: str) -> None: ...
    def append(self, conn: ports.Connection, ops: Sequence[dict[str, Any]],
               targets: Sequence[Sequence[str]]) -> None: ...
    def unsent(self, conn: ports.Connection, limit: int) -> list[dict[str, Any]]: ...
    def count_unsent(self, conn: ports.Connection) -> int: ...
    def sent(self, conn: ports.Connection, op_ids: Sequence[str]) -> None: ...
    def forget(self, conn: ports.Connection, gids: Sequence[str], keep: str | None) -> int: ...
    def forgotten(self, conn: ports.Connection,
                  gids: Sequence[str] | None = None) -> set[str]: ...


class AppliedRows(Protocol):
    """What the journal uses of ``storage/sync_apply.py`` (migration 0033)."""

    def heads(self, conn: ports.Connection, gids: Sequence[str] | None = None
              ) -> dict[str, str]: ...
    def set_head(self, conn: ports.Connection, gid: str, version: str) -> None: ...
    def move_gid(self, conn: ports.Connection, gid: str, memory_id: int) -> None: ...
    def drop_ops_about(self, conn: ports.Connection, gids: Iterable[str]) -> int: ...
    def sources_of(self, conn: ports.Connection, ids: Sequence[int]) -> dict[int, list[int]]: ...
    def question_of(self, conn: ports.Connection, cid: int) -> str | None: ...
    def name_question(self, conn: ports.Connection, item: str, cid: int) -> None: ...


def create_body(m: Memory, gid: Gid, sources: Sequence[Gid] = ()) -> MemoryCreate:
    """What another device needs to hold ``m``: everything but its local id, its scores'
    derived parts (recency, frequency, composite: recomputed there) and its vector (never
    synced: each device embeds with its own model)."""
    side: dict[str, Any] = {}
    for k in SIDE.get(m.store.value, {}):
        v = m.extra.get(k)
        if v is None or v == "":
            continue
        if k in ("actors", "actions") and isinstance(v, str):
            try:
                v = json.loads(v)
            except ValueError:
                v = [v]
        side[k] = v
    return MemoryCreate(
        gid=gid, store=m.store.value, text=m.text, occurred_at=m.occurred_at,
        learned_at=m.created_at, agent=m.agent, context=m.context,
        written_by="person" if m.agent == "global" else m.agent, confidence=m.confidence,
        user_validated=m.user_validated, valid_from=m.valid_from, valid_to=m.valid_until,
        sources=tuple(sorted(set(sources))), session=m.session, speaker=m.speaker, turn=m.seq,
        ref=m.ref, importance=m.scores.importance, emotional=m.scores.emotional,
        social=m.scores.social, side=side)


class Journal:
    """This device's side of sync: names memories with gids and queues the ops it writes.
    Thread-safe as the Database is: each method is one read or one write transaction."""

    def __init__(self, db: ports.Database, rows: JournalRows,
                 wall_ms: Callable[[], int], applied: AppliedRows | None = None) -> None:
        self._db = db
        self._rows = rows
        self._wall = wall_ms
        self._applied = applied  # migration 0033's rows (heads, merged ops, questions)
        # Told (on the writer thread, inside the transaction) whenever ops were queued: the
        # owner's sync job then ticks soon (app/sync/runner.py). Must not raise or block.
        self.recorded: Callable[[], None] | None = None

    def _write_ops(self, conn: ports.Connection, bodies: Sequence[Body]) -> list[Op]:
        """Stamp ``bodies`` as one batch on this device's clock (kept in the vault, so the
        clock and the sequence survive restarts) and queue them."""
        state = self._rows.clock(conn)
        if state is None:  # first op of this vault on this device
            # TODO(sync, #29): use part E's device identity (app/sync/keys.py) once merged.
            device, next_seq, last = secrets.token_hex(8), 1, None
        else:
            device, next_seq, last_text = state
            last = Stamp.parse(last_text) if last_text else None
        clock = HybridClock(device, self._wall, last)
        writer = OpWriter(clock, next_seq)
        ops = writer.batch(bodies)
        self._rows.save_clock(conn, device, writer.next_seq, str(clock.last))
        self._rows.append(conn, [o.to_dict() for o in ops],
                          [sorted(o.body.targets()) for o in ops])
        if ops and self.recorded is not None:
            self.recorded()
        return ops

    def observe(self, conn: ports.Connection, remote: Sequence[Stamp]) -> None:
        """Take in the stamps of ops read from other devices (the HLC's receive rule), in the
        transaction that keeps them: every op this device writes later sorts after them, even
        when this device's wall clock is behind (found over real Syncthing with a clock 10
        minutes slow: an edit was stamped before the version it edits)."""
        if not remote:
            return
        state = self._rows.clock(conn)
        if state is None:  # no identity adopted yet: nothing written, nothing to order
            return
        device, next_seq, last_text = state
        clock = HybridClock(device, self._wall, Stamp.parse(last_text) if last_text else None)
        clock.observe(max(remote))
        self._rows.save_clock(conn, device, next_seq, str(clock.last))

    def device(self) -> str | None:
        state = self._db.read(self._rows.clock)
        return None if state is None else state[0]

    def record_create(self, memory: Memory, derived_from: Sequence[int] = ()) -> Op | None:
        """A ``memory.create`` for a memory just saved; None if it is already named (saved
        before) or derives from something forgotten (``should_write``)."""
        return self._db.write_sync(lambda c: self.create_in(c, memory, derived_from))

    def create_in(self, conn: ports.Connection, memory: Memory,
                  derived_from: Sequence[int] = ()) -> Op | None:
        """``record_create`` inside the caller's transaction: the remember that saves the
        memory journals it in the same commit, so a kill -9 between the two cannot leave a
        memory that never reaches the other devices (found over real Syncthing)."""
        if self._rows.gids(conn, [int(memory.id)]):
            return None
        sources = [Gid(g) for g in self._rows.gids(conn, list(derived_from)).values()]
        if self._rows.forgotten(conn, sources):
            return None
        gid = new_gid()
        try:
            body = create_body(memory, gid, sources)
        except OpInvalid as exc:
            # The memory is saved; a column the op schema bounds tighter than the vault
            # (a 2,000-character trigger) must not fail the remember. Logged without
            # content; the snapshot carries it instead.
            log.warning("sync journal: memory %s not journaled (%s)", int(memory.id),
                        exc.user_message.split(":")[0])
            return None
        self._rows.name(conn, int(memory.id), gid)
        return self._write_ops(conn, [body])[0]

    def gids_of(self, memory_ids: Sequence[int]) -> dict[int, Gid]:
        """Read before a forget: the map rows go with the memories."""
        found = self._db.read(lambda c: self._rows.gids(c, list(memory_ids)))
        return {m: Gid(g) for m, g in found.items()}

    def record_forget(self, gids: Sequence[Gid]) -> list[Op]:
        """``forget`` ops for ``gids`` (several if there are very many), their tombstones, and
        the unsent ops about them deleted: nothing in the journal keeps what went."""
        todo = sorted(set(gids))
        if not todo:
            return []

        def run(conn: ports.Connection) -> list[Op]:
            if self._applied is not None:
                self._applied.drop_ops_about(conn, todo)
            # A gid forgotten already (by another device's forget, applied here) is not
            # forgotten twice: the erase of an applied forget writes no new op.
            todo[:] = sorted(set(todo) - self._rows.forgotten(conn, todo))
            if not todo:
                return []
            bodies = [Forget(gids=tuple(todo[i:i + MAX_FORGET_GIDS]))
                      for i in range(0, len(todo), MAX_FORGET_GIDS)]
            ops = self._write_ops(conn, bodies)
            for o in ops:
                assert isinstance(o.body, Forget)
                self._rows.forget(conn, list(o.body.gids), keep=o.id)
            return ops
        return self._db.write_sync(run)

    def should_write(self, op: Op) -> bool:
        """False for an op about a forgotten gid: the writer drops it (the merge would)."""
        if isinstance(op.body, (Forget, InboxDecide)):
            return True
        about = sorted(op.body.targets())
        return not self._db.read(lambda c: self._rows.forgotten(c, about))

    def forgotten(self) -> frozenset[Gid]:
        return frozenset(Gid(g) for g in self._db.read(lambda c: self._rows.forgotten(c)))

    def unsent(self, limit: int = 1_000) -> list[dict[str, Any]]:
        """The payload for part E's next segment: ops in the order they were written."""
        return self._db.read(lambda c: self._rows.unsent(c, limit))

    def mark_sent(self, op_ids: Sequence[str]) -> None:
        """The segment holding these is written to the folder: drop them from the journal."""
        self._db.write_sync(lambda c: self._rows.sent(c, list(op_ids)))

    def local_ids(self, gids: Sequence[Gid]) -> Mapping[Gid, int]:
        found = self._db.read(lambda c: self._rows.memory_ids(c, list(gids)))
        return {Gid(g): m for g, m in found.items()}

    # --- hooks for the acts applied on other devices (issue 29 items 2-3) --------------------
    def record_edit(self, old: int, new: Memory) -> Op | None:
        """A correction of a synced memory: a ``memory.edit`` whose base is the version this
        vault shows; the memory's name moves to the new row. None for a memory never synced
        (or forgotten)."""
        return self._db.write_sync(lambda c: self.edit_in(c, old, new))

    def edit_in(self, conn: ports.Connection, old: int, new: Memory) -> Op | None:
        """``record_edit`` inside the caller's transaction: ``correct`` journals the edit in
        the commit that writes the new version, so a kill -9 between the two cannot leave
        the edit on this device only (the new row, unnamed, was then sent as a new memory by
        the next start's backfill, and the old one stayed current elsewhere)."""
        applied = self._applied
        if applied is None:
            return None
        found = self._rows.gids(conn, [old])
        if old not in found:
            return None
        gid = Gid(found[old])
        if self._rows.forgotten(conn, [gid]):
            return None
        base = applied.heads(conn, [gid]).get(gid, gid)
        try:
            body = body_from_mapping("memory.edit", {
                "gid": gid, "bases": [base], "text": new.text, "confidence": new.confidence,
                "user_validated": new.user_validated})
        except OpInvalid as exc:
            log.warning("sync journal: edit of memory %s not journaled (%s)", old,
                        exc.user_message.split(":")[0])
            return None
        op = self._write_ops(conn, [body])[0]
        applied.move_gid(conn, gid, int(new.id))
        applied.set_head(conn, gid, op.id)
        return op

    def record_creates(self, memories: Sequence[Memory], replaces: int | None = None,
                       batch: int = 256) -> list[Op]:
        """Memories saved by an import, consolidation or an assistant's fact: one batch of
        ops per ``batch`` memories. A fact (a semantic memory with subject, predicate and
        object) is a ``fact.assert`` (``fact.supersede`` of ``replaces``); anything else a
        ``memory.create``. Something derived from synced memories takes ``derived_gid`` of
        its sources, so two devices that derive it alike name it alike (the second is not
        journaled: it is that memory)."""
        out: list[Op] = []
        for i in range(0, len(memories), batch):
            part = list(memories[i:i + batch])

            def run(conn: ports.Connection, part: list[Memory] = part) -> list[Op]:
                return self.creates_in(conn, part, replaces)
            out += self._db.write_sync(run)
        return out

    def creates_in(self, conn: ports.Connection, memories: Sequence[Memory],
                 replaces: int | None) -> list[Op]:
        """``record_creates`` of one batch inside the caller's transaction (an assistant's
        change journals its ``fact.supersede`` in the commit that supersedes the old fact)."""
        applied = self._applied
        ids = [int(m.id) for m in memories]
        named = self._rows.gids(conn, ids)
        sources = applied.sources_of(conn, ids) if applied is not None else {}
        src_gids = self._rows.gids(conn, sorted({s for v in sources.values() for s in v}))
        old = self._rows.gids(conn, [replaces]) if replaces is not None else {}
        bodies: list[Body] = []
        names: list[tuple[int, Gid]] = []
        for m in memories:
            if int(m.id) in named:
                continue
            srcs = sorted({Gid(src_gids[s]) for s in sources.get(int(m.id), ()) if s in src_gids})
            if srcs and self._rows.forgotten(conn, srcs):
                continue
            fact = m.store.value == "semantic" and all(
                m.extra.get(k) for k in ("subject", "predicate", "object"))
            key = "fact|" + "|".join(str(m.extra.get(k)) for k in
                                     ("subject", "predicate", "object")) if fact else \
                "memory|" + m.store.value + "|" + m.text
            gid = derived_gid(srcs, key) if srcs else new_gid()
            if self._rows.memory_ids(conn, [gid]) or any(g == gid for _i, g in names):
                continue  # derived alike elsewhere and applied here: it is that memory
            try:
                if fact:
                    fields = _fact_fields(m, gid, srcs)
                    kind = "fact.assert"
                    if replaces is not None and replaces in old and old[replaces] != gid:
                        kind, fields["replaces"] = "fact.supersede", old[replaces]
                    bodies.append(body_from_mapping(kind, fields))
                else:
                    bodies.append(create_body(m, gid, srcs))
            except OpInvalid as exc:
                log.warning("sync journal: memory %s not journaled (%s)", int(m.id),
                            exc.user_message.split(":")[0])
                continue
            names.append((int(m.id), gid))
        if not bodies:
            return []
        for mid, gid in names:
            self._rows.name(conn, mid, gid)
        return self._write_ops(conn, bodies)

    def record_decide(self, cid: int, a: int, b: int, kind: str, reason: str, keep: str,
                      text: str | None) -> list[Op]:
        """The person's answer to an Inbox item: ``inbox.decide`` (after an
        ``inbox.propose`` naming the item, the first time one of this vault's own items is
        answered). Nothing for an item about a memory that was never synced."""
        return self._db.write_sync(
            lambda c: self.decide_in(c, cid, a, b, kind, reason, keep, text))

    def decide_in(self, conn: ports.Connection, cid: int, a: int, b: int, kind: str,
                  reason: str, keep: str, text: str | None) -> list[Op]:
        """``record_decide`` inside the caller's transaction: the Inbox answer and its op are
        one commit. An answer the op schema refuses is logged (without content) and writes
        nothing here; the answer itself stands."""
        applied = self._applied
        if applied is None:
            return []
        item = applied.question_of(conn, cid)
        bodies: list[Body] = []
        try:
            if item is None:
                g = self._rows.gids(conn, [a, b])
                if a not in g or b not in g or self._rows.forgotten(conn, [g[a], g[b]]):
                    return []
                item = new_gid()
                bodies.append(body_from_mapping("inbox.propose", {
                    "item": item, "kind": "review" if kind == "review" else "contradiction",
                    "a": g[a], "b": g[b], "reason": reason[:MAX_LABEL]}))
                named = item
            else:
                named = None
            bodies.append(body_from_mapping("inbox.decide", {
                "item": item, "verdict": "accept", "choice": keep,
                "text": text if keep == "edit" else None}))
        except OpInvalid as exc:
            log.warning("sync journal: Inbox answer %s not journaled (%s)", cid,
                        exc.user_message.split(":")[0])
            return []
        if named is not None:
            applied.name_question(conn, named, cid)
        return self._write_ops(conn, bodies)


def _fact_fields(m: Memory, gid: Gid, sources: Sequence[Gid]) -> dict[str, Any]:
    return {
        "gid": gid, "subject": m.extra["subject"], "predicate": m.extra["predicate"],
        "object": m.extra["object"], "statement": m.text,
        "category": str(m.extra.get("category") or ""), "occurred_at": m.occurred_at,
        "learned_at": m.created_at, "agent": m.agent, "context": m.context,
        "written_by": "person" if m.agent == "global" else m.agent,
        "confidence": m.confidence, "user_validated": m.user_validated,
        "valid_from": m.valid_from, "valid_to": m.valid_until, "sources": list(sources)}
