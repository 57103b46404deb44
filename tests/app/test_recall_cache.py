"""Issue 28: what recall reads per memory is kept in RAM (storage/recall_cache.py) and never
outlives the row it copies. After every kind of write the cache answers what the database
answers, a forgotten memory never comes back, a read racing a write stores nothing stale, and
lock leaves no text in RAM."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.api import Turn
from app.clock import FixedClock
from app.facade import Vault
from storage import repo
from storage.recall_cache import RecallRows
from tests.app.conftest import PW, T0, remember, share_embedder
from tests.inside import inside


def all_ids(vault: Vault) -> list[int]:
    return inside(vault).db.read(
        lambda c: [int(r[0]) for r in c.execute("SELECT id FROM memory ORDER BY id")])


def cached_rows(vault: Vault) -> RecallRows:
    rows = inside(vault).recall.rows
    assert isinstance(rows, RecallRows)
    return rows


def assert_same_as_database(vault: Vault, extra: list[int] = ()) -> None:  # type: ignore[assignment]
    """Every cached answer equals the database's, for every memory (and ids no longer there)."""
    rows, db = cached_rows(vault), inside(vault).db
    ids = all_ids(vault) + list(extra)
    for name in ("recall_meta", "texts", "refs_of"):
        cached = db.read(lambda c, n=name: getattr(rows, n)(c, ids))
        fresh = db.read(lambda c, n=name: getattr(repo, n)(c, ids))
        assert cached == fresh, name


@pytest.fixture(params=[False, True], ids=["one-connection", "threaded"])
def vault(request: pytest.FixtureRequest, vault_dir: Path, fast_kdf: object, clock: FixedClock,
          embedder: object, monkeypatch: pytest.MonkeyPatch) -> Any:
    share_embedder(monkeypatch, embedder)
    v = Vault.create(vault_dir, PW, kdf=fast_kdf, threaded=request.param, clock=clock,
                     use_chroma=False).vault
    yield v
    if not v.locked:
        v.lock()


def test_cache_answers_what_the_database_answers_after_every_write(vault: Vault,
                                                                   clock: FixedClock) -> None:
    vault.import_turns([Turn("s1", who, text, T0 - 3600 + n, f"s1-{n}") for n, (who, text) in
                        enumerate([("Anna", "We planted tomatoes in the garden"),
                                   ("Me", "The tomatoes in the garden need water"),
                                   ("Anna", "I moved to Lisbon for the new job")])])
    a = remember(vault, "Marco plays chess in the garden on Sundays", speaker="Marco")
    b = remember(vault, "Garden party at Priya's place", speaker="Priya")
    rows = cached_rows(vault)
    for _ in range(2):  # fills the cache, then answers from it
        assert vault.recall("garden", k=10, touch=False)
    assert rows._meta and rows._texts and rows._refs  # it did fill
    assert_same_as_database(vault)
    vault.recall("garden tomatoes", k=10)  # touch: access counts and importance move
    assert_same_as_database(vault)
    new = vault.correct(a, "Marco plays chess in the park on Sundays").value  # supersedes a
    vault.recall("garden chess", k=10, touch=False)
    assert_same_as_database(vault)
    assert vault.get(a).status.value == "superseded" and int(new) != int(a)
    vault.archive(b)
    assert_same_as_database(vault)
    vault.restore(b)
    vault.confirm(new)
    assert_same_as_database(vault)
    vault.consolidate(now=T0 + 3600)  # episodes, facts and their links
    vault.recall("garden", k=10, touch=False)
    assert_same_as_database(vault)
    vault.import_turns([Turn("s2", "Anna", "The garden is full of tomatoes now", T0 + 60, "s2-0")])
    vault.recall("garden tomatoes", k=10, touch=False)
    assert_same_as_database(vault)


