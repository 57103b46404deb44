"""Scores as the references define them (issue 27 item 6) on a real vault: 002's scheduled
boosters, working -> episodic promotion with PROMOTED_FROM, recency computed at read time in
explain, 003's confidence factors that move, per-store quotas in the context briefing."""

from __future__ import annotations

import pytest

from app import policy
from app.domain.memory import LinkKind, Store
from app.facade import Vault
from app.services import scoring
from app.services.context import fill_with_quotas
from tests.app.conftest import DAY, HOUR, T0, neutral, remember, row, turn
from tests.inside import inside

# --- the pure rules ------------------------------------------------------------------------------


def test_booster_bands_follow_002() -> None:
    # > .8 daily, .6-.8 every 3 days, .4-.6 weekly, < .4 never.
    assert scoring.booster_interval_days(0.81) == 1.0
    assert scoring.booster_interval_days(0.8) == 3.0
    assert scoring.booster_interval_days(0.6) == 3.0
    assert scoring.booster_interval_days(0.59) == 7.0
    assert scoring.booster_interval_days(0.4) == 7.0
    assert scoring.booster_interval_days(0.39) is None
    assert not scoring.booster_due(0.9, None, since=T0, now=T0 + 23 * HOUR)
    assert scoring.booster_due(0.9, None, since=T0, now=T0 + DAY)
    assert not scoring.booster_due(0.5, T0, since=T0 - 99 * DAY, now=T0 + 6 * DAY)
    assert scoring.booster_due(0.5, T0, since=T0 - 99 * DAY, now=T0 + 7 * DAY)
    assert not scoring.booster_due(0.3, None, since=T0 - 99 * DAY, now=T0)


def test_confidence_factors_move_by_their_weights() -> None:
    assert scoring.user_validation(False, False) is None
    assert scoring.user_validation(True, False) == 1.0
    assert scoring.user_validation(False, True) == 0.0
    assert scoring.usage_success(0, False) is None
    uses = [scoring.usage_success(n, False) for n in (1, 2, 3)]
    assert uses == sorted(uses) and all(u is not None and 0.5 < u < 1.0 for u in uses)
    assert scoring.usage_success(3, True) == policy.USAGE_CONTRADICTED
    # From unknown (.5) to used once: only the usage weight times the difference moves.
    used = scoring.usage_success(1, False)
    assert used is not None
    moved = scoring.moved_confidence(0.5, None, None, None, used)
    assert moved == pytest.approx(0.5 + policy.CONF_USAGE * (used - policy.CONF_UNKNOWN),
                                  abs=1e-4)
    # Moving back to what it was computed with gives the stored value again.
    assert scoring.moved_confidence(moved, None, used, None, None) == pytest.approx(0.5, abs=1e-4)
    assert scoring.moved_confidence(0.95, None, None, 1.0, 1.0) == 1.0     # capped


def test_quotas_share_a_tight_budget_and_give_away_what_nobody_claims() -> None:
    facts = [(10, "semantic")] * 10
    episodes = [(10, "episodic")] * 10
    budget = 90
    chosen = fill_with_quotas(facts + episodes, budget)
    fact_tokens = sum(10 for n in chosen if n < 10)
    episode_tokens = sum(10 for n in chosen if n >= 10)
    # Facts come first in priority but take at most their share (half, between two stores)
    # while episodes wait; the budget is filled, never left idle.
    assert fact_tokens + episode_tokens == budget
    assert 40 <= fact_tokens <= 50 and 40 <= episode_tokens <= 50
    # Procedures count with facts (one quota), entity summaries have their own.
    mixed = fill_with_quotas([(10, "procedural")] * 5 + [(10, "semantic")] * 5
                             + [(10, "people")] * 5, 60)
    assert len([n for n in mixed if n >= 10]) >= 1
    # Alone, a store may use the whole budget (nobody else claims it).
    alone = fill_with_quotas(facts, 100)
    assert len(alone) == 10


# --- on a real vault -----------------------------------------------------------------------------


