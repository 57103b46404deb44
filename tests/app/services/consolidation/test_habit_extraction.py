"""Habits read out of talk (issue 15 hand check: 13 of 25 habit facts were wrong). A habit's
object cut mid-phrase loses its dangling words; words that point back ("play that game"), name
a one-off ("the book I read last year"), ask a question or are a bare light
verb ("that's why I go!") make no habit. The sentences are written for this test."""

from __future__ import annotations

import pytest

from app.domain.fact import EpisodeView
from app.services.extract import extract


def _habits(text: str) -> list[str]:
    ep = EpisodeView(id=1, speaker="Rosa", occurred_at=1.7e9, text=text)
    return [f.object for f in extract(ep) if f.predicate == "habit"]


@pytest.mark.parametrize(("text", "expected"), [
    ("I usually cycle to the office, even when it rains.", ["cycle to the office"]),
    ("I play the cello! Picked it up as a kid and never stopped.", ["play the cello"]),
    ("I started swimming about ten years ago and it keeps me sane.", ["swim"]),
    ("I started painting again last year.", ["paint"]),
    ("I started playing the banjo about, oh, a year ago.", ["play the banjo"]),
    ("I usually dance it out, it works every time.", ["dance it out"]),
    ("I always bake on Sundays with my nephew.", ["bake on Sundays"]),
])
def test_habits_that_are_habits(text: str, expected: list[str]) -> None:
    assert _habits(text) == expected


@pytest.mark.parametrize("text", [
    "Can I do anything to help with the move?",              # a question
    "The lake is gorgeous, that's why I go!",                # a bare light verb
    "I usually go there often, it's my spot.",               # nothing left after 'go'
    "I play that game a lot with my cousins.",               # points back at something said
    "I read it a while back and loved the ending.",          # a one-off, pointing back
    "I loved the novel, I read this one on the plane home.",  # a one-off
    "I started writing another one while I wait for news.",  # points back
])
def test_words_that_are_no_habit(text: str) -> None:
    assert _habits(text) == []
