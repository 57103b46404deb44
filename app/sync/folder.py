"""The sync folder contract (issue 29, item 1): write-once files per device, no locks.
Layer: app (file I/O in a folder the person's sync tool moves; no network). Runs on: the sync
job's thread.

Layout (docs/sync.md#the-folder)::

    kept-sync-root.v1           the founder's signed root: format "v1", vault id, founder key
    v1/log/<device>/<seq>       a device's segments, seq zero-padded to 12 digits
    v1/snap/<device>/<epoch>-<seq>   compacted snapshots (epoch 8 digits, seq 12)
    v1/ack/<device>/<n>         a device's acknowledgements (encrypted like segments)
    v1/certs/<founder>/<device> certificates the founder issued
    v1/revoked/<founder>/<version>  revocation lists (a new version is a new file)
    v1/keys/<sender>/<epoch>-<recipient>  epoch keys sealed for one device
    v1/successor/<founder>/<version>  the founder's successor (a new version is a new file)
    v1/founders/<device>/<generation>  a successor's takeover (the founder from then on)

Rules every writer keeps: a device writes only under its own id (the founder also under
certs/, revoked/ and successor/, a successor under founders/, each under its own id); a file is written once under a temporary name, fsynced, linked or renamed
to its final name (never over an existing file), and the directory fsynced; nothing is
rewritten or deleted by the format (old epochs go when their key is destroyed, not by deleting
files). A newer format writes ``kept-sync-root.v2`` and a ``v2/`` subtree beside ``v1/``
instead of converting files in place (Joplin's in-place upgrade and lock file broke on
file-sync tools; there is no lock here at all).

Readers trust names only when they match the strict patterns below; everything else (conflict
copies of Syncthing, Dropbox, Nextcloud/ownCloud, OneDrive, iCloud; temporary and partial
downloads; ``.stversions`` and other dot-folders) is skipped and only counted.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.sync.keys import (
    Certificate,
    DeviceSecret,
    EpochKey,
    Revocations,
    SealedKey,
    SignedRecord,
    Successor,
    SyncRefused,
    Takeover,
    Trust,
    canonical,
    device_id_of,
    open_sealed,
    verify_signature,
)
from app.sync.segments import (
    GENESIS,
    Cursor,
    Kind,
    Segment,
    Verdict,
    check_chain,
    decode_segment,
    encode_segment,
    read_header,
)
from app.sync.watch import LISTINGS

FORMAT = "v1"
ROOT_PREFIX = "kept-sync-root."
SEQ_DIGITS = 12
EPOCH_DIGITS = 8
_DEVICE = re.compile(r"^[0-9a-f]{32}$")
_SEQ = re.compile(r"^[0-9]{12}$")
_SNAP = re.compile(r"^([0-9]{8})-([0-9]{12})$")
_SEALED = re.compile(r"^([0-9]{8})-([0-9a-f]{32})$")
_VERSION = re.compile(r"^[0-9]{8}$")
_ROOT = re.compile(r"^kept-sync-root\.v([0-9]{1,4})$")

# Names that sync tools make, by what they are (checked against each tool's documentation):
# - Syncthing: "<name>.sync-conflict-YYYYMMDD-HHMMSS-<7-char device>" conflict copies,
#   ".syncthing.<name>.tmp" / "~syncthing~<name>.tmp" partial downloads, ".stversions/"
#   versioning, ".stfolder" marker.
# - Dropbox: "<name> (<who>'s conflicted copy YYYY-MM-DD)", "(Case Conflict)",
#   "(Selective Sync Conflict)"; ".dropbox.cache/" staging.
# - Nextcloud desktop: "<name> (conflicted copy YYYY-MM-DD HHMMSS)"; ownCloud before 2.5
#   "<name>_conflict-YYYYMMDD-HHMMSS"; ".<name>.~<hex>" partial downloads; "._sync_*.db".
# - OneDrive: "<name>-<COMPUTERNAME>" when two machines change one file.
# - iCloud Drive: "<name> 2" duplicates, ".<name>.icloud" not-yet-downloaded placeholders.
# - Google Drive: ".tmp.drivedownload/", ".tmp.driveupload/"; Resilio: "<name>.!sync".
CONFLICT = re.compile(
    r"\.sync-conflict-\d{8}-\d{6}|conflicted copy|\((?:Case|Selective Sync) Conflict\)"
    r"|_conflict-\d{8}-\d{6}|^[0-9]{8,12}(?:-[0-9]{12})?-[A-Za-z0-9][A-Za-z0-9_-]*$"
    r"|^[0-9]{8,12}(?:-[0-9]{12})? \d+$", re.I)
TEMP = re.compile(r"^\.syncthing\..*\.tmp$|^~syncthing~.*\.tmp$|^\..*\.~[0-9a-f]+$|\.icloud$"
                  r"|\.!sync$|^\.tmp-.*\.partial$|\.part$|\.tmp$|^~", re.I)


def classify(name: str) -> str:
    """Why a name under the folder is not ours: "conflict", "temp", "hidden" or "other"."""
    if CONFLICT.search(name):
        return "conflict"
    if TEMP.search(name):
        return "temp"
    if name.startswith("."):
        return "hidden"
    return "other"


def seq_name(seq: int) -> str:
    return f"{seq:0{SEQ_DIGITS}d}"


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # Windows cannot open a directory; its rename is durable enough there
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class AlreadyWritten(SyncRefused):
    user_message = "Kept tried to write a sync file that already exists; nothing was overwritten."


def write_once(path: Path, data: bytes) -> None:
    """Temp name, fsync, link (or rename where links do not exist) to ``path``, fsync the dir.
    Raises ``AlreadyWritten`` and leaves the existing file as it was if ``path`` exists."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        raise AlreadyWritten("file exists")
    tmp = path.with_name(f".tmp-{os.urandom(6).hex()}.partial")
    with open(tmp, "xb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    try:
        try:
            os.link(tmp, path)  # fails if path exists: never over another file
        except FileExistsError:
            raise AlreadyWritten("file exists") from None
        except OSError:  # a file system without hard links (FAT, some network mounts)
            if path.exists():
                raise AlreadyWritten("file exists") from None
            os.rename(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    _fsync_dir(path.parent)


@dataclass(frozen=True)
class Root(SignedRecord):
    """The signed root file: which format, which vault, whose key is the root of trust."""

    format: str
    vault_id: str
    founder_key: bytes
    created_at: int
    signature: bytes = field(repr=False)

    def body(self) -> dict[str, Any]:
        return {"kind": "kept-sync.root", "format": self.format, "vault": self.vault_id,
                "founder": self.founder_key.hex(), "created_at": self.created_at}


def sign_root(founder: DeviceSecret, vault_id: str, created_at: int, fmt: str = FORMAT) -> Root:
    unsigned = Root(fmt, vault_id, founder.sign_public, created_at, b"")
    return Root(fmt, vault_id, founder.sign_public, created_at,
                founder.sign(canonical(unsigned.body())))


def read_root(raw: bytes, founder_key: bytes | None = None) -> Root:
    """Parse and verify a root file (against ``founder_key`` when this device has one)."""
    try:
        d = json.loads(raw.decode("utf-8"))
        root = Root(str(d["format"]), str(d["vault"]), bytes.fromhex(d["founder"]),
                    int(d["created_at"]), bytes.fromhex(d["sig"]))
        if d["kind"] != "kept-sync.root":
            raise ValueError
    except (UnicodeDecodeError, ValueError, KeyError, TypeError):
        raise SyncRefused("bad root file") from None
    if founder_key is not None and root.founder_key != founder_key:
        raise SyncRefused("root file of another founder")
    verify_signature(root.founder_key, root.signature, canonical(root.body()),
                     "root file signature")
    return root


def formats(folder: Path) -> list[int]:
    """The format numbers that have a root file in ``folder``, ascending."""
    if not folder.is_dir():
        return []
    found = (_ROOT.match(p.name) for p in folder.iterdir())
    return sorted(int(m.group(1)) for m in found if m)


class FolderWriter:
    """Appends this device's files. ``cursor`` is this device's own write cursor as saved in
    the vault (``storage/sync_keys.py``): the caller saves ``writer.cursor`` after each append,
    and after a crash calls ``resume`` to adopt files it published but did not save."""

    def __init__(self, folder: Path, device: DeviceSecret, vault_id: str, cursor: Cursor,
                 fmt: str = FORMAT) -> None:
        if cursor.device_id != device.device_id:
            raise ValueError("a writer's cursor is its own device's")
        self.folder, self.device, self.vault_id, self.cursor = folder, device, vault_id, cursor
        self.base = folder / fmt
        self._ack = 0

    def _mine(self, kind: str) -> Path:
        return self.base / kind / self.device.device_id

    def write_root(self, created_at: int) -> Root:
        root = sign_root(self.device, self.vault_id, created_at,
                         self.base.name)
        write_once(self.folder / f"{ROOT_PREFIX}{self.base.name}", root.to_bytes())
        return root

    def append(self, ops: list[dict[str, Any]], key: EpochKey) -> Segment:
        """Write the next segment; returns what a reader will see (its hash is the new
        cursor's)."""
        seq = self.cursor.last_seq + 1
        data = encode_segment(self.device, self.vault_id, key, seq, self.cursor.last_hash, ops)
        write_once(self._mine("log") / seq_name(seq), data)
        seg = _written(data, ops)
        self.cursor = self.cursor.after(seg)
        return seg

    def resume(self, trust: Trust, keys: Mapping[int, bytes]) -> list[Segment]:
        """Segments of this device already in the folder past the saved cursor (a crash after
        the file was renamed and before the cursor was saved): adopt them, in order, so the
        next append does not write a second segment for one sequence."""
        out: list[Segment] = []
        while True:
            path = self._mine("log") / seq_name(self.cursor.last_seq + 1)
            if not path.exists():
                return out
            seg = decode_segment(path.read_bytes(), trust, keys)
            if check_chain(self.cursor, seg) is not Verdict.APPLY:
                raise SyncRefused("this device's own log does not chain")
            self.cursor = self.cursor.after(seg)
            out.append(seg)

    def write_snapshot(self, ops: list[dict[str, Any]], key: EpochKey) -> Path:
        """A compacted snapshot under ``key``, covering this device's log up to its cursor."""
        seq = max(self.cursor.last_seq, 1)
        data = encode_segment(self.device, self.vault_id, key, seq, self.cursor.last_hash, ops,
                              Kind.SNAPSHOT)
        path = self._mine("snap") / f"{key.epoch:0{EPOCH_DIGITS}d}-{seq_name(seq)}"
        write_once(path, data)
        return path

    def write_ack(self, n: int, body: dict[str, Any], key: EpochKey) -> Path:
        """Acknowledgement number ``n`` (what this device applied and which epoch it holds)."""
        data = encode_segment(self.device, self.vault_id, key, n, GENESIS, [body], Kind.ACK)
        path = self._mine("ack") / seq_name(n)
        write_once(path, data)
        return path

    def publish_certificate(self, cert: Certificate) -> Path:
        path = self._mine("certs") / cert.device_id
        write_once(path, cert.to_bytes())
        return path

    def publish_revocations(self, revs: Revocations) -> Path:
        path = self._mine("revoked") / f"{revs.version:0{EPOCH_DIGITS}d}"
        write_once(path, revs.to_bytes())
        return path

    def publish_successor(self, rec: Successor) -> Path:
        path = self._mine("successor") / f"{rec.version:0{EPOCH_DIGITS}d}"
        write_once(path, rec.to_bytes())
        return path

    def publish_takeover(self, rec: Takeover) -> Path:
        path = self._mine("founders") / f"{rec.generation:0{EPOCH_DIGITS}d}"
        write_once(path, rec.to_bytes())
        return path

    def publish_sealed(self, sealed: SealedKey) -> Path:
        path = self._mine("keys") / f"{sealed.epoch:0{EPOCH_DIGITS}d}-{sealed.recipient}"
        write_once(path, sealed.to_bytes())
        return path


def _written(data: bytes, ops: list[dict[str, Any]]) -> Segment:
    head = read_header(data)
    return Segment(Kind(head.kind), head.vault_id, head.device_id, head.epoch, head.seq,
                   head.prev, hashlib.sha256(data).digest(), ops)


@dataclass(frozen=True)
class Finding:
    """Something a scan saw and did not apply. ``what``: "gap" (``seq`` is missing),
    "unreadable" (the file at ``seq`` failed a check: partial, tampered, forged or not for this
    vault; ``reason`` says which; the reader waits there), "rollback", "equivocation" (the
    device is stopped until the person acts), "misnamed" (a valid segment under another
    sequence's name: a replay)."""

    what: str
    device_id: str
    seq: int
    reason: str = ""


@dataclass
class Scan:
    segments: list[Segment] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    ignored: Counter[str] = field(default_factory=Counter)


class FolderReader:
    """Scans the other devices' logs and yields their new segments, per device in sequence
    order from ``cursors`` (as saved in the vault). A segment is yielded once: the reader's
    cursor moves past it, and the caller saves ``reader.cursors`` in the transaction that
    applies the ops, so a crash between the two yields it again rather than losing it."""

    def __init__(self, folder: Path, me: str, trust: Trust, keys: Mapping[int, bytes],
                 cursors: Mapping[str, Cursor], fmt: str = FORMAT) -> None:
        self.folder, self.me, self.trust, self.keys = folder, me, trust, keys
        self.base = folder / fmt
        self.cursors: dict[str, Cursor] = dict(cursors)
        self.stopped: dict[str, Finding] = {}
        self._checked: set[str] = set()  # conflict copies already looked at

    def _names(self, path: Path, pattern: re.Pattern[str], scan: Scan,
               conflicts: list[str] | None = None) -> Iterator[str]:
        for name in LISTINGS.names(path):  # listed again only when the directory changed
            if pattern.match(name):
                yield name
                continue
            why = classify(name)
            scan.ignored[why] += 1
            if why == "conflict" and conflicts is not None:
                conflicts.append(name)

    def devices(self, scan: Scan) -> list[str]:
        return [d for d in self._names(self.base / "log", _DEVICE, scan) if d != self.me]

    def scan(self) -> Scan:
        scan = Scan()
        for device in self.devices(scan):
            if device in self.stopped:
                scan.findings.append(self.stopped[device])
                continue
            self._scan_device(device, scan)
        return scan

    def _scan_device(self, device: str, scan: Scan) -> None:
        where = self.base / "log" / device
        conflicts: list[str] = []
        present = {int(n) for n in self._names(where, _SEQ, scan, conflicts)}
        cursor = self.cursors.get(device, Cursor(device))
        if cursor.last_seq in present:
            self._recheck_last(where, cursor, scan)
        self._check_conflicts(where, cursor, conflicts, scan)
        if device in self.stopped:
            return
        seq = cursor.last_seq + 1
        while True:
            if seq not in present:
                if any(s > seq for s in present):
                    scan.findings.append(Finding("gap", device, seq))
                break
            try:
                seg = decode_segment((where / seq_name(seq)).read_bytes(), self.trust, self.keys)
            except (SyncRefused, OSError) as e:
                scan.findings.append(Finding("unreadable", device, seq,
                                             getattr(e, "reason", type(e).__name__)))
                break
            if seg.device_id != device or seg.seq != seq or seg.kind is not Kind.LOG:
                scan.findings.append(Finding("misnamed", device, seq))
                break
            verdict = check_chain(cursor, seg)
            if verdict is not Verdict.APPLY:
                self._stop(Finding(verdict.value, device, seq), scan)
                break
            cursor = cursor.after(seg)
            self.cursors[device] = cursor
            scan.segments.append(seg)
            seq += 1
        self._check_conflicts(where, cursor, conflicts, scan)

    def _check_conflicts(self, where: Path, cursor: Cursor, names: list[str],
                         scan: Scan) -> None:
        """A sync tool keeps a conflict copy when one file had two versions: never applied,
        but a valid segment of an applied sequence that differs from the file applied there is
        proof of equivocation. Each copy is checked once."""
        for name in names:
            if name in self._checked or not name[:SEQ_DIGITS].isdigit():
                continue
            seq = int(name[:SEQ_DIGITS])
            if seq > cursor.last_seq:
                continue  # checked once that sequence is applied
            self._checked.add(name)
            try:
                seg = decode_segment((where / name).read_bytes(), self.trust, self.keys)
                applied = hashlib.sha256((where / seq_name(seq)).read_bytes()).digest()
            except (SyncRefused, OSError):
                continue
            # Only another log segment of that sequence proves equivocation: an acknowledgement
            # or a snapshot carries a number too (the sync tool may leave any of the device's
            # files under a conflict name), and is no second version of this segment.
            if (seg.kind is Kind.LOG and seg.device_id == cursor.device_id and seg.seq == seq
                    and seg.hash != applied):
                self._stop(Finding(Verdict.EQUIVOCATION.value, cursor.device_id, seq,
                                   "conflict copy"), scan)
                return

    def _recheck_last(self, where: Path, cursor: Cursor, scan: Scan) -> None:
        """The file of the last applied sequence must still be the one applied: a different
        valid segment there is equivocation (a forged or damaged one is only reported)."""
        try:
            data = (where / seq_name(cursor.last_seq)).read_bytes()
        except OSError:
            return
        if hashlib.sha256(data).digest() == cursor.last_hash:
            return
        try:
            seg = decode_segment(data, self.trust, self.keys)
        except SyncRefused as e:
            scan.findings.append(Finding("unreadable", cursor.device_id, cursor.last_seq, e.reason))
            return
        if (seg.kind is Kind.LOG and seg.device_id == cursor.device_id
                and seg.seq == cursor.last_seq):
            self._stop(Finding(check_chain(cursor, seg).value, cursor.device_id, seg.seq), scan)

    def _stop(self, finding: Finding, scan: Scan) -> None:
        self.stopped[finding.device_id] = finding
        scan.findings.append(finding)

    # --- snapshots and acknowledgements --------------------------------------------------
    def snapshots(self) -> list[Segment]:
        """Every snapshot that verifies (any device's, this one's too), oldest epoch first; a
        file that fails a check, or whose name disagrees with its header, is left out."""
        out = []
        scan = Scan()
        for device in self._names(self.base / "snap", _DEVICE, scan):
            for name in self._names(self.base / "snap" / device, _SNAP, scan):
                seg = self._verified(self.base / "snap" / device / name, Kind.SNAPSHOT)
                m = _SNAP.match(name)
                if (seg is not None and m is not None and seg.device_id == device
                        and (seg.epoch, seg.seq) == (int(m.group(1)), int(m.group(2)))):
                    out.append(seg)
        return sorted(out, key=lambda s: (s.epoch, s.seq, s.device_id))

    def acks(self) -> dict[str, Segment]:
        """Each device's latest acknowledgement that verifies (the highest number)."""
        out: dict[str, Segment] = {}
        scan = Scan()
        for device in self._names(self.base / "ack", _DEVICE, scan):
            for name in reversed(list(self._names(self.base / "ack" / device, _SEQ, scan))):
                seg = self._verified(self.base / "ack" / device / name, Kind.ACK)
                if seg is not None and seg.device_id == device and seg.seq == int(name):
                    out[device] = seg
                    break
        return out

    def _verified(self, path: Path, kind: Kind) -> Segment | None:
        try:
            seg = decode_segment(path.read_bytes(), self.trust, self.keys)
        except (SyncRefused, OSError):
            return None
        return seg if seg.kind is kind else None

    # --- what the founder and the key holders published --------------------------------
    def load_trust(self) -> list[Finding]:
        """Verify and add the founders' chain (successor and takeover records, one
        generation at a time), then every certificate and the newest revocation list of the
        current founder in the folder."""
        scan = Scan()
        while self._next_founder(scan):
            pass
        for former, device in self.trust.carried():  # certified before a takeover
            try:
                self.trust.add_certificate(Certificate.from_bytes(
                    (self.base / "certs" / former / device).read_bytes()))
            except (SyncRefused, OSError):
                continue  # another former founder's, or not here yet
        founder = self.trust.founder_id
        for name in self._names(self.base / "certs" / founder, _DEVICE, scan):
            try:
                self.trust.add_certificate(
                    Certificate.from_bytes((self.base / "certs" / founder / name).read_bytes()))
            except SyncRefused as e:
                scan.findings.append(Finding("unreadable", founder, 0, e.reason))
        for name in self._names(self.base / "revoked" / founder, _VERSION, scan):
            try:
                self.trust.set_revocations(
                    Revocations.from_bytes((self.base / "revoked" / founder / name).read_bytes()))
            except SyncRefused as e:
                scan.findings.append(Finding("unreadable", founder, 0, e.reason))
        return scan.findings

    def _next_founder(self, scan: Scan) -> bool:
        """Read the current founder's successor records, then take the next generation's
        takeover if one in the folder verifies (``Trust.accept_takeover``); True if taken."""
        trust, founder = self.trust, self.trust.founder_id
        for name in self._names(self.base / "successor" / founder, _VERSION, scan):
            try:
                trust.set_successor(Successor.from_bytes(
                    (self.base / "successor" / founder / name).read_bytes()))
            except SyncRefused as e:
                scan.findings.append(Finding("unreadable", founder, 0, e.reason))
            except OSError:
                continue
        gen = f"{trust.generation + 1:0{EPOCH_DIGITS}d}"
        named = trust.successor.device_id if trust.successor is not None else None
        devices = sorted(self._names(self.base / "founders", _DEVICE, scan),
                         key=lambda d: d != named)  # the named successor's first
        for device in devices:
            path = self.base / "founders" / device / gen
            try:
                rec = Takeover.from_bytes(path.read_bytes())
                if rec.founder != device:
                    raise SyncRefused("takeover under another device's name")
                trust.accept_takeover(rec)
            except FileNotFoundError:
                continue
            except OSError:
                continue
            except SyncRefused as e:
                scan.findings.append(Finding("unreadable", device, 0, e.reason))
                continue
            return True
        return False

    def sealed_for(self, me: DeviceSecret) -> dict[int, EpochKey]:
        """Every epoch key sealed for this device that opens and comes from a certified,
        not revoked device."""
        out: dict[int, EpochKey] = {}
        scan = Scan()
        for sender in self._names(self.base / "keys", _DEVICE, scan):
            for name in self._names(self.base / "keys" / sender, _SEALED, scan):
                if not name.endswith(me.device_id):
                    continue
                try:
                    key = open_sealed(SealedKey.from_bytes(
                        (self.base / "keys" / sender / name).read_bytes()), me, self.trust)
                except SyncRefused:
                    continue
                out[key.epoch] = key
        return out


def founder_of(root: Root) -> str:
    return device_id_of(root.founder_key)
