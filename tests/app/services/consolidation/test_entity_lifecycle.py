"""The PARA lifecycle and one entity per thing (issue 27 item 3): a project said to be over,
in any of several wordings, or idle past ``policy.PROJECT_IDLE_D`` days, becomes an archive
that keeps its kind and end date; undoing the run makes it a project again. The same name as
a person and a resource, and names that are variants of one another, become one entity;
undoing the run or the person's "these are different things" restores both exactly. Real
SQLCipher vault, real ONNX model."""

from __future__ import annotations

from typing import Any

import pytest

from app.clock import parse_iso
from app.facade import Vault
from app.policy import DAY, PROJECT_IDLE_D
from app.services.entity_merge import Named, name_variant
from app.services.project_end import ends
from tests.app.services.consolidation.conftest import NOW, rows, said
from tests.inside import inside


@pytest.fixture
def vault(maya_vault: Vault) -> Vault:
    return maya_vault


def entity_table(v: Vault) -> list[tuple[Any, ...]]:
    return rows(v, "SELECT id, kind, name, status, was_kind, ended_at, ended_how, merged_into "
                   "FROM entity ORDER BY id")


def mentions(v: Vault) -> set[tuple[int, int]]:
    return set(rows(v, "SELECT entity_id, memory_id FROM entity_mention"))


# Reworded, not the sentences of the parser's docstring: the rule, not a quote.
ENDED = ["Big news, the treehouse build is finally complete!",
         "After two years we called off the treehouse build.",
         "We officially wrapped up the treehouse build on Sunday",
         "My brother and I gave up on the treehouse build, the wood rotted.",
         "the treehouse build went live... well, the kids moved in, ha"]
NOT_ENDED = ["Is the treehouse build done yet?",
             "The treehouse build won't be finished before winter.",
             "We're nearly done with the treehouse build",
             "When the treehouse build is over I'll sleep for a week.",
             "I finished the roof of the shed and then started on the treehouse build"]


@pytest.mark.parametrize("text", ENDED)
def test_reworded_endings_end_the_project(text: str) -> None:
    assert ends(text, "treehouse build")


@pytest.mark.parametrize("text", NOT_ENDED)
def test_questions_plans_and_denials_do_not(text: str) -> None:
    assert not ends(text, "treehouse build")


INTRO = ["I'm building a treehouse for the kids, it's my summer project.",
         "We're working on a treehouse build in the back garden.",
         "The treehouse build needs a rope ladder next."]


def test_a_finished_project_becomes_an_archive_that_undo_restores(vault: Vault) -> None:
    for t in INTRO:
        said(vault, t, "2026-06-20T10:00:00Z")
    first = vault.consolidate().value
    project = [e for e in entity_table(vault) if e[2] == "Treehouse build"]
    assert project and project[0][1] == "project", entity_table(vault)
    eid = project[0][0]
    said(vault, "Good news: the treehouse build is done, the kids love it.",
         "2026-06-30T10:00:00Z")
    run = vault.consolidate().value
    assert run.counts.get("projects_archived") == 1
    row = next(e for e in entity_table(vault) if e[0] == eid)
    assert row[1:3] == ("archive", "Treehouse build")
    assert row[4] == "project" and row[6] == "finished"
    assert row[5] == parse_iso("2026-06-30T10:00:00Z")  # the day it was said to be over
    # a later mention goes to the archive: no second project of that name
    said(vault, "The treehouse build photos came out great.", "2026-07-01T10:00:00Z")
    vault.consolidate()
    assert [e[1] for e in entity_table(vault) if e[2] == "Treehouse build"] == ["archive"]
    vault.undo_run(vault.runs(1)[0].id)
    vault.undo_run(run.run_id)
    row = next(e for e in entity_table(vault) if e[0] == eid)
    assert row[1] == "project" and row[4:7] == (None, None, None)
    assert first.counts.get("projects_archived", 0) == 0


