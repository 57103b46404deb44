"""Device identities, certificates, revocations and epoch keys (issue 29, item 1).
Layer: app (pure crypto over ``cryptography``; no I/O). Runs on: any thread.

Who trusts whom:
- A device has an Ed25519 key (signs its files) and an X25519 key (receives sealed epoch keys).
  Its id is the first 16 bytes of SHA-256 over its Ed25519 public key, in hex: self-certifying,
  so a file cannot claim a device id without that device's key.
- The vault's **founding device** (the one that turned sync on) signs a ``Certificate`` for
  every device (its own included) and the ``Revocations`` list. Every device holds the
  founder's public key from pairing; a certificate or list signed by anyone else is refused.
- **Succession** (docs/sync.md#a-successor-founder): the founder names a successor in a signed
  ``Successor`` record (one device, a version that only grows); the named device may later
  take over with a ``Takeover`` record it signs itself, carrying that delegation. A device
  accepts a founder change only when the delegation verifies under the key of the founder it
  trusts now (one generation at a time), is the newest delegation it holds, and names a
  device not revoked; after it, only the new founder's certificates, lists and keys count
  (the former founders' certificates only those the takeover carries over).
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


def _cert_digest(cert: Certificate) -> str:
    return hashlib.sha256(cert.to_bytes()).hexdigest()


@dataclass(frozen=True)
class Successor(SignedRecord):
    """The founder's word that ``device_id`` (with this signing key) may take over as founder
    if the founder is lost. ``generation`` is the signer's place in the founders' chain (0:
    the root's founder); ``version`` only grows per generation: a newer record names another
    successor and voids the older ones. File ``<format>/successor/<founder>/<version>``."""

    vault_id: str
    generation: int
    version: int
    founder: str
    device_id: str
    sign_public: bytes
    issued_at: int
    signature: bytes = field(repr=False)

    def body(self) -> dict[str, Any]:
        return {"kind": "kept-sync.successor", "vault": self.vault_id,
                "generation": self.generation, "version": self.version,
                "founder": self.founder, "device": self.device_id,
                "sign": self.sign_public.hex(), "issued_at": self.issued_at}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Successor:
        try:
            if d.get("kind") != "kept-sync.successor" or set(d) != {
                    "kind", "vault", "generation", "version", "founder", "device", "sign",
                    "issued_at", "sig"}:
                raise SyncRefused("bad successor record")
            if any(type(d[k]) is not int for k in ("generation", "version", "issued_at")):
                raise SyncRefused("bad successor record")
            rec = cls(_hex_id(d["vault"], VAULT_ID_BYTES, "successor record"), d["generation"],
                      d["version"], _hex_id(d["founder"], DEVICE_ID_BYTES, "successor record"),
                      _hex_id(d["device"], DEVICE_ID_BYTES, "successor record"),
                      bytes.fromhex(d["sign"]), d["issued_at"], bytes.fromhex(d["sig"]))
        except (KeyError, TypeError, ValueError, AttributeError):
            raise SyncRefused("bad successor record") from None
        if len(rec.sign_public) != 32 or device_id_of(rec.sign_public) != rec.device_id:
            raise SyncRefused("bad successor record")
        return rec

    @classmethod
    def from_bytes(cls, raw: bytes) -> Successor:
        return cls.from_dict(_json_object(raw, "bad successor record"))


def name_successor(founder: DeviceSecret, vault_id: str, generation: int, version: int,
                   cert: Certificate, issued_at: int) -> Successor:
    unsigned = Successor(vault_id, generation, version, founder.device_id, cert.device_id,
                         cert.sign_public, issued_at, b"")
    return Successor(**{**unsigned.__dict__,
                        "signature": founder.sign(canonical(unsigned.body()))})


@dataclass(frozen=True)
class Takeover(SignedRecord):
    """The successor's record that it is the founder from ``generation`` on, signed by itself
    and carrying the delegation (``successor``) its predecessor signed; with it the new
    founder's first revocation list (the lost founder revoked) and the digests of the
    certificates it carries over. File ``<format>/founders/<device>/<generation>``: a new file
    for each change; the root file is never rewritten."""

    vault_id: str
    generation: int
    previous: str
    successor: Successor
    carried: tuple[tuple[str, str], ...]  # (device id, SHA-256 of its certificate), sorted
    revocations: Revocations
    issued_at: int
    signature: bytes = field(repr=False)

    @property
    def founder(self) -> str:
        return self.successor.device_id

    def body(self) -> dict[str, Any]:
        return {"kind": "kept-sync.takeover", "vault": self.vault_id,
                "generation": self.generation, "previous": self.previous,
                "successor": {**self.successor.body(), "sig": self.successor.signature.hex()},
                "carried": [list(c) for c in self.carried],
                "revocations": {**self.revocations.body(),
                                "sig": self.revocations.signature.hex()},
                "issued_at": self.issued_at}

    @classmethod
    def from_bytes(cls, raw: bytes) -> Takeover:
        d = _json_object(raw, "bad takeover record")
        try:
            if d.get("kind") != "kept-sync.takeover" or set(d) != {
                    "kind", "vault", "generation", "previous", "successor", "carried",
                    "revocations", "issued_at", "sig"}:
                raise SyncRefused("bad takeover record")
            if type(d["generation"]) is not int or type(d["issued_at"]) is not int:
                raise SyncRefused("bad takeover record")
            carried = tuple(sorted((_hex_id(a, DEVICE_ID_BYTES, "takeover record"),
                                    _hex_id(b, 32, "takeover record")) for a, b in d["carried"]))
            revs = Revocations.from_bytes(canonical(d["revocations"]))
            return cls(_hex_id(d["vault"], VAULT_ID_BYTES, "takeover record"), d["generation"],
                       _hex_id(d["previous"], DEVICE_ID_BYTES, "takeover record"),
                       Successor.from_dict(d["successor"]), carried, revs, d["issued_at"],
                       bytes.fromhex(d["sig"]))
        except (KeyError, TypeError, ValueError, AttributeError):
            raise SyncRefused("bad takeover record") from None


def take_over_record(me: DeviceSecret, delegation: Successor, certificates: Iterable[Certificate],
              revocations: Revocations, lost_after_seq: int, issued_at: int) -> Takeover:
    """This device's takeover record (it must be the delegation's successor): the previous
    founder revoked (its segments after ``lost_after_seq`` refused) in a list one version up,
    every certificate held carried over."""
    if delegation.device_id != me.device_id:
        raise SyncRefused("the delegation names another device")
    revs = sign_revocations(me, delegation.vault_id, revocations.version + 1,
                            [*(r for r in revocations.revoked if r.device_id != delegation.founder),
                             Revocation(delegation.founder, issued_at, lost_after_seq)])
    carried = tuple(sorted((c.device_id, _cert_digest(c)) for c in certificates))
    unsigned = Takeover(delegation.vault_id, delegation.generation + 1, delegation.founder,
                        delegation, carried, revs, issued_at, b"")
    return Takeover(**{**unsigned.__dict__, "signature": me.sign(canonical(unsigned.body()))})


class Trust:
    """What this device accepts: the founder's key (from pairing, then each takeover it
    verified), the certificates it has verified, the newest revocation list, and the newest
    successor the current founder named. Nothing enters without the current founder's
    signature (a takeover: the signature of the founder it replaces, on the delegation)."""

    def __init__(self, vault_id: str, founder_sign_public: bytes) -> None:
        self.vault_id = vault_id
        self.founder_sign_public = founder_sign_public
        self.founder_id = device_id_of(founder_sign_public)
        self.generation = 0
        self.successor: Successor | None = None
        self.takeovers: list[Takeover] = []
        self._former: dict[str, bytes] = {}       # former founders' keys, by device id
        self._carried: dict[str, str] | None = None  # the latest takeover's certificates
        self._certs: dict[str, Certificate] = {}
        self.revocations = Revocations(vault_id, 0, (), b"")

    def add_certificate(self, cert: Certificate) -> Certificate:
        """Verify and keep ``cert``; raises ``SyncRefused`` for anything not the founder's
        (a former founder's only if the latest takeover carried it over, byte for byte)."""
        if cert.vault_id != self.vault_id:
            raise SyncRefused("certificate of another vault")
        if device_id_of(cert.sign_public) != cert.device_id:
            raise SyncRefused("certificate device id does not match its key")
        if cert.issuer == self.founder_id:
            key = self.founder_sign_public
        elif (cert.issuer in self._former and self._carried is not None
              and self._carried.get(cert.device_id) == _cert_digest(cert)):
            key = self._former[cert.issuer]
        else:
            raise SyncRefused("certificate not issued by the founder")
        verify_signature(key, cert.signature, canonical(cert.body()), "certificate signature")
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

    def set_successor(self, rec: Successor) -> bool:
        """Keep ``rec`` if the current founder signed it for this generation and it is newer
        than the one held; True if kept."""
        if rec.vault_id != self.vault_id:
            raise SyncRefused("successor record of another vault")
        if rec.founder != self.founder_id or rec.generation != self.generation:
            raise SyncRefused("successor record not the current founder's")
        verify_signature(self.founder_sign_public, rec.signature, canonical(rec.body()),
                         "successor signature")
        if self.successor is not None and rec.version <= self.successor.version:
            return False
        self.successor = rec
        return True

    def accept_takeover(self, rec: Takeover, *, stored: bool = False) -> None:
        """Make ``rec``'s device the founder, or raise ``SyncRefused``. Accepted only when:
        it is the next generation; the delegation inside is the current founder's (its key,
        this generation) and not older than the newest delegation held; it names a device
        not revoked here; the record and its revocation list are signed by that device; and
        the list revokes the previous founder and keeps every revocation held. ``stored``: a
        record this device verified before (from the vault), checked again for signatures
        only, since the list and delegation it held then have been replaced since."""
        d = rec.successor
        if rec.vault_id != self.vault_id or d.vault_id != self.vault_id:
            raise SyncRefused("takeover of another vault")
        if rec.generation != self.generation + 1 or d.generation != self.generation:
            raise SyncRefused("takeover not of the next generation")
        if rec.previous != self.founder_id or d.founder != self.founder_id:
            raise SyncRefused("takeover not delegated by the current founder")
        verify_signature(self.founder_sign_public, d.signature, canonical(d.body()),
                         "successor signature")
        verify_signature(d.sign_public, rec.signature, canonical(rec.body()),
                         "takeover signature")
        revs = rec.revocations
        verify_signature(d.sign_public, revs.signature, canonical(revs.body()),
                         "revocations signature")
        if revs.vault_id != self.vault_id or revs.of(self.founder_id) is None:
            raise SyncRefused("takeover does not revoke the previous founder")
        if revs.of(d.device_id) is not None:
            raise SyncRefused("takeover by a revoked device")
        if not stored:
            if self.successor is not None and d.version < self.successor.version:
                raise SyncRefused("takeover under a replaced delegation")
            if self.revocations.of(d.device_id) is not None:
                raise SyncRefused("takeover by a revoked device")
            if revs.version <= self.revocations.version or any(
                    revs.of(r.device_id) is None for r in self.revocations.revoked):
                raise SyncRefused("takeover drops a revocation")
        self._former[self.founder_id] = self.founder_sign_public
        self.founder_sign_public, self.founder_id = d.sign_public, d.device_id
        self.generation = rec.generation
        self.successor = None
        self.takeovers.append(rec)
        self._carried = dict(rec.carried)
        self._certs = {k: c for k, c in self._certs.items()
                       if self._carried.get(k) == _cert_digest(c) or c.issuer == d.device_id}
        self.revocations = revs

    def dropped(self, cert: Certificate) -> bool:
        """Whether ``cert`` is a former founder's for a device the latest takeover did not
        carry over (kept in a vault from before; no longer trusted, not an error)."""
        return (self._carried is not None and cert.issuer in self._former
                and cert.device_id not in self._carried)

    def carried(self) -> list[tuple[str, str]]:
        """(former founder, device id) of each certificate the latest takeover carried over
        and this trust does not hold yet: where to find it in the folder."""
        if self._carried is None:
            return []
        return [(f, d) for f in sorted(self._former) for d in sorted(self._carried)
                if d not in self._certs]

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
               revocations: bytes | None, takeovers: Iterable[bytes] = (),
               successor: bytes | None = None) -> Trust:
    """A ``Trust`` from what the vault stored (``storage/sync_keys.py``): the founders'
    chain from the root's key, every certificate, the list and the successor record are
    verified again, so a row changed behind Kept's back is refused here."""
    trust = Trust(vault_id, founder_key)
    for raw in takeovers:  # in generation order
        trust.accept_takeover(Takeover.from_bytes(raw), stored=True)
    for raw in certificates:
        cert = Certificate.from_bytes(raw)
        if trust.dropped(cert):
            continue  # a former founder's that the takeover did not carry: no longer trusted
        trust.add_certificate(cert)
    if revocations is not None:
        revs = Revocations.from_bytes(revocations)
        if revs.version > trust.revocations.version:
            trust.set_revocations(revs)
    if successor is not None:
        rec = Successor.from_bytes(successor)
        if rec.generation == trust.generation:
            trust.set_successor(rec)
    return trust
