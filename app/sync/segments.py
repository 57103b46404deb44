"""Segments: a batch of operations encrypted, bound, signed and padded (issue 29, item 2).
Layer: app (pure; no I/O). Runs on: any thread.

The operations are the merge layer's (``list[dict]`` of JSON values); this module never reads
them. One segment on the wire (docs/sync.md#the-envelope)::

    header (89 bytes, clear, all of it AEAD associated data and signed)
      magic "KSEG" | version 2 | kind (1 log, 2 snapshot, 3 ack) | vault id 16 | device id 16 |
      epoch u32 | seq u64 | previous segment's SHA-256 32 | nonce 12
    ciphertext   ChaCha20-Poly1305 of  u32 length | payload | zero padding
    signature    Ed25519 of everything above, by the device

The payload is the canonical JSON of the ops, DEFLATE-compressed (raw, with the fixed preset
dictionary ``ZDICT_V2``) in version 2; version 1 (what this module wrote before) holds the JSON
as is, and is still read. The version byte is in the header, so it is signed, bound into the
AEAD and into the segment's key: nobody can make a reader take one for the other.

The AEAD key of one segment is HKDF-SHA256(epoch key, info = "kept-sync segment v1" | header
without the nonce), so no two segments share a key even if a random nonce repeated. The whole
file is padded to a size bucket: powers of two from 512 bytes (512, 1 KiB, 2 KiB ... 64 MiB;
version 1 files start at 1 KiB), so the host learns a size class, not a length; a file of any
other length is refused before any crypto. Why compressing before padding tells the host
nothing a bucket did not: docs/sync.md#size-buckets.

``decode_segment`` verifies (in this order: size, header, vault, certificate and revocation,
signature, epoch key, AEAD, padding, decompression, JSON) and raises ``SyncRefused`` with a
reason;
``check_chain`` compares a verified segment with the reader's cursor for that device and says
what to do with it (apply, skip a duplicate, wait for a gap, stop on rollback or equivocation).
"""

from __future__ import annotations

import enum
import hashlib
import json
import os
import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from app.sync.keys import (
    DeviceSecret,
    EpochKey,
    SyncRefused,
    Trust,
    canonical,
    verify_signature,
)

MAGIC = b"KSEG"
VERSION = 2  # what this module writes
VERSIONS = (1, 2)  # what it reads: 1 = JSON as is, 2 = JSON through DEFLATE with ZDICT_V2
_HEAD = struct.Struct(">4sBB16s16sIQ32s12s")
HEADER_BYTES = _HEAD.size  # 89
TAG_BYTES = 16
SIGNATURE_BYTES = 64
OVERHEAD = HEADER_BYTES + 4 + TAG_BYTES + SIGNATURE_BYTES  # 173
MIN_BUCKET = 512
V1_MIN_BUCKET = 1024  # version 1 was never written below 1 KiB
MAX_BUCKET = 64 * 1024 * 1024
# The most JSON a version 2 payload may inflate to: a compressed payload of a few KiB could
# otherwise inflate to gigabytes in the reader (the writer is certified, but may be buggy).
MAX_PAYLOAD = 4 * MAX_BUCKET
GENESIS = bytes(32)  # the "previous hash" of a device's first segment
_KEY_INFO = b"kept-sync segment v1|"


class Kind(enum.IntEnum):
    LOG = 1
    SNAPSHOT = 2
    ACK = 3


def bucket(n: int) -> int:
    """The padded size of a file of ``n`` bytes: the smallest power of two >= 1 KiB that holds
    it. Raises ``SyncRefused`` past 64 MiB (the caller closes segments before that)."""
    size = MIN_BUCKET
    while size < n:
        size *= 2
    if size > MAX_BUCKET:
        raise SyncRefused("segment too large")
    return size


