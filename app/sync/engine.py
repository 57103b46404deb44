"""The sync engine: this vault and one synced folder (issue 29; docs/sync_ops.md#the-engine).
Layer: app. Runs on: one thread per vault (the sync job's); ``tick`` is not reentrant.

``SyncEngine(vault, folder).tick()``, one round:

1. **adopt** this device's segments already in the folder past its saved write cursor (a crash
   after the file was renamed and before the journal was told): their ops leave the journal.
2. **scan** the other devices' logs (``FolderReader``): new segments, in order, verified.
3. **keep** their ops (``sync_received``), the tombstones of their forgets, the devices' read
   cursors and this device's clock having seen their stamps (``Journal.observe``: what it
   writes next sorts after them, whatever its wall clock says) in ONE transaction: after it, a segment is never read again, and before it, it will
   be read again. Exactly once, restart-safe.
4. **merge** them into the ``Replica`` (rebuilt from ``sync_received`` after a restart).
5. **erase** what was forgotten (before writing anything: a device back from offline applies
   pending forgets first), then **write** this device's unsent journal ops as one segment
   (``FolderWriter``; ops about a forgotten gid are dropped, never written), kept and merged too.
6. **apply** the changed items and the Inbox to the vault (``app/sync/apply.py``). An item whose
   write fails stays to do; the next tick (or, after a restart, a full comparison) does it.

Nothing here reads a memory's text into a log line.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.sync.apply import Applier, ApplyRows, op_targets
from app.sync.folder import FolderReader, FolderWriter
from app.sync.keys import DeviceSecret, EpochKey, SyncRefused, load_trust
from app.sync.merge import Replica, State, state_hash
from app.sync.ops import Forget, Gid, Op, OpInvalid, parse_ops
from app.sync.segments import Cursor

if TYPE_CHECKING:
    from app.facade import Vault

log = logging.getLogger(__name__)

MAX_OPS_PER_SEGMENT = 2_000


@dataclass
class TickReport:
    """What one tick did: counts and device ids only."""

    written: int = 0            # this device's ops written as a segment
    received: int = 0           # other devices' ops new here
    dropped: int = 0            # ops about a forgotten memory (never written or applied)
    erased: int = 0             # local memories erased for a forget from another device
    applied: int = 0            # items written to this vault
    findings: list[str] = field(default_factory=list)  # gaps, unreadable files... by device


class SyncEngine:
    def __init__(self, vault: Vault, folder: Path, *, rows: ApplyRows | None = None) -> None:
        if rows is None:
            from app import bootstrap
            rows = bootstrap.sync_apply_rows()
        self.rows = rows
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
        self.trust = load_trust(vault_id, founder_key, self.db.read(rows.certificates),
                                self.db.read(rows.revocations))
        self.keys: dict[int, bytes] = self.db.read(rows.epoch_keys)
        cursors = {d: Cursor(d, s, h) for d, (s, h) in self.db.read(rows.cursors).items()}
        own = cursors.pop(device_id, Cursor(device_id))
        self.writer = FolderWriter(self.folder, self.device, vault_id, own)
        self.reader = FolderReader(self.folder, device_id, self.trust, self.keys, cursors)
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

    # --- the round ------------------------------------------------------------------------
    def tick(self) -> TickReport:
        report = TickReport()
        self._adopt()
        self._receive(report)
        self._apply_erase(report)
        self._send(report)
        self._apply(report)
        return report

    def state(self) -> State:
        return self.replica.state()

    def state_hash(self) -> str:
        return state_hash(self.replica.state())

    # --- steps ----------------------------------------------------------------------------
    def _now(self) -> float:
        return self.side.clock.now()

    def _key(self) -> EpochKey:
        if not self.keys:
            raise SyncRefused("this device holds no epoch key")
        epoch = max(self.keys)
        return EpochKey(epoch, self.keys[epoch])

    def _adopt(self) -> None:
        segs = self.writer.resume(self.trust, self.keys)
        if not segs:
            return
        ops = [o for s in segs for o in s.ops]
        cursor = self.writer.cursor
        journal = self.side.journal_rows

        def run(conn: Any) -> None:
            journal.sent(conn, [str(o["id"]) for o in ops])
            self.rows.keep_ops(conn, ops, [op_targets(o) for o in ops])
            self.rows.put_cursor(conn, cursor.device_id, cursor.last_seq, cursor.last_hash,
                                 self._now())
        self.db.write_sync(run)
        self._merge(parse_ops(ops))

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
        gone = {g for o in ops if isinstance(o.body, Forget) for g in o.body.gids}
        # An op about something forgotten (here before, or in this very scan) is never kept:
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
            self.reader.cursors = before  # read again next tick
            raise
        report.received += len(ops)
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

    def _send(self, report: TickReport) -> None:
        journal = self.side.journal
        while True:
            payload = journal.unsent(MAX_OPS_PER_SEGMENT)
            if not payload:
                return
            ops = parse_ops(payload)
            keep = [o for o in ops if journal.should_write(o) and self.replica.should_write(o)]
            skip = [o.id for o in ops if o not in keep]
            if skip:
                journal.mark_sent(skip)
                report.dropped += len(skip)
            if not keep:
                continue
            self._send_batch(keep)
            report.written += len(keep)
            self._merge(keep, report)

    def _send_batch(self, keep: list[Op]) -> None:
        out = [o.to_dict() for o in keep]
        self.writer.append(out, self._key())
        cursor = self.writer.cursor
        jr = self.side.journal_rows

        def run(conn: Any) -> None:
            jr.sent(conn, [o.id for o in keep])
            self.rows.keep_ops(conn, out, [op_targets(o) for o in out])
            self.rows.put_cursor(conn, cursor.device_id, cursor.last_seq, cursor.last_hash,
                                 self._now())
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
