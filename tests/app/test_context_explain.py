"""Explain (DESIGN 6.6) and the working-memory context (DESIGN 6.4) on a real vault."""

from __future__ import annotations

import pytest

from app.api import LinkView
from app.clock import FixedClock, parse_iso
from app.domain.memory import Store
from app.errors import NotFound
from app.facade import Vault
from app.services.context import SECTIONS
from app.services.text import approx_tokens
from tests.app.conftest import DAY, HOUR, T0, neutral, remember, row, turn
from tests.inside import inside

BREAKDOWN_KEYS = {"lexical", "dense", "relevance", "session", "person", "boost", "composite",
                  "lift",
                  "final", "importance",
                  "recency", "frequency", "emotional", "social"}


def _access_count(vault: Vault, mid: int) -> int:
    return int(row(vault, "SELECT access_count FROM memory WHERE id = ?", mid)[0])


# --- explain ------------------------------------------------------------------------------------

def test_explain_breakdown_matches_recall_and_does_not_touch(vault: Vault) -> None:
    mid = remember(vault, "The plumber fixed the kitchen sink leak", **neutral())
    remember(vault, "Bought tulips for the hallway", **neutral())
    q = "who fixed the sink"
    hit = next(h for h in vault.recall(q, touch=False) if h.id == mid)
    e = vault.explain(mid, q)
    assert e.id == mid and e.store == "episodic" and e.status == "active"
    assert e.text == "The plumber fixed the kitchen sink leak"
    assert e.breakdown is not None and set(e.breakdown) == BREAKDOWN_KEYS
    assert e.breakdown["final"] == pytest.approx(hit.score, abs=1e-6)
    assert e.breakdown == pytest.approx(hit.breakdown)
    assert e.scores["importance"] == 0.5 and e.scores["access_count"] == 0.0
    assert {"importance", "recency", "frequency", "emotional", "social", "composite",
            "confidence", "access_count"} <= set(e.scores)
    assert _access_count(vault, mid) == 0           # explaining is not an access
    assert vault.explain(mid).breakdown is None     # no query, no breakdown


def test_explain_unknown_id_and_not_retrieved(vault: Vault) -> None:
    mid = remember(vault, "Renewed the car insurance with a new provider", **neutral())
    with pytest.raises(NotFound):
        vault.explain(mid + 1000)
    # A three-day-old turn is outside the short-term window: recall never returns it, and
    # the breakdown says so instead of inventing one.
    vault.import_turns([turn("old", "me", "Renewed the car insurance", T0 - 3 * DAY, "old:1",
                             store=Store.SHORT_TERM)])
    old = int(row(vault, "SELECT id FROM memory WHERE ref = 'old:1'")[0])
    e = vault.explain(old, "car insurance")
    assert e.breakdown == {"final": 0.0, "note_not_in_top_200": 1.0}
    assert vault.explain(mid, "car insurance").breakdown["final"] > 0


def test_explain_an_episode_whose_turn_shares_its_refs(vault: Vault) -> None:
    """Recall keeps one of a turn and its episode (same refs). Explain must still score the
    very memory asked about, even when the turn (archived or superseded, which explain
    includes) would win the dedupe."""
    vault.import_turns([turn("s", "Sam", "I live in Lisbon with my partner Ana", T0 - HOUR,
                             "s:1")])
    short = int(row(vault, "SELECT id FROM memory WHERE ref = 's:1' AND store = 'short_term'")[0])
    episode = int(row(vault, "SELECT id FROM memory WHERE store = 'episodic'")[0])
    vault.archive(short)  # what decay does to old turns
    q = "where does Sam live"
    hit = next(h for h in vault.recall(q, touch=False) if h.id == episode)
    e = vault.explain(episode, q)
    assert e.breakdown is not None and "note_not_in_top_200" not in e.breakdown
    assert e.breakdown["final"] == pytest.approx(hit.score, abs=1e-6)
    assert vault.explain(short, q).breakdown["final"] > 0  # the turn has its own score


def test_explain_sources_chain_and_links(vault: Vault) -> None:
    rep = vault.import_turns([turn("c", "Maya", "I started learning the cello last week",
                                   T0 - HOUR, "c:1")]).value
    episode = rep.ids[0]
    source = int(row(vault, "SELECT id FROM memory WHERE store='short_term' AND ref='c:1'")[0])
    fact = remember(vault, "Maya plays the cello", Store.SEMANTIC, derived_from=(episode,),
                    **neutral())
    e = vault.explain(fact, "does Maya play an instrument")
    assert sorted(s.id for s in e.sources) == sorted([episode, source])
    by = {s.id: s for s in e.sources}
    assert by[source].store == "short_term" and by[source].ref == "c:1"
    assert by[source].speaker == "Maya"
    assert by[source].text == "I started learning the cello last week"
    assert by[episode].store == "episodic"
    assert LinkView(fact, episode, "DERIVED_FROM", 1.0) in e.links
    # The turn itself has no sources.
    assert vault.explain(source).sources == ()