# DEFLATE's preset dictionary for version 2: the words the ops repeat, so that even a lone op
# (which has nothing earlier in its own stream to refer back to) is coded by reference. It is
# part of the format: changing one byte makes every version 2 file unreadable, so a new
# dictionary needs a new envelope version (a test pins its hash). It holds only field names and
# fixed values of the schema (app/sync/ops.py), the same in every vault: no secret, no content.
# DEFLATE codes a match closer to the end of the dictionary in fewer bits: the most frequent
# words (the memory.create below) come last.
ZDICT_V2 = (
    b'"kind":"fact.retract","kind":"inbox.propose","kind":"inbox.decide","verdict":"accept",'
    b'"verdict":"reject","choice":null,"item":"","reason":"","kind":"review","contradiction",'
    b'"kind":"forget","body":{"gids":["","kind":"memory.edit","body":{"bases":["'
    b'"category":"","object":"","predicate":"","replaces":"","statement":"","subject":"",'
    b'"kind":"fact.assert","kind":"fact.supersede","store":"semantic","store":"short_term",'
    b'"store":"procedural","side":{"actions":[],"kind":"procedure","kind":"preference",'
    b'"trigger":null},[{"covers":{"":[,""]},"epoch":,"kind":"kept-sync.snapshot"},'
    b'[{"applied":{"":},"at":,"epoch":,"from_seq":,"kind":"kept-sync.ack"}]'
    b'{"body":{"agent":"global","confidence":null,"context":null,"emotional":null,"gid":"",'
    b'"importance":null,"learned_at":,"occurred_at":,"ref":null,"session":null,'
    b'"side":{"actors":[],"details":null,"event_type":"","outcome":null},"social":null,'
    b'"sources":[],"speaker":null,"store":"episodic","text":"","turn":null,'
    b'"user_validated":false,"valid_from":null,"valid_to":null,"written_by":"person"},'
    b'"device":"","hlc":"","id":"","kind":"memory.create"}]')


def encode_ops(ops: list[dict[str, Any]]) -> bytes:
    """The canonical JSON of ``ops``: what a version 1 segment holds, and what version 2
    compresses."""
    return canonical(ops)


def compress(body: bytes) -> bytes:
    """Version 2's payload: raw DEFLATE (no zlib header or checksum: the AEAD authenticates
    it) with the preset dictionary, at zlib's default level 6 (level 9 gave the same 166
    bytes for one op and 1.3 % less for a 10k-op snapshot, for more time; dev, measured)."""
    if len(body) > MAX_PAYLOAD:
        raise SyncRefused("segment too large")
    z = zlib.compressobj(6, zlib.DEFLATED, -15, 9, zlib.Z_DEFAULT_STRATEGY, zdict=ZDICT_V2)
    return z.compress(body) + z.flush()


def decompress(payload: bytes) -> bytes:
    """The JSON of a version 2 payload; ``SyncRefused`` if it is not one whole DEFLATE stream
    or inflates past ``MAX_PAYLOAD`` (stopped there, never inflated further)."""
    z = zlib.decompressobj(-15, zdict=ZDICT_V2)
    try:
        body = z.decompress(payload, MAX_PAYLOAD)
    except zlib.error:
        raise SyncRefused("bad segment payload") from None
    if not z.eof or z.unused_data or z.unconsumed_tail:
        raise SyncRefused("bad segment payload")
    return body


@dataclass(frozen=True)
class Segment:
    """A verified, decrypted segment. ``hash`` is SHA-256 of the file as written."""

    kind: Kind
    vault_id: str
    device_id: str
    epoch: int
    seq: int
    prev: bytes
    hash: bytes
    ops: list[dict[str, Any]] = field(repr=False)


def _segment_key(epoch_key: bytes, header_without_nonce: bytes) -> bytes:
    return HKDF(hashes.SHA256(), 32, salt=None,
                info=_KEY_INFO + header_without_nonce).derive(epoch_key)


def encode_segment(device: DeviceSecret, vault_id: str, key: EpochKey, seq: int, prev: bytes,
                   ops: list[dict[str, Any]], kind: Kind = Kind.LOG,
                   version: int = VERSION) -> bytes:
    """The file bytes of one segment (length: a bucket). ``version`` 1 writes the format
    before compression (for the tests that show it is still read; the app writes 2)."""
    if seq < 1 or len(prev) != 32:
        raise ValueError("a segment's sequence starts at 1 and its previous hash is 32 bytes")
    if version not in VERSIONS:
        raise ValueError("unknown segment version")
    body = encode_ops(ops) if version == 1 else compress(encode_ops(ops))
    size = max(bucket(OVERHEAD + len(body)), V1_MIN_BUCKET if version == 1 else MIN_BUCKET)
    plain = struct.pack(">I", len(body)) + body
    plain += bytes(size - OVERHEAD - len(body))
    header = _HEAD.pack(MAGIC, version, int(kind), bytes.fromhex(vault_id),
                        bytes.fromhex(device.device_id), key.epoch, seq, prev, os.urandom(12))
    aead = ChaCha20Poly1305(_segment_key(key.key, header[:-12]))
    sealed = header + aead.encrypt(header[-12:], plain, header)
    return sealed + device.sign(sealed)


