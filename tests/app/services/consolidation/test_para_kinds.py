"""PARA kinds people talk about (issue 27 row 5; reference 000: a project has a goal or a date,
a resource is what one keeps coming back to) and one entity per thing (row 8). The sentences
are reworded from the stories, never quoted, so the rules are tested, not a sentence; the
negatives are places, people and passing words that must not become a project or resource.
Pure functions, plus one real vault (SQLCipher, the ONNX model) for the merge and its undo."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.clock import FixedClock, parse_iso
from app.domain.memory import Draft, Store
from app.facade import Vault
from app.services.entity_merge import Named, name_variant
from app.services.para import PROJECT, RESOURCE, introduced
from tests.inside import inside

PROJECTS = [
    ("Could you help me organise our garage clear-out? I need it finished by Friday.",
     "Garage clear-out"),
    ("We're preparing the pitch deck, want it ready by Monday", "Pitch deck"),
    ("my triathlon is in six weeks and I can barely swim", "Triathlon"),
    ("Our wedding's next spring, so everything is about the budget", "Wedding"),
    ("I registered for the Lisbon Marathon yesterday", "Lisbon Marathon"),
    ("currently training for the Hackney Half with my neighbour", "Hackney Half"),
    ("I'm training for the Leeds 10K in April", "Leeds 10K"),
    ("my thesis is due in three weeks", "Thesis"),
]
RESOURCES = [
    ("I've been studying Japanese in the evenings", "Japanese"),
    ("morning French lessons again, the subjunctive is killing me", "French"),
    ("did 30 minutes on Babbel before work", "Babbel"),
    ("I logged my ride on Strava, new personal best", "Strava"),
    ("don't let me lose my Headspace streak", "Headspace"),
    ("I'm about halfway through Klara and the Sun, so good", "Klara and the Sun"),
    ("only 40 pages into Middlemarch and already hooked, I think", "Middlemarch"),
    ("my friend keeps telling me to read Circe", "Circe"),
    ("Italian on Duolingo again, lesson 40", "Italian"),
]
# Nothing here is a project or a resource of the speaker's.
NEITHER = [
    "my sister is in Denver this week",
    "my interview is on Monday at ten",
    "our office is in Lisbon now",
    "my mum is in hospital again",
    "how do you say good morning in Spanish?",
    "I had lunch with Priya, she's back from Porto",
    "I'm reading over the contract tonight",
    "my party is on Saturday",             # one vague word alone is no project
    "did 20 minutes on Monday, then stopped",
    "I need to read Sarah's message",
    "the Spanish omelette was great",
    "two sessions with Mark this week",
    "my lessons in Paris start soon",
    "something for dinner that isn't a whole project?",
]


@pytest.mark.parametrize(("text", "name"), PROJECTS)
def test_projects_people_talk_about(text: str, name: str) -> None:
    found = introduced(text)
    assert (name.casefold(), PROJECT) in found, found
    assert not [k for k in found if k[1] == RESOURCE], found


@pytest.mark.parametrize(("text", "name"), RESOURCES)
def test_resources_people_keep_coming_back_to(text: str, name: str) -> None:
    found = introduced(text)
    assert (name.casefold(), RESOURCE) in found, found
    assert not [k for k in found if k[1] == PROJECT], found


@pytest.mark.parametrize("text", NEITHER)
def test_places_people_and_passing_words_are_neither(text: str) -> None:
    found = {k for k in introduced(text) if k[1] in (PROJECT, RESOURCE)}
    assert found == set()


def test_a_book_named_project_is_a_resource_not_a_project() -> None:
    found = introduced("I'm halfway through Project Nimbus and I can't put it down")
    assert ("project nimbus", RESOURCE) in found, found
    assert not [k for k in found if k[1] == PROJECT], found


def test_precision_over_all_the_sets() -> None:
    """Every kind the rules give on the sets above is the labelled one (precision 1.0, dev)."""
    wrong = []
    for text, name in PROJECTS + RESOURCES:
        want = PROJECT if (text, name) in PROJECTS else RESOURCE
        wrong += [(text, k) for k in introduced(text)
                  if k[1] in (PROJECT, RESOURCE) and k != (name.casefold(), want)]
    assert wrong == []


@pytest.mark.parametrize(("a", "b", "why"), [
    (Named("Kitewood", "company"), Named("Kitewood Studio", "company"), "name"),
    (Named("Harbour Clinic", "company"), Named("Harbour", "company"), "name"),
    (Named("Dr Halvorsen", "person"), Named("Halvorsen", "person"), "name"),
    (Named("Halvorsen", "person"), Named("Halvorsen", "company"), "kind"),
    (Named("Anna", "person"), Named("Anna's mum", "person"), None),
    (Named("Lisbon", "place"), Named("Lisbon office", "company"), None),
    (Named("Northwind", "company"), Named("Northwind office", "company"), None),
    (Named("Cardiff", "place"), Named("Cardiff Half", "project"), None),
    (Named("Garden", "project"), Named("Garden party", "project"), None),
])
def test_one_entity_per_thing_by_name(a: Named, b: Named, why: str | None) -> None:
    assert name_variant(a, b) == why
    assert name_variant(b, a) == why


NOW = parse_iso("2026-07-02T00:00:00Z")


@pytest.fixture
def vault(vault_dir: Path, fast_kdf: object, shared_model: None) -> Iterator[Vault]:
    v = Vault.create(vault_dir, "pw-para-kinds", kdf=fast_kdf, threaded=False,
                     clock=FixedClock(NOW), use_chroma=False).vault
    yield v
    if not v.locked:
        v.lock()


def entity_rows(v: Vault) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in inside(v).db.read(lambda c: c.execute(
        "SELECT id, kind, name, status, merged_into FROM entity ORDER BY id").fetchall())]


def test_a_name_and_its_studio_become_one_entity_and_undo_restores_both(vault: Vault) -> None:
    for i, text in enumerate(["I start at Brightfold Studio next month, so nervous",
                              "first week at Brightfold Studio done",
                              "Brightfold Studio gave me a laptop already",
                              "I got the job at Brightfold!", "lunch at Brightfold was great",
                              "Brightfold has a dog in the office"]):
        vault.remember(Draft(text=text, store=Store.EPISODIC, speaker="Maya",
                             occurred_at=parse_iso(f"2026-06-2{i}T10:00:00Z")))
    vault.consolidate(steps=("extract",))
    before = entity_rows(vault)
    run = vault.consolidate().value
    live = [e for e in entity_rows(vault) if "brightfold" in e[2].casefold()
            and e[3] != "merged"]
    both = [e for e in entity_rows(vault) if "brightfold" in e[2].casefold()]
    assert len(both) == 2 and len(live) == 1, both
    gone = next(e for e in both if e[3] == "merged")
    assert gone[4] == live[0][0]
    assert [(m.merged, m.reason) for m in vault.entity_merges(live[0][0])] == \
        [(gone[0], "name")]  # the name proved it: "Studio" is a head, no cosine needed
    vault.undo_run(run.run_id)
    assert entity_rows(vault) == before