def test_explain_computes_recency_at_read_time(vault: Vault) -> None:
    mid = remember(vault, "Repainted the garden fence dark green", **neutral())
    stored = row(vault, "SELECT recency, decay_class FROM memory WHERE id = ?", mid)
    later = T0 + 10 * DAY
    e = vault.explain(mid, now=later)
    expected = scoring.recency(str(stored[1]), (later - T0) / policy.HOUR)
    assert e.scores["recency"] == pytest.approx(expected)
    assert e.scores["recency"] < stored[0]
    assert e.scores["composite"] == pytest.approx(scoring.composite(
        0.5, expected, e.scores["frequency"], 0.0, 0.0))
    # Reading it moves the reference: recency is 1 again at the moment it was used.
    vault.recall("garden fence", now=later)
    assert vault.explain(mid, now=later).scores["recency"] == pytest.approx(1.0)
    # Nothing was written by explaining.
    assert row(vault, "SELECT recency FROM memory WHERE id = ?", mid)[0] == stored[0]


def test_scheduled_booster_raises_importance_on_its_schedule_and_undoes(vault: Vault) -> None:
    strong = remember(vault, "Signed the mortgage for the flat on Elm Street",
                      importance=0.9, emotional=0.9, social=0.9)
    weak = remember(vault, "Saw a pigeon", importance=0.1, emotional=0.0, social=0.0)
    first = vault.consolidate(steps=("decay", "scores"), now=T0 + 3 * DAY).value
    comp = float(row(vault, "SELECT composite FROM memory WHERE id = ?", strong)[0])
    interval = scoring.booster_interval_days(comp)
    assert interval is not None and interval <= 3.0, comp  # due three days after it was learned
    assert first.counts["boosted"] >= 1
    imp, boosted_at = row(vault, "SELECT importance, boosted_at FROM memory WHERE id = ?", strong)
    assert imp == pytest.approx(min(1.0, 0.9 * policy.BOOSTER_FACTOR))
    assert boosted_at == T0 + 3 * DAY
    assert row(vault, "SELECT importance, boosted_at FROM memory WHERE id = ?", weak) == (0.1, None)
    # Not again before its interval has passed.
    again = vault.consolidate(steps=("scores",), now=T0 + 3 * DAY + HOUR).value
    assert again.counts.get("boosted", 0) == 0
    vault.undo_run(first.run_id)
    assert row(vault, "SELECT importance, boosted_at FROM memory WHERE id = ?", strong) == (
        0.9, None)


def test_a_used_short_term_turn_is_promoted_with_promoted_from(vault: Vault) -> None:
    vault.import_turns([
        turn("s1", "Ana", "The spare key is under the blue flowerpot", T0 - HOUR, "s1:1",
             store=Store.SHORT_TERM),
        turn("s1", "Ana", "Lunch was a tuna sandwich", T0 - HOUR, "s1:2",
             store=Store.SHORT_TERM),
        turn("s1", "Ana", "The garage code changed to 4411", T0 - HOUR, "s1:3")])
    used = int(row(vault, "SELECT id FROM memory WHERE ref = 's1:1' AND store = 'short_term'")[0])
    unused = int(row(vault, "SELECT id FROM memory WHERE ref = 's1:2'")[0])
    hits = vault.recall("where is the spare key", k=1)
    assert [h.id for h in hits] == [used]
    # A used turn that has its episode already (imported as episodic) is not promoted again.
    inside(vault).db.write_sync(lambda c: c.execute(
        "UPDATE memory SET access_count = 3 WHERE ref = 's1:3' AND store = 'short_term'"))
    report = vault.consolidate(steps=("scores",)).value
    assert report.counts["promoted"] == 1
    new = int(row(vault, "SELECT src FROM link WHERE dst = ? AND kind = ?", used,
                  LinkKind.PROMOTED_FROM.value)[0])
    ep = vault.get(new)
    assert ep.store is Store.EPISODIC and ep.text == vault.get(used).text
    assert ep.speaker == "Ana" and ep.occurred_at == T0 - HOUR
    assert row(vault, "SELECT count(*) FROM vector WHERE memory_id = ?", new) == (1,)
    assert any(link.kind == "PROMOTED_FROM" for link in vault.explain(new).links)
    assert row(vault, "SELECT count(*) FROM link WHERE dst = ? AND kind = 'PROMOTED_FROM'",
               unused) == (0,)
    # A day later the turn is out of the short-term window; the episode is found.
    later = T0 + 3 * DAY
    assert new in [h.id for h in vault.recall("spare key flowerpot", now=later, touch=False)]
    assert vault.consolidate(steps=("scores",)).value.counts.get("promoted", 0) == 0
    vault.undo_run(report.run_id)
    assert row(vault, "SELECT count(*) FROM memory WHERE id = ?", new) == (0,)


