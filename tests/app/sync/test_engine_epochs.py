"""The sync engine drives the epochs (issue 29 item 4, and the snapshot of item 5): a forget,
ticks, a scheduled rotation, acknowledgements and key destruction leave no file in the folder
(a `.stversions` copy included) that opens to the forgotten text with any key still held; a
revoked device is rotated away from and not waited for; memories saved before sync was set up
reach a device that joins through the founder's first snapshot. Real SQLCipher vaults, the real
model, real pairing; the clocks are the vaults' own (advanced to reach the rotation slot)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app import policy
from app.clock import FixedClock
from app.facade import Vault
from app.sync.engine import SyncEngine
from app.sync.folder import FORMAT, FolderReader, seq_name
from app.sync.keys import SyncRefused
from app.sync.segments import decode_segment
from tests.app.conftest import PW, T0, remember, share_embedder
from tests.app.sync.fleet import Fleet, Member, make_fleet
from tests.app.sync.test_engine import texts
from tests.app.sync.test_epochs import _hits
from tests.inside import inside

SECRET = "Ana's biopsy results came back on Tuesday"
WORDS = "biopsy results"  # letters outside hex digits: no chance hit in a key or certificate


@pytest.fixture
def three(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: Any) -> Iterator[Fleet]:
    fleet = make_fleet(tmp_path, monkeypatch, embedder, 3)  # one folder: a perfect sync tool
    try:
        yield fleet
    finally:
        fleet.close()


def rounds(members: list[Member], n: int = 2, advance: float = 0.0) -> list[Any]:
    """``n`` rounds of a tick on each; each round the clocks move by ``advance`` first."""
    reports = []
    for _ in range(n):
        for m in members:
            m.clock.advance(advance)
        for m in members:
            reports.append(m.tick())
    return reports


def _held(m: Member) -> dict[int, bytes]:
    return m.sync().keeper.held()


def _dump(v: Vault) -> str:
    """Every row of every table of the vault, as text (the full-text index included)."""
    db = inside(v).db

    def run(c: Any) -> str:
        names = [r[0] for r in c.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE "
            "'%VIRTUAL%'")]
        return repr([tuple(r) for n in names for r in c.execute(f'SELECT * FROM "{n}"')])
    return str(db.read(run))


def test_after_a_forget_rotation_and_every_ack_no_file_opens_to_the_text(three: Fleet) -> None:
    a, b, c = three.members  # a founded the vault's sync: it alone makes keys
    folder = a.folder
    remember(b.vault, SECRET)
    remember(b.vault, "Sam likes green tea")
    rounds(three.members)
    assert SECRET in texts(a.vault) and SECRET in texts(c.vault)
    # What a sync tool keeps of b's first segment (the memory's create): a versioned copy.
    seg = folder / FORMAT / "log" / b.secret.device_id / seq_name(1)
    kept = folder / ".stversions" / FORMAT / "log" / b.secret.device_id / \
        f"{seq_name(1)}~20261201-101010"
    kept.parent.mkdir(parents=True)
    shutil.copy(seg, kept)
    # The phone (not the founder) forgets it.
    (mid,) = [m.id for m in c.vault.recall("biopsy results") if m.text == SECRET]
    c.vault.forget(c.vault.forget_plan(ids=[mid]))
    first = c.tick()
    assert first.written == 1
    (progress,) = c.sync().forget_progress()
    assert progress.words() == "Forgotten on 1 of 3 devices; waiting for desktop, laptop."
    rounds(three.members, 2, advance=policy.SYNC_ACK_EVERY_S + 1)
    for m in three.members:
        assert SECRET not in texts(m.vault)
        assert not any(WORDS in h.text for h in m.vault.recall("biopsy results Ana"))
    (progress,) = c.sync().forget_progress()
    assert progress.waiting == () and not progress.closed
    # Until the key changes, the old segment and its copy still open to epoch 1: the check
    # below can fail.
    assert _hits(folder, a.sync().trust, _held(a), WORDS) == 2
    assert all(set(_held(m)) == {1} for m in three.members)

    # A day later the founder's schedule rotates (some device wrote since): epoch 2, its
    # snapshot without the memory; each device applies it, moves, says so; then epoch 1 goes.
    for m in three.members:
        m.clock.advance(policy.SYNC_ROTATION_SLOT_S)
    reports = rounds(three.members, 3, advance=policy.SYNC_ACK_EVERY_S + 1)
    assert [r.rotated for r in reports if r.rotated] == [2]
    assert sum(r.destroyed for r in reports) == 3  # one key on each device
    for m in three.members:
        assert set(_held(m)) == {2}, m.name
        acks = m.sync().keeper.acks()
        assert {d: x.epoch for d, x in acks.items()} == {x.secret.device_id: 2
                                                          for x in three.members}
    # Every file of the folder, the copy included, with every key still held anywhere.
    every = {e: k for m in three.members for e, k in _held(m).items()}
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    assert kept in files and len(files) > 10
    assert _hits(folder, a.sync().trust, every, WORDS) == 0
    assert _hits(folder, a.sync().trust, every, "green tea") >= 1  # what stays still opens
    (progress,) = c.sync().forget_progress()
    assert progress.words() == ("Forgotten on all 3 devices; old copies in the sync folder can "
                                "no longer be read.")
    # Nowhere in a vault, a list or a recall, on any device; the states agree.
    for m in three.members:
        assert WORDS not in _dump(m.vault)
        assert not any(WORDS in t for t in texts(m.vault))
        assert not any(WORDS in h.text for h in m.vault.recall("Ana biopsy results Tuesday"))
        assert "Sam likes green tea" in texts(m.vault)
    assert len({m.hash() for m in three.members}) == 1
    # Sync goes on under epoch 2, also after a restart.
    remember(a.vault, "The boiler was serviced in May")
    c.restart()
    rounds(three.members)
    assert all("The boiler was serviced in May" in texts(m.vault) for m in three.members)
    assert len({m.hash() for m in three.members}) == 1


def test_a_revoked_device_cannot_open_the_new_epoch_and_the_others_go_on(three: Fleet) -> None:
    a, b, c = three.members
    for m in three.members:  # as pairing leaves it
        m.vault.set_setting("sync.folder", str(m.folder))
    remember(a.vault, "Sam moved to Lisbon in March")
    remember(c.vault, "Written on the phone before it was lost")
    rounds(three.members)
    lost = c.secret.device_id
    status = a.vault.sync_revoke(lost).value  # Settings > Devices > Remove..., the CLI
    assert [d.revoked for d in status.devices if d.device_id == lost] == [True]
    keys_dir = a.folder / FORMAT / "keys" / a.secret.device_id
    assert sorted(p.name.split("-")[1] for p in keys_dir.glob("00000002-*")) == \
        sorted([a.secret.device_id, b.secret.device_id])
    snap = next((a.folder / FORMAT / "snap" / a.secret.device_id).glob("00000002-*"))
    with pytest.raises(SyncRefused, match="no key"):
        decode_segment(snap.read_bytes(), c.sync().trust, _held(c))
    # The lost device's engine sees its revocation and writes nothing more.
    remember(c.vault, "Written on the phone after it was lost")
    report = c.tick()
    assert report.findings == [f"revoked {lost}"] and report.written == 0
    # The others move to epoch 2 and destroy epoch 1 without waiting for it.
    reports = rounds([a, b], 3, advance=policy.SYNC_ACK_EVERY_S + 1)
    assert sum(r.destroyed for r in reports) == 2
    assert set(_held(a)) == set(_held(b)) == {2} and set(_held(c)) == {1}
    remember(b.vault, "Sam moved on to Porto")
    rounds([a, b])
    assert "Sam moved on to Porto" in texts(a.vault)
    assert _hits(a.folder, c.sync().trust, _held(c), "Porto") == 0
    assert _hits(a.folder, a.sync().trust, _held(a), "Porto") >= 1
    assert "Written on the phone before it was lost" in texts(a.vault)
    assert not any("after it was lost" in t for t in texts(a.vault) | texts(b.vault))
    assert a.hash() == b.hash()
    # A revoke whose rotation was cut short (the list published, no new key): the founder's
    # next tick rotates, sealed for the others only.
    from app.sync.keys import Revocation, sign_revocations
    eng = a.sync()
    old = eng.trust.revocations
    revs = sign_revocations(a.secret, eng.trust.vault_id, old.version + 1,
                            [*old.revoked, Revocation(b.secret.device_id, int(T0), 10**6)])
    eng.writer.publish_revocations(revs)
    assert a.tick().rotated == 3
    assert sorted(p.name.split("-")[1] for p in keys_dir.glob("00000003-*")) == \
        [a.secret.device_id]


@pytest.fixture
def founder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: Any
            ) -> Iterator[tuple[Vault, Vault, Path]]:
    """A vault with 50 memories saved before sync existed, and a fresh vault beside it."""
    from tests.conftest import new_vault
    share_embedder(monkeypatch, embedder)
    shared = tmp_path / "Sync"
    shared.mkdir()
    a = new_vault(tmp_path / "a", PW, threaded=False, clock=FixedClock(T0), use_chroma=False)
    b = new_vault(tmp_path / "b", PW, threaded=False, clock=FixedClock(T0 + 1),
                  use_chroma=False)
    for i in range(50):
        remember(a, f"Garden note {i}: the {COLOURS[i % 5]} rose by "
                 f"the {PLACES[i % 10]}")
    try:
        yield a, b, shared
    finally:
        a.lock()
        b.lock()


COLOURS = ("red", "white", "yellow", "pink", "climbing")
PLACES = ("gate", "shed", "pond", "fence", "bench", "wall", "path", "oak", "well", "greenhouse")


def _pair(a: Vault, b: Vault, shared: Path) -> None:
    b.sync_join(shared, a.sync_invite().value.code, "desktop")
    assert a.sync_pair_step().value.state == "joined"
    assert b.sync_pair_step().value.state == "joined"


@pytest.mark.parametrize("first_tick", ["after pairing", "before pairing"])
def test_memories_saved_before_sync_reach_a_device_that_joins(
        founder: tuple[Vault, Vault, Path], first_tick: str) -> None:
    a, b, shared = founder
    a.sync_set_up(shared, "laptop")
    ea = None
    if first_tick == "before pairing":  # the founder syncs alone first: epoch 1 goes at once
        ea = SyncEngine(a, shared)
        first = ea.tick()
        assert (first.named, first.rotated) == (50, 2)
        assert ea.tick().destroyed == 1
    _pair(a, b, shared)
    ea = ea or SyncEngine(a, shared)
    eb = SyncEngine(b, shared)
    report = ea.tick()
    if first_tick == "after pairing":
        assert (report.named, report.rotated) == (50, 2)
    got = eb.tick()
    assert got.snapshot == 50 and got.received == 0  # from the snapshot, not the log
    assert got.acknowledged == 2 and got.applied == 50
    want = texts(a)
    assert len(want) == 50 and texts(b) == want
    # b embedded them itself (vectors are never synced): recall finds them there.
    hits = b.recall("the climbing rose by the greenhouse")
    assert any(h.text == "Garden note 49: the climbing rose by the greenhouse" for h in hits)
    for _ in range(2):
        ea.tick()
        eb.tick()
    assert ea.state_hash() == eb.state_hash()
    assert set(ea.keeper.held()) == set(eb.keeper.held()) == {2}
    # Named once: a new engine (a restart) finds nothing left to name.
    assert SyncEngine(a, shared).tick().named == 0
    # And what either does now reaches the other.
    remember(b, "Prune the climbing rose in February")
    eb.tick()
    ea.tick()
    assert "Prune the climbing rose in February" in texts(a)


def test_a_device_holding_a_key_without_its_snapshot_writes_nothing(three: Fleet) -> None:
    """The sealed key arrives before the snapshot: the device neither moves nor writes under
    the new key, and its ops wait in the journal until the snapshot is here."""
    a, b, _c = three.members
    remember(a.vault, "Sam moved to Lisbon in March")
    rounds([a, b])
    a.clock.advance(policy.SYNC_ROTATION_SLOT_S + 1)
    assert a.tick().rotated == 2
    snap = next((a.folder / FORMAT / "snap" / a.secret.device_id).glob("00000002-*"))
    away = snap.with_name("in transit")
    snap.rename(away)
    remember(b.vault, "Written while the snapshot is in transit")
    report = b.tick()
    assert report.keys == 1 and report.snapshot == 0 and report.written == 1  # under epoch 1
    log = b.folder / FORMAT / "log" / b.secret.device_id
    reader = FolderReader(a.folder, a.secret.device_id, a.sync().trust, {1: _held(a)[1]}, {})
    assert [s.epoch for s in reader.scan().segments if s.device_id == b.secret.device_id] \
        == [1] * len(list(log.iterdir()))
    away.rename(snap)
    remember(b.vault, "Written once the snapshot came")
    later = b.tick()
    assert later.snapshot > 0 and later.acknowledged == 2 and later.written == 1
    assert b.sync()._key().epoch == 2
