"""The folder contract (app/sync/folder.py) over the in-process faulty transport
(app/sync/faults.py): write-once files, strict names, each segment exactly once and in order,
nothing tampered, forged or replayed ever applied."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.sync.faults import Faults, FaultyTransport
from app.sync.folder import (
    AlreadyWritten,
    FolderReader,
    FolderWriter,
    classify,
    formats,
    read_root,
    seq_name,
    write_once,
)
from app.sync.keys import (
    DeviceSecret,
    EpochKey,
    Revocation,
    SyncRefused,
    Trust,
    issue_certificate,
    seal_epoch_key,
    sign_revocations,
)
from app.sync.segments import GENESIS, Cursor, Kind, decode_segment, encode_segment
from tests.app.sync.devices import Devices, memory_op, two_devices


def _writer(dev: Devices, folder: Path, device: DeviceSecret | None = None) -> FolderWriter:
    d = device or dev.founder
    return FolderWriter(folder, d, dev.vault_id, Cursor(d.device_id))


def _reader(dev: Devices, folder: Path, cursors: dict[str, Cursor] | None = None,
            trust: Trust | None = None) -> FolderReader:
    return FolderReader(folder, dev.other.device_id, trust or dev.trust(), dev.keys,
                        cursors or {})


def _ops(reader: FolderReader) -> list[Any]:
    return [op["n"] for seg in reader.scan().segments for op in seg.ops]


def _log(dev: Devices, seq: int) -> str:
    return f"v1/log/{dev.founder.device_id}/{seq_name(seq)}"


def test_a_file_is_written_once_and_never_over_another(tmp_path: Path) -> None:
    path = tmp_path / "v1" / "log" / "x" / seq_name(1)
    write_once(path, b"first")
    with pytest.raises(AlreadyWritten):
        write_once(path, b"second")
    assert path.read_bytes() == b"first"
    assert [p.name for p in path.parent.iterdir()] == [seq_name(1)]  # no temp file left


def test_each_device_writes_only_under_its_own_id(tmp_path: Path) -> None:
    dev = two_devices()
    founder, other = _writer(dev, tmp_path), _writer(dev, tmp_path, dev.other)
    founder.write_root(1_764_150_000)
    trust = dev.trust()
    founder.publish_certificate(trust.certificate(dev.other.device_id))
    founder.publish_revocations(sign_revocations(dev.founder, dev.vault_id, 1, []))
    founder.publish_sealed(seal_epoch_key(dev.founder, dev.vault_id, dev.key,
                                          trust.certificate(dev.other.device_id)))
    founder.append([memory_op()], dev.key)
    other.append([memory_op("Ana likes tea")], dev.key)
    other.write_snapshot([memory_op()], dev.key)
    other.write_ack(1, {"applied": {dev.founder.device_id: 1}, "epoch": 1}, dev.key)
    files = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")
                   if p.is_file())
    assert files[0] == "kept-sync-root.v1"
    for rel in files[1:]:
        fmt, kind, owner, _name = rel.split("/")
        assert fmt == "v1"
        assert owner == (dev.founder.device_id if kind in ("certs", "revoked", "keys")
                         else owner)
        assert owner in (dev.founder.device_id, dev.other.device_id)
    assert {rel.split("/")[1] for rel in files[1:]} == {"certs", "revoked", "keys", "log",
                                                         "snap", "ack"}
    snap = next(tmp_path.glob(f"v1/snap/{dev.other.device_id}/*"))
    assert snap.name == f"{1:08d}-{seq_name(1)}"
    assert decode_segment(snap.read_bytes(), trust, dev.keys).kind is Kind.SNAPSHOT
    ack = next(tmp_path.glob(f"v1/ack/{dev.other.device_id}/*"))
    assert decode_segment(ack.read_bytes(), trust, dev.keys).ops[0]["epoch"] == 1


def test_the_root_is_signed_and_a_new_format_goes_beside_the_old(tmp_path: Path) -> None:
    dev = two_devices()
    _writer(dev, tmp_path).write_root(1_764_150_000)
    raw = (tmp_path / "kept-sync-root.v1").read_bytes()
    root = read_root(raw, dev.founder.sign_public)
    assert (root.format, root.vault_id) == ("v1", dev.vault_id)
    with pytest.raises(SyncRefused, match="another founder"):
        read_root(raw, dev.other.sign_public)
    d = json.loads(raw)
    d["vault"] = two_devices().vault_id
    with pytest.raises(SyncRefused, match="signature"):
        read_root(json.dumps(d).encode())
    v1_before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    newer = FolderWriter(tmp_path, dev.founder, dev.vault_id, Cursor(dev.founder.device_id),
                         fmt="v2")
    newer.write_root(1_764_160_000)
    newer.append([memory_op()], dev.key)
    assert formats(tmp_path) == [1, 2]
    assert all(p.read_bytes() == b for p, b in v1_before.items())
    assert (tmp_path / "v2" / "log" / dev.founder.device_id / seq_name(1)).exists()


REAL_CONFLICTS = [
    "000000000003.sync-conflict-20261126-101010-7ABCDEF",     # Syncthing
    "000000000003 (Sam's conflicted copy 2026-11-26)",        # Dropbox
    "000000000003 (Case Conflict)",                           # Dropbox
    "000000000003 (conflicted copy 2026-11-26 101010)",       # Nextcloud
    "000000000003_conflict-20261126-101010",                  # ownCloud < 2.5
    "000000000003-DESKTOP-4F2K9Q1",                           # OneDrive
    "000000000003 2",                                         # iCloud Drive
]
REAL_TEMPS = [".syncthing.000000000003.tmp", "~syncthing~000000000003.tmp",
              ".000000000003.~27fa", ".000000000003.icloud", "000000000003.!sync",
              ".tmp-0a1b2c3d4e5f.partial"]


@pytest.mark.parametrize("name", REAL_CONFLICTS)
def test_conflict_copies_of_each_tool_are_known(name: str) -> None:
    assert classify(name) == "conflict"


@pytest.mark.parametrize("name", REAL_TEMPS)
def test_partial_downloads_of_each_tool_are_known(name: str) -> None:
    assert classify(name) == "temp"


def test_the_reader_applies_none_of_the_copies_a_sync_tool_leaves(tmp_path: Path) -> None:
    dev = two_devices()
    a, b = tmp_path / "a", tmp_path / "b"
    w = _writer(dev, a)
    for n in (1, 2, 3):
        w.append([{"n": n}], dev.key)
    for n in (1, 2):
        (b / _log(dev, n)).parent.mkdir(parents=True, exist_ok=True)
        (b / _log(dev, n)).write_bytes((a / _log(dev, n)).read_bytes())
    third = (a / _log(dev, 3)).read_bytes()
    folder = (b / _log(dev, 3)).parent
    for name in REAL_CONFLICTS + REAL_TEMPS:
        (folder / name).write_bytes(third)
    versions = b / ".stversions" / "v1" / "log" / dev.founder.device_id
    versions.mkdir(parents=True)
    (versions / "000000000003~20261126-101010").write_bytes(third)
    reader = _reader(dev, b)
    scan = reader.scan()
    assert [op["n"] for s in scan.segments for op in s.ops] == [1, 2]
    assert scan.ignored["conflict"] == len(REAL_CONFLICTS)
    assert scan.ignored["temp"] == len(REAL_TEMPS)
    (folder / seq_name(3)).write_bytes(third)
    assert _ops(reader) == [3]


def test_a_tampered_file_is_never_applied_and_the_real_one_is(tmp_path: Path) -> None:
    dev = two_devices()
    a, b = tmp_path / "a", tmp_path / "b"
    w = _writer(dev, a)
    for n in (1, 2, 3):
        w.append([{"n": n}], dev.key)
    t = FaultyTransport(a, b, seed=1, faults=Faults(0, 0, 0, 0, 0))
    t.step()
    t.tamper(_log(dev, 2))
    reader = _reader(dev, b)
    scan = reader.scan()
    assert [op["n"] for s in scan.segments for op in s.ops] == [1]
    assert [(f.what, f.seq) for f in scan.findings] == [("unreadable", 2)]
    assert _ops(reader) == []  # still waiting, still not applied
    (b / _log(dev, 2)).write_bytes((a / _log(dev, 2)).read_bytes())
    assert _ops(reader) == [2, 3]


def test_forged_and_replayed_files_are_never_applied(tmp_path: Path) -> None:
    dev = two_devices()
    a, b = tmp_path / "a", tmp_path / "b"
    w = _writer(dev, a)
    w.append([{"n": 1}], dev.key)
    w.append([{"n": 2}], dev.key)
    t = FaultyTransport(a, b, seed=2, faults=Faults(0, 0, 0, 0, 0))
    t.step()
    reader = _reader(dev, b)
    assert _ops(reader) == [1, 2]
    stranger = DeviceSecret.generate()
    # An uncertified device holding the epoch key writes as itself and as the founder.
    forged = bytearray(encode_segment(stranger, dev.vault_id, dev.key, 3, reader.cursors[
        dev.founder.device_id].last_hash, [{"n": 666}]))
    forged[22:38] = bytes.fromhex(dev.founder.device_id)  # the header's device id
    (b / _log(dev, 3)).write_bytes(bytes(forged))
    own = b / "v1" / "log" / stranger.device_id / seq_name(1)
    own.parent.mkdir(parents=True)
    own.write_bytes(encode_segment(stranger, dev.vault_id, dev.key, 1, GENESIS, [{"n": 667}]))
    scan = reader.scan()
    assert scan.segments == []
    assert {(f.what, f.reason) for f in scan.findings} == {
        ("unreadable", "segment signature"), ("unreadable", "unknown device")}
    # An old segment of the founder replayed under the next sequence's name.
    (b / _log(dev, 3)).write_bytes((a / _log(dev, 1)).read_bytes())
    scan = reader.scan()
    assert scan.segments == [] and ("misnamed", 3) in [(f.what, f.seq) for f in scan.findings]
    w.append([{"n": 3}], dev.key)
    t.drain()
    assert _ops(reader) == [3]


def test_two_segments_for_one_sequence_stop_that_device(tmp_path: Path) -> None:
    dev = two_devices()
    a, b = tmp_path / "a", tmp_path / "b"
    w = _writer(dev, a)
    w.append([{"n": 1}], dev.key)
    w.append([{"n": 2}], dev.key)
    FaultyTransport(a, b, seed=3, faults=Faults(0, 0, 0, 0, 0)).step()
    reader = _reader(dev, b)
    assert _ops(reader) == [1, 2]
    # The founder's vault restored from an old backup: it writes a second segment 2.
    restored = FolderWriter(b, dev.founder, dev.vault_id, reader.cursors[
        dev.founder.device_id].__class__(dev.founder.device_id, 1, hashlib.sha256(
            (a / _log(dev, 1)).read_bytes()).digest()))
    (b / _log(dev, 2)).unlink()
    restored.append([{"n": 20}], dev.key)
    scan = reader.scan()
    assert scan.segments == [] and [(f.what, f.seq) for f in scan.findings] == [
        ("equivocation", 2)]
    restored.append([{"n": 30}], dev.key)
    assert reader.scan().segments == []  # stopped until the person acts


def test_a_segment_chained_to_another_history_is_a_rollback(tmp_path: Path) -> None:
    dev = two_devices()
    w = _writer(dev, tmp_path)
    w.append([{"n": 1}], dev.key)
    reader = _reader(dev, tmp_path)
    assert _ops(reader) == [1]
    path = tmp_path / _log(dev, 2)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(encode_segment(dev.founder, dev.vault_id, dev.key, 2, b"\x01" * 32,
                                    [{"n": 2}]))
    scan = reader.scan()
    assert scan.segments == [] and [(f.what, f.seq) for f in scan.findings] == [("rollback", 2)]


def test_after_a_crash_the_writer_adopts_what_it_published(tmp_path: Path) -> None:
    dev = two_devices()
    w = _writer(dev, tmp_path)
    saved = w.cursor
    w.append([{"n": 1}], dev.key)  # published; the process dies before saving its cursor
    again = FolderWriter(tmp_path, dev.founder, dev.vault_id, saved)
    adopted = again.resume(dev.trust(), dev.keys)
    assert [s.ops for s in adopted] == [[{"n": 1}]]
    again.append([{"n": 2}], dev.key)
    assert _ops(_reader(dev, tmp_path)) == [1, 2]


def test_a_new_device_learns_trust_and_its_key_from_the_folder(tmp_path: Path) -> None:
    dev = two_devices()
    founder = _writer(dev, tmp_path)
    full = dev.trust()
    for cert in full.devices():
        founder.publish_certificate(cert)
    founder.publish_revocations(sign_revocations(dev.founder, dev.vault_id, 1, []))
    founder.publish_sealed(seal_epoch_key(dev.founder, dev.vault_id, EpochKey(4, b"k" * 32),
                                          full.certificate(dev.other.device_id)))
    stranger = DeviceSecret.generate()
    fake = issue_certificate(stranger, dev.vault_id, stranger.sign_public, stranger.box_public,
                             "intruder", 1)
    (tmp_path / "v1" / "certs" / dev.founder.device_id / stranger.device_id).write_bytes(
        fake.to_bytes())
    fresh = Trust(dev.vault_id, dev.founder.sign_public)  # all a new device has from pairing
    reader = FolderReader(tmp_path, dev.other.device_id, fresh, {}, {})
    findings = reader.load_trust()
    assert [c.device_id for c in fresh.devices()] == sorted(
        [dev.founder.device_id, dev.other.device_id])
    assert [f.reason for f in findings] == ["certificate not issued by the founder"]
    assert fresh.revocations.version == 1
    assert reader.sealed_for(dev.other) == {4: EpochKey(4, b"k" * 32)}
    assert reader.sealed_for(stranger) == {}
    fresh.set_revocations(sign_revocations(dev.founder, dev.vault_id, 2,
                                           [Revocation(dev.other.device_id, 2, 0)]))
    assert fresh.revocations.version == 2


def _run(tmp_path: Path, seed: int, segments: int, faults: Faults) -> None:
    dev = two_devices()
    a, b = tmp_path / f"a{seed}", tmp_path / f"b{seed}"
    w = _writer(dev, a)
    t = FaultyTransport(a, b, seed, faults)
    reader = _reader(dev, b)
    got: list[int] = []
    rng = t.rng
    n = 0
    while n < segments:
        for _ in range(rng.randrange(1, 4)):
            if n < segments:
                w.append([{"n": n}], dev.key)
                n += 1
        t.step()
        scan = reader.scan()
        assert not {f.what for f in scan.findings} & {"rollback", "equivocation"}, t.log
        got += [op["n"] for s in scan.segments for op in s.ops]
        assert got == list(range(len(got))), t.log  # in order, once each, nothing foreign
    t.drain()
    got += _ops(reader)
    assert got == list(range(segments)), t.log
    assert reader.cursors[dev.founder.device_id].last_seq == segments


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 2**32))
def test_under_every_fault_each_segment_arrives_once_in_order(tmp_path_factory: Any,
                                                              seed: int) -> None:
    _run(tmp_path_factory.mktemp("f"), seed, 12, Faults())


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32), st.floats(0, 0.6), st.floats(0, 0.5))
def test_under_every_fault_each_segment_arrives_once_in_order_long(
        tmp_path_factory: Any, seed: int, drop: float, partial: float) -> None:
    _run(tmp_path_factory.mktemp("f"), seed, 60, Faults(drop=drop, partial=partial))


def test_snapshots_and_acknowledgements_are_read_only_when_they_verify(tmp_path: Path) -> None:
    dev = two_devices()
    founder, other = _writer(dev, tmp_path), _writer(dev, tmp_path, dev.other)
    founder.append([{"n": 1}], dev.key)
    founder.write_snapshot([{"state": 1}], dev.key)
    newer = EpochKey(2, b"n" * 32)
    founder.append([{"n": 2}], newer)
    founder.write_snapshot([{"state": 2}], newer)
    other.write_ack(1, {"epoch": 1}, dev.key)
    other.write_ack(2, {"epoch": 2}, newer)
    keys = {**dev.keys, 2: newer.key}
    reader = FolderReader(tmp_path, dev.other.device_id, dev.trust(), keys, {})
    assert [s.ops for s in reader.snapshots()] == [[{"state": 1}], [{"state": 2}]]
    assert reader.acks()[dev.other.device_id].ops == [{"epoch": 2}]
    # A snapshot renamed to another epoch, a log segment in the snapshot folder, and an ack
    # that does not open: none is taken.
    snaps = tmp_path / "v1" / "snap" / dev.founder.device_id
    first = sorted(snaps.iterdir())[0]
    (snaps / f"{3:08d}-{seq_name(1)}").write_bytes(first.read_bytes())
    (snaps / f"{4:08d}-{seq_name(1)}").write_bytes((tmp_path / _log(dev, 1)).read_bytes())
    acks = tmp_path / "v1" / "ack" / dev.other.device_id
    (acks / seq_name(3)).write_bytes(b"\0" * 1024)
    assert [(s.epoch, s.ops) for s in reader.snapshots()] == [(1, [{"state": 1}]),
                                                              (2, [{"state": 2}])]
    assert reader.acks()[dev.other.device_id].ops == [{"epoch": 2}]
    # Without the newer key the newer files are closed.
    old_only = FolderReader(tmp_path, dev.other.device_id, dev.trust(), dev.keys, {})
    assert [s.epoch for s in old_only.snapshots()] == [1]
    assert old_only.acks()[dev.other.device_id].ops == [{"epoch": 1}]


def test_the_devices_acknowledgement_under_a_log_conflict_name_is_no_equivocation(
        tmp_path: Path) -> None:
    """A sync tool may leave any file of a device under a conflict name. An acknowledgement
    (or a snapshot) carries a number in the same envelope as a segment: acknowledgement 1 kept
    as a conflict copy of log segment 1, or lying at the last applied log name, is no second
    version of that segment and must not stop the device (found by the three-vault faulty
    folder test, seed 3, once the engine wrote acknowledgements)."""
    dev = two_devices()
    w = _writer(dev, tmp_path)
    w.append([{"n": 1}], dev.key)
    ack = w.write_ack(1, {"kind": "kept-sync.ack"}, dev.key)
    folder = (tmp_path / _log(dev, 1)).parent
    reader = _reader(dev, tmp_path)
    assert _ops(reader) == [1]
    (folder / f"{seq_name(1)}.sync-conflict-20261126-101010-ABCDEF7").write_bytes(
        ack.read_bytes())
    w.append([{"n": 2}], dev.key)
    scan = reader.scan()
    assert scan.findings == []
    assert [op["n"] for seg in scan.segments for op in seg.ops] == [2]


def test_a_conflict_copy_holding_another_valid_segment_is_equivocation(tmp_path: Path) -> None:
    dev = two_devices()
    w = _writer(dev, tmp_path)
    w.append([{"n": 1}], dev.key)
    second = w.append([{"n": 2}], dev.key)
    folder = (tmp_path / _log(dev, 2)).parent
    reader = _reader(dev, tmp_path)
    # A copy of the same bytes, and garbage, under conflict names: nothing to report.
    (folder / f"{seq_name(2)}.sync-conflict-20261126-101010-ABCDEF7").write_bytes(
        (tmp_path / _log(dev, 2)).read_bytes())
    (folder / f"{seq_name(1)} (conflicted copy 2026-11-26 101010)").write_bytes(b"x" * 1024)
    assert _ops(reader) == [1, 2]
    assert reader.scan().findings == []
    # Another segment 2, signed by the founder, kept by the sync tool as a conflict copy.
    other = encode_segment(dev.founder, dev.vault_id, dev.key, 2, second.prev, [{"n": 22}])
    (folder / f"{seq_name(2)} (Sam's conflicted copy 2026-11-26)").write_bytes(other)
    w.append([{"n": 3}], dev.key)
    scan = reader.scan()
    assert [(f.what, f.seq, f.reason) for f in scan.findings] == [
        ("equivocation", 2, "conflict copy")]
    assert scan.segments == []
