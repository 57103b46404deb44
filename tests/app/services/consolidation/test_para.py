"""PARA that fills itself (issue 15 item 4; DESIGN 4 "PARA entities"): projects, areas and
resources are made from what people say, per scope like people, with their mentions linked;
summaries hold facts learned recently even when the conversation is old (a fact learned today
from a May conversation is not cold on day one); and one agent's memories never make, or count
towards, an entity of another scope. Real SQLCipher vault, real ONNX model."""

from __future__ import annotations

import pytest

from app.api import MemoryQuery
from app.facade import Vault
from tests.app.services.consolidation.conftest import NOW, rows, said

DAY = 86400.0


@pytest.fixture
def vault(maya_vault: Vault) -> Vault:
    return maya_vault


def entities(v: Vault) -> dict[tuple[str, str, str], int]:
    """(kind, name, agent) -> id."""
    return {(r[1], r[2], r[3]): r[0] for r in rows(v, "SELECT id, kind, name, agent FROM entity")}


def mentioned(v: Vault, eid: int) -> set[int]:
    return {r[0] for r in rows(v, "SELECT memory_id FROM entity_mention WHERE entity_id = ?",
                               eid)}


CONVERSATION = [
    "I'm writing a children's book about a dragon who is scared of fire.",        # project
    "The children's book has twelve chapters now, only the ending is missing.",
    "My doctor says my blood pressure is better since I started walking.",          # area
    "I booked a check-up because my knee hurts when I climb stairs.",
    "I've been seeing a therapist on Tuesdays, it helps my sleep a lot.",
    "I've been reading Atomic Habits lately.",                                     # resource
    "I play the violin in a small orchestra on Thursdays.",                          # hobby
]


def test_a_conversation_makes_a_project_an_area_and_a_resource_with_mentions(
        vault: Vault) -> None:
    ids = [said(vault, t) for t in CONVERSATION]
    report = vault.consolidate().value
    assert report.failed_batches == 0
    made = entities(vault)
    book = made[("project", "Children's book", "global")]
    health = made[("area", "Health", "global")]
    habits = made[("resource", "Atomic Habits", "global")]
    violin = made[("area", "Violin", "global")]
    assert {ids[0], ids[1]} <= mentioned(vault, book)
    assert {ids[2], ids[3], ids[4]} <= mentioned(vault, health)
    assert ids[5] in mentioned(vault, habits)
    assert ids[6] in mentioned(vault, violin)
    # the extracted fact names the book, so it is one of the resource's facts
    facts = rows(vault, "SELECT m.text FROM entity_mention em JOIN memory m ON m.id = "
                 "em.memory_id WHERE em.entity_id = ? AND m.store = 'semantic'", habits)
    assert ("Maya is reading Atomic Habits",) in facts
    # what the window and the export read: the kinds, with their mention counts
    listed = {(e.kind, e.name): e.mentions for e in vault.entities()}
    assert listed[("project", "Children's book")] >= 2
    assert listed[("area", "Health")] >= 3
    # nothing is made of a word said in passing: no "Train" resource, no "Ending" project
    assert not {n for k, n, _ in made if k in ("project", "resource")} - {
        "Children's book", "Atomic Habits"}
    # a second run makes nothing again and links nothing twice
    again = vault.consolidate().value
    assert again.counts.get("entities_created", 0) == 0


def test_an_old_conversation_imported_today_gets_summaries(vault: Vault) -> None:
    may = "2026-05-04T18:00:00Z"  # 59 days before NOW: cold by when it was said
    said(vault, "I've been reading Atomic Habits before bed.", may)
    said(vault, "I live in Porto with my partner.", may)
    vault.consolidate()
    summaries = {(r[0], r[1]): r[2] for r in rows(vault, "SELECT kind, name, summary FROM entity")}
    # learned today: hot, so in the summaries of the person and of the book
    assert "Maya lives in Porto" in (summaries[("person", "Maya")] or "")
    assert "Maya is reading Atomic Habits" in (summaries[("resource", "Atomic Habits")] or "")
    # the lists and Explain count the same way: hot, not cold on day one
    fact = vault.page_memories(MemoryQuery(store="semantic")).rows[0]
    assert fact.tier == "hot"
    assert vault.explain(fact.id).tier == "hot"
    # forty days later, never read again: cold by both dates, so out of the summaries
    vault.consolidate(now=NOW + 40 * DAY, steps=("synthesis",))
    later = {(r[0], r[1]): r[2] for r in rows(vault, "SELECT kind, name, summary FROM entity")}
    assert later[("person", "Maya")] is None
    assert later[("resource", "Atomic Habits")] is None


def test_one_agents_memories_never_make_an_entity_of_another_scope(vault: Vault) -> None:
    # finance states a project; global and health only talk about it, twice each
    said(vault, "I'm planning a garden party for the neighbours.", agent="finance")
    for n in range(2):
        said(vault, f"The garden party needs {n + 3} more chairs.", agent="global")
        said(vault, f"The garden party menu has {n + 2} salads.", agent="health")
    # the area cue twice in each of two agents, never three times in one
    for agent in ("finance", "health"):
        said(vault, "My doctor called back about the results.", agent=agent)
        said(vault, "I missed my therapy session this week.", agent=agent)
    # a context is a scope of its own: three mentions there make the area there only
    for text in ("My doctor moved my appointment.", "My physio gave me new exercises.",
                 "My health is better this month."):
        said(vault, text, agent="health", context="clinic")
    # an assistant's "I'm building ..." is not the person's project
    said(vault, "I'm building a spreadsheet for your budget review.", agent="finance",
         speaker="assistant")
    vault.consolidate()
    made = entities(vault)
    para = {(k, n, a) for k, n, a in made if k in ("project", "area", "resource")}
    assert ("project", "Garden party", "finance") in para
    assert not any(n == "Garden party" and a != "finance" for _, n, a in para)
    health = [(a, c) for (k, n, a, c) in rows(vault, "SELECT kind, name, agent, context "
                                                    "FROM entity") if n == "Health"]
    assert health == [("health", "clinic")]
    assert not any(n.casefold() == "spreadsheet" for _, n, _ in para)
    scoped = rows(vault, "SELECT e.agent, e.context, m.agent, m.context FROM entity_mention em "
                  "JOIN entity e ON e.id = em.entity_id JOIN memory m ON m.id = em.memory_id")
    assert scoped and all((a, c) == (ma, mc) for a, c, ma, mc in scoped)
