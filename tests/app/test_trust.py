"""Trust in what Kept knows (issue 12): the person's own edit is never hidden behind its
source, decay does not hide imported history, time travel works on imported history.
Everything real: SQLCipher file, ONNX embedder, exact vector search, fixed clock."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.clock import FixedClock, parse_iso
from app.domain.memory import MemoryId, Store
from app.facade import Vault
from app.services import scoring
from app.services.browse import LIVE, MemoryQuery
from app.services.recall import TUNING, Filters, Hit
from tests.app.conftest import DAY, T0, neutral, remember, row, turn
from tests.inside import inside


def ids(hits: list[Hit]) -> list[int]:
    return [int(h.id) for h in hits]


def episode_of(vault: Vault, ref: str) -> MemoryId:
    return MemoryId(int(row(vault, "SELECT id FROM memory WHERE store = 'episodic' AND ref = ?",
                            ref)[0]))


def status(vault: Vault, mid: int) -> str:
    return vault.get(mid).status.value


# --- 2. the person's own edit is not hidden by its source episode ---------------------------

def _color_episode(vault: Vault) -> tuple[MemoryId, MemoryId]:
    """An episode that says "blue" many ways, and the fact extracted from it."""
    vault.import_turns([turn("c", "Sam", "My favorite color is blue. Blue, my favorite color "
                             "since forever: favorite color blue!", T0 - 2 * DAY, "c:1")])
    ep = episode_of(vault, "c:1")
    fact = remember(vault, "Sam's favorite color is blue", Store.SEMANTIC,
                    derived_from=(ep,), **neutral())
    return ep, fact


def test_edited_fact_is_returned_and_outranks_its_source_episode(vault: Vault) -> None:
    ep, fact = _color_episode(vault)
    q = "what is my favorite color"
    # The person edits the fact in the inbox (a correction: user-validated, same sources) ...
    teal = vault.correct(fact, "Sam's favorite color is teal").value
    assert vault.refs([teal])[teal] == vault.refs([ep])[ep] == ["c:1"]
    # ... and the episode, saying blue, matches the question far better than the correction.
    raw = {int(h.id): h for h in inside(vault).recall.recall(q, now=T0, dedupe=False)}
    assert raw[ep].breakdown["relevance"] > 1.5 * raw[teal].breakdown["relevance"]
    hits = vault.recall(q, touch=False)
    assert teal in ids(hits), "the person's own correction was deduped away"
    assert ids(hits)[0] == teal, "the episode with the rejected answer still comes first"
    assert fact not in ids(hits)
    top = hits[0]
    assert top.breakdown["lift"] > 0
    assert top.score == pytest.approx(top.breakdown["final"], abs=1e-6)


def test_confirmed_fact_is_never_deduped(vault: Vault) -> None:
    ep, _blue = _color_episode(vault)
    vault.forget(vault.forget_plan(ids=[_blue], include_sources=False))
    # Confirmed in the inbox, worded unlike the question: the episode matches far better.
    teal = remember(vault, "Sam likes teal best", Store.SEMANTIC, derived_from=(ep,),
                    **neutral())
    vault.confirm(teal)
    q = "what is my favorite color"
    raw = {int(h.id): h for h in inside(vault).recall.recall(q, now=T0, dedupe=False)}
    assert raw[ep].breakdown["relevance"] > 1.5 * raw[teal].breakdown["relevance"]
    hits = ids(vault.recall(q, touch=False))
    assert teal in hits, "the person's confirmed fact was deduped away"
    assert hits[0] == teal


def test_fact_outranks_its_source_episode_also_in_context(vault: Vault) -> None:
    vault.import_turns([turn("b", "Sam", "Need a gift idea for Ana, her birthday is July 3rd "
                             "and she loves pottery; what to get Ana for her birthday?",
                             T0 - 3 * DAY, "b:1")])
    ep = episode_of(vault, "b:1")
    fact = remember(vault, "Ana's birthday is July 3", Store.SEMANTIC, derived_from=(ep,),
                    **neutral())
    # Unrelated to the question, from the same episode: never lifted above it.
    pottery = remember(vault, "Ana loves pottery", Store.SEMANTIC, derived_from=(ep,),
                       **neutral())
    q = "what should I get Ana for her birthday"
    hits = vault.recall(q, touch=False)
    assert ids(hits)[0] == fact
    assert pottery not in ids(hits)[:1]
    ctx = vault.context(q)
    assert fact in [i.id for i in ctx.items], "kept context leaves out the birthday fact"
    assert any(i.section == "facts" and "July 3" in i.text for i in ctx.items)


def test_a_weak_fact_is_not_lifted_over_its_source(vault: Vault) -> None:
    vault.import_turns([turn("p", "Sam", "Went to the pottery market and bought a blue vase "
                             "for the pottery shelf", T0 - DAY, "p:1")])
    ep = episode_of(vault, "p:1")
    weak = remember(vault, "Sam owns a car", Store.SEMANTIC, derived_from=(ep,), **neutral())
    hits = vault.recall("pottery market vase", touch=False, k=20)
    assert ids(hits)[0] == ep
    assert weak not in ids(hits)  # same refs as the better episode: deduped as before
    every = {int(h.id): h for h in inside(vault).recall.recall("pottery market vase", now=T0,
                                                               dedupe=False)}
    assert every[ep].breakdown["lift"] == 0.0


# --- 5. decay does not hide imported history ----------------------------------------------------

def test_retention_counts_from_when_kept_learned_it() -> None:
    three_years = 3 * 365 * DAY
    now = T0
    # Imported today, it happened three years ago: it has been idle for no day at all.
    assert scoring.retention_idle_days(now - three_years, None, now, now) == 0.0
    assert scoring.retention_idle_days(now - three_years, None, now - 10 * DAY, now) == \
        pytest.approx(10.0)
    # Used since: counted from the last use.
    assert scoring.retention_idle_days(now - three_years, now - DAY, now - 10 * DAY, now) == \
        pytest.approx(1.0)


def _import_old_history(vault: Vault, n: int = 6) -> list[MemoryId]:
    """n episodes from three years back, learned today (T0)."""
    start = T0 - 3 * 365 * DAY
    vault.import_turns([turn(f"old{k}", "Maya", f"Walked along the harbour with Leo, visit "
                             f"number {k}", start + k * 7 * DAY, f"old:{k}") for k in range(n)])
    return [episode_of(vault, f"old:{k}") for k in range(n)]


def test_consolidating_an_imported_history_archives_none_of_it(vault: Vault) -> None:
    eps = _import_old_history(vault)
    report = vault.consolidate(steps=("decay",)).value
    assert report.counts.get("archived", 0) == 0
    assert {status(vault, e) for e in eps} == {"active"}
    # A year and more after it was learned, untouched: decay sets it aside after all.
    later = vault.consolidate(steps=("decay",), now=T0 + 400 * DAY).value
    assert later.counts.get("archived", 0) >= len(eps)
    assert {status(vault, e) for e in eps} == {"archived"}


def test_what_decay_archived_is_still_found_ranked_lower(vault: Vault) -> None:
    old = remember(vault, "Paid the water bill for the quarter", occurred_at=T0 - 30 * DAY,
                   **neutral())
    live = remember(vault, "Paid the water bill for the quarter", occurred_at=T0 - 30 * DAY,
                    **neutral())
    by_hand = remember(vault, "Paid the water bill for the quarter", occurred_at=T0 - 30 * DAY,
                       **neutral())
    vault.consolidate(steps=("decay",), now=T0 + 400 * DAY)   # decay archives all three
    assert {status(vault, m) for m in (old, live, by_hand)} == {"archived"}
    vault.restore(live)
    vault.restore(by_hand)
    vault.archive(by_hand)                                    # the person puts this one away
    hits = vault.recall("paid the water bill", touch=False)
    assert ids(hits) == [live, old], "decay-archived must stay searchable, below active"
    h = {int(x.id): x for x in hits}
    assert h[old].status == "archived" and h[live].status == "active"
    assert h[old].breakdown["boost"] == pytest.approx(
        TUNING.store_weight["episodic"] * TUNING.archived_weight)
    # The person's own archive stays out unless asked for; the Archive search has both.
    assert by_hand in ids(vault.recall("paid the water bill", touch=False,
                                       filters=Filters(include_archived=True)))
    archive = ids(vault.recall("paid the water bill", touch=False,
                               filters=Filters(only_archived=True)))
    assert set(archive) == {old, by_hand}


def test_forgetting_one_archived_episode_keeps_the_statistics(vault: Vault) -> None:
    eps = _import_old_history(vault)
    vault.consolidate(steps=("statistics",))
    before = dict(inside(vault).db.read(lambda c: c.execute(
        "SELECT metric, sample_size FROM statistic").fetchall()))
    assert before and set(before.values()) == {len(eps)} | ({before.get(
        "top_person_mentions")} if "top_person_mentions" in before else set())
    vault.consolidate(steps=("decay",), now=T0 + 400 * DAY)
    assert {status(vault, e) for e in eps} == {"archived"}
    vault.forget(vault.forget_plan(ids=[eps[0]]))
    after = dict(inside(vault).db.read(lambda c: c.execute(
        "SELECT metric, sample_size FROM statistic").fetchall()))
    assert after, "forgetting one archived episode emptied the implicit store"
    assert after["episodes_per_active_day"] == len(eps) - 1
    implicit = inside(vault).db.read(lambda c: c.execute(
        "SELECT count(*) FROM memory WHERE store = 'implicit'").fetchone()[0])
    assert implicit == len(after)


def test_timeline_covers_archived_episodes(vault: Vault) -> None:
    eps = _import_old_history(vault, 3)
    vault.consolidate(steps=("decay",), now=T0 + 400 * DAY)
    assert {status(vault, e) for e in eps} == {"archived"}
    days = dict(vault.timeline_days())
    first = vault.get(eps[0])
    day = first.occurred_at
    from datetime import UTC, datetime
    key = datetime.fromtimestamp(day, UTC).date().isoformat()
    listed = MemoryQuery(day=key, status=LIVE, fold=True)  # what the window's day shows
    page = vault.page_memories(listed)
    assert eps[0] in [r.id for r in page.rows]
    # The day's count in the Timeline is the count of its list (it once said 2 and showed 6).
    assert days.get(key) == vault.count_memories(listed) == len(page.rows) >= 1


# --- 6. time travel on imported history ---------------------------------------------------------

@pytest.fixture
def moved(vault: Vault) -> dict[str, int]:
    """Maya lived in Lisbon (said in January), moved to Porto (said in March); all of it
    imported and consolidated in June (T0)."""
    vault.import_turns([
        turn("jan", "Maya", "I live in Lisbon, near the river.", parse_iso(
            "2026-01-10T10:00:00Z"), "j:1"),
        turn("mar", "Maya", "I moved to Porto last week!", parse_iso("2026-03-10T10:00:00Z"),
             "m:1")])
    vault.consolidate()
    facts = dict(inside(vault).db.read(lambda c: c.execute(
        "SELECT text, id FROM memory WHERE store = 'semantic'").fetchall()))
    assert {"Maya lives in Lisbon", "Maya lives in Porto"} <= set(facts)
    return {"lisbon": facts["Maya lives in Lisbon"], "porto": facts["Maya lives in Porto"],
            "jan": episode_of(vault, "j:1"), "mar": episode_of(vault, "m:1")}


FEB = parse_iso("2026-02-15T00:00:00Z")


def test_as_of_on_imported_history_finds_what_was_true_then(vault: Vault,
                                                            moved: dict[str, int]) -> None:
    assert status(vault, moved["lisbon"]) == "superseded"
    hits = ids(vault.recall("where does Maya live", touch=False, filters=Filters(as_of=FEB)))
    assert hits, "as of February finds nothing on imported history"
    assert moved["lisbon"] in hits
    assert moved["porto"] not in hits and moved["mar"] not in hits
    assert hits.index(moved["lisbon"]) == 0
    # Today: Porto, not Lisbon.
    now = ids(vault.recall("where does Maya live", touch=False))
    assert now[0] == moved["porto"] and moved["lisbon"] not in now


def test_known_at_is_what_kept_had_learned(vault: Vault, clock: FixedClock,
                                           moved: dict[str, int]) -> None:
    # Kept learned all of it at T0: in February it knew nothing.
    assert vault.recall("where does Maya live", touch=False,
                        filters=Filters(known_at=FEB)) == []
    learned = ids(vault.recall("where does Maya live", touch=False,
                               filters=Filters(known_at=T0)))
    assert moved["porto"] in learned and moved["lisbon"] not in learned
    # Both axes at once: what Kept knew today about February.
    both = ids(vault.recall("where does Maya live", touch=False,
                            filters=Filters(as_of=FEB, known_at=T0)))
    assert moved["porto"] not in both


def test_now_never_returns_what_happened_later(vault: Vault, moved: dict[str, int]) -> None:
    hits = ids(vault.recall("where does Maya live", now=FEB, touch=False))
    assert moved["mar"] not in hits and moved["porto"] not in hits
    assert moved["jan"] in hits
    ctx = vault.context("where does Maya live", now=FEB)
    assert moved["mar"] not in [i.id for i in ctx.items]


def test_context_as_of(vault: Vault, moved: dict[str, int]) -> None:
    ctx = vault.context("where does Maya live", filters=Filters(as_of=FEB))
    got = [i.id for i in ctx.items]
    assert moved["lisbon"] in got and moved["porto"] not in got


# --- migration 0016: what the old decay archived comes back -------------------------------------

def test_migration_0016_gives_back_what_decay_archived(
        vault_dir: Path, fast_kdf: Any, embedder: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A vault at schema 0015 where the old decay rule archived an imported history: the
    decay-archived memories are active again, what the person archived stays archived."""
    import storage.migrations as migrations
    from tests.app.conftest import PW, share_embedder
    share_embedder(monkeypatch, embedder)
    everything = migrations.migration_names
    monkeypatch.setattr(migrations, "migration_names",
                        # 0021 (routing) too: today's import writes each turn's routing;
                        # 0027 too: today's remember marks its vector pending (issue 28).
                        lambda: [n for n in everything()
                                 if n < "0016" or n[:4] in ("0021", "0027")])
    # Code of schema 0015 read an event's columns of then (0024 added its rating).
    import storage.repo as repo
    monkeypatch.setitem(repo.SIDE_COLUMNS, "episode", ("event_type", "actors", "outcome",
                                                       "details"))
    v = Vault.create(vault_dir, PW, kdf=fast_kdf, threaded=False, clock=FixedClock(T0),
                     use_chroma=False).vault
    eps = _import_old_history(v, 3)
    mine = remember(v, "Paid the water bill for the quarter", **neutral())
    again = remember(v, "Paid the gas bill for the quarter", **neutral())
    v.archive(again)
    v.restore(again)

    def old_decay(c: Any) -> None:  # what the old rule did: archived, logged by a run
        run = c.execute("INSERT INTO run (kind, started_at, status) VALUES "
                        "('consolidation', ?, 'done')", (T0,)).lastrowid
        for n, mid in enumerate([*eps, again]):
            c.execute("UPDATE memory SET status = 'archived' WHERE id = ?", (mid,))
            c.execute("INSERT INTO run_change (run_id, seq, kind, memory_id, payload) VALUES "
                      "(?, ?, 'status', ?, ?)", (run, n + 1, mid, json.dumps(
                          {"status": "active", "superseded_by": None, "valid_until": None})))
    inside(v).db.write_sync(old_decay)
    v.archive(mine)
    v.lock()
    monkeypatch.setattr(migrations, "migration_names", everything)
    monkeypatch.undo()  # today's code again, on the migrated vault
    share_embedder(monkeypatch, embedder)
    v = Vault.open(vault_dir, PW, threaded=False, clock=FixedClock(T0), use_chroma=False)
    try:
        assert {status(v, e) for e in eps} == {"active"}
        assert status(v, again) == "active"      # archived by decay after a restore
        assert status(v, mine) == "archived"     # the person's own archive is theirs
    finally:
        v.lock()
