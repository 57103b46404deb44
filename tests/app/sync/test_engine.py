"""The sync engine on real vaults (issue 29 items 2-3): what one vault does reaches the others
through a folder, merged alike on every device, and a forget is erased everywhere for good."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.domain.memory import Draft, Store
from app.facade import Vault
from tests.app.conftest import PW, remember
from tests.app.sync.fleet import Fleet, Member, make_fleet
from tests.inside import inside


def texts(v: Vault) -> set[str]:
    """What the person sees listed: every active memory's text."""
    return {m.text for m in _active(v)}


def _active(v: Vault) -> list[Any]:
    rows = inside(v).db.read(lambda c: [r[0] for r in c.execute(
        "SELECT id FROM memory WHERE status = 'active'")])
    return [v.get(i) for i in rows]


def rounds(members: list[Member], n: int = 2) -> None:
    for _ in range(n):
        for m in members:
            m.tick()


def test_a_memory_remembered_on_one_vault_appears_on_the_other(two: Fleet) -> None:
    a, b = two.members
    a.sync()
    b.sync()
    remember(a.vault, "Sam moved to Lisbon in March")
    b.vault.remember(Draft(text="Sam's sister is called Ana", store=Store.SEMANTIC))
    rounds([a, b])
    assert texts(a.vault) == texts(b.vault) == {"Sam moved to Lisbon in March",
                                                 "Sam's sister is called Ana"}
    assert a.hash() == b.hash()
    # Found by recall on the other vault (its own vector, made there).
    hits = b.vault.recall("where does Sam live now")
    assert any("Lisbon" in h.text for h in hits)
    # Ticking again changes nothing: applying twice is applying once.
    before = (texts(b.vault), b.hash(), _count(b.vault))
    rounds([a, b])
    assert (texts(b.vault), b.hash(), _count(b.vault)) == before


def _count(v: Vault) -> int:
    return int(inside(v).db.read(lambda c: c.execute("SELECT count(*) FROM memory").fetchone()[0]))


def test_an_edit_reaches_the_other_vault_and_the_old_text_stays_in_history(two: Fleet) -> None:
    a, b = two.members
    mid = remember(a.vault, "Dentist on the 4th at 10")
    rounds([a, b])
    a.vault.correct(mid, "Dentist on the 5th at 10")
    rounds([a, b])
    assert texts(b.vault) == {"Dentist on the 5th at 10"}
    (shown,) = [m for m in _active(b.vault)]
    assert shown.user_validated
    versions = [v.text for v in b.vault.history(shown.id).versions]
    assert versions.count("Dentist on the 4th at 10") == 1 and len(versions) == 2
    # An edit on the other vault, made after seeing the first: it wins on both.
    b.vault.correct(shown.id, "Dentist on the 6th at 10")
    rounds([b, a])
    assert texts(a.vault) == texts(b.vault) == {"Dentist on the 6th at 10"}
    assert a.hash() == b.hash()
    assert [q.kind for q in a.sync().state().open_questions()] == []  # not concurrent


def test_concurrent_edits_keep_both_and_agree(two: Fleet) -> None:
    a, b = two.members
    mid = remember(a.vault, "Team lunch on Friday")
    rounds([a, b])
    (theirs,) = _active(b.vault)
    a.vault.correct(mid, "Team lunch on Thursday")
    b.clock.advance(5)  # b's edit is later: it shows on both, a's stays in the history
    b.vault.correct(theirs.id, "Team lunch moved to Monday")
    rounds([a, b], 3)
    assert texts(a.vault) == texts(b.vault) == {"Team lunch moved to Monday"}
    assert a.hash() == b.hash()
    questions = a.sync().state().open_questions()
    assert [q.kind for q in questions] == ["edit_conflict"]