def test_a_forgotten_memory_never_comes_back_from_the_cache(vault: Vault) -> None:
    keep = remember(vault, "The blue kayak is in the garage", speaker="Me")
    gone = remember(vault, "The red kayak is in the shed", speaker="Me")
    for _ in range(2):
        assert int(gone) in [int(h.id) for h in vault.recall("kayak", k=10, touch=False)]
    assert int(gone) in cached_rows(vault)._texts
    plan = vault.forget_plan(ids=[gone])
    vault.forget(plan)
    for _ in range(2):
        ids = [int(h.id) for h in vault.recall("red kayak shed", k=10, touch=False)]
        assert int(gone) not in ids and int(keep) in ids
    assert int(gone) not in cached_rows(vault)._texts
    assert_same_as_database(vault, extra=[int(gone)])
    # An id freed by a forget and given to a new memory shows the new memory, not the old.
    again = remember(vault, "Pancakes for breakfast on Saturday", speaker="Me")
    assert_same_as_database(vault, extra=[int(gone)])
    hit = vault.recall("pancakes", k=1, touch=False)[0]
    assert int(hit.id) == int(again) and "Pancakes" in hit.text


def test_a_read_that_races_a_write_stores_nothing_stale(vault: Vault,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    mid = int(remember(vault, "Tea with Hana at the old bookstore", speaker="Hana"))
    rows, db = cached_rows(vault), inside(vault).db
    real = repo.texts

    def read_then_write(conn: Any, ids: Any) -> dict[int, str]:
        got = real(conn, ids)  # read before the write commits ...
        monkeypatch.setattr(repo, "texts", real)
        vault.forget(vault.forget_plan(ids=[mid]))  # ... which then forgets the memory
        return got
    monkeypatch.setattr(repo, "texts", read_then_write)
    stale = db.read(lambda c: rows.texts(c, [mid]))
    assert stale == {mid: "Tea with Hana at the old bookstore"}  # what that read saw
    assert mid not in rows._texts  # but it was not kept
    assert db.read(lambda c: rows.texts(c, [mid])) == {}
    assert vault.recall("tea bookstore", k=10, touch=False) == []


def test_lock_leaves_no_memory_text_in_ram(vault: Vault) -> None:
    remember(vault, "The spare key is under the blue pot", speaker="Me")
    rows = cached_rows(vault)
    vault.recall("spare key", k=10, touch=False)
    assert rows._texts
    vault.lock()
    assert not rows._texts and not rows._meta and not rows._refs


def test_preload_reads_every_memory_and_writes_still_drop_them(vault: Vault,
                                                               monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    from storage import recall_cache
    monkeypatch.setattr(recall_cache, "PRELOAD_SLICE", 2)  # several slices
    ids = [int(remember(vault, f"Note {n} about the allotment", speaker="Me")) for n in range(7)]
    rows, db = cached_rows(vault), inside(vault).db
    rows.clear()
    assert rows.preload(db.read) == len(all_ids(vault))
    assert set(rows._meta) == set(rows._texts) == set(rows._refs) == set(all_ids(vault))
    vault.forget(vault.forget_plan(ids=[ids[3]]))
    vault.recall("allotment", k=10)  # touch: access counts move
    assert ids[3] not in rows._meta and ids[3] not in rows._texts
    assert_same_as_database(vault, extra=[ids[3]])
    # A slice read while a write commits is read again, never kept as it was.
    real, calls = repo.recall_meta_after, []

    def slice_then_write(conn: Any, after: int, limit: int) -> Any:
        got = real(conn, after, limit)
        calls.append(after)
        if len(calls) == 1:
            db.write_sync(lambda c: c.execute(
                "UPDATE memory SET importance = 0.99 WHERE id = ?", (ids[0],)))
        return got
    monkeypatch.setattr(repo, "recall_meta_after", slice_then_write)
    rows.clear()
    rows.preload(db.read)
    assert calls[:2] == [0, 0]  # the first slice, read again
    assert rows._meta[ids[0]].importance == pytest.approx(0.99)
    assert_same_as_database(vault, extra=[ids[3]])
