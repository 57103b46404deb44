"""Device identities, certificates, revocations and epoch keys (issue 29, item 1).
Layer: app (pure crypto over ``cryptography``; no I/O). Runs on: any thread.

Who trusts whom:
- A device has an Ed25519 key (signs its files) and an X25519 key (receives sealed epoch keys).
  Its id is the first 16 bytes of SHA-256 over its Ed25519 public key, in hex: self-certifying,
  so a file cannot claim a device id without that device's key.
- The vault's **founding device** (the one that turned sync on) signs a ``Certificate`` for
  every device (its own included) and the ``Revocations`` list. Every device holds the
  founder's public key from pairing; a certificate or list signed by anyone else is refused.
- An **epoch key** is 32 random bytes, numbered. The device that makes one seals it for each
  certified, not revoked device: X25519 between a fresh ephemeral key and the recipient's key,
  HKDF-SHA256 (salt: both public keys; info: vault, epoch, recipient) gives a one-use key, and
  ChaCha20-Poly1305 encrypts the epoch key with the vault, epoch, sender and recipient as
  associated data; the sender signs the whole (an HPKE-style base-mode seal, RFC 9180, built
  from the same primitives because ``cryptography`` 42-50 has no HPKE; signed so that only a
  certified device can hand out a key).
- Where a device keeps its own secrets: inside the SQLCipher vault (``storage/sync_keys.py``,
  migration 0029), never in clear on disk.

Every check raises ``SyncRefused`` (with a ``reason`` code) and never returns a half-trusted
object. Nothing here logs.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from app.errors import AppError
from app.sync.canonical import canonical_bytes

canonical = canonical_bytes  # the name the sync modules use (one definition: app/sync/canonical.py)

DEVICE_ID_BYTES = 16
VAULT_ID_BYTES = 16
EPOCH_KEY_BYTES = 32
SECRET_BYTES = 64  # Ed25519 seed (32) + X25519 private key (32)
_SEAL_INFO = b"kept-sync seal v1"


class SyncRefused(AppError):
    """A synced file or key that fails a check. ``reason`` is a short code for reports and
    tests (never content)."""

    user_message = "A file in the sync folder failed its check and was not used."

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason

    def __str__(self) -> str:
        return f"{self.user_message} ({self.reason})"


def _raw(public: Ed25519PublicKey | X25519PublicKey) -> bytes:
    return public.public_bytes(Encoding.Raw, PublicFormat.Raw)


def device_id_of(sign_public: bytes) -> str:
    return hashlib.sha256(sign_public).digest()[:DEVICE_ID_BYTES].hex()


def new_vault_id() -> str:
    return os.urandom(VAULT_ID_BYTES).hex()


def _hex_id(value: object, nbytes: int, what: str) -> str:
    if not isinstance(value, str) or len(value) != 2 * nbytes:
        raise SyncRefused(f"bad {what}")
    try:
        bytes.fromhex(value)
    except ValueError:
        raise SyncRefused(f"bad {what}") from None
    return value


def verify_signature(public: bytes, signature: bytes, message: bytes, reason: str) -> None:
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(signature, message)
    except (InvalidSignature, ValueError):
        raise SyncRefused(reason) from None


@dataclass(frozen=True)
class DeviceSecret:
    """This device's two private keys. ``to_bytes`` is what the vault stores (encrypted by
    SQLCipher); it never goes to the sync folder."""

    sign_seed: bytes = field(repr=False)
    box_private: bytes = field(repr=False)

    @classmethod
    def generate(cls) -> DeviceSecret:
        return cls(os.urandom(32), os.urandom(32))

    @classmethod
    def from_bytes(cls, raw: bytes) -> DeviceSecret:
        if len(raw) != SECRET_BYTES:
            raise SyncRefused("bad device secret")
        return cls(bytes(raw[:32]), bytes(raw[32:]))

    def to_bytes(self) -> bytes:
        return self.sign_seed + self.box_private

    def _signer(self) -> Ed25519PrivateKey:
        return Ed25519PrivateKey.from_private_bytes(self.sign_seed)

    @property
    def sign_public(self) -> bytes:
        return _raw(self._signer().public_key())

    @property
    def box_public(self) -> bytes:
        return _raw(X25519PrivateKey.from_private_bytes(self.box_private).public_key())

    @property
    def device_id(self) -> str:
        return device_id_of(self.sign_public)

    def sign(self, message: bytes) -> bytes:
        return self._signer().sign(message)

    def agree(self, peer_public: bytes) -> bytes:
        return X25519PrivateKey.from_private_bytes(self.box_private).exchange(
            X25519PublicKey.from_public_bytes(peer_public))


class SignedRecord:
    """A record one device signs (a certificate, the revocation list, a sealed key, the root
    file): ``body()`` is what is signed, ``to_bytes()`` the file, the body and its signature."""

    signature: bytes

    def body(self) -> dict[str, Any]:
        raise NotImplementedError

    def to_bytes(self) -> bytes:
        return canonical({**self.body(), "sig": self.signature.hex()})


@dataclass(frozen=True)
class Certificate(SignedRecord):
    """The founder's word that ``device_id`` (with these keys and this name) is one of the
    vault's devices."""

    vault_id: str
    device_id: str
    sign_public: bytes
    box_public: bytes
    name: str
    issued_at: int
    issuer: str
    signature: bytes = field(repr=False)

    def body(self) -> dict[str, Any]:
        return {"kind": "kept-sync.cert", "vault": self.vault_id, "device": self.device_id,
                "sign": self.sign_public.hex(), "box": self.box_public.hex(), "name": self.name,
                "issued_at": self.issued_at, "issuer": self.issuer}

    @classmethod
    def from_bytes(cls, raw: bytes) -> Certificate:
        d = _json_object(raw, "bad certificate")
        try:
            if d.pop("kind") != "kept-sync.cert" or set(d) != {
                    "vault", "device", "sign", "box", "name", "issued_at", "issuer", "sig"}:
                raise SyncRefused("bad certificate")
            if not isinstance(d["name"], str) or type(d["issued_at"]) is not int:
                raise SyncRefused("bad certificate")
            cert = cls(_hex_id(d["vault"], VAULT_ID_BYTES, "certificate"),
                       _hex_id(d["device"], DEVICE_ID_BYTES, "certificate"),
                       bytes.fromhex(d["sign"]), bytes.fromhex(d["box"]), d["name"],
                       d["issued_at"], _hex_id(d["issuer"], DEVICE_ID_BYTES, "certificate"),
                       bytes.fromhex(d["sig"]))
        except (KeyError, TypeError, ValueError, AttributeError):
            raise SyncRefused("bad certificate") from None
        if len(cert.sign_public) != 32 or len(cert.box_public) != 32:
            raise SyncRefused("bad certificate")
        return cert


