"""The LLM extractor inside consolidation, against the fake OpenAI-compatible server on
127.0.0.1: facts arrive with provenance, an LLM delete only reaches the inbox, and a broken
reply keeps its raw text encrypted while the batch falls back to the rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.api import Turn
from app.clock import parse_iso
from app.facade import Vault
from app.services.recall import Filters
from tests.app.services.consolidation.fake_llm import FakeLlm, facts_reply, llm_vault, raw
from tests.inside import inside

NOW = parse_iso("2026-07-02T00:00:00Z")


@pytest.fixture
def vault(vault_dir: Path, fast_kdf: object, fake: FakeLlm) -> Vault:
    v = llm_vault(vault_dir, "pw-llm", fast_kdf, NOW, fake)
    yield v
    v.lock()


def episodes(v: Vault) -> dict[str, int]:
    return dict(inside(v).db.read(lambda c: c.execute(
        "SELECT m.ref, e.id FROM memory m JOIN link l ON l.dst = m.id AND l.kind = "
        "'DERIVED_FROM' JOIN memory e ON e.id = l.src WHERE e.store = 'episodic'").fetchall()))


def test_llm_facts_with_provenance_and_deletes_go_to_the_inbox(vault: Vault,
                                                               fake: FakeLlm) -> None:
    vault.import_turns([Turn("s", "Sam", "I live in Lisbon now.", parse_iso("2026-06-01T10:00:00Z"), "t1")])
    ep = episodes(vault)["t1"]
    fake.script(facts_reply([{"subject": "Sam", "predicate": "lives_in", "object": "Lisbon",
                              "statement": "Sam lives in Lisbon", "category": "place",
                              "confidence": 0.9, "store": "semantic", "change": False,
                              "source_ids": [ep]}]))
    report = vault.consolidate(steps=("extract",)).value
    assert report.counts["facts_created"] == 1
    hit = vault.recall("where does Sam live", k=1, touch=False)[0]
    assert hit.text == "Sam lives in Lisbon" and hit.refs == ("t1",)
    assert fake.requests[0]["model"] == "tiny-local"
    # Next batch: the LLM says to delete that fact. Nothing is deleted; the person reviews.
    vault.import_turns([Turn("s", "Sam", "Forget where I live.", parse_iso("2026-06-02T10:00:00Z"), "t2")])
    fake.script(facts_reply([], deletes=[{"memory_id": None, "statement": "Sam lives in Lisbon",
                                          "reason": "user asked"}]))
    before = vault.status().totals
    vault.consolidate(steps=("extract",))
    assert vault.status().totals == before
    inbox = vault.contradictions()
    assert len(inbox) == 1 and inbox[0].a.text == "Sam lives in Lisbon"
    assert inbox[0].kind == "review" and inbox[0].reason == "user asked"


def test_broken_replies_are_kept_and_the_rules_take_over(vault: Vault,
                                                         fake: FakeLlm) -> None:
    vault.import_turns([Turn("s", "Sam", "My favorite book is Dune.", parse_iso("2026-06-01T10:00:00Z"), "b1")])
    fake.script(raw("this is not json"), raw('{"facts": [{"subject": 7}]}'))
    report = vault.consolidate(steps=("extract",)).value
    assert report.counts["facts_created"] == 1  # the rules found it
    facts = Filters(stores=("semantic",))
    assert vault.recall("favorite book", k=1, touch=False, filters=facts)[0].text == \
        "Sam's favorite book is Dune"
    replies = inside(vault).db.read(lambda c: c.execute(
        "SELECT raw, error FROM llm_reply ORDER BY id").fetchall())
    assert [r[0] for r in replies][0].find("this is not json") >= 0
    assert all(r[1].startswith("ParseError") for r in replies)
    # Forgetting the turn takes the stored replies about it too.
    plan = vault.forget_plan(query="Dune")
    assert plan.rows.get("llm_reply") == len(replies)
    vault.forget(plan)
    assert inside(vault).db.read(
        lambda c: c.execute("SELECT count(*) FROM llm_reply").fetchone()[0]) == 0


def test_cloud_endpoint_without_consent_falls_back_without_connecting(
        vault: Vault, fake: FakeLlm) -> None:
    vault.set_setting("extraction.llm_base_url", "https://api.example.com/v1")
    vault.import_turns([Turn("s", "Sam", "I'm allergic to cats.", parse_iso("2026-06-01T10:00:00Z"), "c1")])
    report = vault.consolidate(steps=("extract",)).value
    assert report.counts["facts_created"] == 1
    assert fake.requests == []