def test_an_idle_project_is_archived_dated_by_its_last_mention(vault: Vault) -> None:
    old = NOW - (PROJECT_IDLE_D + 5) * DAY
    recent = NOW - (PROJECT_IDLE_D - 5) * DAY
    from datetime import UTC, datetime

    def iso(ts: float) -> str:
        return datetime.fromtimestamp(ts, UTC).isoformat()
    for t in INTRO:
        said(vault, t, iso(old))
    for t in ("I'm writing a cookbook of family recipes.",
              "The cookbook has forty recipes so far.", "My cookbook needs photos."):
        said(vault, t, iso(recent))
    vault.consolidate()
    kinds = {e[2]: (e[1], e[4], e[5], e[6]) for e in entity_table(vault)}
    assert kinds["Treehouse build"] == ("archive", "project", old, "idle")
    assert kinds["Cookbook"][0] == "project"


def test_one_name_as_a_person_and_a_resource_is_one_entity_undone_exactly(
        vault: Vault) -> None:
    # "Spanish" is capitalised (a person by default) and studied (a resource): one run makes
    # both, and its merge step joins them, the resource kept
    for t in ("I've been learning Spanish for a year.", "My Spanish teacher is called Rosa.",
              "Spanish is hard but fun.", "I practise Spanish on the bus."):
        said(vault, t)
    vault.consolidate(steps=("extract",))
    before_table, before_mentions = entity_table(vault), mentions(vault)
    run = vault.consolidate().value
    spanish = [e for e in entity_table(vault) if e[2] == "Spanish"]
    assert sorted((e[1], e[3]) for e in spanish) == [("person", "merged"),
                                                      ("resource", "active")], spanish
    assert run.counts.get("entities_merged") == 1
    assert "Spanish" in {e.name for e in vault.entities(("resource",))}
    assert "Spanish" not in {e.name for e in vault.entities(("person",))}
    person, resource = sorted(spanish, key=lambda e: e[1])
    assert {m for e, m in mentions(vault) if e == person[0]} <= \
        {m for e, m in mentions(vault) if e == resource[0]}
    vault.undo_run(run.run_id)
    assert entity_table(vault) == before_table
    assert mentions(vault) == before_mentions


def test_variants_merge_and_the_person_can_keep_them_apart(vault: Vault) -> None:
    ids = [said(vault, t) for t in ("I saw Dr. Silva about my knee.", "Dr. Silva wants an x-ray.",
                                     "My friend says Silva is the best doctor in town.")]
    # Entities as an LLM extraction names them (the rules drop titles): one with the title,
    # one without, each with its own mentions.
    def put(c: Any) -> None:
        for name, mids in (("Dr. Silva", ids[:2]), ("Silva", ids[1:])):
            eid = c.execute("INSERT INTO entity (kind, name, name_key, agent, created_at, "
                            "updated_at) VALUES ('person', ?, ?, 'global', 0, 0)",
                            (name, name.casefold())).lastrowid
            c.executemany("INSERT INTO entity_mention VALUES (?, ?)", [(eid, m) for m in mids])
    inside(vault).db.write_sync(put)
    before_table, before_mentions = entity_table(vault), mentions(vault)
    vault.consolidate()
    table = {e[2]: e for e in entity_table(vault)}
    assert {"Dr. Silva", "Silva"} <= set(table), table
    a, b = table["Dr. Silva"], table["Silva"]
    merged, kept = (a, b) if a[3] == "merged" else (b, a)
    assert merged[3] == "merged" and merged[7] == kept[0] and kept[3] == "active"
    merges = vault.entity_merges(kept[0])
    assert [(m.kept, m.merged) for m in merges] == [(kept[0], merged[0])]
    own = {m for e, m in mentions(vault) if e == merged[0]}
    assert own <= {m for e, m in mentions(vault) if e == kept[0]}
    vault.undo_entity_merge(merges[0].id, different=True)
    pair = {kept[0], merged[0]}
    assert [e for e in entity_table(vault) if e[0] in pair] == \
        [e for e in before_table if e[0] in pair]
    assert {p for p in mentions(vault) if p[0] in pair} == \
        {p for p in before_mentions if p[0] in pair} | {p for p in mentions(vault)
                                                        if p[0] in pair and p[1] not in ids}
    table = {e[2]: e for e in entity_table(vault)}
    assert table["Dr. Silva"][3] == table["Silva"][3] == "active"
    assert {m for e, m in mentions(vault) if e == merged[0]} == own
    vault.consolidate()  # the person said they differ: never merged again
    assert {e[3] for e in entity_table(vault) if e[2] in ("Silva", "Dr. Silva")} == {"active"}
    assert vault.entity_merges(kept[0]) == []