def _json_object(raw: bytes, reason: str) -> dict[str, Any]:
    try:
        d = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise SyncRefused(reason) from None
    if not isinstance(d, dict):
        raise SyncRefused(reason)
    return d


def issue_certificate(founder: DeviceSecret, vault_id: str, sign_public: bytes,
                      box_public: bytes, name: str, issued_at: int) -> Certificate:
    unsigned = Certificate(vault_id, device_id_of(sign_public), sign_public, box_public, name,
                           issued_at, founder.device_id, b"")
    return Certificate(**{**unsigned.__dict__,
                          "signature": founder.sign(canonical(unsigned.body()))})


@dataclass(frozen=True)
class Revocation:
    device_id: str
    revoked_at: int
    after_seq: int  # segments of the device with a higher sequence are refused


@dataclass(frozen=True)
class Revocations(SignedRecord):
    """The founder's signed list of revoked devices. ``version`` only grows: a reader keeps
    the highest it has verified, so an old list replayed into the folder un-revokes nobody."""

    vault_id: str
    version: int
    revoked: tuple[Revocation, ...]
    signature: bytes = field(repr=False)

    def body(self) -> dict[str, Any]:
        return {"kind": "kept-sync.revocations", "vault": self.vault_id, "version": self.version,
                "revoked": [[r.device_id, r.revoked_at, r.after_seq]
                            for r in sorted(self.revoked, key=lambda r: r.device_id)]}

    @classmethod
    def from_bytes(cls, raw: bytes) -> Revocations:
        d = _json_object(raw, "bad revocations")
        try:
            if d.get("kind") != "kept-sync.revocations" or type(d["version"]) is not int:
                raise SyncRefused("bad revocations")
            revoked = tuple(Revocation(_hex_id(a, DEVICE_ID_BYTES, "revocations"), int(b), int(c))
                            for a, b, c in d["revoked"])
            return cls(_hex_id(d["vault"], VAULT_ID_BYTES, "revocations"), d["version"], revoked,
                       bytes.fromhex(d["sig"]))
        except (KeyError, TypeError, ValueError):
            raise SyncRefused("bad revocations") from None

    def of(self, device_id: str) -> Revocation | None:
        return next((r for r in self.revoked if r.device_id == device_id), None)


