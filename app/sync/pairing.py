"""Joining a device through the sync folder itself (issue 29, item 5): a PAKE on a short code.
Layer: app (file I/O in the synced folder; no network, no vault). Runs on: the caller's thread
(a worker of the window, the CLI's main thread, the owner's socket handler).

The founder shows a 12-digit code (and a QR code of the same); the person types it on the new
device. The first four digits name the session (not secret); the other eight are the password
of a SPAKE2 exchange (``spake2`` from PyPI, Warner's python-spake2, pinned in pyproject). The
folder only ever holds SPAKE2 messages and boxes sealed under the agreed key, so whoever hosts
the folder can neither learn the code offline nor read or forge what the two devices exchange:
each attempt it makes is one online guess at 10^8 codes, and a session allows
``policy.PAIR_TRIES`` attempts.

Files, all write-once (``folder.write_once``), in ``v1/pair/<founder>/<tag>/``:

    offer-<n>    founder: try n's SPAKE2 message (side A), the vault id, the expiry; signed
    join-<n>     new device: its SPAKE2 message (side B) and, sealed under the agreed key,
                 its two public keys and its name
    welcome-<n>  founder: the certificate it issued, sealed under the agreed key
    refused-<n>  founder: try n failed (the box did not open); ``closed`` when no try is left

Each try has a fresh SPAKE2 state; its identities bind the vault id, the founder's key, the
tag and the try number, and each box's associated data binds the same, so a file copied from
another session, vault or try does not open (it costs that session a try and issues nothing).
The founder then issues the certificate and seals every epoch key it holds for the new device
(the caller's ``admit``), so both devices end with the same vault id and trust.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from spake2 import SPAKE2_A, SPAKE2_B
from spake2.spake2 import SPAKEError

from app import policy
from app.errors import AppError, ValidationError
from app.sync.folder import (
    FORMAT,
    ROOT_PREFIX,
    AlreadyWritten,
    FolderReader,
    Root,
    read_root,
    write_once,
)
from app.sync.keys import (
    Certificate,
    DeviceSecret,
    SyncRefused,
    Trust,
    canonical,
    device_id_of,
    verify_signature,
)

TAG_DIGITS = 4
SECRET_DIGITS = 8
CODE_DIGITS = TAG_DIGITS + SECRET_DIGITS
QR_PREFIX = "kept-pair:"
_TAG = re.compile(r"^[0-9]{4}$")
_FILE = re.compile(r"^(offer|join|welcome|refused)-([0-9]{1,3})$")
_BOX_INFO = b"kept-sync pair box v1"


class PairingFailed(AppError):
    """Pairing did not complete; ``user_message`` says why in plain words. Nothing was
    trusted or written to the vault."""

    user_message = "Pairing did not complete. Nothing was changed."
    exit_code = 2


class WrongCode(PairingFailed):
    user_message = "That code does not match the one shown on the other device."

    def __init__(self, tries_left: int) -> None:
        more = (f" {tries_left} more {'try' if tries_left == 1 else 'tries'} with this code."
                if tries_left else " No tries are left: start pairing again on the other "
                                   "device for a new code.")
        super().__init__(self.user_message + more)
        self.tries_left = tries_left


# --- the code ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Code:
    tag: str
    secret: str = field(repr=False)

    @classmethod
    def new(cls, taken: Callable[[str], bool]) -> Code:
        for _ in range(100):
            tag = f"{secrets.randbelow(10 ** TAG_DIGITS):0{TAG_DIGITS}d}"
            if not taken(tag):
                return cls(tag, f"{secrets.randbelow(10 ** SECRET_DIGITS):0{SECRET_DIGITS}d}")
        raise PairingFailed("The sync folder has too many old pairing sessions to start a new "
                            "one. Nothing was changed.")

    @classmethod
    def parse(cls, text: str) -> Code:
        """What the person typed: 12 digits, with any spaces or dashes; or the QR text."""
        if text.startswith(QR_PREFIX):
            text = text.rsplit(":", 1)[-1]
        digits = "".join(ch for ch in text if ch not in " -\t")
        if len(digits) != CODE_DIGITS or not digits.isascii() or not digits.isdigit():
            raise ValidationError("The pairing code is 12 digits, as shown on the other device "
                                  "(for example 1234-5678-9012).")
        return cls(digits[:TAG_DIGITS], digits[TAG_DIGITS:])

    def shown(self) -> str:
        s = self.tag + self.secret
        return f"{s[:4]}-{s[4:8]}-{s[8:]}"

    def qr_text(self, vault_id: str) -> str:
        return f"{QR_PREFIX}{FORMAT}:{vault_id}:{self.shown()}"


# --- the shared parts -------------------------------------------------------------------------
def session_dir(folder: Path, founder_id: str, tag: str) -> Path:
    return folder / FORMAT / "pair" / founder_id / tag


def _ids(vault_id: str, founder_key: bytes, tag: str, n: int) -> tuple[bytes, bytes]:
    where = canonical({"vault": vault_id, "founder": founder_key.hex(), "tag": tag, "try": n})
    return b"kept-sync pair founder|" + where, b"kept-sync pair joiner|" + where


def _box_key(key: bytes, what: str, aad: bytes) -> ChaCha20Poly1305:
    return ChaCha20Poly1305(HKDF(hashes.SHA256(), 32, salt=None,
                                 info=_BOX_INFO + b"|" + what.encode() + b"|" + aad).derive(key))


def _aad(kind: str, vault_id: str, founder_key: bytes, tag: str, n: int) -> bytes:
    return canonical({"kind": kind, "vault": vault_id, "founder": founder_key.hex(), "tag": tag,
                      "try": n})


def _seal(key: bytes, kind: str, aad: bytes, body: dict[str, Any]) -> dict[str, str]:
    nonce = os.urandom(12)
    return {"nonce": nonce.hex(), "box": _box_key(key, kind, aad).encrypt(
        nonce, canonical(body), aad).hex()}


def _open(key: bytes, kind: str, aad: bytes, d: dict[str, Any]) -> dict[str, Any]:
    try:
        raw = _box_key(key, kind, aad).decrypt(bytes.fromhex(d["nonce"]),
                                               bytes.fromhex(d["box"]), aad)
        out = json.loads(raw.decode("utf-8"))
    except (InvalidTag, KeyError, TypeError, ValueError, UnicodeDecodeError):
        raise SyncRefused("pairing box does not open") from None
    if not isinstance(out, dict):
        raise SyncRefused("pairing box does not open")
    return out


def _read_json(path: Path, kind: str) -> dict[str, Any] | None:
    """The file's object, or None when it is not there (yet); a file that is not ours (a
    partial download, a stranger's) raises ``SyncRefused``."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        d = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise SyncRefused("bad pairing file") from None
    if not isinstance(d, dict) or d.get("kind") != kind:
        raise SyncRefused("bad pairing file")
    return d