def test_a_forget_erases_everywhere_and_never_comes_back(two: Fleet) -> None:
    a, b = two.members
    gone = remember(a.vault, "Ana's test results came back on Tuesday")
    remember(a.vault, "Sam likes green tea")
    rounds([a, b])
    assert "Ana's test results came back on Tuesday" in texts(b.vault)
    (theirs,) = [m for m in _active(b.vault) if "Ana" in m.text]
    # b edits it while a forgets it: the forget wins, whatever the clocks say.
    b.clock.advance(60)
    b.vault.correct(theirs.id, "Ana's test results came back on Wednesday")
    a.vault.forget(a.vault.forget_plan(ids=[gone]))
    rounds([a, b], 3)
    for m in (a, b):
        assert not any("Ana" in t for t in texts(m.vault))
        assert not any("Ana" in h.text for h in m.vault.recall("Ana test results"))
        assert _count(m.vault) == 1
        dump = inside(m.vault).db.read(lambda c: repr(
            [tuple(r) for t in ("sync_ops", "sync_received", "sync_heads", "sync_gids")
             for r in c.execute(f"SELECT * FROM {t}")]))
        assert "Ana" not in dump
    assert a.hash() == b.hash()
    # A restart rebuilds the merge from the vault: still gone, same state.
    b.restart()
    rounds([a, b])
    assert not any("Ana" in t for t in texts(b.vault)) and a.hash() == b.hash()


def test_an_edit_on_a_device_whose_clock_is_slow_is_stamped_after_what_it_edits(
        two: Fleet) -> None:
    """The HLC's receive rule (found over real Syncthing, tests/sync_loopback): a device
    whose clock is 10 minutes behind stamps its edit after the version it saw, so the order
    of the merge is the order of cause and effect."""
    a, b = two.members
    a.clock.advance(-600)
    remember(b.vault, "Dentist on the 4th")
    rounds([b, a])
    (theirs,) = _active(a.vault)
    a.vault.correct(theirs.id, "Dentist on the 5th")
    rounds([a, b])
    assert texts(a.vault) == texts(b.vault) == {"Dentist on the 5th"}
    (item,) = b.sync().state().items.values()
    (old,) = item.history
    assert old.text == "Dentist on the 4th" and item.head.text == "Dentist on the 5th"
    assert old.hlc < item.head.hlc
    assert a.hash() == b.hash()


class Killed(BaseException):
    """A kill -9 at this point: nothing after it runs (BaseException: no handler catches it)."""


