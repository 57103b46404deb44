"""The sync journal: the ops this vault writes for its own changes (issue 29, step 2 of
docs/sync_ops.md). Layer: app. Runs on: the caller's thread; every write goes through the
vault's one writer (``Database.write_sync``), one transaction per recorded act.

Off unless the setting ``sync.journal`` is on; the facade asks ``Vault._sync_journal()``,
which is None when off, so a vault that does not sync writes nothing here.

Recorded today: ``remember`` (a ``memory.create`` with a new gid) and ``forget`` (a
``forget`` of the gids of everything the plan deleted, plus tombstones, plus the removal of
every unsent op about those gids, so no journal row keeps forgotten text). The other hook
points (edits, facts, Inbox) are named in docs/sync_ops.md.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Callable, Mapping, Sequence
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
    new_gid,
)

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
    def sent(self, conn: ports.Connection, op_ids: Sequence[str]) -> None: ...
    def forget(self, conn: ports.Connection, gids: Sequence[str], keep: str | None) -> int: ...
    def forgotten(self, conn: ports.Connection,
                  gids: Sequence[str] | None = None) -> set[str]: ...


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
                 wall_ms: Callable[[], int]) -> None:
        self._db = db
        self._rows = rows
        self._wall = wall_ms

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
        return ops

    def device(self) -> str | None:
        state = self._db.read(self._rows.clock)
        return None if state is None else state[0]

    def record_create(self, memory: Memory, derived_from: Sequence[int] = ()) -> Op | None:
        """A ``memory.create`` for a memory just saved; None if it is already named (saved
        before) or derives from something forgotten (``should_write``)."""
        def run(conn: ports.Connection) -> Op | None:
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
        return self._db.write_sync(run)

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
