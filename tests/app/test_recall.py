"""Recall (DESIGN.md section 6) on small hand-made vaults: store priorities, time filters and
time travel, archive, agent scope, the short-term window, dedupe and refs, query time ranges,
the speaker boost. Everything real: SQLCipher file, ONNX embedder, exact vector search."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from app.clock import FixedClock, parse_iso
from app.domain.memory import MemoryId, Store
from app.facade import Vault
from app.services.recall import (
    TUNING,
    Filters,
    Hit,
    RecallService,
    RecallTuning,
    parse_time_range,
)
from tests.app.conftest import DAY, HOUR, T0, ids, neutral, remember, row, turn
from tests.inside import inside


def service(vault: Vault, tuning: RecallTuning) -> RecallService:
    return RecallService(inside(vault).db, inside(vault).index, inside(vault).embedder, tuning,
                         rows=inside(vault).recall.rows)


def by_id(hits: list[Hit]) -> dict[int, Hit]:
    return {int(h.id): h for h in hits}


def ts(text: str) -> float:
    return parse_iso(text)


def turn_id(vault: Vault, ref: str) -> int:
    return int(row(vault, "SELECT id FROM memory WHERE store = 'short_term' AND ref = ?", ref)[0])


# --- store priorities ------------------------------------------------------------------------

def test_store_weight_decides_between_a_fact_and_an_identical_episode(vault: Vault) -> None:
    text = "My sister Clara lives in Lisbon near the river"
    ep = remember(vault, text, Store.EPISODIC, **neutral())
    fact = remember(vault, text, Store.SEMANTIC, **neutral())

    hits = vault.recall("where does Clara live", touch=False)
    h = by_id(hits)
    assert ids(hits)[:2] == [fact, ep]
    # Same text, same score inputs: only the store weight differs.
    assert h[fact].breakdown["relevance"] == pytest.approx(h[ep].breakdown["relevance"])
    assert h[fact].breakdown["composite"] == pytest.approx(h[ep].breakdown["composite"])
    assert h[fact].breakdown["boost"] == pytest.approx(TUNING.store_weight["semantic"])
    assert h[ep].breakdown["boost"] == pytest.approx(TUNING.store_weight["episodic"])

    # Changing RecallTuning.store_weight flips the order.
    flipped = replace(TUNING, store_weight={**TUNING.store_weight, "episodic": 1.2,
                                            "semantic": 1.0})
    hits2 = service(vault, flipped).recall("where does Clara live", now=T0)
    assert ids(hits2)[:2] == [ep, fact]
    assert by_id(hits2)[ep].breakdown["boost"] == pytest.approx(1.2)


def test_final_score_is_the_documented_blend(vault: Vault) -> None:
    remember(vault, "The boiler was serviced by Mr Patel", **neutral())
    remember(vault, "Bought a new kettle", Store.EPISODIC, **neutral(importance=0.9))
    for h in vault.recall("boiler service", touch=False):
        b = h.breakdown
        assert b["relevance"] == pytest.approx(TUNING.w_lexical * b["lexical"]
                                               + TUNING.w_dense * b["dense"])
        assert b["final"] == pytest.approx(TUNING.w_relevance * b["relevance"] * b["boost"]
                                           + TUNING.w_composite * b["composite"])
        assert h.score == pytest.approx(b["final"], abs=1e-6)
    scores = [h.score for h in vault.recall("boiler service", touch=False)]
    assert scores == sorted(scores, reverse=True)


def test_procedural_memory_wins_how_do_i_queries(vault: Vault) -> None:
    text = "Repot the orchids with bark mix and water them on Sunday"
    # The episode is slightly stronger, so it wins a plain query ...
    ep = remember(vault, text, Store.EPISODIC, **neutral(importance=0.7))
    proc = remember(vault, text, Store.PROCEDURAL, **neutral(importance=0.5))
    plain = vault.recall("repot the orchids with bark", touch=False)
    assert ids(plain)[:2] == [ep, proc]
    assert by_id(plain)[proc].breakdown["boost"] == pytest.approx(
        TUNING.store_weight["procedural"])
    # ... and a "how do I" query gives procedures the 002 priority and puts it first.
    how = vault.recall("how do I repot the orchids with bark", touch=False)
    assert ids(how)[0] == proc
    assert by_id(how)[proc].breakdown["boost"] == pytest.approx(
        TUNING.store_weight["procedural"] * 1.3)
    assert by_id(how)[ep].breakdown["boost"] == pytest.approx(TUNING.store_weight["episodic"])


# --- time filters and time travel --------------------------------------------------------------

def test_since_until_filter_on_occurred_at(vault: Vault) -> None:
    days = [40, 30, 20, 10, 1]
    made = {d: remember(vault, f"Walked the dog in the park ({d} days back)",
                        occurred_at=T0 - d * DAY, **neutral()) for d in days}
    everything = vault.recall("walked the dog in the park", touch=False)
    assert set(ids(everything)) == set(made.values())
    f = Filters(since=T0 - 30 * DAY, until=T0 - 10 * DAY)  # since inclusive, until exclusive
    hits = vault.recall("walked the dog in the park", filters=f, touch=False)
    assert set(ids(hits)) == {made[30], made[20]}
    only_since = vault.recall("walked the dog", filters=Filters(since=T0 - 10 * DAY),
                              touch=False)
    assert set(ids(only_since)) == {made[10], made[1]}


def test_known_at_hides_what_was_learned_later(vault: Vault, clock: FixedClock) -> None:
    early = remember(vault, "Planted the apple tree in the back garden", **neutral())
    clock.advance(10 * DAY)
    late = remember(vault, "Planted the pear tree in the back garden", **neutral())
    q = "planted a tree in the garden"
    assert set(ids(vault.recall(q, touch=False))) == {early, late}
    then = vault.recall(q, filters=Filters(known_at=T0 + 5 * DAY), touch=False)
    assert ids(then) == [early]
    assert ids(vault.recall(q, filters=Filters(known_at=T0 - DAY), touch=False)) == []
    # Learned exactly at known_at counts as known.
    assert set(ids(vault.recall(q, filters=Filters(known_at=T0 + 10 * DAY),
                                touch=False))) == {early, late}


def _corrected_phone(vault: Vault, clock: FixedClock) -> tuple[MemoryId, MemoryId]:
    old = remember(vault, "Bob's phone number is 555-0101", Store.SEMANTIC, **neutral())
    clock.advance(5 * DAY)
    new = vault.correct(old, "Bob's phone number is 555-0199").value
    assert vault.get(old).status.value == "superseded"
    assert vault.get(old).superseded_by == new
    return old, new


def test_superseded_hidden_by_default_visible_before_supersession(
        vault: Vault, clock: FixedClock) -> None:
    old, new = _corrected_phone(vault, clock)
    q = "what is Bob's phone number"
    now_hits = ids(vault.recall(q, touch=False))
    assert new in now_hits and old not in now_hits
    both = ids(vault.recall(q, filters=Filters(include_superseded=True), touch=False))
    assert old in both and new in both
    # What Kept knew two days in: the old number (the correction came on day five).
    before = ids(vault.recall(q, filters=Filters(known_at=T0 + 2 * DAY), touch=False))
    assert old in before and new not in before
    # What was said and true then: the corrected number (the old one was a mistake).
    said = ids(vault.recall(q, filters=Filters(as_of=T0 + 2 * DAY), touch=False))
    assert new in said and old not in said


def test_as_of_after_supersession_shows_only_the_new_version(
        vault: Vault, clock: FixedClock) -> None:
    """What was believed one day after the correction: the new number, not the old one."""
    old, new = _corrected_phone(vault, clock)
    for f in (Filters(known_at=T0 + 6 * DAY), Filters(as_of=T0 + 6 * DAY)):
        after = ids(vault.recall("what is Bob's phone number", filters=f, touch=False))
        assert new in after
        assert old not in after, f"{f} after the correction returns the superseded version"


def test_validity_window_under_as_of(vault: Vault) -> None:
    switch = T0 + 30 * DAY
    acme = remember(vault, "Dana works at Acme as an engineer", Store.SEMANTIC,
                    valid_until=switch, **neutral())
    globex = remember(vault, "Dana works at Globex as an engineer", Store.SEMANTIC,
                      valid_from=switch, **neutral())
    q = "where does Dana work"

    def at(t: float) -> set[int]:
        return set(ids(vault.recall(q, filters=Filters(as_of=t), touch=False)))
    assert at(T0 + 10 * DAY) == {acme}
    assert at(switch) == {globex}          # valid_until is exclusive, valid_from inclusive
    assert at(T0 + 40 * DAY) == {globex}


# --- archive, agents ---------------------------------------------------------------------------

def test_archived_hidden_by_default_and_shown_on_request(vault: Vault) -> None:
    keep = remember(vault, "Paid the council tax for the year", **neutral())
    gone = remember(vault, "Paid the water bill for the quarter", **neutral())
    vault.archive(gone)
    q = "paid the bill"
    assert ids(vault.recall(q, touch=False)) == [keep]
    shown = ids(vault.recall(q, filters=Filters(include_archived=True), touch=False))
    assert set(shown) == {keep, gone}
    vault.restore(gone)
    assert set(ids(vault.recall(q, touch=False))) == {keep, gone}


def test_agent_reads_global_and_its_own(vault: Vault) -> None:
    g = remember(vault, "The favourite colour is green", agent="global", **neutral())
    a = remember(vault, "The favourite colour is blue", agent="a", **neutral())
    b = remember(vault, "The favourite colour is red", agent="b", **neutral())
    q = "favourite colour"
    assert set(ids(vault.recall(q, filters=Filters(agent="a"), touch=False))) == {g, a}
    assert set(ids(vault.recall(q, filters=Filters(agent="b"), touch=False))) == {g, b}
    assert set(ids(vault.recall(q, filters=Filters(agent="c"), touch=False))) == {g}
    assert set(ids(vault.recall(q, touch=False))) == {g, a, b}


# --- short-term window, dedupe, refs ------------------------------------------------------------

def test_short_term_only_searched_within_a_day_of_now(vault: Vault) -> None:
    ages = {"s2h": 2 * HOUR, "s1d": DAY, "s25h": 25 * HOUR, "s3d": 3 * DAY}
    vault.import_turns([turn("chat", "me", f"We cooked lasagna together ({ref})", T0 - age, ref,
                             store=Store.SHORT_TERM) for ref, age in ages.items()])
    tid = {ref: turn_id(vault, ref) for ref in ages}
    only_stm = Filters(stores=("short_term",))
    hits = vault.recall("cooked lasagna", filters=only_stm, touch=False)
    assert set(ids(hits)) == {tid["s2h"], tid["s1d"]}
    assert all(h.store == "short_term" for h in hits)
    # Seen from two days later, none of them is a current turn any more.
    later = vault.recall("cooked lasagna", now=T0 + 2 * DAY, filters=only_stm, touch=False)
    assert ids(later) == []
    # Seen from three days earlier, the 3-day-old turn is a current one.
    back = vault.recall("cooked lasagna", now=T0 - 3 * DAY + HOUR, filters=only_stm,
                        touch=False)
    assert tid["s3d"] in ids(back)


def test_turn_and_its_episode_never_both_returned(vault: Vault) -> None:
    texts = ["The garden needs more compost", "Garden fence is broken again",
             "We should plant roses in the garden"]
    rep = vault.import_turns([turn("s1", "Maya", t, T0 - (n + 1) * HOUR, f"s1:{n}")
                              for n, t in enumerate(texts)]).value
    assert rep.added == 3
    # Both copies are real candidates on their own ...
    stm = vault.recall("garden", filters=Filters(stores=("short_term",)), touch=False)
    eps = vault.recall("garden", filters=Filters(stores=("episodic",)), touch=False)
    assert len(stm) == 3 and len(eps) == 3
    # ... but together only one copy of each turn comes back.
    hits = vault.recall("garden", touch=False)
    assert len(hits) == 3
    assert sorted(h.refs for h in hits) == [("s1:0",), ("s1:1",), ("s1:2",)]


def test_refs_of_derived_memories_include_their_sources(vault: Vault) -> None:
    rep = vault.import_turns([turn("chat", "Maya", "I moved to Berlin in 2020", T0 - HOUR,
                                   "chat:7")]).value
    episode = rep.ids[0]
    source = turn_id(vault, "chat:7")
    assert vault.get(episode).store is Store.EPISODIC
    assert vault.refs([source, episode]) == {source: ["chat:7"], episode: ["chat:7"]}
    fact = remember(vault, "Maya lives in Berlin", Store.SEMANTIC, derived_from=(episode,),
                    **neutral())
    noted = remember(vault, "Maya has lived in Berlin since 2020", Store.SEMANTIC,
                     ref="note:1", derived_from=(fact,), **neutral())
    refs = vault.refs([fact, noted])
    assert refs[fact] == ["chat:7"]
    assert refs[noted] == ["note:1", "chat:7"]   # its own first, then transitively
    hit = by_id(vault.recall("Maya has lived in Berlin since 2020", touch=False))[noted]
    assert hit.refs == ("note:1", "chat:7")


# --- query time ranges, speakers -----------------------------------------------------------------

def test_time_range_in_query_boosts_memories_inside_it(vault: Vault) -> None:
    now = ts("2026-09-01T12:00:00Z")
    text = "Went kayaking on the lake with friends"
    may = remember(vault, text, occurred_at=ts("2026-05-10T10:00:00Z"), **neutral())
    aug = remember(vault, text, occurred_at=ts("2026-08-20T10:00:00Z"), **neutral())
    plain = vault.recall("kayaking on the lake", now=now, touch=False)
    assert ids(plain) == [aug, may]          # same text: the more recent one wins
    dated = vault.recall("kayaking on the lake in May 2026", now=now, touch=False)
    assert ids(dated) == [may, aug]
    h = by_id(dated)
    assert h[may].breakdown["boost"] == pytest.approx(TUNING.time_range_boost)
    assert h[aug].breakdown["boost"] == pytest.approx(1.0)
    # The boost multiplies relevance: without it the May memory scores exactly that less.
    flat = by_id(service(vault, replace(TUNING, time_range_boost=1.0)).recall(
        "kayaking on the lake in May 2026", now=now))[may].breakdown
    rel_part = h[may].breakdown["final"] - TUNING.w_composite * h[may].breakdown["composite"]
    flat_part = flat["final"] - TUNING.w_composite * flat["composite"]
    assert rel_part == pytest.approx(flat_part * TUNING.time_range_boost)


def test_speaker_boost_for_the_named_person(vault: Vault) -> None:
    text = "We should plant tomatoes by the south wall"
    vault.import_turns([turn("g", "Anna", text, T0 - HOUR, "g:1"),
                        turn("g", "Ben", text, T0 - HOUR, "g:2")])
    hits = vault.recall("what did Anna say about planting tomatoes", touch=False)
    assert hits[0].speaker == "Anna"
    h = {x.speaker: x for x in hits}
    # The person boost is added to the relevance (tuned on LoCoMo: additive +.10).
    assert h["Anna"].breakdown["person"] == pytest.approx(TUNING.speaker_boost)
    assert h["Ben"].breakdown["person"] == 0.0
    # Ben named instead: Ben first.
    assert vault.recall("what did Ben say about planting tomatoes", touch=False)[0].speaker \
        == "Ben"
    # The boost is a tuning knob: at 0 the named speaker gets nothing extra.
    flat = service(vault, replace(TUNING, speaker_boost=0.0)).recall(
        "what did Anna say about planting tomatoes", now=T0)
    anna = next(x for x in flat if x.speaker == "Anna")
    assert anna.breakdown["person"] == 0.0


def test_speaker_boost_also_for_memories_that_mention_the_person(vault: Vault) -> None:
    """RecallTuning.speaker_boost: memories they said, or that mention them, get it."""
    vault.import_turns([turn("g", "Anna", "The seeds arrived this morning", T0 - 2 * HOUR,
                             "g:1"),
                        turn("g", "Ben", "I gave Anna the tomato seeds", T0 - HOUR, "g:2")])
    hits = vault.recall("Anna tomato seeds", touch=False)
    mention = next(h for h in hits if h.speaker == "Ben")
    assert mention.breakdown["person"] == pytest.approx(TUNING.speaker_boost)


# --- parse_time_range (pure) --------------------------------------------------------------------

def _utc(y: int, m: int, d: int) -> float:
    return datetime(y, m, d, tzinfo=UTC).timestamp()


NOW = ts("2026-06-10T15:00:00Z")  # a Wednesday


@pytest.mark.parametrize(("query", "expected"), [
    ("what did I do in May 2026", (_utc(2026, 5, 1), _utc(2026, 6, 1))),
    ("trips in December 2025", (_utc(2025, 12, 1), _utc(2026, 1, 1))),
    ("what happened in 2024", (_utc(2024, 1, 1), _utc(2025, 1, 1))),
    ("what did I eat yesterday", (_utc(2026, 6, 9), _utc(2026, 6, 10))),
    ("plans for today", (_utc(2026, 6, 10), _utc(2026, 6, 11))),
    ("who did I meet last week", (_utc(2026, 6, 1), _utc(2026, 6, 8))),
    ("what did I buy last month", (_utc(2026, 5, 1), _utc(2026, 6, 1))),
    ("where was I last year", (_utc(2025, 1, 1), _utc(2026, 1, 1))),
    ("what did I do in may", (_utc(2026, 5, 1), _utc(2026, 6, 1))),
    ("who called me", None),
])
def test_parse_time_range(query: str, expected: tuple[float, float] | None) -> None:
    assert parse_time_range(query, NOW) == expected


def test_parse_time_range_days_ago_contains_that_day() -> None:
    got = parse_time_range("what did I cook 3 days ago", NOW)
    assert got is not None
    start, end = got
    assert start <= _utc(2026, 6, 7) < end
    assert end <= _utc(2026, 6, 10)   # not today


def test_month_without_year_means_the_latest_past_one() -> None:
    """Asked in February 2026, "in November" is November 2025, not a month still to come."""
    feb = ts("2026-02-15T12:00:00Z")
    assert parse_time_range("what did I do in November", feb) == (_utc(2025, 11, 1),
                                                                  _utc(2025, 12, 1))


def test_modal_may_is_not_a_month() -> None:
    assert parse_time_range("Where may I have left my keys?", NOW) is None


def test_recall_reads_candidates_by_name(vault: Vault, clock: FixedClock) -> None:
    """Each field of the rows recall ranks by (``recall_meta``, issue 13: no ``meta[i][16]``)
    holds the column it is named after, and a correction's time reaches ``superseded_at``."""
    rep = vault.import_turns([turn("s1", "Ana", "Ana adopted a grey cat", T0 - DAY, "s1:1"),
                              turn("s1", "Ben", "Ben bought a red bike", T0 - HOUR, "s1:2")])
    first, second = rep.value.ids
    note = remember(vault, "Dentist on Friday", Store.SEMANTIC, agent="coach",
                    context="health", valid_from=T0 - 2 * DAY, **neutral(importance=0.7))
    clock.advance(HOUR)
    newer = vault.correct(note, "Dentist on Thursday").value
    rows = inside(vault).recall.rows
    meta = inside(vault).db.read(lambda c: rows.recall_meta(c, [first, second, note, newer]))
    a, b, n = meta[first], meta[second], meta[note]
    assert (a.store, a.status, a.speaker, a.session) == ("episodic", "active", "Ana", "s1")
    assert (a.occurred_at, b.occurred_at) == (T0 - DAY, T0 - HOUR)
    assert (a.seq, b.seq, b.speaker) == (0, 1, "Ben")
    assert (n.store, n.status, n.agent, n.context) == ("semantic", "superseded", "coach", "health")
    assert (n.importance, n.valid_from, n.valid_until) == (0.7, T0 - 2 * DAY, None)
    assert (n.created_at, n.superseded_at, meta[newer].user_validated) == (T0, T0 + HOUR, 1)
    assert a.superseded_at is None and not a.user_validated
    state = inside(vault).db.read(lambda c: rows.reinforcement_state(c, [note]))[note]
    assert (state.importance, state.access_count, state.last_accessed_at) == (0.7, 0, None)
