"""A successor founder (issue 29): how a synced vault survives losing its founding device.
Layer: app (records and files over ``app/sync/keys.py`` and the sync folder; no network).
Runs on: the caller's thread (the sync engine's, or a worker of the window or the CLI).

The founding device alone certifies, revokes and makes epoch keys (docs/sync.md#the-keys). So
that losing it does not freeze the vault:

1. **The founder names a successor** (``appoint``): a ``Successor`` record it signs, in
   ``v1/successor/<founder>/<version>``, kept in every device's vault (migration 0040). It
   is written when the first other device joins (``SyncDevices`` pairing), and the person
   can name another at any time (a higher version voids the older ones).
2. **The successor takes over** (``take_over``), when the person on it says the founder is
   lost: a ``Takeover`` record it signs, carrying the founder's delegation, a revocation list
   one version up that revokes the lost founder (its segments past the last one applied
   here are refused), and the digests of the certificates it carries over; in a new file
   ``v1/founders/<successor>/<generation>`` (the root file is never rewritten). Then a new
   epoch key sealed for the remaining devices only, with its snapshot, so forget-for-good
   goes on without the lost device and its keys open nothing new; then it names its own
   successor (the first other active device).

The trust rule (``Trust.accept_takeover``): a device accepts a founder change only if the
delegation inside it verifies under the key of the founder it trusts now, for this
generation, is not older than the newest delegation it holds, names a device not revoked,
and the record is signed by the named device. A folder host cannot forge it (no founder's
key); a device cannot name itself (its own signature is not the founder's); a former
founder's signature counts for nothing once it is replaced (its later certificates, lists,
keys and delegations are of a generation that is over).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Protocol

from app import ports
from app.sync.epochs import EpochKeeper, Rotation
from app.sync.folder import EPOCH_DIGITS, FORMAT, AlreadyWritten, FolderWriter
from app.sync.keys import (
    DeviceSecret,
    Successor,
    SyncRefused,
    Takeover,
    Trust,
    name_successor,
    take_over_record,
)
from app.sync.ops import Op
from app.sync.segments import Cursor


class SuccessionRows(Protocol):
    """``storage/sync_keys.py`` (migration 0040)."""

    def put_takeover(self, conn: ports.Connection, generation: int, record: bytes,
                     now: float) -> None: ...
    def put_successor(self, conn: ports.Connection, generation: int, version: int,
                      record: bytes) -> bool: ...
    def put_revocations(self, conn: ports.Connection, version: int, body: bytes) -> bool: ...


def _next_version(folder: Path, me: str, trust: Trust, fmt: str = FORMAT) -> int:
    """One above every successor record this founder holds or finds under its name."""
    try:
        names = os.listdir(folder / fmt / "successor" / me)
    except FileNotFoundError:
        names = []
    found = [int(n) for n in names if len(n) == EPOCH_DIGITS and n.isdigit()]
    held = trust.successor.version if trust.successor is not None else 0
    return max([held, *found]) + 1


def appoint(db: ports.Database, rows: SuccessionRows, folder: Path, me: DeviceSecret,
            trust: Trust, device_id: str, now: float) -> Successor:
    """The founder names ``device_id`` (certified, not revoked, not itself) its successor:
    published, kept in the vault and in ``trust``."""
    if trust.founder_id != me.device_id:
        raise SyncRefused("only the founding device names a successor")
    if device_id == me.device_id:
        raise SyncRefused("the founding device cannot be its own successor")
    cert = trust.certificate(device_id)
    if trust.revocations.of(device_id) is not None:
        raise SyncRefused("revoked device")
    rec = name_successor(me, trust.vault_id, trust.generation,
                         _next_version(folder, me.device_id, trust), cert, int(now))
    FolderWriter(folder, me, trust.vault_id, Cursor(me.device_id)).publish_successor(rec)
    db.write_sync(lambda c: rows.put_successor(c, rec.generation, rec.version, rec.to_bytes()))
    trust.set_successor(rec)
    return rec


def appoint_first(db: ports.Database, rows: SuccessionRows, folder: Path, me: DeviceSecret,
                  trust: Trust, now: float) -> Successor | None:
    """Name the first other active device (by name) when no successor is named yet, or the
    one named was removed since."""
    heir = trust.successor
    if trust.founder_id != me.device_id or (
            heir is not None and trust.revocations.of(heir.device_id) is None):
        return None
    others = sorted((c for c in trust.active() if c.device_id != me.device_id),
                    key=lambda c: (c.name.casefold(), c.device_id))
    if not others:
        return None
    return appoint(db, rows, folder, me, trust, others[0].device_id, now)


def take_over(db: ports.Database, rows: SuccessionRows, keeper: EpochKeeper, folder: Path,
              ops: Iterable[Op], covers: Mapping[str, Cursor],
              clock: Callable[[], float]) -> Rotation:
    """This device, the named successor, becomes the founder: the takeover record (the lost
    founder revoked after the last of its segments applied here), kept; a rotation sealed for
    the remaining devices; then its own successor named."""
    trust, me = keeper.trust, keeper.me
    if trust.founder_id == me.device_id:
        raise SyncRefused("this device is the founder already")
    heir = trust.successor
    if heir is None or heir.device_id != me.device_id:
        raise SyncRefused("this device is not the named successor")
    now = clock()
    lost = trust.founder_id
    after = covers.get(lost, Cursor(lost)).last_seq
    rec = take_over_record(me, heir, trust.devices(), trust.revocations, after, int(now))
    writer = FolderWriter(folder, me, trust.vault_id, Cursor(me.device_id))
    try:
        writer.publish_takeover(rec)
    except AlreadyWritten:  # a takeover cut short: the one in the folder stands
        path = folder / FORMAT / "founders" / me.device_id / f"{rec.generation:0{EPOCH_DIGITS}d}"
        rec = Takeover.from_bytes(path.read_bytes())
    trust.accept_takeover(rec)
    try:
        writer.publish_revocations(rec.revocations)
    except AlreadyWritten:
        pass

    def keep(conn: ports.Connection) -> None:
        rows.put_takeover(conn, rec.generation, rec.to_bytes(), now)
        rows.put_revocations(conn, rec.revocations.version, rec.revocations.to_bytes())
    db.write_sync(keep)
    rotation = keeper.rotate(ops, covers)
    appoint_first(db, rows, folder, me, trust, now)
    return rotation
