"""This vault's devices: set sync up, pair a device, say who is there, revoke one (issue 29,
items 5-6). Layer: app (a service over the vault's sync key rows and the sync folder). Runs on:
the caller's thread (a worker of the window, the CLI, the owner's socket handler); every vault
write is one ``Database.write_sync`` transaction.

What lives where: this device's secret, the certificates it verified, the revocation list and
the epoch keys are in the vault (``storage/sync_keys.py``, migration 0029); the folder path is
the setting ``sync.folder``; an open pairing's SPAKE2 state is in memory only (a pairing ends
with the process). Only the founding device (the one that set sync up) can pair or revoke: it
alone signs certificates and revocation lists (docs/sync.md#the-keys).
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from app import ports
from app.api import PairInvite, PairStep, SyncDeviceRow, SyncStatus
from app.errors import AppError, ValidationError
from app.sync.folder import (
    FORMAT,
    ROOT_PREFIX,
    AlreadyWritten,
    FolderReader,
    FolderWriter,
    read_root,
    seq_name,
)
from app.sync.keys import (
    Certificate,
    DeviceSecret,
    EpochKey,
    SyncRefused,
    Trust,
    device_id_of,
    issue_certificate,
    load_trust,
    new_vault_id,
    seal_epoch_key,
)
from app.sync.pairing import Code, Inviter, Joiner, PairingFailed, WrongCode
from app.sync.segments import Cursor
from app.sync.succession import appoint_first
from app.validation import check_string

log = logging.getLogger(__name__)

NAME_CHARS = 40
_STRICT = re.compile(r"^[0-9a-f]{32}$")


class SyncNotSetUp(AppError):
    user_message = "This device does not sync yet."
    hint = "Set sync up in Settings > Devices, or with `kept sync pair --folder FOLDER`."
    exit_code = 2


class NotFounder(AppError):
    user_message = ("Only the founder (the device that set sync up, or the one that took "
                    "over from it) can pair, remove or name devices: it alone signs who "
                    "belongs. Settings > Devices says which device it is.")
    exit_code = 2


class NotSuccessor(AppError):
    user_message = ("Only the device the founder named as its successor can take over. "
                    "The founder names it in Settings > Devices.")
    exit_code = 2


class KeyRows(Protocol):
    """``storage/sync_keys.py`` (migration 0029)."""

    def put_self(self, conn: ports.Connection, vault_id: str, device_id: str, secret: bytes,
                 name: str, founder_key: bytes, now: float) -> None: ...
    def get_self(self, conn: ports.Connection) -> tuple[str, str, bytes, str, bytes] | None: ...
    def put_device(self, conn: ports.Connection, device_id: str, certificate: bytes,
                   now: float) -> None: ...
    def devices(self, conn: ports.Connection) -> list[tuple[str, bytes, float | None]]: ...
    def put_revocations(self, conn: ports.Connection, version: int, body: bytes) -> bool: ...
    def revocations(self, conn: ports.Connection) -> bytes | None: ...
    def put_epoch_key(self, conn: ports.Connection, epoch: int, key: bytes,
                      now: float) -> None: ...
    def epoch_keys(self, conn: ports.Connection) -> dict[int, bytes]: ...
    def cursors(self, conn: ports.Connection) -> dict[str, tuple[int, bytes]]: ...
    def put_takeover(self, conn: ports.Connection, generation: int, record: bytes,
                     now: float) -> None: ...
    def takeovers(self, conn: ports.Connection) -> list[bytes]: ...
    def put_successor(self, conn: ports.Connection, generation: int, version: int,
                      record: bytes) -> bool: ...
    def successor(self, conn: ports.Connection) -> bytes | None: ...


def check_device_name(name: str) -> str:
    name = check_string(name, "The device name", limit=NAME_CHARS).strip()
    if not name:
        raise ValidationError("The device name is empty.")
    return name


class SyncDevices:
    """Built once per unlocked vault by the facade. Thread-safe: the open pairing is guarded by
    a lock; the rest is one read or one write per call."""

    def __init__(self, db: ports.Database, keys: KeyRows, *, folder: Callable[[], str],
                 save_folder: Callable[[ports.Connection, str], None],
                 unsent: Callable[[], int], now: Callable[[], float]) -> None:
        self._db, self._keys = db, keys
        self._folder, self._save_folder = folder, save_folder
        self._unsent, self._now = unsent, now
        self._lock = threading.Lock()
        self._inviter: Inviter | None = None
        self._joiner: Joiner | None = None

    # --- what the vault holds -----------------------------------------------------------
    def _me(self) -> tuple[str, DeviceSecret, str, bytes]:
        me = self._db.read(self._keys.get_self)
        if me is None:
            raise SyncNotSetUp()
        vault_id, _device, secret, name, founder_key = me
        return vault_id, DeviceSecret.from_bytes(secret), name, founder_key

    def _trust(self, vault_id: str, founder_key: bytes) -> Trust:
        certs = self._db.read(self._keys.devices)
        return load_trust(vault_id, founder_key, [c for _d, c, _s in certs],
                          self._db.read(self._keys.revocations),
                          self._db.read(self._keys.takeovers),
                          self._db.read(self._keys.successor))

    def _folder_path(self) -> Path:
        text = self._folder()
        if not text:
            raise SyncNotSetUp()
        return Path(text)

    # --- status ------------------------------------------------------------------------
    def status(self) -> SyncStatus:
        me = self._db.read(self._keys.get_self)
        if me is None:
            return SyncStatus(set_up=False, pairing=self._pairing_words())
        vault_id, device_id, _secret, _name, founder_key = me
        folder = Path(self._folder())
        trust = self._trust(vault_id, founder_key)
        heir = trust.successor.device_id if trust.successor is not None else ""
        cursors = self._db.read(self._keys.cursors)
        found = _holds_root(folder, vault_id)
        rows = []
        for cert in trust.devices():
            mine = cert.device_id == device_id
            if mine:
                waiting = self._unsent()
            else:
                waiting = _waiting(folder, cert.device_id, cursors.get(cert.device_id, (0,))[0])
            rows.append(SyncDeviceRow(
                cert.device_id, cert.name, mine, cert.device_id == trust.founder_id,
                trust.revocations.of(cert.device_id) is not None,
                _last_seen(folder, cert.device_id) if found else None, waiting,
                heir == cert.device_id))
        rows.sort(key=lambda r: (not r.this_device, r.revoked, r.name.casefold(), r.device_id))
        return SyncStatus(True, str(folder), found, vault_id, device_id,
                          device_id == trust.founder_id, tuple(rows), self._pairing_words(),
                          heir == device_id)

    def _pairing_words(self) -> str:
        inv, join = self._inviter, self._joiner
        if inv is not None and inv.closed is None:
            return "A pairing code is waiting for the new device."
        if join is not None:
            return "Waiting for the device that set sync up to answer."
        return ""

    # --- set up (this device founds the vault's sync) -----------------------------------
    def set_up(self, folder: Path, name: str) -> SyncStatus:
        name = check_device_name(name or "computer 1")
        if self._db.read(self._keys.get_self) is not None:
            raise ValidationError("This device already syncs. Its devices are in Settings > "
                                  "Devices (`kept sync status`).")
        folder = _existing_folder(folder)
        if any(p.name.startswith(ROOT_PREFIX) for p in folder.iterdir()):
            raise ValidationError("This folder already holds another device's Kept sync. To "
                                  "join it, pair this device with a code from that one.")
        me, vault_id, now = DeviceSecret.generate(), new_vault_id(), self._now()
        writer = FolderWriter(folder, me, vault_id, Cursor(me.device_id))
        cert = issue_certificate(me, vault_id, me.sign_public, me.box_public, name, int(now))
        first = EpochKey.generate(1)
        writer.write_root(int(now))
        writer.publish_certificate(cert)

        def run(conn: ports.Connection) -> None:
            self._keys.put_self(conn, vault_id, me.device_id, me.to_bytes(), name,
                                me.sign_public, now)
            self._keys.put_device(conn, me.device_id, cert.to_bytes(), now)
            self._keys.put_epoch_key(conn, first.epoch, first.key, now)
            self._save_folder(conn, str(folder))
        self._db.write_sync(run)
        log.info("sync set up: device %s", me.device_id[:8])
        return self.status()

    # --- pairing ------------------------------------------------------------------------
    def invite(self) -> PairInvite:
        vault_id, me, _name, founder_key = self._me()
        if me.device_id != self._trust(vault_id, founder_key).founder_id:
            raise NotFounder()
        folder = self._folder_path()
        if not _holds_root(folder, vault_id):
            raise ValidationError(f"The sync folder is missing or not this vault's: {folder}.")
        with self._lock:
            if self._inviter is not None:
                self._inviter.cancel()
            inv = Inviter(folder, me, vault_id, self._now())
            self._inviter = inv
        return PairInvite(inv.code.shown(), inv.code.qr_text(vault_id), inv.expires_at,
                          inv.tries)

    def join(self, folder: Path, code: str, name: str) -> PairStep:
        parsed = Code.parse(code)
        if self._db.read(self._keys.get_self) is not None:
            raise ValidationError("This device already syncs; a device joins only once.")
        folder = _existing_folder(folder)
        if not name:
            name = f"computer {_certified(folder) + 1}"
        name = check_device_name(name)
        joiner = Joiner(folder, parsed, name, self._now())
        with self._lock:
            self._joiner = joiner
        return self.step()

    def step(self) -> PairStep:
        """Advance the open pairing (this device's side of it) by one look at the folder."""
        with self._lock:
            if self._inviter is not None:
                return self._step_inviter(self._inviter)
            if self._joiner is not None:
                return self._step_joiner(self._joiner)
        return PairStep("closed", "No pairing is open.")

    def _step_inviter(self, inv: Inviter) -> PairStep:
        try:
            joined = inv.poll(self._now(), self._admit)
        except WrongCode as e:
            if e.tries_left == 0:
                self._inviter = None
                return PairStep("closed", e.user_message)
            return PairStep("refused", "The new device typed a code that does not match. "
                            f"It can try again ({e.tries_left} left).", tries_left=e.tries_left)
        except PairingFailed as e:
            self._inviter = None
            return PairStep("closed", e.user_message)
        if joined is None:
            return PairStep("waiting", "Waiting for the new device (type the code there).",
                            tries_left=inv.tries - inv.n + 1)
        self._inviter = None
        name = joined.certificate.name
        return PairStep("joined", f"{name} joined. It now receives your memories through the "
                        "sync folder.", name)

    def _admit(self, sign_public: bytes, box_public: bytes, name: str) -> Certificate:
        """The founder's part once the code matched: certify the device, seal every epoch key
        still held for it, publish both, keep the certificate."""
        vault_id, me, _n, founder_key = self._me()
        if device_id_of(sign_public) in {d for d, _c, _s in self._db.read(self._keys.devices)}:
            raise PairingFailed("That device is already one of this vault's devices.")
        try:
            name = check_device_name(name)
        except ValidationError:
            name = "new device"
        now = self._now()
        cert = issue_certificate(me, vault_id, sign_public, box_public, name, int(now))
        writer = FolderWriter(self._folder_path(), me, vault_id, Cursor(me.device_id))
        writer.publish_certificate(cert)
        for epoch, key in sorted(self._db.read(self._keys.epoch_keys).items()):
            try:
                writer.publish_sealed(seal_epoch_key(me, vault_id, EpochKey(epoch, key), cert))
            except AlreadyWritten:
                pass  # sealed for this device once already (a retried admit)
        self._db.write_sync(lambda c: self._keys.put_device(c, cert.device_id, cert.to_bytes(),
                                                            now))
        # The first other device to join is named the founder's successor (changeable):
        # without one, losing this device would leave nobody to pair, rotate or revoke.
        trust = self._trust(vault_id, founder_key)
        try:
            appoint_first(self._db, self._keys, self._folder_path(), me, trust, now)
        except (SyncRefused, AlreadyWritten, OSError) as e:
            log.warning("sync: no successor named (%s)", type(e).__name__)
        log.info("sync: device %s paired", cert.device_id[:8])
        return cert

    def _step_joiner(self, joiner: Joiner) -> PairStep:
        try:
            welcome = joiner.poll(self._now())
        except WrongCode as e:
            self._joiner = None
            if e.tries_left == 0:
                return PairStep("closed", e.user_message)
            return PairStep("refused", e.user_message, tries_left=e.tries_left)
        except PairingFailed as e:
            self._joiner = None
            return PairStep("closed", e.user_message)
        if welcome is None:
            return PairStep("waiting", "Waiting for the device that set sync up to answer "
                            "(keep Kept open there).")
        trust = Trust(welcome.root.vault_id, welcome.root.founder_key)
        reader = FolderReader(joiner.folder, joiner.secret.device_id, trust, {}, {})
        reader.load_trust()  # the founders' chain first: the welcome is the current founder's
        trust.add_certificate(welcome.certificate)
        keys = reader.sealed_for(joiner.secret)
        now = self._now()
        revs = trust.revocations
        heir = trust.successor

        def run(conn: ports.Connection) -> None:
            self._keys.put_self(conn, welcome.root.vault_id, joiner.secret.device_id,
                                joiner.secret.to_bytes(), joiner.name, welcome.root.founder_key,
                                now)
            for t in trust.takeovers:
                self._keys.put_takeover(conn, t.generation, t.to_bytes(), now)
            if heir is not None:
                self._keys.put_successor(conn, heir.generation, heir.version, heir.to_bytes())
            for cert in trust.devices():
                self._keys.put_device(conn, cert.device_id, cert.to_bytes(), now)
            if revs.version > 0:
                self._keys.put_revocations(conn, revs.version, revs.to_bytes())
            for key in keys.values():
                self._keys.put_epoch_key(conn, key.epoch, key.key, now)
            self._save_folder(conn, str(joiner.folder))
        self._db.write_sync(run)
        self._joiner = None
        log.info("sync: joined as device %s", joiner.secret.device_id[:8])
        return PairStep("joined", "This device joined. Your memories arrive through the sync "
                        "folder.", joiner.name)

    def cancel(self) -> None:
        with self._lock:
            if self._inviter is not None:
                self._inviter.cancel()
            self._inviter = self._joiner = None

    # --- revoke -------------------------------------------------------------------------
    def revoke(self, device_id: str) -> SyncStatus:
        vault_id, me, _name, founder_key = self._me()
        trust = self._trust(vault_id, founder_key)
        if me.device_id != trust.founder_id:
            raise NotFounder()
        if device_id == me.device_id:
            raise ValidationError("This device set sync up and cannot remove itself.")
        try:
            trust.certificate(device_id)
        except SyncRefused:
            raise ValidationError("No device with that id syncs with this vault.") from None
        if trust.revocations.of(device_id) is not None:
            raise ValidationError("That device was already removed.")
        last_seq = self._db.read(self._keys.cursors).get(device_id, (0,))[0]
        # The signed list (published, kept), then a new epoch key sealed for the others only,
        # with the snapshot of every op merged here (docs/sync.md#epochs).
        from app.sync.engine import rotate_without
        rotation = rotate_without(self._db, self._folder_path(), device_id, last_seq,
                                  self._now)
        # The successor removed: name another, so losing this device still leaves one.
        try:
            appoint_first(self._db, self._keys, self._folder_path(), me,
                          self._trust(vault_id, founder_key), self._now())
        except (SyncRefused, AlreadyWritten, OSError) as e:
            log.warning("sync: no successor named (%s)", type(e).__name__)
        log.info("sync: device %s revoked after seq %d; epoch %d", device_id[:8], last_seq,
                 rotation.epoch)
        return self.status()


    # --- succession (docs/sync.md#a-successor-founder) --------------------------------
    def name_successor(self, device_id: str) -> SyncStatus:
        """The founder names another device to take over if this one is lost."""
        vault_id, me, _name, founder_key = self._me()
        trust = self._trust(vault_id, founder_key)
        if me.device_id != trust.founder_id:
            raise NotFounder()
        if device_id == me.device_id:
            raise ValidationError("This device is the founder; name another device.")
        try:
            trust.certificate(device_id)
        except SyncRefused:
            raise ValidationError("No device with that id syncs with this vault.") from None
        if trust.revocations.of(device_id) is not None:
            raise ValidationError("That device was removed; name another.")
        from app.sync.succession import appoint
        appoint(self._db, self._keys, self._folder_path(), me, trust, device_id, self._now())
        log.info("sync: successor named: %s", device_id[:8])
        return self.status()

    def take_over(self) -> SyncStatus:
        """This device, the named successor, becomes the founder: the lost founder is
        removed, a new key goes to the others, and pairing and removing work from here."""
        vault_id, me, _name, founder_key = self._me()
        folder = self._folder_path()
        trust = self._trust(vault_id, founder_key)
        FolderReader(folder, me.device_id, trust, {}, {}).load_trust()  # the newest word
        if me.device_id == trust.founder_id:
            raise ValidationError("This device is the founder already.")
        if trust.successor is None or trust.successor.device_id != me.device_id:
            raise ValidationError(NotSuccessor.user_message)
        from app.sync.engine import take_over_without
        rotation = take_over_without(self._db, folder, self._now)
        log.info("sync: took over as founder; epoch %d", rotation.epoch)
        return self.status()


# --- the folder, read cheaply -------------------------------------------------------------
def _existing_folder(folder: Path) -> Path:
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise ValidationError(f"No folder at {folder}. Pick the folder your sync tool shares "
                              "(Syncthing, Dropbox, Nextcloud...).")
    return folder.resolve()


def _holds_root(folder: Path, vault_id: str) -> bool:
    try:
        return read_root((folder / f"{ROOT_PREFIX}{FORMAT}").read_bytes()).vault_id == vault_id
    except (OSError, SyncRefused):
        return False


def _names(path: Path) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def _certified(folder: Path) -> int:
    """How many devices the folder's founders have certified (to name a new device)."""
    try:
        root = read_root((folder / f"{ROOT_PREFIX}{FORMAT}").read_bytes())
    except (OSError, SyncRefused):
        return 0
    trust = Trust(root.vault_id, root.founder_key)
    FolderReader(folder, "0" * 32, trust, {}, {}).load_trust()
    return len(trust.devices())


def _last_seen(folder: Path, device_id: str) -> float | None:
    """When the newest file ``device_id`` wrote in the folder was written: its newest segment,
    acknowledgement and snapshot (by name: numbers only grow), and what it published."""
    base = folder / FORMAT
    newest: float | None = None
    for kind, every in (("log", False), ("ack", False), ("snap", False), ("certs", True),
                        ("revoked", True), ("keys", True)):
        names = [n for n in _names(base / kind / device_id) if n[:1].isdigit()]
        for n in (names if every else sorted(names)[-1:]):
            try:
                t = (base / kind / device_id / n).stat().st_mtime
            except OSError:
                continue
            newest = t if newest is None else max(newest, t)
    return newest


def _waiting(folder: Path, device_id: str, applied: int) -> int:
    """Segments of ``device_id`` in the folder past the last one applied here."""
    return sum(1 for n in _names(folder / FORMAT / "log" / device_id)
               if len(n) == len(seq_name(0)) and n.isdigit() and int(n) > applied)

