"""Envelope version 2 (app/sync/segments.py): the ops' JSON compressed inside the AEAD before
padding, buckets from 512 bytes, and version 1 files (what main wrote before) still read."""

from __future__ import annotations

import hashlib
import json
import secrets
from pathlib import Path
from typing import Any

import pytest

from app.sync import segments
from app.sync.epochs import parse_ack, parse_snapshot
from app.sync.folder import FolderReader, seq_name, write_once
from app.sync.hlc import HybridClock
from app.sync.keys import DeviceSecret, EpochKey, SyncRefused, Trust, issue_certificate
from app.sync.ops import MemoryCreate, OpWriter, new_gid, parse_ops
from app.sync.segments import (
    GENESIS,
    MIN_BUCKET,
    OVERHEAD,
    ZDICT_V2,
    Kind,
    compress,
    decode_segment,
    encode_ops,
    encode_segment,
    read_header,
)
from tests.app.sync.devices import memory_op, two_devices
from tests.app.sync.op_samples import edit, forget, memory

DEV = two_devices()
TRUST = DEV.trust()
TEXT_32 = "Ana prefers green tea at eleven."  # the issue's "small memory": 32 characters


def _real_ops(*bodies: Any) -> list[dict[str, Any]]:
    """Ops as the engine writes them: a 32-hex device id (three times in each op)."""
    writer = OpWriter(HybridClock(DEV.founder.device_id), next_seq=4711)
    return [op.to_dict() for op in writer.batch(list(bodies))]


def test_a_lone_small_memory_create_fills_the_512_byte_bucket_and_comes_back() -> None:
    assert len(TEXT_32) == 32
    ops = _real_ops(memory(new_gid(), TEXT_32, confidence=0.9, importance=0.5, session="s1",
                           side={"event_type": "note", "actors": ["Ana"]}))
    assert len(encode_ops(ops)) > 600  # as JSON it would need the 1 KiB bucket
    data = encode_segment(DEV.founder, DEV.vault_id, DEV.key, 1, GENESIS, ops)
    assert len(data) == MIN_BUCKET == 512
    seg = decode_segment(data, TRUST, DEV.keys)
    body = parse_ops(seg.ops)[0].body
    assert seg.ops == ops and isinstance(body, MemoryCreate) and body.text == TEXT_32
    assert read_header(data).version == 2
    assert TEXT_32.encode() not in data and b"Ana" not in data


def test_an_edit_and_a_forget_alone_are_512_bytes_too() -> None:
    g = new_gid()
    for body in (edit(g, (g,), TEXT_32), forget(g, new_gid(), new_gid())):
        data = encode_segment(DEV.founder, DEV.vault_id, DEV.key, 1, GENESIS, _real_ops(body))
        assert len(data) == 512


def test_the_bucket_follows_the_compressed_size_and_stays_a_power_of_two() -> None:
    # Incompressible text (hex of random bytes) of growing length: the file grows by doubling.
    sizes = []
    for n in (16, 200, 400, 900, 2000, 5000):
        ops = _real_ops(memory(new_gid(), secrets.token_hex(n)[:n]))
        data = encode_segment(DEV.founder, DEV.vault_id, DEV.key, 1, GENESIS, ops)
        expected = max(MIN_BUCKET, segments.bucket(OVERHEAD + len(compress(encode_ops(ops)))))
        assert len(data) == expected and len(data) & (len(data) - 1) == 0
        assert decode_segment(data, TRUST, DEV.keys).ops == ops
        sizes.append(len(data))
    assert sizes == sorted(sizes) and sizes[0] == 512 and sizes[-1] >= 4096


def test_version_1_is_still_read_and_still_starts_at_one_kib() -> None:
    ops = [memory_op()]
    v1 = encode_segment(DEV.founder, DEV.vault_id, DEV.key, 1, GENESIS, ops, version=1)
    assert len(v1) == 1024 and read_header(v1).version == 1
    assert b'"memory.create"' not in v1  # sealed as before
    assert decode_segment(v1, TRUST, DEV.keys).ops == ops
    with pytest.raises(SyncRefused, match="whole segment"):  # half of it, relabelled
        read_header(v1[:512])


def test_the_version_byte_is_bound_a_v1_file_relabelled_v2_or_back_is_refused() -> None:
    big = [memory_op(secrets.token_hex(600))]  # past 1 KiB in both versions
    for version in (1, 2):
        raw = bytearray(encode_segment(DEV.founder, DEV.vault_id, DEV.key, 1, GENESIS, big,
                                       version=version))
        assert len(raw) >= 1024
        raw[4] = 3 - version
        with pytest.raises(SyncRefused, match="signature"):
            decode_segment(bytes(raw), TRUST, DEV.keys)
        raw[4] = 9
        with pytest.raises(SyncRefused, match="unknown segment version"):
            decode_segment(bytes(raw), TRUST, DEV.keys)
    small = bytearray(encode_segment(DEV.founder, DEV.vault_id, DEV.key, 1, GENESIS,
                                     [memory_op()]))
    small[4] = 1  # a 512-byte file cannot be version 1
    with pytest.raises(SyncRefused, match="whole segment"):
        decode_segment(bytes(small), TRUST, DEV.keys)


