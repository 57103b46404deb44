"""Epochs of the shared sync key: rotation with a compacted snapshot, acknowledgements, and the
destruction of old keys (issue 29 item 4; docs/sync.md#epochs). Layer: app (the folder, keys and
ops layers; this device's numbers through ``EpochRows``, migration 0034). Runs on: the sync
job's thread.

Why: a forget erases a memory on every device through its op, but the folder still holds the
segments that carried the memory (and the sync tool's ``.stversions`` copies, the cloud's trash,
old backups of the folder), all under the epoch key every device holds. Once no device holds
that key any more, those copies are noise. So:

1. **Rotation** (only the founding device makes keys, so two devices never make two keys for
   one epoch; it already is the one authority for certificates and revocations): a new
   ``EpochKey`` is stored in the vault first, then sealed for every certified, not revoked
   device (``v1/keys/<founder>/<epoch>-<device>``), then a **compacted snapshot** of the op set
   is written under it (``v1/snap/<founder>/<epoch>-<n>``, ``n`` one more than the number of
   segments it covers): every op the merge keeps, forgets as their gids only, and nothing
   about a forgotten memory (``compact``: ``fold(compact(ops)) == fold(ops)``). Every file is
   written once; resuming after a crash writes only what is missing.
2. **Acknowledgements**: a device that holds the new key and has applied its snapshot (never
   the key alone: it may arrive first) moves to the epoch (its writes from then on use it) and
   writes ``v1/ack/<device>/<n>``, encrypted under that key: which epoch it holds, its first
   sequence under it, and how far it applied each device's log. It acknowledges again when it
   applied more (at most once a minute, ``policy.SYNC_ACK_EVERY_S``), so ``forget_progress``
   can say "Forgotten on 2 of 3 devices".
3. **Destruction**: when every certified, not revoked device has moved to epoch E and every one
   of them has applied every other one's segments written before it moved, each device deletes
   its keys of epochs below E from the vault (``secure_delete`` overwrites them; the WAL is
   checkpointed so no old page keeps them). Before it destroys, the founder writes one more
   snapshot under E covering everything (a device paired later starts from it: the segments of
   the old epochs can no longer be read by anyone).
4. **Schedule**: the founder rotates when a slot (``policy.SYNC_ROTATION_SLOT_S``) has passed
   since the last rotation and some device wrote since: forgets wait for the same rotation as
   everything else, so the host cannot tell a forget's rotation from routine.
5. **Revocation** of a lost device: a new signed revocation list, then a rotation sealed for
   the others only.

Nothing here logs; errors are ``SyncRefused`` with a reason code.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from app import policy, ports
from app.sync.folder import (
    EPOCH_DIGITS,
    FORMAT,
    AlreadyWritten,
    FolderReader,
    FolderWriter,
    seq_name,
    write_once,
)
from app.sync.keys import (
    DeviceSecret,
    EpochKey,
    Revocation,
    SealedKey,
    SyncRefused,
    Trust,
    canonical,
    open_sealed,
    seal_epoch_key,
    sign_revocations,
)
from app.sync.merge import dedupe
from app.sync.ops import Forget, InboxDecide, InboxPropose, Op, OpInvalid, parse_ops
from app.sync.segments import GENESIS, Cursor, Kind, Segment, decode_segment, encode_segment
from app.sync.watch import LISTINGS

SNAPSHOT_KIND = "kept-sync.snapshot"
ACK_KIND = "kept-sync.ack"
_SEALED = re.compile(r"^([0-9]{8})-([0-9a-f]{32})$")
_SNAP = re.compile(r"^([0-9]{8})-([0-9]{12})$")
_ACK = re.compile(r"^[0-9]{12}$")


# --- the compacted op set -----------------------------------------------------------------------

def compact(ops: Iterable[Op]) -> list[Op]:
    """The ops a snapshot keeps: one per id (the merge's choice), every forget (gids only, no
    content by its schema), and nothing else about a forgotten memory: not its create or edits,
    not an op citing it as a source or replacing it, not a question about it nor the decisions
    on that question. ``fold`` of the result equals ``fold`` of ``ops``. Sorted by the merge's
    order, so two compactions of one op set are the same list."""
    unique = dedupe(ops)
    gone = {g for o in unique.values() if isinstance(o.body, Forget) for g in o.body.gids}
    dead = {o.body.item for o in unique.values()
            if isinstance(o.body, InboxPropose) and o.body.targets() & gone}
    kept = [o for o in unique.values()
            if isinstance(o.body, Forget)
            or not (o.body.targets() & gone
                    or (isinstance(o.body, InboxDecide) and o.body.item in dead))]
    return sorted(kept, key=lambda o: o.order)


# --- snapshots ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Snapshot:
    """A verified snapshot: who wrote it, under which epoch, how far it covers each device's
    log (``covers``: the cursor a reader may continue from), and its ops."""

    device: str
    epoch: int
    covers: Mapping[str, Cursor]
    ops: list[Op] = field(repr=False)

    @property
    def total(self) -> int:
        """How many segments it covers, over all devices (its file name holds one more)."""
        return sum(c.last_seq for c in self.covers.values())


def snapshot_payload(epoch: int, covers: Mapping[str, Cursor],
                     ops: Iterable[Op]) -> list[dict[str, Any]]:
    """The segment payload of a snapshot: a header object, then the compacted ops."""
    head = {"kind": SNAPSHOT_KIND, "epoch": epoch,
            "covers": {d: [c.last_seq, c.last_hash.hex()] for d, c in sorted(covers.items())}}
    return [head, *(o.to_dict() for o in compact(ops))]


def parse_snapshot(seg: Segment) -> Snapshot:
    """A snapshot from a verified segment; ``SyncRefused`` if its payload is not one."""
    if seg.kind is not Kind.SNAPSHOT or not seg.ops:
        raise SyncRefused("bad snapshot")
    if not isinstance(seg.ops[0].get("covers"), dict):
        raise SyncRefused("bad snapshot")
    head = seg.ops[0]
    try:
        if head.get("kind") != SNAPSHOT_KIND or head.get("epoch") != seg.epoch:
            raise SyncRefused("bad snapshot")
        covers = {str(d): Cursor(str(d), int(s), bytes.fromhex(h))
                  for d, (s, h) in dict(head["covers"]).items()}
        ops = parse_ops(seg.ops[1:])
    except (KeyError, TypeError, ValueError, OpInvalid):
        raise SyncRefused("bad snapshot") from None
    if (any(c.last_seq < 0 or len(c.last_hash) != 32 for c in covers.values())
            or sum(c.last_seq for c in covers.values()) + 1 != seg.seq):
        raise SyncRefused("bad snapshot")
    return Snapshot(seg.device_id, seg.epoch, covers, ops)


def snapshot_path(folder: Path, device: str, epoch: int, total: int, fmt: str = FORMAT) -> Path:
    """Where a snapshot covering ``total`` segments goes: its number is ``total + 1`` (a
    sequence starts at 1, and a snapshot of an empty folder covers none)."""
    return folder / fmt / "snap" / device / f"{epoch:0{EPOCH_DIGITS}d}-{seq_name(total + 1)}"


def write_snapshot(folder: Path, me: DeviceSecret, vault_id: str, key: EpochKey,
                   covers: Mapping[str, Cursor], ops: Iterable[Op],
                   fmt: str = FORMAT) -> tuple[Path, bool]:
    """Write the snapshot of ``ops`` (compacted) under ``key``; (its path, True if written now).
    Its name holds the epoch and how many segments it covers, so the same coverage is never
    written twice (False: that file is already there, written once before)."""
    total = sum(c.last_seq for c in covers.values())
    path = snapshot_path(folder, me.device_id, key.epoch, total, fmt)
    if path.exists():
        return path, False
    data = encode_segment(me, vault_id, key, total + 1, GENESIS,
                          snapshot_payload(key.epoch, covers, ops), Kind.SNAPSHOT)
    try:
        write_once(path, data)
    except AlreadyWritten:
        return path, False
    return path, True


def latest_snapshot(reader: FolderReader, after: int = 0) -> Snapshot | None:
    """The founder's newest snapshot this device can open, of an epoch above ``after``
    (highest epoch, then coverage). Only files of epochs whose key is held are opened, newest
    first, so old snapshots cost nothing. A snapshot by any other device is ignored: it could
    claim ops in another device's name."""
    where = reader.base / "snap" / reader.trust.founder_id
    names = LISTINGS.names(where)
    found = sorted(((int(m.group(1)), int(m.group(2)), name) for name in names
                    if (m := _SNAP.match(name)) is not None), reverse=True)
    for epoch, n, name in found:
        if epoch <= after or epoch not in reader.keys:
            continue
        try:
            seg = decode_segment((where / name).read_bytes(), reader.trust, reader.keys)
            if (seg.device_id, seg.epoch, seg.seq) != (reader.trust.founder_id, epoch, n):
                continue
            return parse_snapshot(seg)
        except (SyncRefused, OSError):
            continue
    return None