@pytest.mark.parametrize(("a", "b"), [
    (Named("Ana", "person"), Named("Anna's bakery", "company")),
    (Named("Anna", "person"), Named("Anna's bakery", "company")),
    (Named("Java", "resource"), Named("JavaScript", "resource")),
    (Named("Marathon", "project"), Named("Half marathon", "project")),
    (Named("Mother", "person"), Named("Grandmother", "person")),
])
def test_hard_negatives_are_never_candidates(a: Named, b: Named) -> None:
    assert name_variant(a, b) is None


def test_name_variants() -> None:
    assert name_variant(Named("Mum", "person"), Named("Mom", "person")) == "name"
    assert name_variant(Named("Mrs. Patel", "person"), Named("Patel", "person")) == "name"
    assert name_variant(Named("Spanish", "resource"),
                        Named("Spanish on Duolingo", "resource")) == "variant"


def test_one_run_merges_a_kind_twin_and_a_longer_name_into_one(embedder: Any) -> None:
    from app.policy import ENTITY_MERGE_COSINE
    from app.services.entity_merge import EntityItem, plan
    scope = ("global", None)
    items = [EntityItem(1, scope, "Kitewood Studio", "company", 1),
             EntityItem(2, scope, "Kitewood", "company", 6),
             EntityItem(3, scope, "Kitewood", "person", 3),
             EntityItem(4, scope, "Kite", "company", 2),             # no variant of it
             EntityItem(5, ("other", None), "Kitewood", "person", 9)]  # another scope
    merges = plan(items, embedder.embed, ENTITY_MERGE_COSINE, [])
    assert merges == [(2, 3, "kind"), (2, 1, "name")]  # "Studio" is a head: no cosine needed
    assert plan(items, embedder.embed, ENTITY_MERGE_COSINE, [(1, 2), (2, 3)]) == []


def test_an_archive_reads_as_the_project_it_was_in_plain_words() -> None:
    from datetime import UTC

    from app import words
    at = parse_iso("2026-05-03T12:00:00Z")
    later = parse_iso("2026-07-02T12:00:00Z")
    assert words.entity_kind("archive", "project", at, "finished", now=later, tz=UTC) == \
        "project, finished 3 May 2026"
    assert words.entity_kind("archive", "project", at, "idle", now=later, tz=UTC) == \
        "project, quiet since 3 May 2026"
    assert words.entity_kind("company") == "organisation"


@pytest.mark.parametrize(("text", "name", "mine"), [
    ("Guess who starts her new position at Brightwell Labs on Monday? Me!",
     "Brightwell Labs", True),
    ("My husband's been a teacher for ten years at Hillcrest Academy.", "Hillcrest Academy",
     True),
    ("Tom finally got hired by Oakridge Logistics", "Oakridge Logistics", False),
    ("Fenwick & Co offered me the job!", "Fenwick & Co", True),
    ("she is studying nursing at Glasgow Caledonian", "Glasgow Caledonian", False),
    ("I've been volunteering with the Salvation Army since May", "Salvation Army", True),
])
def test_employers_and_schools_in_other_words(text: str, name: str, mine: bool) -> None:
    from app.services.organisations import organisations
    assert organisations(text) == {name: mine}


@pytest.mark.parametrize("text", [
    "I went running with Priya at Clapham Common on Monday",  # a friend and a park
    "We had lunch with Ana at noon",
    "I worked really hard at Christmas",
    "Lunch with the team was fun",
])
def test_people_places_and_times_are_no_organisation(text: str) -> None:
    from app.services.organisations import organisations
    assert organisations(text) == {}
