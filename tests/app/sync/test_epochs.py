"""Epochs (app/sync/epochs.py, issue 29 item 4): key rotation with a compacted snapshot,
acknowledgements, and the destruction of old keys, so that after a forget and every
acknowledgement no file in the folder (its `.stversions` copies and conflict copies included)
opens to any key still held. Three devices, each with its own real SQLCipher vault."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app import policy
from app.sync.epochs import (
    Ack,
    EpochKeeper,
    compact,
    cursors_after,
    destroy_below,
    latest_snapshot,
    parse_ack,
    write_snapshot,
)
from app.sync.folder import FolderReader, FolderWriter, seq_name
from app.sync.keys import (
    DeviceSecret,
    EpochKey,
    SyncRefused,
    Trust,
    issue_certificate,
    new_vault_id,
)
from app.sync.merge import Replica, fold, state_hash
from app.sync.ops import Gid, Op, OpId, new_gid, parse_ops
from app.sync.segments import Cursor, Kind, decode_segment, encode_segment
from storage.db import Database
from storage.sync_epochs import SyncEpochRows
from tests.app.sync.op_samples import Device, edit, forget, memory
from tests.app.sync.test_merge import TEN_MINUTES, action, history

SECRET = "The alarm code is 4417"
NAMES = ("laptop", "desktop", "phone")
T0 = 1_764_151_200.0


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    """One migrated vault file, copied for each device (creating one takes ~0.6 s here)."""
    path = tmp_path_factory.mktemp("vault") / "vault.db"
    key = os.urandom(32)
    Database(path, key, create=True, threaded=False).close()
    return path, key


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


@dataclass
class Node:
    """One device: its vault, its keeper, its log writer, what it applied."""

    secret: DeviceSecret
    name: str
    db: Database
    trust: Trust
    keeper: EpochKeeper
    writer: FolderWriter
    ops_device: Device
    cursors: dict[str, Cursor] = field(default_factory=dict)
    replica: Replica = field(default_factory=Replica)
    seen: dict[OpId, Op] = field(default_factory=dict)

    @property
    def me(self) -> str:
        return self.secret.device_id

    def write_key(self) -> EpochKey:
        key = self.keeper.write_key()
        assert key is not None, "a device writes once it moved to an epoch"
        return key

    def _take(self, ops: list[Op]) -> None:
        self.replica.apply(ops)
        for o in ops:
            self.seen[o.id] = o
        self.ops_device.hears(ops)

    def write(self, *bodies: Any) -> list[Op]:
        ops = self.ops_device.write(*bodies)
        self.writer.append([o.to_dict() for o in ops], self.write_key())
        self._take(ops)
        return ops

    def sync(self) -> None:
        reader = FolderReader(self.writer.folder, self.me, self.trust, self.keeper.held(),
                              self.cursors)
        reader.load_trust()
        scan = reader.scan()
        assert not [f for f in scan.findings if f.what != "gap"], scan.findings
        for seg in scan.segments:
            self._take(parse_ops(seg.ops))
        self.cursors = reader.cursors

    def covers(self) -> dict[str, Cursor]:
        return {**self.cursors, self.me: self.writer.cursor}

    def source(self) -> tuple[list[Op], dict[str, Cursor]]:
        return list(self.seen.values()), self.covers()

    def epoch_tick(self) -> Ack | None:
        """What the engine does each tick: new keys, the snapshot, the acknowledgement."""
        self.keeper.receive()
        snap = self.keeper.pending_snapshot()
        if snap is not None:
            self._take(snap.ops)
            self.cursors = cursors_after(snap, self.cursors)
            self.cursors.pop(self.me, None)
        return self.keeper.acknowledge({d: c.last_seq for d, c in self.cursors.items()},
                                       self.writer.cursor.last_seq + 1)


@pytest.fixture
def world(tmp_path: Path, template: tuple[Path, bytes]) -> Iterator[tuple[list[Node], Clock]]:
    vault_id = new_vault_id()
    secrets = [DeviceSecret.generate() for _ in NAMES]
    founder = secrets[0]
    certs = [issue_certificate(founder, vault_id, s.sign_public, s.box_public, n, int(T0))
             for s, n in zip(secrets, NAMES, strict=True)]
    folder = tmp_path / "folder"
    clock = Clock()
    nodes: list[Node] = []
    for s, name in zip(secrets, NAMES, strict=True):
        path = tmp_path / f"{name}.db"
        shutil.copy(template[0], path)
        db = Database(path, template[1], create=False, threaded=False)
        trust = Trust(vault_id, founder.sign_public)
        for c in certs:
            trust.add_certificate(c)
        writer = FolderWriter(folder, s, vault_id, Cursor(s.device_id))
        keeper = EpochKeeper(db, SyncEpochRows(), folder, s, trust, clock)
        nodes.append(Node(s, name, db, trust, keeper, writer,
                          Device(s.device_id, lambda: int(clock.now * 1000))))
    nodes[0].writer.write_root(int(T0))
    for c in certs:
        nodes[0].writer.publish_certificate(c)
    assert nodes[0].keeper.rotate([], {}).epoch == 1  # founding: epoch 1 for every device
    for n in nodes:
        assert n.epoch_tick() is not None
    try:
        yield nodes, clock
    finally:
        for n in nodes:
            n.db.close()


def _every_file(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


def _hits(folder: Path, trust: Trust, keys: dict[int, bytes], text: str) -> int:
    """Files in which ``text`` shows: in clear, or in what opens with ``keys`` (any file that
    parses as a segment, whatever its name or folder). Look for words with letters outside hex
    digits: certificates and sealed keys are JSON full of hex, where "4417" turns up by chance
    (it did, once in ~15 runs)."""
    hits = 0
    needle = text.encode()
    for p in _every_file(folder):
        raw = p.read_bytes()
        if needle in raw:
            hits += 1
            continue
        try:
            seg = decode_segment(raw, trust, keys)
        except SyncRefused:
            continue
        if text in repr(seg.ops):
            hits += 1
    return hits


def _sync_all(nodes: list[Node]) -> None:
    for n in nodes:
        n.sync()


def _tick_all(nodes: list[Node], clock: Clock) -> None:
    clock.now += policy.SYNC_ACK_EVERY_S + 1
    for n in nodes:
        n.epoch_tick()


def test_after_a_forget_and_every_ack_no_file_in_the_folder_opens_to_the_text(
        world: tuple[list[Node], Clock]) -> None:
    nodes, clock = world
    laptop, desktop, phone = nodes
    folder = laptop.writer.folder
    g, h = new_gid(), new_gid()
    laptop.write(memory(g, SECRET), memory(h, "Sam likes green tea"))
    _sync_all(nodes)
    desktop.write(edit(g, (g,), SECRET + ", changed monthly"))
    _sync_all(nodes)
    # What a sync tool and a cloud keep: a versioned copy, a conflict copy, a trashed copy.
    first = folder / "v1" / "log" / laptop.me / seq_name(1)
    edited = folder / "v1" / "log" / desktop.me / seq_name(1)
    kept = folder / ".stversions" / "v1" / "log" / laptop.me / f"{seq_name(1)}~20261126-101010"
    kept.parent.mkdir(parents=True)
    shutil.copy(first, kept)
    shutil.copy(edited, edited.with_name(f"{seq_name(1)}.sync-conflict-20261126-101010-ABCDEF7"))
    (folder / ".Trash-1000").mkdir()
    shutil.copy(edited, folder / ".Trash-1000" / "000000000001")
    phone.write(forget(g))
    _sync_all(nodes)
    assert all(g not in n.replica.state().items for n in nodes)
    # The text is still in the folder under epoch 1, which every device holds: the check below
    # can fail.
    assert _hits(folder, phone.trust, phone.keeper.held(), "alarm code") >= 4

    clock.now += policy.SYNC_ROTATION_SLOT_S
    covered = sum(c.last_seq for c in laptop.covers().values())
    assert laptop.keeper.due(covered) and not desktop.keeper.due(covered)
    rotation = laptop.keeper.rotate(*laptop.source())
    assert rotation.epoch == 2 and set(rotation.sealed_for) == {n.me for n in nodes}
    snap = latest_snapshot(FolderReader(folder, phone.me, phone.trust,
                                        {2: laptop.keeper.held()[2]}, {}))
    assert snap is not None and snap.epoch == 2
    assert state_hash(fold(snap.ops)) == state_hash(laptop.replica.state())
    assert "alarm code" not in repr([o.to_dict() for o in snap.ops])
    assert any(o.kind == "forget" and o.body.targets() == {g} for o in snap.ops)

    # Each device moves to epoch 2 and says so; until the last one has, no key goes.
    laptop.epoch_tick()
    desktop.epoch_tick()
    progress = laptop.keeper.progress(phone.me, phone.writer.cursor.last_seq)
    assert progress.words() == ("Forgotten on all 3 devices; old copies in the sync folder "
                                "become unreadable at the next key change.")
    for n in nodes:
        assert n.keeper.destroy(n.source) == 0
    assert 1 in phone.keeper.held()
    phone.epoch_tick()
    assert {n.me: n.keeper.acks()[phone.me].epoch for n in nodes} == {n.me: 2 for n in nodes}
    destroyed = [n.keeper.destroy(n.source) for n in nodes]
    assert destroyed == [1, 1, 1]
    assert all(set(n.keeper.held()) == {2} for n in nodes)
    for n in nodes:  # every key still held, on every device: no file opens to the text
        assert _hits(folder, n.trust, n.keeper.held(), "alarm code") == 0
        assert _hits(folder, n.trust, n.keeper.held(), "Sam likes green tea") >= 1
    assert laptop.keeper.progress(phone.me, phone.writer.cursor.last_seq).words() == (
        "Forgotten on all 3 devices; old copies in the sync folder can no longer be read.")
    # A key destroyed is never taken back, even though its sealed file is still there.
    assert phone.keeper.receive() == [] and 1 not in phone.keeper.held()
    # Sync goes on under epoch 2; a device paired now starts from the founder's last snapshot,
    # which covers every segment written under epoch 1.
    desktop.write(memory(new_gid(), "Ana plays chess"))
    phone.sync()
    assert "Ana plays chess" in [i.head.text for i in phone.replica.state().current()]
    closing = latest_snapshot(FolderReader(folder, phone.me, phone.trust, phone.keeper.held(),
                                           {}))
    assert closing is not None and closing.epoch == 2
    for n in nodes:
        assert closing.covers[n.me].last_seq >= n.keeper.acks()[n.me].from_seq - 1


def test_progress_counts_devices_by_their_acknowledgements(
        world: tuple[list[Node], Clock]) -> None:
    nodes, clock = world
    laptop, desktop, phone = nodes
    g = new_gid()
    laptop.write(memory(g, SECRET))
    _sync_all(nodes)
    laptop.write(forget(g))
    seq = laptop.writer.cursor.last_seq
    first = laptop.keeper.progress(laptop.me, seq)
    assert first.words() == "Forgotten on 1 of 3 devices; waiting for desktop, phone."
    assert first.to_dict() == {"done": 1, "total": 3, "waiting": ["desktop", "phone"],
                               "closed": False}
    desktop.sync()
    _tick_all([desktop], clock)
    assert laptop.keeper.progress(laptop.me, seq).words() == (
        "Forgotten on 2 of 3 devices; waiting for phone.")
    phone.sync()
    assert phone.epoch_tick() is not None  # applied more, and its last one is a minute old
    assert laptop.keeper.progress(laptop.me, seq).waiting == ()
    # Within a minute of its last acknowledgement a device does not write another; nor when
    # it applied nothing new.
    laptop.write(memory(new_gid(), "Ana plays chess"))
    phone.sync()
    assert phone.epoch_tick() is None
    clock.now += policy.SYNC_ACK_EVERY_S + 1
    assert phone.epoch_tick() is not None
    clock.now += policy.SYNC_ACK_EVERY_S + 1
    assert phone.epoch_tick() is None
    assert phone.keeper.acks()[phone.me].n == 3


def test_a_revoked_device_cannot_open_the_new_epoch_and_is_not_waited_for(
        world: tuple[list[Node], Clock]) -> None:
    nodes, clock = world
    laptop, desktop, phone = nodes
    folder = laptop.writer.folder
    laptop.write(memory(new_gid(), "Ana plays chess"))
    _sync_all(nodes)
    phone.write(memory(new_gid(), "written by the phone before it was lost"))
    _sync_all(nodes)
    with pytest.raises(SyncRefused, match="only the founding"):
        desktop.keeper.revoke(phone.me, 1, [], {})
    rotation = laptop.keeper.revoke(phone.me, laptop.cursors[phone.me].last_seq,
                                    *laptop.source())
    assert rotation.epoch == 2 and phone.me not in rotation.sealed_for
    assert sorted(p.name.split("-")[1] for p in (folder / "v1" / "keys" / laptop.me).glob(
        "00000002-*")) == sorted([laptop.me, desktop.me])
    for n in (laptop, desktop):
        n.sync()  # the new revocation list comes with the scan
        n.epoch_tick()
    # The phone gets no key of epoch 2 and opens nothing written under it.
    assert phone.keeper.receive() == [] and set(phone.keeper.held()) == {1}
    snap_file = next((folder / "v1" / "snap" / laptop.me).glob("00000002-*"))
    with pytest.raises(SyncRefused, match="no key"):
        decode_segment(snap_file.read_bytes(), phone.trust, phone.keeper.held())
    desktop.write(memory(new_gid(), "Sam moved to Porto"))
    assert _hits(folder, phone.trust, phone.keeper.held(), "Porto") == 0
    assert _hits(folder, laptop.trust, laptop.keeper.held(), "Porto") == 1
    # Its later segments are refused; the others destroy epoch 1 without its acknowledgement.
    phone.write(memory(new_gid(), "written after the revocation"))
    refused = FolderReader(folder, desktop.me, desktop.trust, desktop.keeper.held(),
                           desktop.cursors).scan()
    assert [(f.what, f.reason) for f in refused.findings] == [("unreadable", "revoked device")]
    assert [n.keeper.destroy(n.source) for n in (laptop, desktop)] == [1, 1]


def test_rotation_writes_each_file_once_and_a_resumed_rotation_only_what_is_missing(
        world: tuple[list[Node], Clock]) -> None:
    nodes, clock = world
    laptop, desktop, phone = nodes
    folder = laptop.writer.folder
    laptop.write(memory(new_gid(), "Ana plays chess"))
    _sync_all(nodes)
    before = {p: (p.read_bytes(), p.stat().st_ino) for p in _every_file(folder)}
    # A rotation cut short after the key was saved and before any file was written.
    rows = SyncEpochRows()
    cut = EpochKey.generate(2)

    def begin(conn: Any) -> None:
        rows.put_epoch_key(conn, 2, cut.key, clock.now)
        rows.put_rotated(conn, 2, clock.now)
    laptop.db.write_sync(begin)
    done = laptop.keeper.rotate(*laptop.source())
    assert done.epoch == 2 and len(done.written) == 4  # three sealed keys and the snapshot
    again = laptop.keeper.rotate(*laptop.source())
    assert again.epoch == 2 and again.written == ()
    _tick_all(nodes, clock)
    assert desktop.keeper.held()[2] == cut.key  # the key saved before the cut
    for n in nodes:
        n.keeper.destroy(n.source)
    after = {p: (p.read_bytes(), p.stat().st_ino) for p in _every_file(folder)}
    assert {p: after[p] for p in before} == before  # nothing rewritten, nothing deleted
    assert not [p for p in after if p.name.endswith(".partial")]
    # Once the founder moved, the next rotation makes epoch 3, never a second epoch-2 key.
    clock.now += policy.SYNC_ROTATION_SLOT_S
    laptop.write(memory(new_gid(), "Sam moved to Porto"))
    assert laptop.keeper.rotate(*laptop.source()).epoch == 3


def test_a_device_does_not_move_to_a_key_whose_snapshot_has_not_arrived(
        world: tuple[list[Node], Clock], tmp_path: Path) -> None:
    nodes, clock = world
    laptop, desktop, _phone = nodes
    folder = laptop.writer.folder
    g = new_gid()
    laptop.write(memory(g, SECRET))
    desktop.sync()
    laptop.write(forget(g))
    clock.now += policy.SYNC_ROTATION_SLOT_S
    rotation = laptop.keeper.rotate(*laptop.source())
    # The sync tool delivered the sealed key but not the snapshot yet.
    away = tmp_path / "in transit"
    rotation.snapshot.rename(away)
    assert desktop.epoch_tick() is not None  # an acknowledgement of epoch 1 only
    assert 2 in desktop.keeper.held() and desktop.keeper.write_key() == EpochKey(
        1, desktop.keeper.held()[1])
    assert desktop.keeper.acks()[desktop.me].epoch == 1
    away.rename(rotation.snapshot)
    clock.now += policy.SYNC_ACK_EVERY_S + 1
    ack = desktop.epoch_tick()
    assert ack is not None and ack.epoch == 2
    assert g not in desktop.replica.state().items  # the snapshot's forget applied first
    assert g in desktop.replica.state().forgotten
    assert folder in rotation.snapshot.parents


def test_destruction_waits_until_every_reader_applied_each_older_segment() -> None:
    founder = DeviceSecret.generate()
    other = DeviceSecret.generate()
    vault = new_vault_id()
    trust = Trust(vault, founder.sign_public)
    for s in (founder, other):
        trust.add_certificate(issue_certificate(founder, vault, s.sign_public, s.box_public,
                                                "x", 1))
    f, o = founder.device_id, other.device_id
    moved = {f: Ack(f, 1, 2, 5, {o: 3}, 0), o: Ack(o, 1, 2, 4, {f: 3}, 0)}
    assert destroy_below(trust, moved) is None  # o has not read f's segment 4 (epoch 1)
    moved[o] = Ack(o, 2, 2, 4, {f: 4}, 0)
    assert destroy_below(trust, moved) == 2
    assert destroy_below(trust, {f: moved[f]}) is None  # o never acknowledged
    assert destroy_below(trust, {**moved, o: Ack(o, 3, 1, 1, {f: 9}, 0)}) == 1


def _segment(kind: Kind, payload: list[dict[str, Any]], seq: int = 1) -> Any:
    founder = DeviceSecret.generate()
    vault = new_vault_id()
    trust = Trust(vault, founder.sign_public)
    trust.add_certificate(issue_certificate(founder, vault, founder.sign_public,
                                            founder.box_public, "x", 1))
    key = EpochKey.generate(1)
    return decode_segment(encode_segment(founder, vault, key, seq, bytes(32), payload, kind),
                          trust, {1: key.key})


@pytest.mark.parametrize("body", [
    {"kind": "kept-sync.ack", "epoch": 2, "from_seq": 1, "applied": {}, "at": 0},  # wrong epoch
    {"kind": "kept-sync.ack", "epoch": 1, "from_seq": 0, "applied": {}, "at": 0},
    {"kind": "kept-sync.ack", "epoch": 1, "from_seq": 1, "applied": {"x": -1}, "at": 0},
    {"kind": "kept-sync.ack", "epoch": 1, "from_seq": 1, "applied": [], "at": 0},
    {"kind": "memory.create", "epoch": 1, "from_seq": 1, "applied": {}, "at": 0},
])
def test_a_malformed_acknowledgement_is_refused(body: dict[str, Any]) -> None:
    with pytest.raises(SyncRefused, match="acknowledgement"):
        parse_ack(_segment(Kind.ACK, [body]))
    good = {"kind": "kept-sync.ack", "epoch": 1, "from_seq": 3, "applied": {"x": 2}, "at": 5}
    assert parse_ack(_segment(Kind.ACK, [good], 7)).applied == {"x": 2}


def test_only_the_founders_snapshot_counts(tmp_path: Path) -> None:
    founder, other = DeviceSecret.generate(), DeviceSecret.generate()
    vault = new_vault_id()
    trust = Trust(vault, founder.sign_public)
    for s in (founder, other):
        trust.add_certificate(issue_certificate(founder, vault, s.sign_public, s.box_public,
                                                "x", 1))
    key = EpochKey.generate(1)
    dev = Device(other.device_id, lambda: int(T0 * 1000))
    forged = dev.write(memory(new_gid(), "planted in the founder's name"))
    covers = {other.device_id: Cursor(other.device_id, 1, bytes(32))}
    path, new = write_snapshot(tmp_path, other, vault, key, covers, forged)
    assert new and write_snapshot(tmp_path, other, vault, key, covers, forged) == (path, False)
    reader = FolderReader(tmp_path, founder.device_id, trust, {1: key.key}, {})
    assert latest_snapshot(reader) is None
    write_snapshot(tmp_path, founder, vault, key, {}, [])
    snap = latest_snapshot(reader)
    assert snap is not None and snap.device == founder.device_id and snap.ops == []


# --- the compaction keeps the state: random histories of three devices --------------------------

@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(action, min_size=1, max_size=30),
       st.sampled_from([-TEN_MINUTES, 0, TEN_MINUTES]), st.randoms(use_true_random=False))
def test_a_compacted_op_set_folds_to_the_same_state_and_names_nothing_forgotten(
        plan: list[Any], skew: int, rng: Any) -> None:
    ops = history(plan, skew)
    dup = ops + rng.sample(ops, k=min(3, len(ops)))
    rng.shuffle(dup)
    kept = compact(dup)
    state = fold(ops)
    assert state_hash(fold(kept)) == state_hash(state)
    assert kept == compact(list(reversed(ops)))  # one list for one op set
    gone: set[Gid] = set(state.forgotten)
    for o in kept:
        if o.kind == "forget":
            assert set(o.to_dict()["body"]) == {"gids"}
        else:
            assert not o.body.targets() & gone
    replica = Replica()
    replica.apply(kept)
    assert state_hash(replica.state()) == state_hash(state)
    # What the engine hands a rotation: the op set a replica holds folds to its state, and
    # names nothing forgotten either once compacted.
    whole = Replica()
    whole.apply(dup)
    assert state_hash(fold(whole.ops())) == state_hash(state)
    assert compact(whole.ops()) == kept

