"""Scopes (issue 12, item 4; DESIGN 4): everything consolidation derives carries the narrowest
scope of its sources, and nothing is compared, merged or summarised across two agents. Each
derivation path is tested with two agents, "finance" and "health", whose assistants recall
global + their own memories (``Filters(agent=...)``). Also: migration 0015 repairs a vault
where the old code had written derived memories as global."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.clock import FixedClock, parse_iso
from app.domain.memory import Draft, Store
from app.facade import Vault
from app.services.recall import Filters
from tests.app.services.consolidation.fake_llm import FakeLlm, facts_reply
from tests.conftest import new_vault
from tests.inside import inside

NOW = parse_iso("2026-07-02T00:00:00Z")
DAY = 86400.0
PW = "pw-scope"
FINANCE = Filters(agent="finance")
HEALTH = Filters(agent="health")


@pytest.fixture(scope="module")
def embedder() -> Any:
    from storage.embedder import Embedder, find_model_dir
    path = find_model_dir()
    if path is None:
        pytest.fail("the embedding model is required: set KEPT_MODEL_DIR (see README)")
    return Embedder(path)


@pytest.fixture
def vault(vault_dir: Path, fast_kdf: object, embedder: Any,
          monkeypatch: pytest.MonkeyPatch) -> Iterator[Vault]:
    from app import bootstrap
    monkeypatch.setattr(bootstrap, "load_embedder",
                        lambda load_model: (embedder, embedder.model_dir) if load_model
                        else (None, None))
    v = new_vault(vault_dir, PW, threaded=False, clock=FixedClock(NOW), use_chroma=False)
    yield v
    if not v.locked:
        v.lock()


def said(v: Vault, agent: str, text: str, at: str = "2026-06-01T10:00:00Z", **kw: Any) -> int:
    return int(v.remember(Draft(text=text, store=Store.EPISODIC, occurred_at=parse_iso(at),
                                speaker="Sam", agent=agent, **kw)).value)


def rows(v: Vault, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in inside(v).db.read(lambda c: c.execute(sql, params).fetchall())]


def derived(v: Vault, store: str) -> dict[str, tuple[str, str | None]]:
    """text -> (agent, context) of the active memories of a derived store."""
    return {r[0]: (r[1], r[2]) for r in rows(
        v, "SELECT text, agent, context FROM memory WHERE store = ? AND status = 'active'",
        store)}


def recalled(v: Vault, query: str, filters: Filters) -> list[str]:
    return [h.text for h in v.recall(query, k=10, touch=False, filters=filters)]


# --- facts -----------------------------------------------------------------------------------

def test_a_fact_keeps_its_source_agent_and_another_agent_never_recalls_it(vault: Vault) -> None:
    said(vault, "finance", "I live in Lisbon, near the river.")
    said(vault, "health", "I'm allergic to penicillin.", context="clinic")
    report = vault.consolidate().value
    assert report.failed_batches == 0
    facts = derived(vault, "semantic")
    assert facts["Sam lives in Lisbon"] == ("finance", None)
    assert facts["Sam is allergic to penicillin"] == ("health", "clinic")
    semantic = Filters(agent="health", stores=("semantic",))
    assert "Sam lives in Lisbon" not in recalled(vault, "where does Sam live", semantic)
    assert "Sam lives in Lisbon" in recalled(
        vault, "where does Sam live", Filters(agent="finance", stores=("semantic",)))
    # The context (hat) narrows too: another hat of the same agent does not see it.
    other_hat = Filters(agent="health", context="gym", stores=("semantic",))
    assert "Sam is allergic to penicillin" not in recalled(vault, "allergic", other_hat)


def test_facts_of_two_agents_are_never_compared_or_merged(vault: Vault) -> None:
    said(vault, "finance", "I live in Lisbon, near the river.", "2026-05-01T10:00:00Z")
    said(vault, "health", "I live in Porto with two roommates.", "2026-05-03T10:00:00Z")
    said(vault, "finance", "I'm allergic to peanuts.", "2026-05-01T11:00:00Z")
    said(vault, "health", "Remember, I am allergic to peanuts!", "2026-05-03T11:00:00Z")
    report = vault.consolidate().value
    # No contradiction between the cities, nothing superseded, no corroboration across.
    assert "contradictions_found" not in report.counts
    assert "facts_corroborated" not in report.counts
    assert rows(vault, "SELECT count(*) FROM contradiction") == [(0,)]
    assert rows(vault, "SELECT count(*) FROM memory WHERE status = 'superseded'") == [(0,)]
    peanuts = rows(vault, "SELECT agent FROM memory WHERE text = 'Sam is allergic to peanuts' "
                   "ORDER BY agent")
    assert peanuts == [("finance",), ("health",)]
    # Identical statements in two scopes: near duplicates, but never linked SIMILAR_TO.
    assert rows(vault, "SELECT count(*) FROM link WHERE kind = 'SIMILAR_TO'") == [(0,)]
    assert recalled(vault, "where does Sam live", Filters(agent="health", stores=(
        "semantic",)))[:1] == ["Sam lives in Porto"]


def test_within_one_agent_facts_still_merge_and_conflict(vault: Vault) -> None:
    """The control: the same statements in one scope do meet."""
    said(vault, "finance", "I live in Lisbon, near the river.", "2026-05-01T10:00:00Z")
    said(vault, "finance", "I live in Porto with two roommates.", "2026-05-03T10:00:00Z")
    said(vault, "finance", "I'm allergic to peanuts.", "2026-05-01T11:00:00Z")
    said(vault, "finance", "Remember, I am allergic to peanuts!", "2026-05-03T11:00:00Z")
    report = vault.consolidate().value
    assert report.counts["contradictions_found"] == 1
    assert report.counts["facts_corroborated"] == 1


# --- entities and summaries ------------------------------------------------------------------

def test_entities_and_summaries_stay_in_their_scope(vault: Vault) -> None:
    recent = "2026-06-28T10:00:00Z"  # summaries hold hot and warm facts only
    for n in range(3):  # Dr Okafor: three times, all in finance
        said(vault, "finance", f"Dr Okafor sent the invoice number {n}.", recent)
    for n in range(2):  # Marta: twice in each agent, never three times in one
        said(vault, "finance", f"Marta called about the rent {n}.", recent)
        said(vault, "health", f"Marta came to yoga {n}.", recent)
    for n in range(3):  # Ana: three global mentions; a finance relation to her
        said(vault, "global", f"I had lunch with Ana on day {n}.", recent)
    said(vault, "finance", "My sister Ana lends me money.", recent)
    said(vault, "finance", "I live in Lisbon, near the river.", recent)
    vault.consolidate()
    entities = {(r[0], r[1]): r[2] for r in rows(
        vault, "SELECT name, agent, summary FROM entity")}
    okafor = [agent for name, agent in entities if "Okafor" in name]
    assert okafor == ["finance"]
    assert not any(name == "Marta" for name, _ in entities)
    # Ana exists globally (three global mentions) and in finance (a stated relation).
    assert ("Ana", "global") in entities and ("Ana", "finance") in entities
    # Sam (the speaker) is a person in both scopes; only finance's summary holds the
    # finance fact.
    assert "Lisbon" in (entities[("Sam", "finance")] or "")
    assert "Lisbon" not in (entities[("Sam", "global")] or "")
    mentions = rows(vault, "SELECT e.agent, m.agent FROM entity_mention em JOIN entity e ON "
                    "e.id = em.entity_id JOIN memory m ON m.id = em.memory_id")
    assert mentions and all(a == b for a, b in mentions)


# --- statistics, habits, promotion -------------------------------------------------------------

def test_statistics_and_habits_are_computed_per_agent(vault: Vault) -> None:
    saturdays = ["2026-04-04", "2026-04-11", "2026-04-18", "2026-04-25"]
    for d in saturdays[:2]:  # climbing: twice for each agent, never three times in one
        said(vault, "finance", "I went climbing with the gang this morning.", d + "T09:00:00Z")
    for d in saturdays[2:]:
        said(vault, "health", "I went climbing with the gang this morning.", d + "T09:00:00Z")
    for d in saturdays[:3]:  # swimming: three times in health
        said(vault, "health", "I went swimming before work.", d + "T07:00:00Z")
    vault.consolidate()
    procedures = derived(vault, "procedural")
    assert not any("climbing" in t for t in procedures)
    assert [s for t, s in procedures.items() if "swimming" in t] == [("health", None)]
    stats = rows(vault, "SELECT s.metric, s.sample_size, m.agent FROM statistic s JOIN memory m "
                 "ON m.id = s.memory_id WHERE s.metric = 'episodes_per_active_day' ORDER BY 3")
    assert stats == [("episodes_per_active_day", 2, "finance"),
                     ("episodes_per_active_day", 5, "health")]
    # A finance assistant's statistics say nothing about health's events.
    finance_stats = [h.text for h in vault.recall("events a day", k=10, touch=False, filters=Filters(
        agent="finance", stores=("implicit",)))]
    assert finance_stats and all("2 events" in t or "of 2" in t or "(2 " in t
                                 for t in finance_stats if "events" in t)


def test_a_promoted_memory_keeps_its_scope(vault: Vault) -> None:
    mid = said(vault, "finance", "The tax office moved the deadline to the first of March.",
               "2026-01-10T10:00:00Z", importance=0.9, emotional=0.0)
    inside(vault).db.write_sync(lambda c: c.execute(
        "UPDATE memory SET access_count = 12, created_at = ? WHERE id = ?",
        (NOW - 60 * DAY, mid)))
    report = vault.consolidate(steps=("decay",)).value
    assert report.counts.get("promoted") == 1
    [(agent, context)] = rows(vault, "SELECT m.agent, m.context FROM link l JOIN memory m ON "
                              "m.id = l.src WHERE l.dst = ? AND l.kind = 'PROMOTED_FROM'", mid)
    assert (agent, context) == ("finance", None)


# --- the LLM sees one scope per request --------------------------------------------------------

def test_an_llm_batch_never_mixes_agents(vault_dir: Path, fast_kdf: object) -> None:
    with FakeLlm().running() as fake:
        v = Vault.create(vault_dir, PW, kdf=fast_kdf, threaded=False, clock=FixedClock(NOW),
                         use_chroma=False, load_model=False).vault
        try:
            v.set_setting("extraction.provider", "llm")
            v.set_setting("extraction.llm_base_url", fake.base_url)
            v.set_setting("extraction.llm_model", "tiny-local")
            v.set_setting("extraction.redact", False)
            fin = said(v, "finance", "My accountant is called Bruno.")
            said(v, "health", "My physio is called Clara.")
            fake.script(facts_reply([{
                "subject": "Sam", "predicate": "accountant", "object": "Bruno",
                "statement": "Sam's accountant is Bruno", "category": "relationship",
                "confidence": 0.9, "store": "semantic", "change": False,
                "source_ids": [fin]}]), facts_reply([]))
            report = v.consolidate(steps=("extract",)).value
            prompts = [str(r.get("messages")) for r in fake.requests]
            assert len(prompts) == 2
            assert all(("Bruno" in p) != ("Clara" in p) for p in prompts)
            assert report.llm_fallbacks == {} and report.failed_batches == 0
            assert derived(v, "semantic") == {"Sam's accountant is Bruno": ("finance", None)}
        finally:
            v.lock()


# --- migration 0015 repairs what the old code wrote --------------------------------------------

def test_migration_rescopes_leaked_facts_and_entities(vault_dir: Path, fast_kdf: object,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import storage.migrations as migrations
    everything = migrations.migration_names
    monkeypatch.setattr(migrations, "migration_names",
                        lambda: [n for n in everything() if n < "0015"])
    v = Vault.create(vault_dir, PW, kdf=fast_kdf, threaded=False, clock=FixedClock(NOW),
                     use_chroma=False, load_model=False).vault
    ep = said(v, "finance", "I live in Lisbon.")
    glob = said(v, "global", "Ana phoned.")

    def old(c: Any) -> None:  # what the old consolidation wrote: a global fact, global entity
        from app.domain.memory import MemoryId
        from storage import repo
        d = Draft(text="Sam lives in Lisbon", store=Store.SEMANTIC, occurred_at=NOW,
                  derived_from=(MemoryId(ep),))
        from app.services.consolidation import scoring_defaults
        repo.insert_memory(c, d, now=NOW, decay_class="semantic", scores=scoring_defaults(),
                           confidence=0.8)
        c.execute("INSERT INTO entity (id, kind, name, name_key, summary, created_at, "
                  "updated_at) VALUES (7, 'person', 'Ana', 'ana', 'Sam lives in Lisbon', ?, ?)",
                  (NOW, NOW))
        c.execute("INSERT INTO entity_mention VALUES (7, ?), (7, ?)", (ep, glob))
    inside(v).db.write_sync(old)
    v.lock()
    monkeypatch.setattr(migrations, "migration_names", everything)
    v = Vault.open(vault_dir, PW, threaded=False, use_chroma=False, load_model=False,
                   clock=FixedClock(NOW))
    try:
        assert derived(v, "semantic") == {"Sam lives in Lisbon": ("finance", None)}
        assert rows(v, "SELECT id, name, agent, context, summary FROM entity") == [
            (7, "Ana", "global", None, None)]
        assert rows(v, "SELECT entity_id, memory_id FROM entity_mention") == [(7, glob)]
        # The entity counter carried over: a new entity never takes an old id.
        inside(v).db.write_sync(lambda c: c.execute(
            "INSERT INTO entity (kind, name, name_key, agent, created_at, updated_at) VALUES "
            "('person', 'Ana', 'ana', 'finance', ?, ?)", (NOW, NOW)))
        assert rows(v, "SELECT max(id) FROM entity") == [(8,)]
        assert "Sam lives in Lisbon" not in recalled(v, "Lisbon", HEALTH)
    finally:
        v.lock()