def cursors_after(snapshot: Snapshot, cursors: Mapping[str, Cursor]) -> dict[str, Cursor]:
    """Read cursors once ``snapshot`` is applied: each device's moves to what the snapshot
    covers where that is further (the chain goes on from the covered segment's hash)."""
    out = dict(cursors)
    for d, c in snapshot.covers.items():
        if c.last_seq > out.get(d, Cursor(d)).last_seq:
            out[d] = c
    return out


# --- acknowledgements ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Ack:
    """A device's word: it holds ``epoch`` and writes under it from its sequence ``from_seq``,
    and it has applied each device's log up to ``applied[device]`` (snapshots included)."""

    device: str
    n: int
    epoch: int
    from_seq: int
    applied: Mapping[str, int]
    at: int

    def body(self) -> dict[str, Any]:
        return {"kind": ACK_KIND, "epoch": self.epoch, "from_seq": self.from_seq,
                "applied": dict(sorted(self.applied.items())), "at": self.at}


def parse_ack(seg: Segment) -> Ack:
    if seg.kind is not Kind.ACK or len(seg.ops) != 1:
        raise SyncRefused("bad acknowledgement")
    d = seg.ops[0]
    try:
        if (d.get("kind") != ACK_KIND or d["epoch"] != seg.epoch
                or not isinstance(d["applied"], dict)):
            raise SyncRefused("bad acknowledgement")
        applied = {str(k): int(v) for k, v in dict(d["applied"]).items()}
        ack = Ack(seg.device_id, seg.seq, int(d["epoch"]), int(d["from_seq"]), applied,
                  int(d["at"]))
    except (KeyError, TypeError, ValueError):
        raise SyncRefused("bad acknowledgement") from None
    if ack.from_seq < 1 or any(v < 0 for v in applied.values()):
        raise SyncRefused("bad acknowledgement")
    return ack