def test_confidence_moves_with_use_contradiction_confirmation_and_correction(
        vault: Vault) -> None:
    fact = remember(vault, "Ana's dentist is Dr Ruiz", Store.SEMANTIC, **neutral())
    before = vault.explain(fact).scores
    assert before["usage_success"] == policy.CONF_UNKNOWN
    assert before["user_validation"] == policy.CONF_UNKNOWN
    vault.recall("who is Ana's dentist")
    once = vault.explain(fact).scores
    assert once["confidence"] > before["confidence"]
    assert once["usage_success"] == scoring.usage_success(1, False)
    stored = float(row(vault, "SELECT confidence FROM memory WHERE id = ?", fact)[0])
    assert stored == pytest.approx(once["confidence"])     # stored at use, not only shown
    # Contradicted after being used: usage success fails, confidence drops below the start.
    other = remember(vault, "Ana's dentist is Dr Patel", Store.SEMANTIC, **neutral())
    from storage import consolidation_rows
    inside(vault).db.write_sync(lambda c: consolidation_rows.add_link(
        c, other, fact, LinkKind.CONTRADICTS, T0))
    shown = vault.explain(fact).scores
    assert shown["usage_success"] == policy.USAGE_CONTRADICTED
    assert shown["confidence"] < before["confidence"]
    run = vault.consolidate(steps=("scores",)).value
    assert run.counts["confidence_moved"] >= 1
    assert float(row(vault, "SELECT confidence FROM memory WHERE id = ?", fact)[0]) == \
        pytest.approx(shown["confidence"])
    vault.undo_run(run.run_id)
    assert float(row(vault, "SELECT confidence FROM memory WHERE id = ?", fact)[0]) == \
        pytest.approx(stored)
    # The person corrects the other one: the replaced statement's user validation is 0.
    newer = vault.correct(other, "Ana's dentist is Dr Okafor").value
    assert vault.explain(other).scores["user_validation"] == 0.0
    assert vault.explain(newer).scores["user_validation"] == 1.0
    vault.confirm(fact)
    confirmed = vault.explain(fact).scores
    assert confirmed["user_validation"] == 1.0 and confirmed["confidence"] == 1.0


def test_context_briefing_keeps_each_store_to_its_share(vault: Vault) -> None:
    for n in range(8):
        remember(vault, f"Ana's garden has rose bed number {n} by the wall", Store.SEMANTIC,
                 **neutral())
        remember(vault, f"Ana planted roses in the garden on visit {n}", **neutral())
    budget = 120
    ctx = vault.context("Ana's garden roses", budget=budget)
    spent: dict[str, int] = {}
    for item in ctx.items:
        if item.id is not None:
            store = vault.get(item.id).store.value
            group = policy.CONTEXT_QUOTA_GROUP[store]
            spent[group] = spent.get(group, 0) + item.tokens
    assert spent.get("semantic", 0) > 0 and spent.get("episodic", 0) > 0
    # Both had more than fits: neither took more than its share among the stores present
    # plus one item (whole items: what the other could not use).
    present = {policy.CONTEXT_QUOTA_GROUP[vault.get(i.id).store.value] for i in ctx.items
               if i.id is not None} | ({"people"} if any(i.id is None for i in ctx.items)
                                       else set())
    total = sum(policy.CONTEXT_STORE_SHARE[g] for g in present)
    for group in ("semantic", "episodic"):
        assert spent[group] <= policy.CONTEXT_STORE_SHARE[group] / total * budget + max(
            i.tokens for i in ctx.items)
    assert ctx.used <= budget