def sign_revocations(founder: DeviceSecret, vault_id: str, version: int,
                     revoked: Iterable[Revocation]) -> Revocations:
    unsigned = Revocations(vault_id, version, tuple(revoked), b"")
    return Revocations(vault_id, version, unsigned.revoked,
                       founder.sign(canonical(unsigned.body())))


class Trust:
    """What this device accepts: the founder's key (from pairing), the certificates it has
    verified, and the newest revocation list. Nothing enters without the founder's signature."""

    def __init__(self, vault_id: str, founder_sign_public: bytes) -> None:
        self.vault_id = vault_id
        self.founder_sign_public = founder_sign_public
        self.founder_id = device_id_of(founder_sign_public)
        self._certs: dict[str, Certificate] = {}
        self.revocations = Revocations(vault_id, 0, (), b"")

    def add_certificate(self, cert: Certificate) -> Certificate:
        """Verify and keep ``cert``; raises ``SyncRefused`` for anything not the founder's."""
        if cert.vault_id != self.vault_id:
            raise SyncRefused("certificate of another vault")
        if cert.issuer != self.founder_id:
            raise SyncRefused("certificate not issued by the founder")
        if device_id_of(cert.sign_public) != cert.device_id:
            raise SyncRefused("certificate device id does not match its key")
        verify_signature(self.founder_sign_public, cert.signature, canonical(cert.body()),
                "certificate signature")
        self._certs[cert.device_id] = cert
        return cert

    def set_revocations(self, revs: Revocations) -> bool:
        """Keep ``revs`` if it is the founder's and newer than the one held; True if kept."""
        if revs.vault_id != self.vault_id:
            raise SyncRefused("revocations of another vault")
        verify_signature(self.founder_sign_public, revs.signature, canonical(revs.body()),
                "revocations signature")
        if revs.version <= self.revocations.version:
            return False
        self.revocations = revs
        return True

    def certificate(self, device_id: str) -> Certificate:
        cert = self._certs.get(device_id)
        if cert is None:
            raise SyncRefused("unknown device")
        return cert

    def devices(self) -> list[Certificate]:
        return [self._certs[d] for d in sorted(self._certs)]

    def may_write(self, device_id: str, seq: int) -> Certificate:
        """The certificate of a device allowed to have written sequence ``seq``."""
        cert = self.certificate(device_id)
        rev = self.revocations.of(device_id)
        if rev is not None and seq > rev.after_seq:
            raise SyncRefused("revoked device")
        return cert

    def active(self) -> list[Certificate]:
        return [c for c in self.devices() if self.revocations.of(c.device_id) is None]


@dataclass(frozen=True)
class EpochKey:
    epoch: int
    key: bytes = field(repr=False)

    @classmethod
    def generate(cls, epoch: int) -> EpochKey:
        return cls(epoch, os.urandom(EPOCH_KEY_BYTES))