def read_acks(reader: FolderReader) -> dict[str, Ack]:
    """Each device's latest acknowledgement this device can open and parse."""
    out: dict[str, Ack] = {}
    for device, seg in reader.acks().items():
        try:
            out[device] = parse_ack(seg)
        except SyncRefused:
            continue
    return out


def destroy_below(trust: Trust, acks: Mapping[str, Ack]) -> int | None:
    """The epoch E such that keys of every epoch below E may be destroyed, or None while a
    certified, not revoked device has not acknowledged yet. E is the lowest epoch the active
    devices have moved to; it holds when each of them has applied each other one's segments
    up to the one before that device's ``from_seq`` (everything it may have written under an
    older key). A revoked device is not waited for."""
    active = [c.device_id for c in trust.active()]
    if not active or any(d not in acks for d in active):
        return None
    for writer in active:
        need = acks[writer].from_seq - 1
        if any(acks[r].applied.get(writer, 0) < need for r in active if r != writer):
            return None
    return min(acks[d].epoch for d in active)


# --- what the window says -----------------------------------------------------------------------

@dataclass(frozen=True)
class ForgetProgress:
    """How far one forget has gone: the devices that applied it, those that have not, and
    whether the old copies in the folder can no longer be read (``closed``)."""

    done: tuple[str, ...]
    waiting: tuple[str, ...]
    closed: bool

    @property
    def total(self) -> int:
        return len(self.done) + len(self.waiting)

    def words(self) -> str:
        n, total = len(self.done), self.total
        if self.waiting:
            who = ", ".join(self.waiting)
            return f"Forgotten on {n} of {total} devices; waiting for {who}."
        if not self.closed:
            return (f"Forgotten on all {total} devices; old copies in the sync folder "
                    "become unreadable at the next key change.")
        return (f"Forgotten on all {total} devices; old copies in the sync folder can no "
                "longer be read.")

    def to_dict(self) -> dict[str, Any]:
        return {"done": len(self.done), "total": self.total, "waiting": list(self.waiting),
                "closed": self.closed}


