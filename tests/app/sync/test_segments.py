"""Segments (app/sync/segments.py): sealed, bound, signed, padded; every change refused; the
chain verdicts a reader acts on."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.sync.keys import DeviceSecret, EpochKey, Revocation, SyncRefused, sign_revocations
from app.sync.segments import (
    GENESIS,
    MIN_BUCKET,
    OVERHEAD,
    Cursor,
    Kind,
    Verdict,
    bucket,
    check_chain,
    compress,
    decode_segment,
    encode_ops,
    encode_segment,
)
from tests.app.sync.devices import memory_op, two_devices

DEV = two_devices()
TRUST = DEV.trust()


def _encode(ops: list[dict[str, Any]], seq: int = 1, prev: bytes = GENESIS,
            device: DeviceSecret = DEV.founder, key: EpochKey = DEV.key) -> bytes:
    return encode_segment(device, DEV.vault_id, key, seq, prev, ops)


def test_a_small_memory_is_half_a_kib_on_the_wire_and_comes_back_as_written() -> None:
    op = memory_op()
    data = _encode([op])
    assert len(data) == MIN_BUCKET == 512
    seg = decode_segment(data, TRUST, DEV.keys)
    assert seg.ops == [op] and seg.kind is Kind.LOG
    assert (seg.device_id, seg.seq, seg.epoch, seg.prev) == (DEV.founder.device_id, 1, 1, GENESIS)
    assert b"Lisbon" not in data and DEV.founder.device_id.encode() not in data


@given(st.integers(0, 40 * 1024 * 1024))
def test_a_bucket_is_the_smallest_power_of_two_from_512_bytes_that_holds_it(n: int) -> None:
    b = bucket(n)
    assert b >= max(n, MIN_BUCKET) and b & (b - 1) == 0
    assert b == MIN_BUCKET or b // 2 < n


def test_past_the_largest_bucket_the_writer_is_refused() -> None:
    with pytest.raises(SyncRefused, match="too large"):
        bucket(64 * 1024 * 1024 + 1)


def _noise(n: int, seed: str) -> str:
    out, h = "", seed.encode()
    while len(out) < n:
        h = hashlib.sha256(h).digest()
        out += h.hex()
    return out[:n]


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 3000), st.integers(0, 3000))
def test_lengths_in_one_bucket_are_indistinguishable(a: int, b: int) -> None:
    # Texts that compress little (hex of a hash chain), so that lengths spread over buckets.
    x, y = _noise(a, "x"), _noise(b, "y")
    da, db = _encode([memory_op(x)]), _encode([memory_op(y)])
    # The bucket follows the compressed payload (what is sealed), not the JSON.
    same_bucket = bucket(OVERHEAD + len(compress(encode_ops([memory_op(x)])))) == \
        bucket(OVERHEAD + len(compress(encode_ops([memory_op(y)]))))
    assert (len(da) == len(db)) == same_bucket


_ONE = _encode([memory_op()])


@settings(max_examples=300, deadline=None)
@given(st.integers(0, len(_ONE) - 1), st.integers(1, 255))
def test_any_changed_byte_is_refused(at: int, xor: int) -> None:
    raw = bytearray(_ONE)
    raw[at] ^= xor
    with pytest.raises(SyncRefused):
        decode_segment(bytes(raw), TRUST, DEV.keys)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**53, 2**53) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                  max_size=4),
    max_leaves=12)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.dictionaries(st.text(max_size=10), json_values, max_size=5), max_size=6))
def test_any_json_ops_come_back_unchanged(ops: list[dict[str, Any]]) -> None:
    assert decode_segment(_encode(ops), TRUST, DEV.keys).ops == ops


def test_each_binding_is_checked_with_its_reason() -> None:
    data = _encode([memory_op()])
    other_vault = two_devices()
    with pytest.raises(SyncRefused, match="another vault"):
        decode_segment(encode_segment(DEV.founder, other_vault.vault_id, DEV.key, 1, GENESIS,
                                      []), TRUST, DEV.keys)
    stranger = DeviceSecret.generate()
    with pytest.raises(SyncRefused, match="unknown device"):
        decode_segment(_encode([], device=stranger), TRUST, DEV.keys)
    # A stranger writing under the founder's id: the header names a certified device, the
    # signature is not that device's.
    forged = bytearray(_encode([memory_op()], device=stranger))
    forged[22:38] = bytes.fromhex(DEV.founder.device_id)
    with pytest.raises(SyncRefused, match="signature"):
        decode_segment(bytes(forged), TRUST, DEV.keys)
    with pytest.raises(SyncRefused, match="no key"):
        decode_segment(data, TRUST, {})
    with pytest.raises(SyncRefused, match="decrypt"):
        decode_segment(data, TRUST, {1: EpochKey.generate(1).key})
    with pytest.raises(SyncRefused, match="whole segment"):
        decode_segment(data[:-1], TRUST, DEV.keys)
    with pytest.raises(SyncRefused, match="whole segment"):
        decode_segment(data[:256], TRUST, DEV.keys)
    revoked = DEV.trust()
    revoked.set_revocations(sign_revocations(DEV.founder, DEV.vault_id, 1,
                                             [Revocation(DEV.other.device_id, 9, 1)]))
    assert decode_segment(_encode([], device=DEV.other), revoked, DEV.keys).seq == 1
    with pytest.raises(SyncRefused, match="revoked"):
        decode_segment(_encode([], seq=2, device=DEV.other), revoked, DEV.keys)
    with pytest.raises(ValueError):
        _encode([], seq=0)


def test_the_chain_verdicts() -> None:
    s1 = decode_segment(_encode([{"n": 1}]), TRUST, DEV.keys)
    s2 = decode_segment(_encode([{"n": 2}], 2, s1.hash), TRUST, DEV.keys)
    s3 = decode_segment(_encode([{"n": 3}], 3, s2.hash), TRUST, DEV.keys)
    start = Cursor(DEV.founder.device_id)
    assert check_chain(start, s1) is Verdict.APPLY
    assert check_chain(start, s2) is Verdict.GAP
    at1 = start.after(s1)
    assert check_chain(at1, s2) is Verdict.APPLY
    assert check_chain(at1, s1) is Verdict.DUPLICATE
    # The same ops sealed again are another segment: two for one sequence.
    again = decode_segment(_encode([{"n": 1}]), TRUST, DEV.keys)
    assert check_chain(at1, again) is Verdict.EQUIVOCATION
    # A second segment 2 chained to that other segment 1; and a sequence lower than applied.
    fork2 = decode_segment(_encode([{"n": 2}], 2, again.hash), TRUST, DEV.keys)
    assert check_chain(at1, fork2) is Verdict.ROLLBACK
    assert check_chain(at1.after(s2).after(s3), s1) is Verdict.ROLLBACK
    with pytest.raises(ValueError):
        check_chain(Cursor(DEV.other.device_id), s1)
