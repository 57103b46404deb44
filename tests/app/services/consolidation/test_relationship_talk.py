"""A relationship that moves on, said the way people say it (issue 15): a wedding the speaker
had is a marriage, "I've been seeing someone" is dating, and a later status further along
than an earlier status or relation (a girlfriend, then married; dating, then engaged) is an
update, not a contradiction. Sentences written for this test, through extraction and
classification as consolidation runs them."""

from __future__ import annotations

from typing import Any

import pytest

from app.domain.fact import EpisodeView
from app.services.extract import extract
from tests.app.services.consolidation.contradiction_eval import predict


def _pair(a: str, b: str) -> dict[str, Any]:
    return {"a": {"text": a, "speaker": "Ines", "at": "2025-03-01T10:00:00Z"},
            "b": {"text": b, "speaker": "Ines", "at": "2025-09-20T18:00:00Z"}}


@pytest.mark.parametrize(("text", "status"), [
    ("We finally tied the knot in June, tiny ceremony, just family.", "married"),
    ("My boyfriend and I had a small, quiet wedding ceremony at the lake.", "married"),
    ("Guess what, we got married last weekend!", "married"),
    ("I've been seeing someone since spring, it's going really well.", "dating someone"),
])
def test_a_relationship_said_in_passing_is_a_status(text: str, status: str) -> None:
    ep = EpisodeView(id=1, speaker="Ines", occurred_at=1.7e9, text=text)
    assert [f.object for f in extract(ep) if f.predicate == "relationship_status"] == [status]


@pytest.mark.parametrize("text", [
    "I went to my cousin's wedding on Saturday, the food was amazing.",
    "We had our wedding planning call with the venue yesterday.",
    "Our wedding is next June and I'm already nervous.",
    "We never got married, and honestly we're happy that way.",
])
def test_weddings_that_are_not_the_speakers_marriage(text: str) -> None:
    ep = EpisodeView(id=1, speaker="Ines", occurred_at=1.7e9, text=text)
    assert [f for f in extract(ep) if f.predicate == "relationship_status"] == []


@pytest.mark.parametrize(("a", "b", "label"), [
    ("My boyfriend Jonas is the sweetest, he cooks for me every night.",
     "We tied the knot in August, just us and a few friends on the beach.", "update"),
    ("I'm dating someone called Ravi, it's still early days.",
     "Ravi proposed on the ferry! We're engaged!", "update"),
    ("I'm engaged, the wedding is planned for next year.",
     "I'm single again, we called it off in the summer.", "update"),
    # Back to an earlier stage with no change said: the two cannot both hold.
    ("I'm married, eight years this May.", "I'm single, always have been.", "contradiction"),
    # The same stage said two ways still agrees.
    ("My husband Tomas loves hiking.", "We got married ten years ago in Porto.", "compatible"),
])
def test_a_status_further_along_is_an_update(a: str, b: str, label: str) -> None:
    assert predict(_pair(a, b))["predicted"] == label