def forget_progress(trust: Trust, acks: Mapping[str, Ack], me: str, device: str, seq: int,
                    closed: bool) -> ForgetProgress:
    """Progress of the forget written in ``device``'s segment ``seq``: a device has applied it
    when it wrote it, when it is this device (the forget erased here first), or when its latest
    acknowledgement covers that segment. Devices are named by their certificate's name.
    ``closed``: the old copies can no longer be opened (``EpochKeeper.progress`` knows)."""
    done: list[str] = []
    waiting: list[str] = []
    for cert in trust.active():
        d = cert.device_id
        ack = acks.get(d)
        if d in (me, device) or (ack is not None and ack.applied.get(device, 0) >= seq):
            done.append(cert.name)
        else:
            waiting.append(cert.name)
    return ForgetProgress(tuple(sorted(done)), tuple(sorted(waiting)), closed)


def rotation_due(now: float, last_rotation: float | None, covered: int,
                 last_snapshot: int) -> bool:
    """Whether the founder rotates now: a slot has passed since the last rotation (or there
    was none) and some device wrote since the last snapshot (``covered``: segments applied
    now, over all devices; ``last_snapshot``: what the last snapshot covered). Forgets do not
    change this, so a rotation says nothing about them."""
    if covered <= last_snapshot:
        return False
    return last_rotation is None or now - last_rotation >= policy.SYNC_ROTATION_SLOT_S


# --- the founder's sealed keys --------------------------------------------------------------------

def founder_keys(folder: Path, me: DeviceSecret, trust: Trust,
                 fmt: str = FORMAT, skip: Iterable[int] = ()) -> dict[int, EpochKey]:
    """Every epoch key the founder sealed for this device that opens, but those of the epochs
    in ``skip`` (not even opened: held or destroyed already). Keys sealed by any other
    device are not taken: only the founder makes keys, so an epoch has one key."""
    skipped = set(skip)
    mine = me.device_id
    where = folder / fmt / "keys" / trust.founder_id
    out: dict[int, EpochKey] = {}
    for name in LISTINGS.names(where):
        m = _SEALED.match(name)
        if m is None or m.group(2) != mine or int(m.group(1)) in skipped:
            continue
        try:
            key = open_sealed(SealedKey.from_bytes((where / name).read_bytes()), me, trust)
        except (SyncRefused, OSError):
            continue
        if key.epoch == int(m.group(1)):
            out[key.epoch] = key
    return out


# --- this device's side ---------------------------------------------------------------------------

class EpochRows(Protocol):
    """``storage/sync_epochs.py`` (migrations 0029, 0034 and 0038)."""

    def epoch_keys(self, conn: ports.Connection) -> dict[int, bytes]: ...
    def put_epoch_key(self, conn: ports.Connection, epoch: int, key: bytes,
                      now: float) -> None: ...
    def destroy_epoch_keys(self, conn: ports.Connection, below: int, now: float) -> int: ...
    def destroyed(self, conn: ports.Connection) -> list[int]: ...
    def known_epoch(self, conn: ports.Connection) -> int: ...
    def put_rotated(self, conn: ports.Connection, epoch: int, now: float) -> None: ...
    def last_rotation(self, conn: ports.Connection) -> float | None: ...
    def rotated_epoch(self, conn: ports.Connection) -> int | None: ...
    def put_moved(self, conn: ports.Connection, epoch: int, from_seq: int, now: float,
                  covers: str) -> None: ...
    def moved(self, conn: ports.Connection) -> tuple[int, int] | None: ...
    def moved_covers(self, conn: ports.Connection) -> dict[int, str]: ...
    def put_ack(self, conn: ports.Connection, n: int, epoch: int, now: float) -> None: ...
    def last_ack(self, conn: ports.Connection) -> tuple[int, int, float] | None: ...
    def put_revocations(self, conn: ports.Connection, version: int, body: bytes) -> bool: ...
    # the engine's (migration 0038)
    def put_forget_sent(self, conn: ports.Connection, seq: int, now: float,
                        memories: int) -> None: ...
    def forgets_sent(self, conn: ports.Connection, since: float, limit: int
                     ) -> list[tuple[int, float, int]]: ...
    def unsynced_memories(self, conn: ports.Connection, after: int, limit: int) -> list[int]: ...


@dataclass(frozen=True)
class Rotation:
    """What a rotation wrote: the new key's epoch, the devices it was sealed for, the snapshot,
    and the files written now (empty parts on a resume that found them written)."""

    epoch: int
    sealed_for: tuple[str, ...]
    snapshot: Path
    written: tuple[Path, ...]


OpSource = Callable[[], tuple[Iterable[Op], Mapping[str, Cursor]]]