def _agree(side: Any, message_hex: object) -> bytes:
    try:
        return bytes(side.finish(bytes.fromhex(str(message_hex))))
    except (SPAKEError, ValueError, TypeError, AssertionError):
        raise SyncRefused("bad pairing message") from None


def read_folder_root(folder: Path) -> Root:
    """The folder's signed root (the founder's key and the vault id), or a plain refusal."""
    try:
        raw = (folder / f"{ROOT_PREFIX}{FORMAT}").read_bytes()
    except FileNotFoundError:
        raise PairingFailed("This folder holds no Kept sync yet. Pick the folder your sync tool "
                            "shares with the device that already syncs.") from None
    try:
        return read_root(raw)
    except SyncRefused:
        raise PairingFailed("The sync file in this folder is damaged or not Kept's. Nothing "
                            "was changed.") from None


# --- the founder's side -----------------------------------------------------------------------
@dataclass(frozen=True)
class Joined:
    """A device admitted: its certificate (as issued by the founder)."""

    certificate: Certificate


class Inviter:
    """The founder's side of one pairing session. Holds each try's SPAKE2 state in memory:
    the session ends with the process (the offer also expires after ``policy.PAIR_MINUTES``).
    ``admit`` is the caller's: it issues and publishes the certificate and the sealed epoch
    keys and stores the device, and returns the certificate."""

    def __init__(self, folder: Path, founder: DeviceSecret, vault_id: str, now: float,
                 code: Code | None = None, tries: int = policy.PAIR_TRIES,
                 minutes: float = policy.PAIR_MINUTES) -> None:
        self.folder, self.founder, self.vault_id = folder, founder, vault_id
        base = folder / FORMAT / "pair" / founder.device_id
        self.code = code or Code.new(lambda tag: (base / tag).exists())
        self.dir = session_dir(folder, founder.device_id, self.code.tag)
        self.tries = tries
        self.expires_at = now + minutes * 60
        self.n = 0
        self.closed: str | None = None  # "joined", "no tries left", "expired"
        self._side: Any = None
        self._offer()

    def _offer(self) -> None:
        self.n += 1
        id_a, id_b = _ids(self.vault_id, self.founder.sign_public, self.code.tag, self.n)
        self._side = SPAKE2_A(self.code.secret.encode(), idA=id_a, idB=id_b)
        body = {"kind": "kept-sync.pair-offer", "vault": self.vault_id,
                "founder": self.founder.sign_public.hex(), "tag": self.code.tag, "try": self.n,
                "tries": self.tries, "pake": bytes(self._side.start()).hex(),
                "expires_at": int(self.expires_at)}
        write_once(self.dir / f"offer-{self.n}", canonical(
            {**body, "sig": self.founder.sign(canonical(body)).hex()}))

    def poll(self, now: float, admit: Callable[[bytes, bytes, str], Certificate]
             ) -> Joined | None:
        """Look for the new device's answer to the current try: None while waiting;
        ``Joined`` once admitted; raises ``WrongCode`` (a try used, maybe the last) or
        ``PairingFailed`` (expired, closed)."""
        if self.closed == "joined":
            raise PairingFailed("This pairing is done; start a new one for another device.")
        if self.closed:
            raise PairingFailed(f"This pairing is closed ({self.closed}). Start a new one.")
        if now > self.expires_at:
            self.closed = "expired"
            raise PairingFailed("The pairing code expired. Start pairing again for a new code.")
        try:
            d = _read_json(self.dir / f"join-{self.n}", "kept-sync.pair-join")
        except SyncRefused:
            d = {}  # a file under the joiner's name that is not a join: that try is spent
        if d is None:
            return None
        aad = _aad("join", self.vault_id, self.founder.sign_public, self.code.tag, self.n)
        try:
            if d.get("tag") != self.code.tag or d.get("try") != self.n:
                raise SyncRefused("pairing file of another session")
            key = _agree(self._side, d.get("pake"))
            who = _open(key, "join", aad, d)
            sign, box = bytes.fromhex(str(who["sign"])), bytes.fromhex(str(who["box"]))
            name = str(who["name"])
            if len(sign) != 32 or len(box) != 32:
                raise SyncRefused("bad pairing keys")
        except (SyncRefused, KeyError, ValueError):
            self._refuse()
        cert = admit(sign, box, name)
        write_once(self.dir / f"welcome-{self.n}", canonical(
            {"kind": "kept-sync.pair-welcome", "tag": self.code.tag, "try": self.n,
             **_seal(key, "welcome", _aad("welcome", self.vault_id, self.founder.sign_public,
                                          self.code.tag, self.n),
                     {"certificate": cert.to_bytes().decode()})}))
        self.closed = "joined"
        return Joined(cert)

    def _refuse(self) -> NoReturn:
        left = self.tries - self.n
        write_once(self.dir / f"refused-{self.n}", canonical(
            {"kind": "kept-sync.pair-refused", "tag": self.code.tag, "try": self.n,
             "left": left}))
        if left <= 0:
            self.closed = "no tries left"
        else:
            self._offer()
        raise WrongCode(max(left, 0))

    def cancel(self) -> None:
        self.closed = self.closed or "cancelled"


