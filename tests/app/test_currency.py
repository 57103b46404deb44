"""What is current (issue 23 items 1, 4, 6): for a question about one thing as it is now, the
latest of the best answers comes first, in any topic and any words; what something later
replaced is marked (recall, explain, the briefing); small talk makes no fact and ranks below
anything said; the person is one owner whatever an export calls them, and is named from their
own words. A real vault, the real model, turns written the way people chat (not the
development stories: these are separate)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.clock import parse_iso
from app.services import currency
from app.services.recall import asks_now
from app.services.text import is_small_talk
from tests.conftest import turns_vault

TURNS = [
    ("c1", "2026-02-02T08:00:00Z", "user", "can you help me plan meals this week? I take oat "
                                           "milk in everything btw"),
    ("c1", "2026-02-02T08:01:00Z", "assistant", "Sure! Here is a simple plan for the week."),
    ("c1", "2026-02-02T08:02:00Z", "user", "thanks!"),
    ("c2", "2026-02-09T19:00:00Z", "user", "our vet is Dr. Alves, Pepper loves her"),
    ("c3", "2026-03-01T09:00:00Z", "user", "ugh oat milk has been wrecking my stomach, "
                                           "switching to soy milk from today"),
    ("c3", "2026-03-01T09:01:00Z", "assistant", "You're welcome! Let me know if you need "
                                                "anything else."),
    ("c4", "2026-03-10T18:00:00Z", "user", "Pepper has a new vet now, Dr. Kim, much closer to "
                                           "us"),
    ("c5", "2026-03-12T10:00:00Z", "user", "I'm Lena by the way, my sister Ana keeps asking "
                                           "about you lol"),
]
NOW = parse_iso("2026-03-15T00:00:00Z")


@pytest.fixture
def vault(tmp_path: Path, fast_kdf: Any, shared_model: None) -> Iterator[Any]:
    v = turns_vault(tmp_path / "v", fast_kdf, "pw-currency", TURNS)
    yield v
    v.lock()


def _texts(v: Any, query: str, **kw: Any) -> list[str]:
    return [h.text for h in v.recall(query, k=6, now=NOW, touch=False, **kw)]


def _first_of(texts: list[str], *keys: str) -> int:
    return next((n for n, t in enumerate(texts) if any(k in t for k in keys)), 99)


@pytest.mark.parametrize("question", ["what milk do I take in my coffee?",
                                      "which milk do I use?"])
def test_the_latest_answer_comes_first_without_a_change_word_in_the_question(
        vault: Any, question: str) -> None:
    texts = _texts(vault, question)
    assert _first_of(texts, "soy") < _first_of(texts, "I take oat milk"), texts


def test_the_new_vet_first_and_the_old_one_marked_earlier(vault: Any) -> None:
    hits = vault.recall("who is Pepper's vet?", k=6, now=NOW, touch=False)
    texts = [h.text for h in hits]
    assert _first_of(texts, "Dr. Kim") < _first_of(texts, "Dr. Alves"), texts
    old = next(h for h in hits if "Dr. Alves" in h.text)
    new = next(h for h in hits if "Dr. Kim" in h.text)
    assert old.currency is not None and old.currency.state == "earlier"
    assert new.currency is not None and new.currency.state == "current"
    assert currency.note(old.currency).startswith("(earlier")


def test_a_question_about_the_past_is_not_reordered(vault: Any) -> None:
    hits = vault.recall("which vet did we use before?", k=6, now=NOW, touch=False)
    assert hits and not any("current" in h.breakdown for h in hits)
    now = vault.recall("which vet do we use?", k=6, now=NOW, touch=False)
    assert any("current" in h.breakdown for h in now)


def test_the_briefing_marks_what_came_earlier(vault: Any) -> None:
    ctx = vault.context("Pepper's vet", now=NOW)
    marked = [i for i in ctx.items if "Dr. Alves" in i.text]
    assert marked and all("(earlier" in i.text and i.currency is not None
                          and i.currency.state == "earlier" for i in marked), ctx.items


def test_explain_carries_the_mark(vault: Any) -> None:
    old = next(h for h in vault.recall("who is Pepper's vet?", k=6, now=NOW, touch=False)
               if "Dr. Alves" in h.text)
    e = vault.explain(old.id, "who is Pepper's vet?", now=NOW)
    assert e.currency is not None and e.currency.state == "earlier"


def test_small_talk_ranks_below_anything_said(vault: Any) -> None:
    texts = _texts(vault, "what do I drink")
    chatter = [n for n, t in enumerate(texts) if is_small_talk(t)]
    said = [n for n, t in enumerate(texts) if not is_small_talk(t)]
    assert not chatter or min(chatter) > max(said[:2]), texts


@pytest.mark.parametrize("text, small", [
    ("Thanks!", True), ("ok cool", True), ("hi again", True), ("great, thanks!!", True),
    ("You're welcome! Let me know if you need anything else.", True),
    ("Happy to help. Enjoy the trip!", True),
    ("thanks, my sister loved the cake", False), ("yes please, the vegan one", False),
    ("I moved to Lisbon", False)])
def test_small_talk(text: str, small: bool) -> None:
    assert is_small_talk(text) is small


@pytest.mark.parametrize("question, now", [
    ("which gym do I go to", True), ("who's Pepper's vet?", True),
    ("what milk do I put in my coffee", True), ("where does Ana live now?", True),
    ("what does Lena do for a living?", True), ("when was my eye exam?", False),
    ("which vet did we use before?", False), ("what books has Lena read?", False),
    ("what activities does Lena do?", False), ("where has Lena travelled?", False),
    ("what are Lena's pets called?", False), ("would Lena move to Porto?", False)])
def test_which_questions_ask_for_one_thing_as_it_is_now(question: str, now: bool) -> None:
    assert asks_now(question) is now


def test_the_owner_is_one_person_and_learns_their_name(vault: Any) -> None:
    report = vault.consolidate(now=NOW).value
    assert report.counts.get("owner_named") == 1
    assert vault.setting("owner.name") == "Lena"
    from app.api import Filters
    facts = _texts(vault, "Lena's sister", filters=Filters(stores=("semantic",)))
    assert any("Lena" in t for t in facts), facts
    assert not any(t.startswith(("user ", "User ")) or "User's" in t for t in facts), facts
    people = {e.name for e in vault.entities()}
    assert "Lena" in people and not {"user", "User", "human"} & people


def test_question_holder_and_statement_holder() -> None:
    assert currency.holder("my sister Ana moved to Porto", "user") == "rel:sister"
    assert currency.holder("I moved to Porto", "human") == "owner"
    assert currency.holder("Sounds lovely, enjoy Porto!", "assistant") == "owner"
    assert currency.holder("Ana lives in Porto now", "Lena", "Lena") == "ana"
    assert currency.question_holder("where does my sister live", (), None) == "rel:sister"
    assert currency.question_holder("where do I live", (), None) == "owner"
    assert currency.question_holder("where does Lena live", ("Lena",), "Lena") == "owner"


MEMORY_WORDS = [
    ("m1", "2026-04-01T10:00:00Z", "user", "my brother Tom owes the bank a lot of money, he is "
                                           "struggling"),
    ("m1", "2026-04-01T10:01:00Z", "assistant", "That sounds hard for Tom."),
    ("m2", "2026-04-03T09:00:00Z", "user", "the dentist appointment is on Tuesday at 3"),
    ("m3", "2026-04-05T09:00:00Z", "user", "sorry I misspoke, the dentist appointment is on "
                                           "Thursday not Tuesday"),
    ("m4", "2026-04-06T10:00:00Z", "user", "please forget what I told you about Tom and the "
                                           "bank, he asked me to keep it private"),
]


def test_words_about_memory_are_acted_on(tmp_path: Path, fast_kdf: Any,
                                         shared_model: None) -> None:
    """"Please forget what I told you about X" files a forget request for the person (nothing
    is forgotten, and the request is no source of facts); the person's own correction of a
    day supersedes the old one at once, in the report with Undo."""
    v = turns_vault(tmp_path / "w", fast_kdf, "pw-words", MEMORY_WORDS)
    try:
        # The run is dated April 2026 and read with the real clock: a request that old would
        # have expired (forget.request_days, issue 26).
        v.set_setting("forget.request_days", 3650)
        report = v.consolidate(now=parse_iso("2026-04-07T00:00:00Z")).value
        assert report.counts.get("forget_asked") == 1
        (req,) = v.pending_forgets("pending")
        assert req.agent == "you" and "Tom" in req.reason
        texts = {v.get(i).text for i in req.memory_ids}
        assert any("owes the bank" in t for t in texts), texts
        assert not any("please forget" in t for t in texts)
        assert v.count_memories(_all()) >= 10  # nothing was forgotten
        assert report.counts.get("corrected_by_person") == 1
        hits = v.recall("when is the dentist appointment?", k=5,
                        now=parse_iso("2026-04-07T00:00:00Z"), touch=False)
        assert "Thursday" in hits[0].text, [h.text for h in hits]
        from app.api import MemoryQuery
        facts = MemoryQuery(store="semantic", status=None)
        old = [r for r in v.page_memories(facts).rows if "appointment is on Tuesday" in r.text]
        assert old and all(r.status == "superseded" for r in old)
        v.undo_run(report.run_id)  # the run's report lists it, and Undo reverts the run
        assert not [r for r in v.page_memories(facts).rows if "on Tuesday" in r.text]
    finally:
        v.lock()


def _all() -> Any:
    from app.api import MemoryQuery
    return MemoryQuery()