def test_a_remember_and_its_op_are_one_commit(two: Fleet,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A kill between saving a memory and journaling it left a memory that never reached the
    other device (found over real Syncthing, tests/sync_loopback): now one transaction, so a
    kill in the journaling keeps neither."""
    a, b = two.members
    journal = a.vault._sync_journal()
    assert journal is not None

    def die(*_a: Any, **_k: Any) -> None:
        raise Killed()
    monkeypatch.setattr(journal, "create_in", die)
    with pytest.raises(Killed):
        remember(a.vault, "Half-saved: the boiler code is 4471")
    monkeypatch.undo()
    assert _count(a.vault) == 0
    remember(a.vault, "Saved whole: the boiler was serviced")
    a.restart()
    rounds([a, b])
    assert texts(a.vault) == texts(b.vault) == {"Saved whole: the boiler was serviced"}
    assert a.hash() == b.hash()


def _kill_at_journaling(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kill -9 when the journal writes the act's op (inside its transaction now; after the
    act's own commit before)."""
    journal = vault._sync_journal()
    assert journal is not None

    def die(*_a: Any, **_k: Any) -> None:
        raise Killed()
    monkeypatch.setattr(journal, "_write_ops", die)


def _rows(v: Vault, sql: str) -> list[tuple[Any, ...]]:
    return inside(v).db.read(lambda c: [tuple(r) for r in c.execute(sql)])


def test_an_edit_and_its_op_are_one_commit(two: Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kill between writing a correction and journaling it left the edit on this device
    only (and the next start sent the new version as a new memory, the old one still current
    on the other device): now one transaction, so a kill in the journaling keeps neither."""
    a, b = two.members
    mid = remember(a.vault, "The boiler code is 4471")
    rounds([a, b])
    _kill_at_journaling(a.vault, monkeypatch)
    with pytest.raises(Killed):
        a.vault.correct(mid, "The boiler code is 4472")
    monkeypatch.undo()
    assert texts(a.vault) == {"The boiler code is 4471"} and _count(a.vault) == 1
    a.restart()
    a.vault.correct(mid, "The boiler code is 4473")
    rounds([a, b])
    assert texts(a.vault) == texts(b.vault) == {"The boiler code is 4473"}
    assert _count(b.vault) == 2  # the old version stays in the history there too
    assert a.hash() == b.hash()


def test_an_assistants_own_correction_and_its_op_are_one_commit(
        two: Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = two.members
    from app.agent_scope import AgentSession
    from app.api import AssistantFact
    for m in (a, b):
        m.vault.pair_agent("helper")
    helper = AgentSession(a.vault, "helper")
    first = helper.remember_fact(AssistantFact("Ana", "gym", "Iron Works")).value
    assert first.id is not None
    rounds([a, b])
    _kill_at_journaling(a.vault, monkeypatch)
    with pytest.raises(Killed):
        a.vault.correct_own(first.id, "Ana trains at Iron Works gym on Mondays", agent="helper")
    monkeypatch.undo()
    assert _count(a.vault) == 1
    a.restart()
    rounds([a, b])
    assert _count(b.vault) == 1 and a.hash() == b.hash()


def test_an_assistants_change_and_its_supersede_are_one_commit(
        two: Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    """``remember_fact`` with ``replaces``: the new fact and the old one superseded, and the
    ``fact.supersede`` op, are one commit. Before, a kill left the change here only, and the
    next start's backfill sent the new fact as a plain assert: both current elsewhere."""
    a, b = two.members
    from app.agent_scope import AgentSession
    from app.api import AssistantFact
    for m in (a, b):
        m.vault.pair_agent("helper")
    helper = AgentSession(a.vault, "helper")
    first = helper.remember_fact(AssistantFact("Ana", "gym", "Iron Works")).value
    rounds([a, b])
    _kill_at_journaling(a.vault, monkeypatch)
    with pytest.raises(Killed):
        helper.remember_fact(AssistantFact("Ana", "gym", "Pulse", replaces=first.id))
    monkeypatch.undo()
    facts = "SELECT m.text, m.status FROM memory m JOIN fact f ON f.memory_id = m.id"
    assert _rows(a.vault, facts) == [("Ana gym Iron Works", "active")]
    a.restart()
    helper = AgentSession(a.vault, "helper")
    later = helper.remember_fact(AssistantFact("Ana", "gym", "Pulse", replaces=first.id)).value
    assert later.status == "changed"
    rounds([a, b])
    want = {("Ana gym Iron Works", "superseded"), ("Ana gym Pulse", "active")}
    assert set(_rows(a.vault, facts)) == set(_rows(b.vault, facts)) == want
    assert a.hash() == b.hash()


def test_an_inbox_answer_and_its_op_are_one_commit(two: Fleet,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A kill between settling an Inbox item and journaling the answer left it answered here
    and open on the other device for good (nothing sends it later)."""
    a, b = two.members
    mid = remember(a.vault, "The car insurance renews in June")
    rounds([a, b])
    now = a.clock.now()
    inbox = inside(a.vault).consolidation.inbox.inbox
    inside(a.vault).db.write_sync(lambda c: inbox.add_review(c, mid, "old", now))
    (item,) = a.vault.contradictions()
    _kill_at_journaling(a.vault, monkeypatch)
    with pytest.raises(Killed):
        a.vault.resolve(item.id, "still_true")
    monkeypatch.undo()
    assert [c.id for c in a.vault.contradictions()] == [item.id]  # still open: nothing kept
    a.restart()
    a.vault.resolve(item.id, "still_true")
    rounds([a, b])
    assert a.vault.contradictions() == [] and b.vault.contradictions() == []
    settled = b.vault.contradictions(status=None)
    assert len(settled) == 1 and settled[0].status != "open"
    assert a.hash() == b.hash()


def test_a_kill_between_the_forget_op_and_the_erase_still_forgets_everywhere(
        two: Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    """The forget op is journaled first: a kill before the memories go here leaves it queued,
    and the restarted engine erases them here and on the other device. (Journaled after, a
    kill left them forgotten here only, and the merged state brought them back.)"""
    a, b = two.members
    gone = remember(a.vault, "Ana's test results came back on Tuesday")
    remember(a.vault, "Sam likes green tea")
    rounds([a, b])

    def die(*_a: Any, **_k: Any) -> None:
        raise Killed()
    monkeypatch.setattr(a.vault._forget, "forget", die)  # type: ignore[attr-defined]
    with pytest.raises(Killed):
        a.vault.forget(a.vault.forget_plan(ids=[gone]))
    monkeypatch.undo()
    assert "Ana's test results came back on Tuesday" in texts(a.vault)  # the kill came first
    a.restart()
    rounds([a, b])
    for m in (a, b):
        assert texts(m.vault) == {"Sam likes green tea"}
        assert not any("Ana" in h.text for h in m.vault.recall("Ana test results"))
    assert a.hash() == b.hash()


@pytest.fixture
def three(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: Any) -> Iterator[Fleet]:
    fleet = make_fleet(tmp_path, monkeypatch, embedder, 3, shared=False)
    try:
        yield fleet
    finally:
        fleet.close()


@pytest.mark.parametrize("seed", [1, *(pytest.param(s, marks=pytest.mark.slow) for s in (2, 3, 4))])
def test_three_vaults_over_a_faulty_folder_agree_and_forgotten_stays_forgotten(
        three: Fleet, seed: int) -> None:
    """Each vault has its own copy of the folder; a faulty sync tool moves files between them
    (drops, delays, duplicates, partial files, conflict copies, replays). Acts happen on every
    vault between rounds; in the end every vault holds the same state and shows the same
    memories, and nothing forgotten anywhere is back."""
    import random

    from app.sync.faults import FaultyTransport
    class OwnFiles(FaultyTransport):
        """A full mesh: each link carries one device's own files (what it wrote)."""

        def __init__(self, src: Member, dst: Member, seed: int) -> None:
            super().__init__(src.folder, dst.folder, seed)
            self.mine = "/" + src.secret.device_id + "/"

        def _source_files(self) -> dict[str, bytes]:
            return {r: d for r, d in super()._source_files().items() if self.mine in r}
    ms = three.members
    pipes = [OwnFiles(x, y, seed * 10 + i)
             for i, (x, y) in enumerate((x, y) for x in ms for y in ms if x is not y)]
    rng = random.Random(seed)
    doomed: list[str] = []
    for step in range(6):
        m = ms[rng.randrange(3)]
        text = f"Note {step} from the {m.name}: the {rng.choice(['red', 'blue', 'green'])} box"
        mid = remember(m.vault, text)
        if step in (1, 4):
            m.vault.forget(m.vault.forget_plan(ids=[mid]))
            doomed.append(text)
        elif step == 2:
            m.vault.correct(mid, text + ", edited")
        order = ms[:]
        rng.shuffle(order)
        for x in order:
            x.tick()
        for p in pipes:
            p.step()
    # A memory seen on another vault, forgotten there while this one edits it.
    seen = [x for x in _active(ms[2].vault)]
    if seen:
        target = seen[0]
        ms[2].vault.correct(target.id, target.text + " (checked)")
        ms[0].vault.forget(ms[0].vault.forget_plan(query=target.text.split(":")[0]))
        doomed.append(target.text)
    for _ in range(3):
        for x in ms:
            x.tick()
        for p in pipes:
            p.step()
    for _ in range(3):
        for p in pipes:
            p.drain()
        for x in ms:
            x.tick()
    hashes = {x.hash() for x in ms}
    assert len(hashes) == 1, [(f, r) for p in pipes for f, r in p.log[-3:]]
    shown = [texts(x.vault) for x in ms]
    assert shown[0] == shown[1] == shown[2]
    for x in ms:
        state = x.sync().state()
        for t in doomed:
            assert not any(t.split(":")[0] in s for s in texts(x.vault))
            assert t not in repr(state.to_dict())
        assert not state.waiting


def test_a_crash_in_the_middle_of_applying_loses_and_duplicates_nothing(
        two: Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = two.members
    for i in range(5):
        remember(a.vault, f"Fact number {i} about the garden")
    a.tick()
    calls = {"n": 0}
    real = b.sync().applier.write

    def crash(state: Any, gids: Any) -> Any:
        calls["n"] += 1
        raise OSError("killed while applying")
    monkeypatch.setattr(b.sync().applier, "write", crash)
    with pytest.raises(OSError):
        b.tick()
    assert calls["n"] == 1 and texts(b.vault) == set()
    monkeypatch.setattr(b.sync().applier, "write", real)
    b.tick()  # the same engine: what was not applied is still to do
    assert len(texts(b.vault)) == 5
    # Killed after the ops were kept and before any was applied: a new engine (a restart)
    # compares everything once and applies each exactly once.
    for i in range(5, 8):
        remember(a.vault, f"Fact number {i} about the garden")
    a.tick()
    monkeypatch.setattr(b.sync().applier, "write", crash)
    with pytest.raises(OSError):
        b.tick()
    b.restart()
    b.tick()
    b.tick()
    assert sorted(texts(b.vault)) == sorted(f"Fact number {i} about the garden" for i in range(8))
    assert _count(b.vault) == 8 and a.hash() == b.hash()


def test_a_crash_after_writing_a_segment_sends_each_op_once(two: Fleet,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    """Killed after the segment was renamed into the folder and before the journal was told:
    the next engine adopts its own file instead of writing the ops again."""
    a, b = two.members
    remember(a.vault, "The spare key is under the blue pot")
    eng = a.sync()

    def killed(conn: Any) -> None:
        raise OSError("killed")
    real = eng.db.write_sync
    monkeypatch.setattr(eng.db, "write_sync",
                        lambda fn: killed(None) if fn.__qualname__.endswith("_send_batch.<locals>.run")
                        else real(fn))
    with pytest.raises(OSError):
        a.tick()
    monkeypatch.setattr(eng.db, "write_sync", real)
    a.restart()
    a.tick()
    b.tick()
    logs = sorted((a.folder / "v1" / "log" / a.secret.device_id).iterdir())
    assert [p.name for p in logs] == ["000000000001"]  # one segment, not two
    assert texts(b.vault) == {"The spare key is under the blue pot"}
    assert a.hash() == b.hash()
    assert a.vault._sync_journal().unsent() == []  # type: ignore[union-attr]


def test_a_device_back_from_offline_applies_forgets_before_it_writes(three: Fleet) -> None:
    """c was offline and edited a memory that a forgot meanwhile: when it comes back it
    erases it first, and its edit never reaches the folder."""
    import shutil
    a, b, c = three.members

    def share(src: Member, dst: Member) -> None:
        shutil.copytree(src.folder, dst.folder, dirs_exist_ok=True)
    mid = remember(a.vault, "Ana's new phone number is 0612")
    a.tick()
    share(a, c)
    share(a, b)
    c.tick()
    b.tick()
    (theirs,) = _active(c.vault)
    c.vault.correct(theirs.id, "Ana's new phone number is 0613")  # offline: not ticked
    a.vault.forget(a.vault.forget_plan(ids=[mid]))
    a.tick()
    share(a, c)
    share(a, b)
    c.tick()
    b.tick()
    assert texts(c.vault) == texts(b.vault) == set()
    mine = c.folder / "v1" / "log" / c.secret.device_id
    assert not mine.exists() or not any(mine.iterdir())  # nothing written about it
    assert c.vault._sync_journal().unsent() == []  # type: ignore[union-attr]
    assert a.hash() == b.hash() == c.hash()


def test_a_restored_backup_is_a_new_device_never_the_old_one(two: Fleet, tmp_path: Path) -> None:
    """Two computers must never share a device id: a vault restored from a backup drops the
    sync identity (and the journal clock) it was backed up with, and keeps its memories."""
    from app import bootstrap
    from app.sync.engine import SyncEngine
    from app.sync.keys import SyncRefused
    a, _b = two.members
    remember(a.vault, "The boiler was serviced in May")
    gone = remember(a.vault, "The old alarm code")
    a.tick()
    a.vault.forget(a.vault.forget_plan(ids=[gone]))
    a.tick()
    assert len(a.sync().forget_progress()) == 1
    remember(a.vault, "Unsent: the gutter needs clearing")  # still in the journal
    a.vault.backup(tmp_path / "a.kept-backup")
    bootstrap.restore_backup(tmp_path / "a.kept-backup", PW, tmp_path / "restored")
    restored = Vault.open(tmp_path / "restored", PW, threaded=False, use_chroma=False,
                          load_model=False)
    try:
        tables = ("sync_self", "sync_clock", "sync_forget_sent")
        counts = inside(restored).db.read(lambda c: {t: c.execute(
            f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables})
        assert counts == {"sync_self": 0, "sync_clock": 0, "sync_forget_sent": 0}
        assert texts(restored) == texts(a.vault)
        with pytest.raises(SyncRefused):
            SyncEngine(restored, a.folder)  # pair it again first
        journal = restored._sync_journal()
        assert journal is not None
        remember(restored, "Written on the restored copy")
        assert journal.device() not in (None, a.secret.device_id)
    finally:
        restored.lock()
    # The original keeps its identity and goes on.
    assert inside(a.vault).db.read(lambda c: c.execute(
        "SELECT device_id FROM sync_self").fetchone()[0]) == a.secret.device_id


def test_a_late_create_of_something_forgotten_is_never_kept(two: Fleet) -> None:
    """A device that never saw the forget sends the create afterwards: dropped, and its text
    is kept nowhere in this vault."""
    from app.sync.folder import FolderWriter
    from app.sync.hlc import HybridClock
    from app.sync.ops import Forget, OpWriter, new_gid
    from app.sync.segments import Cursor
    from tests.app.sync.op_samples import memory
    a, b = two.members
    gid = new_gid()
    a.tick()  # a moves to its first epoch: the key it writes under
    key = a.sync()._key()
    writer = FolderWriter(a.folder, b.secret, a.sync().writer.vault_id,
                          Cursor(b.secret.device_id))
    ops = OpWriter(HybridClock(b.secret.device_id, lambda: 1_800_000_000_000))
    writer.append([o.to_dict() for o in ops.batch([Forget(gids=(gid,))])], key)
    a.tick()
    # Later, an op written by a device that had not seen the forget (an older stamp).
    late = OpWriter(HybridClock(b.secret.device_id, lambda: 1_700_000_000_000), 2)
    writer.append([o.to_dict() for o in late.batch([memory(gid, "Lost ring in the lake")])],
                  key)
    report = a.tick()
    assert report.received == 1 and report.dropped == 1
    assert "Lost ring" not in repr(inside(a.vault).db.read(lambda c: [
        tuple(r) for t in ("sync_received", "sync_ops", "memory") for r in c.execute(
            f"SELECT * FROM {t}")]))
    state = a.sync().state()
    assert gid in state.forgotten and gid not in state.items


def test_a_lone_small_memory_is_one_512_byte_log_file_and_arrives(two: Fleet) -> None:
    """Issue 29's "a small memory <= 1.5 KiB on the wire": the engine's segment for one
    memory of 32 characters, alone in a tick, is the 512-byte bucket (Syncthing adds ~550)."""
    a, b = two.members
    rounds([a, b])
    log = a.folder / "v1" / "log" / a.secret.device_id
    before = set(log.iterdir()) if log.exists() else set()
    remember(a.vault, "Ana prefers green tea at eleven.")
    a.tick()
    (new,) = set(log.iterdir()) - before
    assert new.stat().st_size == 512
    assert b"green tea" not in new.read_bytes()
    b.tick()
    assert "Ana prefers green tea at eleven." in texts(b.vault)