# --- the new device's side --------------------------------------------------------------------
@dataclass(frozen=True)
class Welcome:
    """What the new device learnt: the folder's root and the certificate issued to it."""

    root: Root
    certificate: Certificate
    secret: DeviceSecret = field(repr=False)


class Joiner:
    """The new device's side: ``start`` answers the founder's current offer; ``poll`` waits for
    the welcome. The device secret is made here and kept by the caller only once welcomed."""

    def __init__(self, folder: Path, code: Code, name: str, now: float,
                 secret: DeviceSecret | None = None) -> None:
        self.folder, self.code, self.name = folder, code, name
        self.secret = secret or DeviceSecret.generate()
        self.root = read_folder_root(folder)
        # The founder now: the root's, or its successor's after a takeover (the chain in the
        # folder, each step signed by the founder before it: docs/sync.md#a-successor-founder).
        self.trust = Trust(self.root.vault_id, self.root.founder_key)
        FolderReader(folder, self.secret.device_id, self.trust, {}, {}).load_trust()
        self.founder_key = self.trust.founder_sign_public
        self.founder_id = device_id_of(self.founder_key)
        self.dir = session_dir(folder, self.founder_id, code.tag)
        self.n = self._current_try(now)
        self._key = self._answer()

    def _current_try(self, now: float) -> int:
        """The newest offer not yet refused; refuses an expired or closed session."""
        if not self.dir.is_dir():
            raise PairingFailed("No pairing with this code is open in the sync folder. Check "
                                "the code, and that the folder has finished syncing.")
        tries = sorted(int(m.group(2)) for p in self.dir.iterdir()
                       if (m := _FILE.match(p.name)) and m.group(1) == "offer")
        if not tries:
            raise PairingFailed("No pairing with this code is open in the sync folder.")
        n = tries[-1]
        if (self.dir / f"refused-{n}").exists() or (self.dir / f"welcome-{n}").exists():
            raise PairingFailed("This pairing is closed. Start pairing again on the other "
                                "device for a new code.")
        try:
            offer = _read_json(self.dir / f"offer-{n}", "kept-sync.pair-offer")
            if offer is None:
                raise SyncRefused("no offer")
            sig = bytes.fromhex(offer.pop("sig"))
            if (offer.get("vault") != self.root.vault_id or offer.get("try") != n
                    or offer.get("founder") != self.founder_key.hex()
                    or offer.get("tag") != self.code.tag):
                raise SyncRefused("offer of another vault")
            verify_signature(self.founder_key, sig, canonical(offer), "offer signature")
            self._offer_pake = offer["pake"]
            expires = int(offer["expires_at"])
            self.expires_at = float(expires)
        except (SyncRefused, KeyError, TypeError, ValueError):
            raise PairingFailed("The pairing file in the sync folder is damaged or not from "
                                "the device that set up sync. Nothing was changed.") from None
        if now > expires:
            raise PairingFailed("The pairing code expired. Start pairing again on the other "
                                "device for a new code.")
        return n

    def _answer(self) -> bytes:
        id_a, id_b = _ids(self.root.vault_id, self.founder_key, self.code.tag, self.n)
        side = SPAKE2_B(self.code.secret.encode(), idA=id_a, idB=id_b)
        message = bytes(side.start()).hex()
        try:
            key = _agree(side, self._offer_pake)
        except SyncRefused:
            raise PairingFailed("The pairing file in the sync folder is damaged. Nothing was "
                                "changed.") from None
        aad = _aad("join", self.root.vault_id, self.founder_key, self.code.tag, self.n)
        data = canonical({"kind": "kept-sync.pair-join", "tag": self.code.tag, "try": self.n,
                          "pake": message, **_seal(key, "join", aad, {
                              "sign": self.secret.sign_public.hex(),
                              "box": self.secret.box_public.hex(), "name": self.name})})
        try:
            write_once(self.dir / f"join-{self.n}", data)
        except AlreadyWritten:
            raise PairingFailed("Another device is answering this pairing code right now. "
                                "Wait a minute and try again.") from None
        return key

    def poll(self, now: float | None = None) -> Welcome | None:
        """None while the founder has not answered; the ``Welcome`` once it has; raises
        ``WrongCode`` when it refused this try, ``PairingFailed`` when no answer came before
        the offer expired (and a minute for the sync tool: the founder may have quit)."""
        try:
            refused = _read_json(self.dir / f"refused-{self.n}", "kept-sync.pair-refused")
        except SyncRefused:
            refused = None
        if refused is not None:
            left = refused.get("left")
            raise WrongCode(left if isinstance(left, int) and left > 0 else 0)
        try:
            d = _read_json(self.dir / f"welcome-{self.n}", "kept-sync.pair-welcome")
            if d is None:
                if now is not None and now > self.expires_at + 60:
                    raise PairingFailed("No answer came before the code expired. Is Kept "
                                        "open on the other device, and is the folder syncing? "
                                        "Start pairing again there for a new code.")
                return None
            body = _open(self._key, "welcome", _aad(
                "welcome", self.root.vault_id, self.founder_key, self.code.tag, self.n), d)
            cert = Certificate.from_bytes(str(body["certificate"]).encode())
        except (SyncRefused, KeyError):
            raise PairingFailed("The answer in the sync folder does not open with this code: "
                                "it is not from the device that set up sync. Nothing was "
                                "trusted.") from None
        if (cert.device_id != self.secret.device_id or cert.vault_id != self.root.vault_id
                or cert.sign_public != self.secret.sign_public
                or cert.box_public != self.secret.box_public):
            raise PairingFailed("The certificate in the answer is not this device's. Nothing "
                                "was trusted.")
        return Welcome(self.root, cert, self.secret)

