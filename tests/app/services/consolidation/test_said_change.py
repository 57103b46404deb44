"""Changes said in passing (issue 15): a later turn of the same speaker that says something
changed or was wrong, about the same thing, is paired with the earlier turn and sent to the
Inbox, never settled on its own. The phrasings here are written for this test (not taken from
the development set), with near misses of each cue: advice, a question, background.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.clock import parse_iso
from app.services.said_change import cue, verdict
from tests.conftest import turns_vault

CLOSE = 0.6  # a similarity above the threshold: these cases test the words, not the model


@pytest.mark.parametrize("earlier, later, expected", [
    ("Book club is on Tuesday evenings at the library, bring snacks if you come.",
     "Heads up, book club got moved to Thursday this month, the library is closed Tuesday.",
     "update"),
    ("I'm learning Portuguese on Duolingo, a streak of 40 days so far.",
     "I don't do Portuguese anymore, the app got boring, I switched to a night class.",
     "update"),
    ("We have three chickens in the backyard, they lay like an egg a day each.",
     "We're down to two chickens, a fox got into the coop last week, it was awful.",
     "update"),
    ("My dentist is Dr. Park over on Elm Street, she's really gentle.",
     "Sorry, I misspoke, my dentist is Dr. Ng, Dr. Park is the hygienist there.",
     "contradiction"),
    ("The picnic is at Riverside Park on Saturday, around noon.",
     "Actually the picnic is at Lakeside Park, not Riverside, they changed the permit.",
     "contradiction"),
    # near misses: advice, a question, a change that was already said, another topic
    ("I sing in the choir at church on Sundays, alto section.",
     "I won't quit the choir, no matter how early rehearsals get.", None),
    ("I sing in the choir at church on Sundays, alto section.",
     "Did the choir get moved to the new hall yet?", None),
    ("I lost my job at the bakery in March, it was a shock.",
     "Since I lost my job at the bakery, I've had so much time for hiking.", None),
    ("My sister lives in Leeds with her two cats.",
     "The concert got pushed to Friday, so I'm free tonight.", None),
])
def test_verdict_of_a_later_turn(earlier: str, later: str, expected: str | None) -> None:
    assert verdict(earlier, later, CLOSE) == expected


def test_a_turn_far_from_the_earlier_one_is_not_paired() -> None:
    earlier = "Book club is on Tuesday evenings at the library."
    later = "Book club got moved to Thursday this month."
    assert verdict(earlier, later, 0.39) is None
    assert verdict(earlier, later, 0.41) == "update"


def test_cue_reads_statements_not_questions() -> None:
    assert cue("The offsite got cancelled, budget cuts.") == "update"
    assert cue("Did the offsite get cancelled?") is None
    assert cue("Wait, did I say Tuesday? It's Wednesday.") == "contradiction"
    assert cue("Keep going and don't quit!") is None


TURNS = [
    ("s1", "2026-03-02T10:00:00Z", "Priya", "Our team offsite is set for the first week of "
                                            "June, somewhere on the coast I think."),
    ("s1", "2026-03-02T10:01:00Z", "Leo", "Nice, the coast in June sounds lovely."),
    ("s2", "2026-04-20T18:00:00Z", "Priya", "The offsite got cancelled, budget cuts, so no "
                                            "coast trip for us this year."),
    ("s2", "2026-04-20T18:01:00Z", "Leo", "My offsite got cancelled too, ugh, same budget "
                                          "story."),
]


@pytest.fixture
def vault(tmp_path: Path, fast_kdf: Any, shared_model: None) -> Iterator[Any]:
    v = turns_vault(tmp_path / "v", fast_kdf, "pw-said", TURNS)
    yield v
    v.lock()


def _said(v: Any) -> list[Any]:
    return [c for c in v.contradictions("open") if c.reason.startswith("said to")]


def test_consolidation_sends_the_pair_to_the_inbox_and_undo_takes_it_back(vault: Any) -> None:
    report = vault.consolidate(now=parse_iso("2026-04-21T00:00:00Z")).value
    items = _said(vault)
    # Priya's two turns; Leo's own cancelled offsite has no earlier turn of Leo's about it.
    assert len(items) == 1
    item = items[0]
    a, b = vault.get(item.a.id), vault.get(item.b.id)
    assert (a.speaker, b.speaker) == ("Priya", "Priya")
    assert item.reason == "said to have changed"
    assert "first week of June" in a.text and "got cancelled" in b.text
    assert a.store.value == b.store.value == "episodic"
    assert report.counts["said_changes"] == 1 and item.id in report.ids["inbox"]
    # nothing was settled: both turns are still active
    assert vault.get(item.a.id).status.value == "active"
    # the person decides: the newer turn holds, the older one ends when it was said
    vault.resolve(item.id, "b")
    old = vault.get(item.a.id)
    assert old.status.value == "superseded"
    vault.reopen(item.id)
    vault.undo_run(report.run_id)
    assert _said(vault) == [] and vault.contradictions(None) == []


def test_a_second_run_finds_nothing_new(vault: Any) -> None:
    now = parse_iso("2026-04-21T00:00:00Z")
    vault.consolidate(now=now)
    again = vault.consolidate(now=now).value
    assert again.counts.get("said_changes", 0) == 0
    assert len(_said(vault)) == 1


def test_without_the_model_there_is_no_pairing(tmp_path: Path, fast_kdf: Any) -> None:
    v = turns_vault(tmp_path / "v", fast_kdf, "pw-said", TURNS, load_model=False)
    try:
        v.consolidate(now=parse_iso("2026-04-21T00:00:00Z"))
        assert _said(v) == []
    finally:
        v.lock()
