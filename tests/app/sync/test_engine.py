"""The sync engine on real vaults (issue 29 items 2-3): what one vault does reaches the others
through a folder, merged alike on every device, and a forget is erased everywhere for good."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.domain.memory import Draft, Store
from app.facade import Vault
from tests.app.conftest import remember
from tests.app.sync.fleet import Fleet, Member, make_fleet
from tests.inside import inside


@pytest.fixture
def two(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: Any) -> Iterator[Fleet]:
    fleet = make_fleet(tmp_path, monkeypatch, embedder, 2)
    try:
        yield fleet
    finally:
        fleet.close()


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