@dataclass(frozen=True)
class Header:
    version: int
    kind: int
    vault_id: str
    device_id: str
    epoch: int
    seq: int
    prev: bytes


def read_header(data: bytes) -> Header:
    """The clear header, unverified (to choose a certificate and a key). Refuses any length
    that is not a bucket: a partial or truncated file fails here."""
    if len(data) < MIN_BUCKET or len(data) > MAX_BUCKET or len(data) & (len(data) - 1):
        raise SyncRefused("not a whole segment")
    magic, version, kind, vault, device, epoch, seq, prev, _nonce = _HEAD.unpack_from(data)
    if magic != MAGIC:
        raise SyncRefused("not a segment")
    if version not in VERSIONS:
        raise SyncRefused("unknown segment version")
    if version == 1 and len(data) < V1_MIN_BUCKET:
        raise SyncRefused("not a whole segment")
    if kind not in tuple(Kind):
        raise SyncRefused("unknown segment kind")
    return Header(version, kind, vault.hex(), device.hex(), epoch, seq, prev)


def decode_segment(data: bytes, trust: Trust, keys: Mapping[int, bytes]) -> Segment:
    """Verify and open one segment file. ``keys``: epoch -> epoch key held by this device."""
    head = read_header(data)
    if head.vault_id != trust.vault_id:
        raise SyncRefused("segment of another vault")
    cert = trust.may_write(head.device_id, head.seq)
    signed, signature = data[:-SIGNATURE_BYTES], data[-SIGNATURE_BYTES:]
    verify_signature(cert.sign_public, signature, signed, "segment signature")
    key = keys.get(head.epoch)
    if key is None:
        raise SyncRefused("no key for this epoch")
    header = signed[:HEADER_BYTES]
    try:
        plain = ChaCha20Poly1305(_segment_key(key, header[:-12])).decrypt(
            header[-12:], signed[HEADER_BYTES:], header)
    except InvalidTag:
        raise SyncRefused("segment does not decrypt") from None
    (length,) = struct.unpack_from(">I", plain)
    body, pad = plain[4:4 + length], plain[4 + length:]
    if len(body) != length or pad.count(0) != len(pad):
        raise SyncRefused("bad segment padding")
    if head.version != 1:
        body = decompress(body)
    try:
        ops = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise SyncRefused("bad segment payload") from None
    if not isinstance(ops, list) or not all(isinstance(o, dict) for o in ops):
        raise SyncRefused("bad segment payload")
    return Segment(Kind(head.kind), head.vault_id, head.device_id, head.epoch, head.seq,
                   head.prev, hashlib.sha256(data).digest(), ops)


@dataclass(frozen=True)
class Cursor:
    """How far this device has applied another device's log: its last sequence and the hash
    of that segment (``GENESIS`` and 0 before the first)."""

    device_id: str
    last_seq: int = 0
    last_hash: bytes = GENESIS

    def after(self, seg: Segment) -> Cursor:
        return Cursor(self.device_id, seg.seq, seg.hash)


class Verdict(enum.Enum):
    APPLY = "apply"            # the next segment, chained to the last one: apply it
    DUPLICATE = "duplicate"    # the segment already applied, byte for byte: skip it
    GAP = "gap"                # a later one; a sequence is missing: wait, apply nothing past it
    ROLLBACK = "rollback"      # a lower sequence than applied, or not chained to the last hash
    EQUIVOCATION = "equivocation"  # a different valid segment for a sequence already applied


def check_chain(cursor: Cursor, seg: Segment) -> Verdict:
    if seg.device_id != cursor.device_id:
        raise ValueError("cursor of another device")
    if seg.seq == cursor.last_seq + 1:
        return Verdict.APPLY if seg.prev == cursor.last_hash else Verdict.ROLLBACK
    if seg.seq > cursor.last_seq + 1:
        return Verdict.GAP
    if seg.seq == cursor.last_seq:
        return Verdict.DUPLICATE if seg.hash == cursor.last_hash else Verdict.EQUIVOCATION
    return Verdict.ROLLBACK