def test_promotions_write_promoted_from_and_are_found_by_meaning(vault: Vault) -> None:
    # Episodic -> semantic (002 thresholds) and working -> episodic both leave a new memory
    # with a vector, so a paraphrase finds it, and a PROMOTED_FROM link to where it came from.
    ep = remember(vault, "The tax office moved the filing deadline to the first of March",
                  importance=0.9, emotional=0.0)
    inside(vault).db.write_sync(lambda c: c.execute(
        "UPDATE memory SET access_count = 12, created_at = ? WHERE id = ?", (T0 - 60 * DAY, ep)))
    report = vault.consolidate(steps=("decay",)).value
    assert report.counts["promoted"] == 1
    fact = int(row(vault, "SELECT src FROM link WHERE dst = ? AND kind = 'PROMOTED_FROM'", ep)[0])
    assert vault.get(fact).store is Store.SEMANTIC
    assert row(vault, "SELECT count(*) FROM vector WHERE memory_id = ?", fact) == (1,)
    hits = vault.recall("when are taxes due", k=5, touch=False)
    assert fact in [h.id for h in hits]


def test_an_assistant_opening_a_short_term_only_turn_gets_it_promoted(vault: Vault) -> None:
    """The real path (issue 27 row 27): salience routing keeps a bare reaction short-term only;
    an assistant opens it (get_memory through its scope) and the next run's scores step makes it
    an event with PROMOTED_FROM; the person reading it in the window does not; undo reverts."""
    from app.agent_scope import AgentSession
    vault.import_turns([
        turn("s1", "Ana", "Wow, that sounds amazing!", T0 - HOUR, "s1:1"),
        turn("s1", "Ana", "Oh nice, love that!", T0 - HOUR, "s1:2"),
        turn("s1", "Ana", "I booked the ferry to Tallinn for Friday", T0 - HOUR, "s1:3"),
        turn("s1", "Ana", "could you translate that into Estonian?", T0 - HOUR, "s1:4")])
    only = "SELECT id FROM memory WHERE ref = ? AND store = 'short_term' AND NOT EXISTS (" \
           "SELECT 1 FROM link l WHERE l.dst = memory.id AND l.kind = 'DERIVED_FROM')"
    opened, browsed = int(row(vault, only, "s1:1")[0]), int(row(vault, only, "s1:2")[0])
    vault.pair_agent("helper")
    assert AgentSession(vault, "helper").get_memory(opened).text == "Wow, that sounds amazing!"
    vault.get_memory(browsed)  # the person, in the window
    report = vault.consolidate(steps=("scores",)).value
    assert report.counts["promoted"] == 1
    new = int(row(vault, "SELECT src FROM link WHERE dst = ? AND kind = 'PROMOTED_FROM'",
                  opened)[0])
    assert vault.get(new).store is Store.EPISODIC
    assert row(vault, "SELECT count(*) FROM link WHERE dst = ? AND kind = 'PROMOTED_FROM'",
               browsed) == (0,)
    # The assistant's recall within the day returns a short-term-only turn: used too.
    asked = int(row(vault, only, "s1:4")[0])
    hits = AgentSession(vault, "helper").recall("translate Estonian")
    assert asked in [h.id for h in hits]
    second = vault.consolidate(steps=("scores",)).value
    assert second.counts["promoted"] >= 1
    assert row(vault, "SELECT count(*) FROM link WHERE dst = ? AND kind = 'PROMOTED_FROM'",
               asked) == (1,)
    vault.undo_run(second.run_id)
    vault.undo_run(report.run_id)
    assert row(vault, "SELECT count(*) FROM memory WHERE id = ?", new) == (0,)
    assert row(vault, "SELECT count(*) FROM link WHERE kind = 'PROMOTED_FROM'") == (0,)