def _fixture_trust(fx: dict[str, Any]) -> tuple[Trust, dict[int, bytes]]:
    founder = DeviceSecret.from_bytes(bytes.fromhex(fx["founder_secret"]))
    trust = Trust(fx["vault_id"], founder.sign_public)
    trust.add_certificate(issue_certificate(founder, fx["vault_id"], founder.sign_public,
                                            founder.box_public, "laptop", 1_764_150_000))
    return trust, {fx["epoch"]: bytes.fromhex(fx["epoch_key"])}


def test_files_written_by_the_version_1_code_are_read_log_snapshot_and_ack() -> None:
    """``data/segments_v1.json``: a log segment, a snapshot and an acknowledgement that
    main's segments.py wrote (commit 7b45eb0, before compression), with the test keys."""
    fx = json.loads((Path(__file__).parent / "data" / "segments_v1.json").read_text())
    trust, keys = _fixture_trust(fx)
    segs = {}
    for name, (hex_data, payload) in fx["files"].items():
        data = bytes.fromhex(hex_data)
        assert len(data) == 1024 and read_header(data).version == 1
        segs[name] = decode_segment(data, trust, keys)
        assert segs[name].ops == payload
    assert parse_ops(segs["log"].ops)[0].kind == "memory.create"
    snap = parse_snapshot(segs["snapshot"])
    assert [op.to_dict() for op in snap.ops] == segs["log"].ops
    assert parse_ack(segs["ack"]).applied == {DeviceSecret.from_bytes(
        bytes.fromhex(fx["founder_secret"])).device_id: 1}


def test_the_preset_dictionary_is_pinned() -> None:
    # Changing it makes every version 2 file unreadable: a new dictionary needs a new version.
    assert hashlib.sha256(ZDICT_V2).hexdigest() == \
        "00f148e3799a65d6d3347f09195bafa3c08c5bd6e45423119650893cfc89cd25"


def _sealed_with(monkeypatch: pytest.MonkeyPatch, payload: bytes) -> bytes:
    """A segment, sealed and signed by a certified device, whose payload is ``payload``."""
    with monkeypatch.context() as m:
        m.setattr(segments, "compress", lambda body: payload)
        return encode_segment(DEV.founder, DEV.vault_id, DEV.key, 1, GENESIS, [])


def test_a_payload_that_is_not_one_whole_deflate_stream_is_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    good = compress(encode_ops([memory_op()]))
    for bad in (b"\xff" * 40, good[:-3], good + b"\0junk", b""):
        with pytest.raises(SyncRefused, match="bad segment payload"):
            decode_segment(_sealed_with(monkeypatch, bad), TRUST, DEV.keys)
    assert decode_segment(_sealed_with(monkeypatch, good), TRUST, DEV.keys).ops == [memory_op()]


def test_a_payload_inflating_past_the_cap_is_refused_without_inflating_it_all(
        monkeypatch: pytest.MonkeyPatch) -> None:
    bomb = compress(b"[" + b'{"n":0},' * 200_000 + b'{"n":0}]')  # 1.6 MB of JSON
    assert len(bomb) < 8 * 1024
    data = _sealed_with(monkeypatch, bomb)
    assert len(decode_segment(data, TRUST, DEV.keys).ops) == 200_001
    monkeypatch.setattr(segments, "MAX_PAYLOAD", 100_000)
    with pytest.raises(SyncRefused, match="bad segment payload"):
        decode_segment(data, TRUST, DEV.keys)
    with pytest.raises(SyncRefused, match="too large"):
        compress(b"x" * 100_001)


def test_another_epoch_key_or_device_is_still_refused_in_version_2() -> None:
    data = encode_segment(DEV.founder, DEV.vault_id, DEV.key, 1, GENESIS, [memory_op()])
    with pytest.raises(SyncRefused, match="decrypt"):
        decode_segment(data, TRUST, {1: EpochKey.generate(1).key})
    with pytest.raises(SyncRefused, match="unknown device"):
        decode_segment(encode_segment(DeviceSecret.generate(), DEV.vault_id, DEV.key, 1,
                                      GENESIS, []), TRUST, DEV.keys)
    assert Kind(read_header(data).kind) is Kind.LOG


def test_a_device_log_mixing_versions_is_read_in_order_by_the_folder_reader(
        tmp_path: Path) -> None:
    """A device updated mid-log: segments 1 and 3 in version 1 (1 KiB), 2 in version 2
    (512 bytes), one chain; the reader applies all three in order, nothing reported."""
    log = tmp_path / "v1" / "log" / DEV.founder.device_id
    prev = GENESIS
    for seq, version in ((1, 1), (2, 2), (3, 1)):
        data = encode_segment(DEV.founder, DEV.vault_id, DEV.key, seq, prev, [{"n": seq}],
                              version=version)
        assert len(data) == (1024 if version == 1 else 512)
        write_once(log / seq_name(seq), data)
        prev = hashlib.sha256(data).digest()
    scan = FolderReader(tmp_path, DEV.other.device_id, DEV.trust(), DEV.keys, {}).scan()
    assert [s.ops for s in scan.segments] == [[{"n": 1}], [{"n": 2}], [{"n": 3}]]
    assert scan.findings == []
