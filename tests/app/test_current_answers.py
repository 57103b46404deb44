"""Current answers (issue 15, item 3): a question about the present gets the latest statement
of the fact first, before consolidation (turns) and after (facts); the update found by
consolidation ends the old fact at the new turn's event time; a past question still finds the
old one. A real vault, the real model, natural turns over several sessions."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.api import Filters
from app.clock import parse_iso
from app.services.recall import asks_present
from tests.conftest import turns_vault
from tests.inside import inside

TURNS = [
    ("s1", "2025-05-02T10:00:00Z", "Maya", "I work as a barista at Little Owl Coffee, the early "
                                           "shifts are brutal but the regulars are sweet."),
    ("s1", "2025-05-02T10:01:00Z", "Sam", "Sounds busy! How long have you been in Denver?"),
    ("s1", "2025-05-02T10:02:00Z", "Maya", "I live in Denver, about three years now, I love my "
                                           "apartment near City Park."),
    ("s2", "2025-09-14T18:00:00Z", "Maya", "Big news: we finally moved to Seattle last week, the "
                                           "boxes are everywhere."),
    ("s2", "2025-09-14T18:01:00Z", "Sam", "Wow, congrats! What about work?"),
    ("s2", "2025-09-14T18:02:00Z", "Maya", "I started as a UX designer at Northwind Labs, no more "
                                           "early coffee shifts for me."),
    ("s3", "2025-10-01T09:00:00Z", "Maya", "The rain here is real, but I love the ferries."),
]
NOW = parse_iso("2025-10-05T00:00:00Z")


@pytest.fixture
def vault(tmp_path: Path, fast_kdf: Any, shared_model: None) -> Iterator[Any]:
    v = turns_vault(tmp_path / "v", fast_kdf, "pw-now", TURNS)
    yield v
    v.lock()


def _first(v: Any, query: str, **kw: Any) -> str:
    return str(v.recall(query, k=5, now=NOW, **kw)[0].text)


@pytest.mark.parametrize("query, present", [
    ("where does Maya live now", True), ("what is Maya's job these days", True),
    ("what does Maya do for work currently", True), ("is Maya still a barista", True),
    ("what is Maya's job", True), ("where did Maya live before", False),
    ("what was Maya's job in 2025", False), ("when did Maya move", False),
    ("what did Maya say about the rain", False),
])
def test_which_questions_ask_about_the_present(query: str, present: bool) -> None:
    assert asks_present(query) is present


def test_the_latest_statement_comes_first_before_consolidation(vault: Any) -> None:
    assert "Seattle" in _first(vault, "where does Maya live now")
    assert "Northwind" in _first(vault, "what is Maya's job these days")
    # A question about the past is ranked as before: Denver first.
    assert "Denver" in _first(vault, "where did Maya live before")


def test_after_consolidation_the_current_fact_first_and_the_old_one_ended(vault: Any) -> None:
    vault.consolidate(now=NOW)
    facts = inside(vault).db.read(lambda c: c.execute(
        "select text, status, valid_until from memory where store = 'semantic'").fetchall())
    by_text = {t: (s, u) for t, s, u in facts}
    assert by_text["Maya lives in Denver"][0] == "superseded"
    # Ended when the move was said (event time), not when consolidation ran.
    assert by_text["Maya lives in Denver"][1] == parse_iso("2025-09-14T18:00:00Z")
    assert by_text["Maya lives in Seattle"][0] == "active"
    # The old job too: role and employer, both ended when the new job was said.
    job_said = parse_iso("2025-09-14T18:02:00Z")
    assert by_text["Maya works at Little Owl Coffee"] == ("superseded", job_said)
    assert by_text["Maya is a barista"] == ("superseded", job_said)
    assert by_text["Maya works at Northwind Labs"][0] == "active"
    assert _first(vault, "where does Maya live now") == "Maya lives in Seattle"
    job = _first(vault, "what is Maya's job")
    assert "UX designer" in job or "Northwind" in job
    # Time travel still answers the past with the old fact.
    then = vault.recall("where does Maya live", k=5, now=NOW,
                        filters=Filters(as_of=parse_iso("2025-06-01T00:00:00Z")))
    assert any(h.text == "Maya lives in Denver" for h in then)