def test_explain_tier_follows_time_and_accesses(vault: Vault, clock: FixedClock) -> None:
    mid = remember(vault, "Signed the lease for the flat", occurred_at=T0, **neutral())
    assert vault.explain(mid).tier == "hot"
    assert vault.explain(mid, now=T0 + 20 * DAY).tier == "warm"
    assert vault.explain(mid, now=T0 + 40 * DAY).tier == "cold"
    inside(vault).db.write_sync(lambda c: c.execute(
        "UPDATE memory SET access_count = 25 WHERE id = ?", (mid,)))
    assert vault.explain(mid, now=T0 + 40 * DAY).tier == "warm"    # > 20 accesses: 60 d
    assert vault.explain(mid, now=T0 + 12 * DAY).tier == "hot"     # > 20 accesses: 14 d
    # A recent access makes it hot again.
    clock.advance(40 * DAY)
    vault.recall("lease for the flat")
    assert vault.explain(mid).tier == "hot"


# --- context ---------------------------------------------------------------------------------------

def _seed_household(vault: Vault) -> dict[str, int]:
    out: dict[str, int] = {
        "proc": remember(vault, "To book a dentist appointment, call the clinic before 10am",
                         Store.PROCEDURAL, **neutral()),
        "fact": remember(vault, "My dentist is Dr Okafor at the Elm Street clinic",
                         Store.SEMANTIC, **neutral()),
    }
    dated = [("dentist_may", "Had a dentist check-up and cleaning at the Elm Street clinic",
              "2026-05-20T09:00:00Z"),
             ("dentist_jan", "Dentist filled a small cavity, my jaw was sore all day",
              "2026-01-12T15:00:00Z"),
             ("dentist_sep", "First visit to the new dentist, Dr Okafor",
              "2025-09-03T11:00:00Z"),
             ("dentist_mar", "Dentist appointment cancelled because of the snow",
              "2026-03-02T08:00:00Z")]
    for key, text, when in dated:
        out[key] = remember(vault, text, occurred_at=parse_iso(when), **neutral())
    vault.import_turns([turn("now", "me", "Remind me to floss after the dentist visit",
                             T0 - HOUR, "now:1", store=Store.SHORT_TERM)])
    out["turn"] = int(row(vault, "SELECT id FROM memory WHERE ref = 'now:1'")[0])
    return out


def test_context_items_are_real_and_in_their_sections(vault: Vault) -> None:
    m = _seed_household(vault)
    ctx = vault.context("dentist appointment")
    assert ctx.used <= ctx.budget == 4000
    assert ctx.used == sum(i.tokens for i in ctx.items)
    section = {i.id: i.section for i in ctx.items}
    assert section[m["proc"]] == "procedures"
    assert section[m["fact"]] == "facts"
    assert section[m["dentist_may"]] == "timeline"
    assert section[m["turn"]] == "recent"
    assert len(section) == len(ctx.items)                  # no item twice
    for item in ctx.items:
        assert item.section in SECTIONS
        mem = vault.get(item.id)                           # every id is a real memory
        assert mem.text in item.text
        assert item.tokens == approx_tokens(item.text) + 4
    # sections come out in priority order
    order = [SECTIONS.index(i.section) for i in ctx.items]
    assert order == sorted(order)
    text = ctx.render()
    assert f"[{m['proc']}]" in text and "## Timeline" in text


def test_context_respects_small_budgets(vault: Vault) -> None:
    _seed_household(vault)
    full = vault.context("dentist appointment")
    assert len(full.items) >= 6
    for budget in (0, 15, 40, 80):
        ctx = vault.context("dentist appointment", budget=budget)
        assert ctx.budget == budget
        assert ctx.used == sum(i.tokens for i in ctx.items) <= budget
        assert len(ctx.items) < len(full.items)
        assert {i.id for i in ctx.items} <= {i.id for i in full.items}
    assert vault.context("dentist appointment", budget=0).items == ()


def test_temporal_query_puts_the_timeline_in_order(vault: Vault) -> None:
    m = _seed_household(vault)
    q = "when did I go to the dentist"
    hits = vault.recall(q, k=40, touch=False)
    episodes = [h for h in hits if h.store == "episodic"]
    # Precondition: relevance order is not already chronological.
    assert [h.occurred_at for h in episodes] != sorted(h.occurred_at for h in episodes)
    ctx = vault.context(q)
    timeline = [i.id for i in ctx.items if i.section == "timeline"]
    assert set(timeline) == {m["dentist_may"], m["dentist_jan"], m["dentist_sep"],
                             m["dentist_mar"]}
    assert timeline == [m["dentist_sep"], m["dentist_jan"], m["dentist_mar"], m["dentist_may"]]
    first = next(i for i in ctx.items if i.id == m["dentist_sep"])
    assert first.text.startswith("(2025-09-03) ")


def test_context_touches_what_it_used(vault: Vault) -> None:
    m = _seed_household(vault)
    vault.context("dentist appointment")
    assert _access_count(vault, m["fact"]) == 1


def test_context_touches_only_what_fits_the_budget(vault: Vault) -> None:
    """DESIGN 6.5: touch what was returned. Memories recalled as candidates but left out of
    the context (over budget) were not returned to anyone and must not be reinforced."""
    m = _seed_household(vault)
    ctx = vault.context("dentist appointment", budget=40)
    used = {i.id for i in ctx.items}
    left_out = set(m.values()) - used
    assert used and left_out
    assert {mid: _access_count(vault, mid) for mid in left_out} == dict.fromkeys(left_out, 0)
    assert all(_access_count(vault, mid) == 1 for mid in used)
