"""The sync engine: this vault and one synced folder (issue 29; docs/sync_ops.md#the-engine).
Layer: app. Runs on: one thread per vault (the sync job's); ``tick`` is not reentrant;
``forget_progress`` only reads and may run on any thread.

``SyncEngine(vault, folder).tick()``, one round:

0. **trust**: the founder's certificates and revocation list, from the folder and the vault
   (a device paired or revoked since the last tick counts from this one). A revoked device
   stops here.
1. **adopt** this device's segments already in the folder past its saved write cursor (a crash
   after the file was renamed and before the journal was told): their ops leave the journal.
2. **epoch in** (``EpochKeeper``, docs/sync.md#epochs): take the keys the founder sealed for
   this device, and if the founder's snapshot of a newer epoch is here, load its ops like
   received ones and continue each device's log from what it covers (``cursors_after``).
3. **scan** the other devices' logs (``FolderReader``): new segments, in order, verified.
4. **keep** their ops (``sync_received``), the tombstones of their forgets, the devices' read
   cursors and this device's clock having seen their stamps (``Journal.observe``: what it
   writes next sorts after them, whatever its wall clock says) in ONE transaction: after it, a
   segment is never read again, and before it, it will
   be read again. Exactly once, restart-safe.
5. **merge** them into the ``Replica`` (rebuilt from ``sync_received`` after a restart).
6. **erase** what was forgotten (before writing anything: a device back from offline applies
   pending forgets first); **name** the memories saved before the journal was on (once per
   engine: ``memory.create`` ops for them); **acknowledge** (this device moves to the epoch of
   the snapshot it applied, and says how far it applied each log); then **write** this
   device's unsent journal ops as one segment under the key of the epoch it moved to (ops
   about a forgotten gid are dropped, never written), kept and merged too.
7. **apply** the changed items and the Inbox to the vault (``app/sync/apply.py``). An item whose
   write fails stays to do; the next tick (or, after a restart, a full comparison) does it.
8. **epoch out**: destroy the keys every device has moved past; on the founding device, rotate
   when the schedule says (``EpochKeeper.due``), at once after naming memories saved before
   the journal was on (the new device gets them from that snapshot), and at once when a
   revoked device still holds the newest key (``SyncDevices.revoke`` rotates itself; this
   finishes one cut short).

Nothing here reads a memory's text into a log line.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app import ports
from app.sync.apply import Applier, ApplyRows, op_targets
from app.sync.epochs import (
    EpochKeeper,
    EpochRows,
    ForgetProgress,
    Rotation,
    cursors_after,
)
from app.sync.folder import FORMAT, FolderReader, FolderWriter
from app.sync.keys import (
    DeviceSecret,
    EpochKey,
    Revocations,
    SyncRefused,
    Trust,
    load_trust,
)
from app.sync.merge import Replica, State, state_hash
from app.sync.ops import Forget, Gid, Op, OpInvalid, parse_ops
from app.sync.segments import Cursor
from app.sync.watch import LISTINGS

if TYPE_CHECKING:
    from app.domain.memory import Memory
    from app.facade import Vault
    from app.sync.devices import KeyRows

log = logging.getLogger(__name__)

MAX_OPS_PER_SEGMENT = 2_000
BACKFILL_BATCH = 500          # memories read per transaction when naming old memories
FORGET_PROGRESS_DAYS = 30.0   # forget_progress: the forgets written in the last 30 days...
FORGET_PROGRESS_LIMIT = 5     # ...at most the latest five


@dataclass
class TickReport:
    """What one tick did: counts, epoch numbers and device ids only."""

    written: int = 0            # this device's ops written as a segment
    received: int = 0           # other devices' ops new here
    dropped: int = 0            # ops about a forgotten memory (never written or applied)
    erased: int = 0             # local memories erased for a forget from another device
    applied: int = 0            # items written to this vault
    named: int = 0              # memories saved before the journal was on, now create ops
    keys: int = 0               # epoch keys received (sealed for this device by the founder)
    snapshot: int = 0           # ops loaded from the founder's snapshot of a newer epoch
    acknowledged: int = 0       # the epoch of the acknowledgement written (0: none)
    destroyed: int = 0          # old epoch keys destroyed here
    rotated: int = 0            # the epoch the founder made (0: none)
    findings: list[str] = field(default_factory=list)  # gaps, unreadable files... by device


class SyncEngine:
    def __init__(self, vault: Vault, folder: Path, *, rows: ApplyRows | None = None,
                 epoch_rows: EpochRows | None = None) -> None:
        from app import bootstrap
        if rows is None:
            rows = bootstrap.sync_apply_rows()
        self.rows = rows
        self.epoch_rows = epoch_rows if epoch_rows is not None else bootstrap.sync_epoch_rows()
        self.key_rows: KeyRows = bootstrap.sync_key_rows()
        self.folder = Path(folder)
        self.vault = vault
        vault.set_setting("sync.journal", True)  # a vault that syncs journals its acts
        self.side = vault._sync_side()
        self.db = self.side.db
        ident = self.db.read(rows.identity)
        if ident is None:
            raise SyncRefused("this vault has no sync device identity yet (pair it first)")
        vault_id, device_id, secret, _name, founder_key = ident
        self.device = DeviceSecret.from_bytes(secret)
        if self.device.device_id != device_id:
            raise SyncRefused("this device's stored identity does not match its key")
        self.me = device_id
        self.trust = load_trust(vault_id, founder_key, self.db.read(rows.certificates),
                                self.db.read(rows.revocations),
                                self.db.read(self.key_rows.takeovers),
                                self.db.read(self.key_rows.successor))
        # One dict for the engine, its reader and its writer: refilled in place when keys
        # come and go (``_reload_keys``).
        self.keys: dict[int, bytes] = self.db.read(rows.epoch_keys)
        cursors = {d: Cursor(d, s, h) for d, (s, h) in self.db.read(rows.cursors).items()}
        own = cursors.pop(device_id, Cursor(device_id))
        self.writer = FolderWriter(self.folder, self.device, vault_id, own)
        self.reader = FolderReader(self.folder, device_id, self.trust, self.keys, cursors)
        self.keeper = EpochKeeper(self.db, self.epoch_rows, self.folder, self.device,
                                  self.trust, self._now)
        self.db.write_sync(lambda c: rows.adopt_device(c, device_id))
        self.applier = Applier(self.side, rows)
        self.replica = Replica()
        kept = parse_ops(self.db.read(rows.kept_ops))
        self.replica.apply(kept)
        state = self.replica.state()
        # After a start everything is compared once: a crash may have left any item undone.
        self._todo: set[Gid] = set(state.items)
        self._erase: set[Gid] = set(state.forgotten)
        self._questions = True
        self._named = False          # memories saved before the journal was on: once a start
        self._snapshot_now = False   # the founder named some: its next rotation is now
        self._trust_names: tuple[object, ...] | None = None  # the folder's, last read

    # --- the round ------------------------------------------------------------------------
    def tick(self) -> TickReport:
        report = TickReport()
        self._refresh_trust()
        if self.trust.revocations.of(self.me) is not None:
            report.findings.append(f"revoked {self.me}")
            return report  # nothing it writes is accepted any more, nor sealed for it
        self._reload_keys()
        self._adopt()
        self._epoch_in(report)
        self._receive(report)
        self._apply_erase(report)
        self._name_old_memories(report)
        self._acknowledge(report)
        self._send(report)
        self._apply(report)
        self._epoch_out(report)
        return report

    def state(self) -> State:
        return self.replica.state()

    def state_hash(self) -> str:
        return state_hash(self.replica.state())

    def forget_progress(self, days: float = FORGET_PROGRESS_DAYS,
                        limit: int = FORGET_PROGRESS_LIMIT) -> list[ForgetProgress]:
        """How far the forgets this device wrote in the last ``days`` (the latest ``limit``,
        newest first) have gone: ``words()`` is the window's "Forgotten on 2 of 3 devices;
        waiting for phone." One per log segment that carried forget ops (a tick writes the
        forgets made since the last one in one segment). Reads only: any thread."""
        since = self._now() - days * 86_400
        sent = self.db.read(lambda c: self.epoch_rows.forgets_sent(c, since, limit))
        return [self.keeper.progress(self.me, seq) for seq, _at, _n in sent]

    def revoke(self, device_id: str) -> Rotation:
        """Revoke a lost device (the founding device only) and rotate the key without it:
        ``EpochKeeper.revoke`` over this engine's op set. Its segments after the last one
        applied here are refused everywhere."""
        after = self.reader.cursors.get(device_id, Cursor(device_id)).last_seq
        rotation = self.keeper.revoke(device_id, after, self.replica.ops(), self._covers())
        self._reload_keys()
        return rotation

    def take_over(self) -> Rotation:
        """This device, the named successor, becomes the founder (``succession.take_over``
        over this engine's op set): the lost founder revoked after the last of its segments
        applied here, a new key for the others, and its own successor named."""
        from app.sync import succession
        self._refresh_trust()
        rotation = succession.take_over(self.db, self.key_rows, self.keeper, self.folder,
                                        self.replica.ops(), self._covers(), self._now)
        self._trust_names = None
        self._reload_keys()
        return rotation

    def appoint(self, device_id: str) -> None:
        """The founder names ``device_id`` its successor (``succession.appoint``)."""
        from app.sync import succession
        succession.appoint(self.db, self.key_rows, self.folder, self.device, self.trust,
                           device_id, self._now())
        self._trust_names = None

    # --- steps ----------------------------------------------------------------------------
    def _now(self) -> float:
        return self.side.clock.now()

    def _key(self) -> EpochKey:
        """The key this device writes under: the epoch it moved to (its acknowledgement)."""
        key = self.keeper.write_key()
        if key is None:
            raise SyncRefused("this device has not moved to an epoch yet")
        return key

    def _reload_keys(self) -> None:
        held = self.keeper.held()
        if held != self.keys:
            self.keys.clear()
            self.keys.update(held)

    def _covers(self) -> dict[str, Cursor]:
        """How far this device applied every log, its own included: what a snapshot covers."""
        return {**self.reader.cursors, self.me: self.writer.cursor}

    def _refresh_trust(self) -> None:
        """The founders' chain, certificates and revocations as the founders published them
        in the folder (pairing, revoking and a takeover write there before the vault),
        verified and added to this engine's trust; what is new here is kept in the vault.
        Read again only when the names in those folders changed (this runs every tick)."""
        base = self.folder / FORMAT
        founder = self.trust.founder_id
        names: tuple[object, ...] = (_listing(base / "certs" / founder), _listing(base / "revoked" / founder),
                 _listing(base / "successor" / founder),
                 tuple(_listing(base / "founders" / d) for d in _listing(base / "founders")))
        if names == self._trust_names:
            return
        held = len(self.trust.takeovers)
        self.reader.load_trust()
        if self.trust.founder_id != founder:
            self._trust_names = None  # a takeover: the new founder's folders next tick
        else:
            self._trust_names = names
        known = {d for d, _c, _s in self.db.read(self.key_rows.devices)}
        new = [c for c in self.trust.devices() if c.device_id not in known]
        revs = self.trust.revocations
        stored = self.db.read(self.rows.revocations)
        stored_version = 0 if stored is None else Revocations.from_bytes(stored).version
        chain = self.trust.takeovers[held:]
        heir = self.trust.successor
        if (not new and revs.version <= stored_version and not chain
                and (heir is None or heir.to_bytes() == self.db.read(self.key_rows.successor))):
            return
        now = self._now()

        def run(conn: ports.Connection) -> None:
            for t in chain:
                self.key_rows.put_takeover(conn, t.generation, t.to_bytes(), now)
            for c in new:
                self.key_rows.put_device(conn, c.device_id, c.to_bytes(), now)
            if revs.version > stored_version:
                self.key_rows.put_revocations(conn, revs.version, revs.to_bytes())
            if heir is not None:
                self.key_rows.put_successor(conn, heir.generation, heir.version,
                                            heir.to_bytes())
        self.db.write_sync(run)

    def _adopt(self) -> None:
        segs = self.writer.resume(self.trust, self.keys)
        if not segs:
            return
        ops = [o for s in segs for o in s.ops]
        cursor = self.writer.cursor
        journal = self.side.journal_rows
        forgets = [(s.seq, _forgotten_in(parse_ops(s.ops))) for s in segs]
        now = self._now()

        def run(conn: Any) -> None:
            journal.sent(conn, [str(o["id"]) for o in ops])
            self.rows.keep_ops(conn, ops, [op_targets(o) for o in ops])
            self.rows.put_cursor(conn, cursor.device_id, cursor.last_seq, cursor.last_hash,
                                 now)
            for seq, n in forgets:
                if n:
                    self.epoch_rows.put_forget_sent(conn, seq, now, n)
        self.db.write_sync(run)
        self._merge(parse_ops(ops))

    def _epoch_in(self, report: TickReport) -> None:
        """New keys, then the founder's snapshot of a newer epoch if it is here: its ops are
        kept and merged like received ones, and each device's log goes on from what it
        covers. ``acknowledge`` later in this tick moves this device to its epoch."""
        new = self.keeper.receive()
        report.keys += len(new)
        if new:
            self._reload_keys()
        snap = self.keeper.pending_snapshot()
        if snap is None:
            return
        before = dict(self.reader.cursors)
        after = cursors_after(snap, before)
        after.pop(self.me, None)  # its own log: its write cursor knows better
        self.reader.cursors = after
        raw = [o.to_dict() for o in snap.ops]
        self._keep(list(snap.ops), raw, before, report)
        report.snapshot += len(snap.ops)

    def _receive(self, report: TickReport) -> None:
        before = dict(self.reader.cursors)
        scan = self.reader.scan()
        report.findings += [f"{f.what} {f.device_id}:{f.seq}" for f in scan.findings]
        if not scan.segments:
            return
        ops: list[Op] = []
        raw: list[dict[str, Any]] = []
        for seg in scan.segments:
            try:
                parsed = parse_ops(seg.ops)
            except OpInvalid as exc:
                # A certified device wrote a batch the schema refuses (a newer Kept?): skipped
                # whole, and said; the cursor moves on so the others' ops still arrive.
                report.findings.append(f"invalid {seg.device_id}:{seg.seq}")
                log.warning("sync: segment %s:%s refused (%s)", seg.device_id, seg.seq,
                            exc.user_message.split(":")[0])
                continue
            ops += parsed
            raw += seg.ops
        self._keep(ops, raw, before, report)
        report.received += len(ops)

    def _keep(self, ops: list[Op], raw: list[dict[str, Any]], before: Mapping[str, Cursor],
              report: TickReport) -> None:
        """Keep ``ops`` (their dicts ``raw``), the tombstones of their forgets and the reader's
        cursors that moved since ``before`` in one transaction, then merge them."""
        gone = {g for o in ops if isinstance(o.body, Forget) for g in o.body.gids}
        # An op about something forgotten (here before, or in this very batch) is never kept:
        # a late create from a device that had not seen the forget would keep its text.
        raw = [r for r, o in zip(raw, ops, strict=True)
               if isinstance(o.body, Forget)
               or (self.replica.should_write(o) and not o.body.targets() & gone)]
        moved = {d: c for d, c in self.reader.cursors.items() if before.get(d) != c}
        now = self._now()

        stamps = [o.hlc for o in ops]

        def run(conn: Any) -> None:
            self.rows.keep_ops(conn, raw, [op_targets(o) for o in raw])
            self.side.journal.observe(conn, stamps)
            self.applier.tombstone(conn, gone)
            for c in moved.values():
                self.rows.put_cursor(conn, c.device_id, c.last_seq, c.last_hash, now)
        try:
            self.db.write_sync(run)
        except BaseException:
            self.reader.cursors = dict(before)  # read again next tick
            raise
        self._merge(ops, report)

    def _merge(self, ops: list[Op], report: TickReport | None = None) -> None:
        delta = self.replica.apply(ops)
        self._todo |= delta.changed
        # Every gid a forget names, not only those the merge held: a forget journaled here
        # just before a kill -9 (its memories not gone yet, their ops already dropped from the
        # kept set) is erased here by the tick that sends it.
        self._erase |= delta.erased | {g for o in ops if isinstance(o.body, Forget)
                                       for g in o.body.gids}
        self._questions = True
        if report is not None:
            report.dropped += delta.dropped
        if delta.erased:
            # Ops held back by a forget go from the kept set too (they may quote what went).
            self.db.write_sync(lambda c: self.applier.tombstone(c, delta.erased))

    def _apply_erase(self, report: TickReport) -> None:
        if not self._erase:
            return
        todo = sorted(self._erase)
        report.erased += self.applier.erase(todo)
        self._erase -= set(todo)
        self._todo -= set(todo)
        self.side.changed()

    def _name_old_memories(self, report: TickReport) -> None:
        """Once per start: ``memory.create`` (or ``fact.assert``) ops for the active memories no
        gid names, saved before this vault's journal was on (sync set up on a vault that
        already held memories, or a device joining with its own). They are written like any
        other op; on the founding device the next rotation is at once, so a device that joins
        gets them from that snapshot. A memory the op schema refuses stays unnamed (the
        journal logs it without content)."""
        if self._named:
            return
        journal, rows = self.side.journal, self.side.rows
        after = 0

        def unnamed(conn: ports.Connection) -> list[Memory]:
            ids = self.epoch_rows.unsynced_memories(conn, after, BACKFILL_BATCH)
            return [m for m in (rows.get_memory(conn, i) for i in ids) if m is not None]
        while True:
            found = self.db.read(unnamed)
            if not found:
                break
            report.named += len(journal.record_creates(found))
            after = int(found[-1].id)
        self._named = True
        if report.named and self.keeper.founder:
            self._snapshot_now = True

    def _acknowledge(self, report: TickReport) -> None:
        applied = {d: c.last_seq for d, c in self.reader.cursors.items()}
        ack = self.keeper.acknowledge(applied, self.writer.cursor.last_seq + 1)
        if ack is not None:
            report.acknowledged = ack.epoch

    def _send(self, report: TickReport) -> None:
        journal = self.side.journal
        key = self.keeper.write_key()
        if key is None:
            # Not moved to an epoch yet (its key came before the founder's snapshot): the
            # ops wait in the journal rather than go out under a key it has not applied.
            if journal.unsent(1):
                report.findings.append(f"waiting for a snapshot {self.me}")
            return
        while True:
            payload = journal.unsent(MAX_OPS_PER_SEGMENT)
            if not payload:
                return
            ops = parse_ops(payload)
            keep = [o for o in ops if journal.should_write(o) and self.replica.should_write(o)]
            going = {o.id for o in keep}
            skip = [o.id for o in ops if o.id not in going]
            if skip:
                journal.mark_sent(skip)
                report.dropped += len(skip)
            if not keep:
                continue
            self._send_batch(keep, key)
            report.written += len(keep)
            self._merge(keep, report)

    def _send_batch(self, keep: list[Op], key: EpochKey) -> None:
        out = [o.to_dict() for o in keep]
        self.writer.append(out, key)
        cursor = self.writer.cursor
        jr = self.side.journal_rows
        forgets = _forgotten_in(keep)
        now = self._now()

        def run(conn: Any) -> None:
            jr.sent(conn, [o.id for o in keep])
            self.rows.keep_ops(conn, out, [op_targets(o) for o in out])
            self.rows.put_cursor(conn, cursor.device_id, cursor.last_seq, cursor.last_hash,
                                 now)
            if forgets:
                self.epoch_rows.put_forget_sent(conn, cursor.last_seq, now, forgets)
        self.db.write_sync(run)

    def _apply(self, report: TickReport) -> None:
        if not self._todo and not self._questions:
            return
        state = self.replica.state()
        todo = set(self._todo)
        done = self.applier.write(state, todo)
        self._todo -= done | (todo - set(state.items))
        report.applied += len(done)
        if done:
            self.side.changed()
        if self._questions:
            self.applier.questions(state)
            self._questions = False

    def _epoch_out(self, report: TickReport) -> None:
        """Destroy the keys every active device moved past, then (the founder) rotate."""
        if len(self.keys) > 1:
            report.destroyed += self.keeper.destroy(lambda: (self.replica.ops(),
                                                             self._covers()))
            if report.destroyed:
                self._reload_keys()
        if not self.keeper.founder:
            return
        covers = self._covers()
        # A revoked device the newest key was sealed for (revoked after that rotation, or a
        # rotation by a stale view of the list): rotate at once, sealed for the others only.
        tainted = bool(self.keys) and max(self.keys) in self.keeper.sealed_for_revoked()
        # A founder by takeover whose newest key is its predecessor's (the takeover's own
        # rotation was cut short): rotate at once, so the lost founder's keys open nothing new.
        inherited = (self.trust.generation > 0 and bool(self.keys)
                     and self.db.read(self.epoch_rows.rotated_epoch) != max(self.keys))
        if (tainted or inherited or self._snapshot_now
                or self.keeper.due(sum(c.last_seq for c in covers.values()))):
            rotation = self.keeper.rotate(self.replica.ops(), covers)
            self._snapshot_now = False
            report.rotated = rotation.epoch
            self._reload_keys()


def _listing(path: Path) -> tuple[str, ...]:
    return LISTINGS.names(path)


def _forgotten_in(ops: list[Op]) -> int:
    """How many memories the forget ops among ``ops`` name."""
    return sum(len(o.body.gids) for o in ops if isinstance(o.body, Forget))


def rotate_without(db: ports.Database, folder: Path, device_id: str, after_seq: int,
                   clock: Callable[[], float], *, rows: ApplyRows | None = None,
                   epoch_rows: EpochRows | None = None) -> Rotation:
    """The founding device revokes ``device_id`` (its segments after ``after_seq`` refused)
    and rotates the key without it, from what its vault holds: every op merged here
    (``sync_received``) and how far it applied each log. For ``SyncDevices.revoke``, which has
    no engine; an engine running meanwhile sees the new key and snapshot at its next tick."""
    from app import bootstrap
    rows = rows if rows is not None else bootstrap.sync_apply_rows()
    epoch_rows = epoch_rows if epoch_rows is not None else bootstrap.sync_epoch_rows()
    ident = db.read(rows.identity)
    if ident is None:
        raise SyncRefused("this vault has no sync device identity yet (pair it first)")
    vault_id, _device, secret, _name, founder_key = ident
    key_rows = bootstrap.sync_key_rows()
    trust: Trust = load_trust(vault_id, founder_key, db.read(rows.certificates),
                              db.read(rows.revocations), db.read(key_rows.takeovers),
                              db.read(key_rows.successor))
    keeper = EpochKeeper(db, epoch_rows, folder, DeviceSecret.from_bytes(secret), trust, clock)
    ops = parse_ops(db.read(rows.kept_ops))
    covers = {d: Cursor(d, s, h) for d, (s, h) in db.read(rows.cursors).items()}
    return keeper.revoke(device_id, after_seq, ops, covers)


def take_over_without(db: ports.Database, folder: Path, clock: Callable[[], float], *,
                      rows: ApplyRows | None = None,
                      epoch_rows: EpochRows | None = None) -> Rotation:
    """This device, the named successor, becomes the founder (``succession.take_over``) from
    what its vault holds: every op merged here and how far it applied each log. For
    ``SyncDevices.take_over``, which has no engine; an engine running meanwhile reads the
    takeover from the folder at its next tick."""
    from app import bootstrap
    from app.sync import succession
    rows = rows if rows is not None else bootstrap.sync_apply_rows()
    epoch_rows = epoch_rows if epoch_rows is not None else bootstrap.sync_epoch_rows()
    key_rows = bootstrap.sync_key_rows()
    ident = db.read(rows.identity)
    if ident is None:
        raise SyncRefused("this vault has no sync device identity yet (pair it first)")
    vault_id, _device, secret, _name, founder_key = ident
    me = DeviceSecret.from_bytes(secret)
    trust: Trust = load_trust(vault_id, founder_key, db.read(rows.certificates),
                              db.read(rows.revocations), db.read(key_rows.takeovers),
                              db.read(key_rows.successor))
    FolderReader(folder, me.device_id, trust, {}, {}).load_trust()
    keeper = EpochKeeper(db, epoch_rows, folder, me, trust, clock)
    ops = parse_ops(db.read(rows.kept_ops))
    covers = {d: Cursor(d, s, h) for d, (s, h) in db.read(rows.cursors).items()}
    return succession.take_over(db, key_rows, keeper, folder, ops, covers, clock)