@dataclass(frozen=True)
class SealedKey(SignedRecord):
    """An epoch key sealed for one device (the file ``<format>/keys/<sender>/<epoch>-<to>``)."""

    vault_id: str
    epoch: int
    sender: str
    recipient: str
    ephemeral: bytes
    nonce: bytes
    ciphertext: bytes
    signature: bytes = field(repr=False)

    def body(self) -> dict[str, Any]:
        return {"kind": "kept-sync.sealed-key", "vault": self.vault_id, "epoch": self.epoch,
                "from": self.sender, "to": self.recipient, "eph": self.ephemeral.hex(),
                "nonce": self.nonce.hex(), "ct": self.ciphertext.hex()}

    @classmethod
    def from_bytes(cls, raw: bytes) -> SealedKey:
        d = _json_object(raw, "bad sealed key")
        try:
            if d.get("kind") != "kept-sync.sealed-key" or type(d["epoch"]) is not int:
                raise SyncRefused("bad sealed key")
            return cls(_hex_id(d["vault"], VAULT_ID_BYTES, "sealed key"), d["epoch"],
                       _hex_id(d["from"], DEVICE_ID_BYTES, "sealed key"),
                       _hex_id(d["to"], DEVICE_ID_BYTES, "sealed key"),
                       bytes.fromhex(d["eph"]), bytes.fromhex(d["nonce"]),
                       bytes.fromhex(d["ct"]), bytes.fromhex(d["sig"]))
        except (KeyError, TypeError, ValueError):
            raise SyncRefused("bad sealed key") from None


def _seal_key(shared: bytes, ephemeral: bytes, recipient_box: bytes, aad: bytes) -> bytes:
    return HKDF(hashes.SHA256(), 32, salt=ephemeral + recipient_box,
                info=_SEAL_INFO + b"|" + aad).derive(shared)


def seal_epoch_key(sender: DeviceSecret, vault_id: str, key: EpochKey,
                   recipient: Certificate) -> SealedKey:
    eph = X25519PrivateKey.generate()
    eph_pub = _raw(eph.public_key())
    shared = eph.exchange(X25519PublicKey.from_public_bytes(recipient.box_public))
    aad = canonical({"vault": vault_id, "epoch": key.epoch, "from": sender.device_id,
                     "to": recipient.device_id})
    nonce = os.urandom(12)
    ct = ChaCha20Poly1305(_seal_key(shared, eph_pub, recipient.box_public, aad)).encrypt(
        nonce, key.key, aad)
    unsigned = SealedKey(vault_id, key.epoch, sender.device_id, recipient.device_id, eph_pub,
                         nonce, ct, b"")
    return SealedKey(**{**unsigned.__dict__, "signature": sender.sign(canonical(unsigned.body()))})


def open_sealed(sealed: SealedKey, me: DeviceSecret, trust: Trust) -> EpochKey:
    """The epoch key in ``sealed``, if it is for this device, from a certified device."""
    if sealed.vault_id != trust.vault_id:
        raise SyncRefused("sealed key of another vault")
    if sealed.recipient != me.device_id:
        raise SyncRefused("sealed key for another device")
    sender = trust.certificate(sealed.sender)
    if trust.revocations.of(sealed.sender) is not None:
        raise SyncRefused("revoked device")
    verify_signature(sender.sign_public, sealed.signature, canonical(sealed.body()), "sealed key signature")
    aad = canonical({"vault": sealed.vault_id, "epoch": sealed.epoch, "from": sealed.sender,
                     "to": sealed.recipient})
    try:
        shared = me.agree(sealed.ephemeral)
        raw = ChaCha20Poly1305(_seal_key(shared, sealed.ephemeral, me.box_public, aad)).decrypt(
            sealed.nonce, sealed.ciphertext, aad)
    except (InvalidTag, ValueError):
        raise SyncRefused("sealed key does not open") from None
    if len(raw) != EPOCH_KEY_BYTES:
        raise SyncRefused("bad sealed key")
    return EpochKey(sealed.epoch, raw)


def load_trust(vault_id: str, founder_key: bytes, certificates: Iterable[bytes],
               revocations: bytes | None) -> Trust:
    """A ``Trust`` from what the vault stored (``storage/sync_keys.py``): every certificate
    and the list are verified again, so a row changed behind Kept's back is refused here."""
    trust = Trust(vault_id, founder_key)
    for raw in certificates:
        trust.add_certificate(Certificate.from_bytes(raw))
    if revocations is not None:
        trust.set_revocations(Revocations.from_bytes(revocations))
    return trust
