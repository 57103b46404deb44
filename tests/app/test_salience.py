"""Salience routing (issue 27 item 1, reference 004): every incoming turn is scored by rules
that generalise; small talk, one-off requests and bare reactions stay short-term only, and no
turn that states a fact, plan, change, preference or event is ever kept out of the episodes.
Pure rules first (reworded sentences, not the ones the rules were written from), then a real
vault: the import, what ``explain`` and ``kept explain`` say, and forgetting."""

from __future__ import annotations

import pytest

from app import policy
from app.domain.memory import Store
from app.facade import Vault
from app.services import salience
from app.words import routing_sentence
from tests.app.conftest import DAY, T0, row, turn

# Facts, plans, changes, preferences and events, many short, worded as people chat.
KEPT = [
    "moved to Lisbon", "new job!", "my sister is Ana", "Got engaged last night!!",
    "started at Kitewood on Monday", "I hate coriander", "we're flying to Oslo in March",
    "Dentist at 3pm tomorrow", "my cat Miso is sick", "finally quit smoking",
    "I'm vegetarian now", "Ana's birthday is 12 May", "gonna learn the cello",
    "Just adopted a puppy", "my boss Raj retires in June", "Sold the car.",
    "I run every Saturday morning", "We broke up", "passed my driving test",
    "allergic to penicillin", "I work nights at the hospital", "the wedding is on the 4th",
    "Bought a flat in Porto", "my favourite band is Low", "I prefer tea to coffee",
    "Mia starts school in September", "we got a new dog", "I'm pregnant!",
    "lost my wallet on the bus", "Booked the flights for Rome", "I live in Leeds",
    "Tom and I are moving in together", "My dad had surgery yesterday",
    "Grandma turned 90 today", "I'm learning Spanish on Duolingo",
    "Going to the gym after work", "I signed the lease", "I teach piano",
    "Did you know I ran a marathon in April?", "The renovation is finished",
    "1:15, got it. thx", "ok, Friday then", "thanks, my sister loved it",
    # A dismissal that goes on to say something is kept (issue 27 row 2).
    "never mind the cost, we booked the Lisbon flat", "I never liked mushrooms",
    "forget it, I moved the meeting with Tom to Friday",
]
# Small talk, one-off requests and bare reactions.
DROPPED = [
    "Thanks!", "ok cool", "lol", "hi there", "Good morning!", "thank you so much :)",
    "bye, see you", "can you summarise this", "Could you translate that into French?",
    "please rewrite this paragraph", "tl;dr please", "fix the grammar", "Wow, that sounds amazing!",
    "That's so cool!", "haha nice", "sounds good", "Awesome!!", "ok", "you're welcome!",
    # Taking a request back (issue 27 row 2; worded for this test, not the stories').
    "Nevermind, found it", "oh wait, scratch that", "nvm, figured it out thanks",
    "ignore my last message", "actually forget it", "no matter, sorted",
]


@pytest.mark.parametrize("text", KEPT)
def test_statements_always_become_episodes(text: str) -> None:
    s = salience.score(text)
    assert s.score >= policy.SALIENCE_EPISODE_MIN and s.episode, (text, s)
    assert s.stores == ("short_term", "episodic") and s.reason


@pytest.mark.parametrize("text", DROPPED)
def test_small_talk_and_requests_stay_short_term(text: str) -> None:
    s = salience.score(text)
    assert s.score < policy.SALIENCE_EPISODE_MIN and s.stores == ("short_term",), (text, s)


def test_more_signals_score_higher() -> None:
    plain = salience.score("the weather was grey")
    personal = salience.score("I moved to Porto with my sister Ana in 2021")
    assert 0.0 <= plain.score < personal.score <= 1.0
    assert "change" in personal.reason and "number or date" in personal.reason


def test_sentence_says_where_and_why() -> None:
    low = salience.score("Thanks!")
    assert routing_sentence(low.score, low.stores, low.reason) == (
        "Salience 0.05 (small talk (greetings, thanks, acknowledgements)): kept as a "
        "conversation turn only; it fades with the conversation.")
    high = salience.score("moved to Lisbon")
    said = routing_sentence(high.score, high.stores, high.reason, "llm")
    assert said.startswith(f"Salience {high.score:.2f} (rated by the LLM)")
    assert said.endswith("kept as a conversation turn and an event.")
    assert routing_sentence(high.score, high.stores, high.reason, score=False) == (
        f"Kept as a conversation turn and an event ({high.reason[:1].lower()}"
        f"{high.reason[1:]}).")


def test_import_routes_by_salience_and_explain_says_so(vault: Vault) -> None:
    turns = [turn("s1", "Ana", "Thanks!", T0 - DAY, "r1"),
             turn("s1", "Ana", "moved to Lisbon", T0 - DAY + 30, "r2"),
             turn("s1", "Ana", "can you summarise this", T0 - DAY + 60, "r3"),
             turn("s1", "Ana", "lol", T0 - DAY + 90, "r4", store=Store.SEMANTIC)]
    added = vault.import_turns(turns).value.added
    episodes = {r[0] for r in _all(vault, "SELECT text FROM memory WHERE store = 'episodic'")}
    assert episodes == {"moved to Lisbon"}
    assert added == 4  # four turns
    assert _count(vault, "memory WHERE store = 'semantic'") == 1  # the store it named
    shorts = dict(_all(vault, "SELECT ref, id FROM memory WHERE store = 'short_term'"))
    assert set(shorts) == {"r1", "r2", "r3", "r4"}  # every turn stays in the conversation
    thanks = vault.explain(shorts["r1"])
    assert thanks.routing is not None and thanks.routing.stores == (Store.SHORT_TERM,)
    assert thanks.routing.salience < policy.SALIENCE_EPISODE_MIN
    assert thanks.routing.by == "rules"
    episode = int(row(vault, "SELECT id FROM memory WHERE store = 'episodic'")[0])
    moved = vault.explain(episode)  # an episode shows the decision about its turn
    assert moved.routing is not None
    assert moved.routing.stores == (Store.SHORT_TERM, Store.EPISODIC)
    assert moved.routing.salience >= policy.SALIENCE_EPISODE_MIN
    named = vault.explain(shorts["r4"])  # the import named the store: kept, reason says so
    assert named.routing is not None and Store.SEMANTIC in named.routing.stores
    assert "the import named the store" in named.routing.reason
    again = vault.import_turns(turns).value  # re-import adds nothing, routes nothing twice
    assert again.added == 0 and _count(vault, "routing") == 4


def test_routing_goes_with_its_turn(vault: Vault) -> None:
    vault.import_turns([turn("s1", "Ana", "ok cool", T0, "r1")])
    mid = int(row(vault, "SELECT id FROM memory WHERE ref = 'r1'")[0])
    assert _count(vault, "routing") == 1
    vault.forget(vault.forget_plan(ids=[mid]))
    assert _count(vault, "routing") == 0


def _all(vault: Vault, sql: str) -> list[tuple[object, ...]]:
    from tests.inside import inside
    return [tuple(r) for r in inside(vault).db.read(lambda c: c.execute(sql).fetchall())]


def _count(vault: Vault, table: str) -> int:
    return int(row(vault, f"SELECT count(*) FROM {table}")[0])