class EpochKeeper:
    """One device's epochs over its vault (``db`` + ``rows``) and the sync folder. The engine
    calls, on each tick: ``receive`` (new keys), then applies ``pending_snapshot`` if any, then
    ``acknowledge``, then ``destroy``; the founder also ``rotate`` when ``due``."""

    def __init__(self, db: ports.Database, rows: EpochRows, folder: Path, me: DeviceSecret,
                 trust: Trust, clock: Callable[[], float] = time.time, fmt: str = FORMAT) -> None:
        self.db, self.rows, self.folder, self.me, self.trust = db, rows, folder, me, trust
        self.clock, self.fmt = clock, fmt
        self.me_id = me.device_id  # derived from the key: computed once, asked every tick
        self._last_applied: dict[str, int] | None = None
        self._ready: Snapshot | None = None  # the snapshot handed to the engine to apply
        # ``acks`` as last read, and what proved the folder's acknowledgements the same since
        # (every tick asks: ``destroy`` while two keys are held, ``progress`` per recent forget)
        self._acks: tuple[Any, dict[str, Ack]] | None = None

    @property
    def founder(self) -> bool:
        return self.me_id == self.trust.founder_id

    def _reader(self) -> FolderReader:
        return FolderReader(self.folder, self.me_id, self.trust, self.held(), {},
                            self.fmt)

    def _publisher(self) -> FolderWriter:
        return FolderWriter(self.folder, self.me, self.trust.vault_id,
                            Cursor(self.me_id), self.fmt)

    # keys ------------------------------------------------------------------------------------
    def held(self) -> dict[int, bytes]:
        return self.db.read(self.rows.epoch_keys)

    def current(self) -> EpochKey | None:
        """The newest key held: the one this device writes under once it moved to it."""
        held = self.held()
        if not held:
            return None
        e = max(held)
        return EpochKey(e, held[e])

    def receive(self) -> list[int]:
        """Store the keys the founder sealed for this device that are new here; returns their
        epochs. A key destroyed here is never taken back (the row stays destroyed). Only the
        files of epochs new here are opened, and the vault is written only when one is new
        (this runs every tick)."""
        known = set(self.held()) | set(self.db.read(self.rows.destroyed))
        keys = founder_keys(self.folder, self.me, self.trust, self.fmt, skip=known)
        if not keys:
            return []
        now = self.clock()

        def run(conn: ports.Connection) -> list[int]:
            have = self.rows.epoch_keys(conn)
            gone = set(self.rows.destroyed(conn))
            new = [e for e in sorted(keys) if e not in have and e not in gone]
            for e in new:
                self.rows.put_epoch_key(conn, e, keys[e].key, now)
            return new
        return self.db.write_sync(run)

    # rotation (the founder) -------------------------------------------------------------------
    def due(self, covered: int) -> bool:
        """Whether the founder rotates now (``rotation_due``); ``covered``: segments applied
        now over all devices, as the engine's cursors say."""
        if not self.founder:
            return False
        last = self.db.read(self.rows.last_rotation)
        return rotation_due(self.clock(), last, covered, self._last_snapshot_total())

    def _last_snapshot_total(self) -> int:
        where = self.folder / self.fmt / "snap" / self.me_id
        names = LISTINGS.names(where)
        totals = [int(m.group(2)) - 1 for n in names if (m := _SNAP.match(n)) is not None]
        return max(totals, default=0)

    def rotate(self, ops: Iterable[Op], covers: Mapping[str, Cursor]) -> Rotation:
        """Make the next epoch key, seal it for every certified, not revoked device and write
        the compacted snapshot of ``ops`` (what this device applied, up to ``covers``) under
        it. The key is saved in the vault before any file is written; if a rotation was cut
        short (a key newer than every key this device moved to, made here), it is finished
        instead of starting another, and only the missing files are written."""
        if not self.founder:
            raise SyncRefused("only the founding device makes keys")
        now = self.clock()
        tainted = self.sealed_for_revoked()

        def begin(conn: ports.Connection) -> EpochKey:
            held = self.rows.epoch_keys(conn)
            moved = self.rows.moved(conn)
            top = max(held, default=0)
            # Never finish a rotation whose key went to a device revoked since: a new key.
            if (top and top not in tainted and self.rows.rotated_epoch(conn) == top
                    and (moved is None or moved[0] < top)):
                return EpochKey(top, held[top])  # made here, not moved to: finish it
            key = EpochKey.generate(self.rows.known_epoch(conn) + 1)
            self.rows.put_epoch_key(conn, key.epoch, key.key, now)
            self.rows.put_rotated(conn, key.epoch, now)
            return key
        key = self.db.write_sync(begin)
        written: list[Path] = []
        publisher = self._publisher()
        recipients = tuple(c.device_id for c in self.trust.active())
        for cert in self.trust.active():
            path = (self.folder / self.fmt / "keys" / self.me_id
                    / f"{key.epoch:0{EPOCH_DIGITS}d}-{cert.device_id}")
            if path.exists():
                continue
            try:
                written.append(publisher.publish_sealed(
                    seal_epoch_key(self.me, self.trust.vault_id, key, cert)))
            except AlreadyWritten:
                continue
        snap, new = write_snapshot(self.folder, self.me, self.trust.vault_id, key, covers, ops,
                                   self.fmt)
        if new:
            written.append(snap)
        return Rotation(key.epoch, recipients, snap, tuple(written))

    def sealed_for_revoked(self) -> set[int]:
        """Epochs whose key this device sealed for a device revoked since (their files name
        the recipient): a key to rotate away from, never one to finish a rotation with."""
        revoked = {r.device_id for r in self.trust.revocations.revoked}
        if not revoked:
            return set()
        names = LISTINGS.names(self.folder / self.fmt / "keys" / self.me_id)
        return {int(m.group(1)) for n in names
                if (m := _SEALED.match(n)) is not None and m.group(2) in revoked}

    def revoke(self, device_id: str, after_seq: int, ops: Iterable[Op],
               covers: Mapping[str, Cursor]) -> Rotation:
        """Revoke a lost device: a new signed revocation list (its segments after
        ``after_seq`` are refused everywhere), then a rotation sealed for the others only."""
        if not self.founder:
            raise SyncRefused("only the founding device revokes")
        if device_id == self.me_id:
            raise SyncRefused("the founding device cannot revoke itself")
        self.trust.certificate(device_id)  # unknown device: SyncRefused
        old = self.trust.revocations
        if old.of(device_id) is None:
            revs = sign_revocations(self.me, self.trust.vault_id, old.version + 1,
                                    [*old.revoked,
                                     Revocation(device_id, int(self.clock()), after_seq)])
            self._publisher().publish_revocations(revs)
            self.db.write_sync(lambda c: self.rows.put_revocations(c, revs.version,
                                                                   revs.to_bytes()))
            self.trust.set_revocations(revs)
        return self.rotate(ops, covers)

    # moving and acknowledging ---------------------------------------------------------------
    def pending_snapshot(self) -> Snapshot | None:
        """The founder's newest snapshot under an epoch newer than the one this device moved
        to: the engine applies its ops (and ``cursors_after``) before ``acknowledge``."""
        moved = self.db.read(self.rows.moved)
        snap = latest_snapshot(self._reader(), 0 if moved is None else moved[0])
        self._ready = snap
        return snap

    def write_key(self) -> EpochKey | None:
        """The key this device writes its segments under: the epoch it moved to (None before
        its first acknowledgement)."""
        moved = self.db.read(self.rows.moved)
        held = self.held()
        if moved is None or moved[0] not in held:
            return None
        return EpochKey(moved[0], held[moved[0]])

    def acknowledge(self, applied: Mapping[str, int], next_seq: int) -> Ack | None:
        """Move to the epoch of the snapshot ``pending_snapshot`` handed out (which the caller
        applied) and say so; else say how far this device applied, if that changed and the
        last acknowledgement is a minute old (``policy.SYNC_ACK_EVERY_S``). ``applied``: per
        device, the last sequence applied (after the snapshot); ``next_seq``: the sequence this
        device writes next. Returns the acknowledgement written, or None.

        A device never moves to a key alone: the key may arrive before its snapshot, and
        whatever it wrote under the new key before applying the snapshot's forgets would
        outlive the old key. Only a vault whose founder never wrote a snapshot (no rotation at
        all) moves to its first key without one."""
        held = self.held()
        now = self.clock()
        moved = self.db.read(self.rows.moved)
        last = self.db.read(self.rows.last_ack)
        seen = {d: s for d, s in applied.items() if d != self.me_id}
        ready = self._ready
        covers: dict[str, int] = {}
        if (ready is not None and ready.epoch in held
                and (moved is None or ready.epoch > moved[0])):
            epoch, from_seq = ready.epoch, max(1, next_seq)
            covers = {d: c.last_seq for d, c in ready.covers.items()}
        elif moved is None and held and not self._founder_snapshots():
            epoch, from_seq = min(held), max(1, next_seq)
        elif moved is not None and moved[0] in held:
            if seen == self._last_applied or (
                    last is not None and now - last[2] < policy.SYNC_ACK_EVERY_S):
                return None
            epoch, from_seq = moved
        else:
            return None
        if moved is None or epoch != moved[0]:
            self.db.write_sync(lambda c: self.rows.put_moved(
                c, epoch, from_seq, now, canonical(dict(sorted(covers.items()))).decode()))
            self._ready = None
        n = max(last[0] if last else 0, self._last_ack_in_folder()) + 1
        ack = Ack(self.me_id, n, epoch, from_seq,
                  {**seen, self.me_id: max(0, next_seq - 1)}, int(now))
        self._publisher().write_ack(n, ack.body(), EpochKey(epoch, held[epoch]))
        self.db.write_sync(lambda c: self.rows.put_ack(c, n, epoch, now))
        self._last_applied = seen
        return ack

    def _founder_snapshots(self) -> bool:
        return any(_SNAP.match(n) for n in LISTINGS.names(
            self.folder / self.fmt / "snap" / self.trust.founder_id))

    def _last_ack_in_folder(self) -> int:
        where = self.folder / self.fmt / "ack" / self.me_id
        return max((int(n) for n in LISTINGS.names(where) if _ACK.match(n)), default=0)

    def acks(self) -> dict[str, Ack]:
        """Each device's latest acknowledgement this device can open. Decrypted again only
        when a directory under ``ack/`` changed or the keys held did (``Listings.token``: files
        are written once, so the same names hold the same bytes); an idle tick read and
        decrypted every device's acknowledgement once per recent forget before (p90 of an
        idle tick 9-13 ms, docs/sync.md)."""
        held = self.held()
        proof = self._ack_proof(held)
        cached = self._acks
        if proof is not None and cached is not None and cached[0] == proof:
            return dict(cached[1])
        found = read_acks(FolderReader(self.folder, self.me_id, self.trust, held, {},
                                       self.fmt))
        self._acks = None if proof is None else (proof, found)
        return dict(found)

    def _ack_proof(self, held: Mapping[int, bytes]) -> Any:
        base = self.folder / self.fmt / "ack"
        top = LISTINGS.token(base)
        if top is None:
            return None
        proof: list[Any] = [top, tuple(sorted(held)),
                            self.trust.revocations.version, len(self.trust.devices())]
        for device in LISTINGS.names(base):
            token = LISTINGS.token(base / device)
            if token is None:
                return None
            proof.append((device, token))
        return tuple(proof)

    # destruction ---------------------------------------------------------------------------
    def destroy(self, source: OpSource | None = None) -> int:
        """Destroy the keys of every epoch below the one all active devices moved to, once each
        has read the others' older segments (``destroy_below``); returns how many keys went.
        The founder first writes a snapshot under the kept epoch covering what it applied
        (``source()``: its ops and cursors), so a device paired later can start from it."""
        below = destroy_below(self.trust, self.acks())
        if below is None:
            return 0
        held = self.held()
        if not any(e < below for e in held):
            return 0
        if self.founder and source is not None and below in held:
            ops, covers = source()
            write_snapshot(self.folder, self.me, self.trust.vault_id,
                           EpochKey(below, held[below]), covers, ops, self.fmt)
        now = self.clock()
        n = self.db.write_sync(lambda c: self.rows.destroy_epoch_keys(c, below, now))
        if n:
            self.db.checkpoint()  # no WAL frame keeps a page that held the old key
        return n

    def progress(self, device: str, seq: int) -> ForgetProgress:
        """``forget_progress`` of the forget in ``device``'s segment ``seq``. Its old copies
        are closed once this device moved to an epoch whose snapshot covered that segment (so
        the snapshot holds the forget, and nothing about the memory is written under that
        key by anyone) and holds no key of an older epoch."""
        held = self.held()
        low = min(held, default=0)
        covered = self.db.read(self.rows.moved_covers)
        closed = bool(held) and any(
            e <= low and int(json.loads(c).get(device, 0)) >= seq for e, c in covered.items())
        return forget_progress(self.trust, self.acks(), self.me_id, device, seq, closed)
