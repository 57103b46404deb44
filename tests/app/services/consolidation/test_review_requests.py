"""Review requests (issue 12): an LLM's request to forget a memory is a one-sided review
request, never a contradiction of the memory with itself (whose "keep A" superseded the
memory by itself, so it vanished from recall). Covers the service, migration 0003 on a vault
written with the old shape, and the CLI. The inbox's paged reads are covered here too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.api import Turn
from app.clock import FixedClock, parse_iso
from app.errors import ValidationError
from app.facade import Vault
from app.services.recall import Filters
from tests import ROOT
from tests.app.services.consolidation.fake_llm import FakeLlm, facts_reply, llm_vault
from tests.inside import inside

NOW = parse_iso("2026-07-02T00:00:00Z")
PW = "pw-review"
SEMANTIC = Filters(stores=("semantic",))


@pytest.fixture
def vault(vault_dir: Path, fast_kdf: object, fake: FakeLlm) -> Iterator[Vault]:
    v = llm_vault(vault_dir, PW, fast_kdf, NOW, fake)
    yield v
    if not v.locked:
        v.lock()


def _episode(v: Vault, ref: str) -> int:
    return int(inside(v).db.read(lambda c: c.execute(
        "SELECT e.id FROM memory m JOIN link l ON l.dst = m.id AND l.kind = 'DERIVED_FROM' "
        "JOIN memory e ON e.id = l.src WHERE e.store = 'episodic' AND m.ref = ?",
        (ref,)).fetchone()[0]))


def _review_request(v: Vault, fake: FakeLlm) -> tuple[Any, int]:
    """Through the real path: the LLM learns a fact, then asks to delete it."""
    v.import_turns([Turn("s", "Sam", "I live in Lisbon now.", parse_iso("2026-06-01T10:00:00Z"),
                         "t1")])
    fake.script(facts_reply([{"subject": "Sam", "predicate": "lives_in", "object": "Lisbon",
                              "statement": "Sam lives in Lisbon", "category": "place",
                              "confidence": 0.9, "store": "semantic", "change": False,
                              "source_ids": [_episode(v, "t1")]}]))
    v.consolidate(steps=("extract",))
    v.import_turns([Turn("s", "Sam", "Forget where I live.", parse_iso("2026-06-02T10:00:00Z"),
                         "t2")])
    fake.script(facts_reply([], deletes=[{"memory_id": None, "statement": "Sam lives in Lisbon",
                                          "reason": "user asked"}]))
    v.consolidate(steps=("extract",))
    (item,) = v.contradictions()
    return item, int(item.a.id)


def test_an_llm_delete_is_a_review_request_and_keep_a_is_refused(vault: Vault,
                                                                fake: FakeLlm) -> None:
    item, mid = _review_request(vault, fake)
    assert item.a.text == "Sam lives in Lisbon"
    for keep in ("a", "b", "both"):
        # Before: "keep a" marked the memory superseded by itself and it left recall.
        with pytest.raises(ValidationError, match="review request about one memory"):
            vault.resolve(item.id, keep)
    # Nothing changed: the memory is active and recall still finds it; the request waits.
    m = vault.get(mid)
    assert m.status.value == "active" and m.superseded_by is None and not m.user_validated
    assert vault.recall("where does Sam live", k=1, touch=False, filters=SEMANTIC)[0].id == mid
    assert [i.id for i in vault.contradictions()] == [item.id]
    assert item.kind == "review" and item.reason == "user asked"


def test_still_true_confirms_and_undo_restores(vault: Vault, fake: FakeLlm) -> None:
    item, mid = _review_request(vault, fake)
    assert item.a.confidence < 1.0
    vault.resolve(item.id, "still_true")
    m = vault.get(mid)
    assert m.status.value == "active" and m.user_validated and m.confidence == 1.0
    assert vault.contradictions() == []
    (done,) = vault.contradictions("resolved")
    assert json.loads(done.resolution)["keep"] == "still_true"
    assert vault.recall("where does Sam live", k=1, touch=False, filters=SEMANTIC)[0].id == mid
    vault.reopen(item.id)
    m = vault.get(mid)
    assert not m.user_validated and m.confidence == pytest.approx(item.a.confidence)
    assert [i.id for i in vault.contradictions()] == [item.id]


def test_edit_replaces_the_memory_and_still_true_is_no_answer_to_a_contradiction(
        vault: Vault, fake: FakeLlm) -> None:
    item, mid = _review_request(vault, fake)
    new = vault.resolve(item.id, "edit", "Sam lives in Porto").value
    assert vault.get(mid).superseded_by == new
    assert vault.get(new).text == "Sam lives in Porto"
    assert vault.get(new).status.value == "active"
    # A real contradiction (two memories) takes a/b/both/edit only.
    a = int(inside(vault).db.read(lambda c: c.execute(
        "SELECT id FROM memory WHERE store = 'episodic' ORDER BY id LIMIT 1").fetchone()[0]))
    cid = inside(vault).db.write_sync(lambda c: c.execute(
        "INSERT INTO contradiction (a, b, reason, created_at) VALUES (?, ?, 'facts disagree', "
        "?)", (a, new, NOW)).lastrowid)
    with pytest.raises(ValidationError, match="is a contradiction"):
        vault.resolve(cid, "still_true")


def test_paged_reads_batch_and_clamp(vault: Vault, fake: FakeLlm) -> None:
    _item, _mid = _review_request(vault, fake)
    ids = inside(vault).db.read(
        lambda c: [r[0] for r in c.execute("SELECT id FROM memory ORDER BY id")])
    pairs = [(x, y) for n, x in enumerate(ids) for y in ids[n + 1:]]
    assert len(pairs) >= 5

    def add(c: Any) -> None:
        for n, (x, y) in enumerate(pairs[:5]):
            c.execute("INSERT INTO contradiction (a, b, reason, status, resolution, created_at) "
                      "VALUES (?, ?, 'facts disagree', 'auto', ?, ?)",
                      (x, y, json.dumps({"kept": y, "rule": "r", "prior": {}}), NOW + n))
    inside(vault).db.write_sync(add)
    first = vault.inbox_page("auto", 0, 2)
    assert (first.total, first.pages, len(first.items)) == (5, 3, 2)
    # Settled lists are newest first; pages do not overlap and the last is short.
    got = [i.id for p in range(3) for i in vault.inbox_page("auto", p, 2).items]
    assert got == sorted(got, reverse=True) and len(set(got)) == 5
    last = vault.inbox_page("auto", 99, 2)
    assert last.page == 2 and len(last.items) == 1
    page = vault.inbox_page("open", 0, 10)
    assert page.total == 1 and page.reviews == 1 and page.items[0].kind == "review"
    assert vault.inbox_count() == 1
    # A side carries what the card shows, sources and conversation refs included.
    side = page.items[0].a
    assert side.refs == ("t1",) and side.sources and side.status == "active"
    with pytest.raises(ValidationError):
        vault.inbox_page("nonsense")


# --- migration 0003 on a vault written the old way ----------------------------------------------
def _old_shape_vault(folder: Path, kdf: object, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """A vault at schema 0002 whose rows are what the code before 0003 wrote: review requests
    as a memory contradicting itself, one answered "keep A" (so the memory was superseded by
    itself), one answered "both true at different times" (so it ended at its own date)."""
    import storage.migrations as migrations
    everything = migrations.migration_names
    monkeypatch.setattr(migrations, "migration_names",
                        lambda: [n for n in everything() if n < "0003"])
    v = Vault.create(folder, PW, kdf=kdf, threaded=False, clock=FixedClock(NOW),
                     use_chroma=False, load_model=False).vault
    mids = {}
    for name, text in (("open", "Sam lives in Lisbon"), ("kept", "Sam works at the bakery"),
                       ("both", "Sam has a cat"), ("archived", "Sam plays chess")):
        mids[name] = _remember(v, text)
    from storage import lifecycle

    def old(c: Any) -> None:
        assert "kind" not in {r[1] for r in c.execute("PRAGMA table_info(contradiction)")}
        for name in mids:
            c.execute("INSERT INTO contradiction (a, b, reason, created_at) VALUES (?,?,?,?)",
                      (mids[name], mids[name], "review: user asked", NOW))
        c.execute("UPDATE memory SET status = 'archived' WHERE id = ?", (mids["archived"],))

        def prior(m: int) -> dict[str, Any]:
            r = c.execute("SELECT status, superseded_by, valid_until, user_validated, "
                          "confidence FROM memory WHERE id = ?", (m,)).fetchone()
            return {str(m): dict(zip(("status", "superseded_by", "valid_until",
                                      "user_validated", "confidence"), r, strict=True))}
        # The old resolve(): keep "a" superseded the loser (itself) by the winner (itself).
        for name in ("kept", "archived"):
            m = mids[name]
            p = prior(m)
            lifecycle.supersede(c, m, m, NOW)
            c.execute("UPDATE memory SET user_validated = 1, confidence = 1.0 WHERE id = ?", (m,))
            c.execute("UPDATE contradiction SET status = 'resolved', resolution = ? "
                      "WHERE a = ?", (json.dumps({"keep": "a", "new": None, "prior": p}), m))
        m = mids["both"]
        p = prior(m)
        c.execute("UPDATE memory SET valid_until = occurred_at WHERE id = ?", (m,))
        c.execute("UPDATE contradiction SET status = 'resolved', resolution = ? WHERE a = ?",
                  (json.dumps({"keep": "both", "new": None, "prior": p}), m))
    inside(v).db.write_sync(old)
    assert v.get(mids["kept"]).superseded_by == mids["kept"]  # the bug, as it was stored
    v.lock()
    monkeypatch.setattr(migrations, "migration_names", everything)
    return mids


def _remember(v: Vault, text: str) -> int:
    from app.domain.memory import Draft, Store
    return int(v.remember(Draft(text=text, store=Store.SEMANTIC, occurred_at=NOW - 86400,
                                speaker="Sam")).value)


def test_migration_0003_turns_old_rows_into_review_requests_and_repairs(
        vault_dir: Path, fast_kdf: object, monkeypatch: pytest.MonkeyPatch) -> None:
    mids = _old_shape_vault(vault_dir, fast_kdf, monkeypatch)
    v = Vault.open(vault_dir, PW, threaded=False, clock=FixedClock(NOW), use_chroma=False,
                   load_model=False)
    try:
        items = {i.a.id: i for i in v.contradictions(None)}
        assert {i.kind for i in items.values()} == {"review"}
        assert {i.reason for i in items.values()} == {"user asked"}
        # Superseded by itself: back to what it was (active; archived stays archived), no
        # self-link, a history entry saying why; the person's "keep" became "still true".
        for name, status in (("kept", "active"), ("archived", "archived")):
            m = v.get(mids[name])
            assert (m.status.value, m.superseded_by) == (status, None)
            res = json.loads(items[mids[name]].resolution)
            assert res["keep"] == "still_true" and items[mids[name]].status == "resolved"
            assert any(e.action == "restored" for e in v.history(mids[name]).entries)
        assert inside(v).db.read(lambda c: c.execute(
            "SELECT count(*) FROM link WHERE src = dst").fetchone()[0]) == 0
        hit = v.recall("where does Sam work", k=1, touch=False, filters=SEMANTIC)[0]
        assert hit.id == mids["kept"]
        # "Both true" on one memory meant nothing: its end date is undone and it is asked again.
        assert v.get(mids["both"]).valid_until is None
        assert items[mids["both"]].status == "open" and items[mids["both"]].resolution is None
        assert items[mids["open"]].status == "open"
        with pytest.raises(ValidationError):
            v.resolve(items[mids["open"]].id, "a")
        # Untouched: an unrelated memory.
        assert v.get(mids["open"]).status.value == "active"
    finally:
        v.lock()


# --- the CLI ------------------------------------------------------------------------------------
def kept(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, KEPT_PASSWORD=PW)
    return subprocess.run([sys.executable, "-m", "app.cli", "--vault", str(folder), *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_cli_lists_review_requests_apart_and_refuses_keep(vault: Vault, fake: FakeLlm,
                                                          vault_dir: Path) -> None:
    item, mid = _review_request(vault, fake)
    vault.lock()
    r = kept(vault_dir, "contradictions")
    assert r.returncode == 0, r.stderr
    assert f"#{item.id} (review request, open: user asked)" in r.stdout
    assert f"  memory: [{mid}]" in r.stdout and "  a: [" not in r.stdout
    assert "--still-true" in r.stdout and "kept forget --id" in r.stdout
    r = kept(vault_dir, "resolve", str(item.id), "--keep", "a")
    assert r.returncode == 2
    assert r.stderr.splitlines() == [
        f"kept: #{item.id} is a review request about one memory ({mid}), not a contradiction: "
        f"use --still-true or --edit --text \"...\", or forget it with kept forget --id {mid}."]
    r = kept(vault_dir, "resolve", str(item.id), "--still-true")
    assert r.returncode == 0, r.stderr
    assert "stays, confirmed by you" in r.stdout
    v = Vault.open(vault_dir, PW, threaded=False, use_chroma=False, load_model=False)
    try:
        m = v.get(mid)
        assert m.status.value == "active" and m.user_validated
        assert v.contradictions() == []
    finally:
        v.lock()
