"""Never-remember categories (issue 23 item 6, reference 003): what the person chose is never
sent to an LLM endpoint (a real local HTTP server records every request) and, if they choose,
never stored (remember refuses it; an import skips it and says how many). Real vaults."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.api import Turn
from app.domain.memory import Draft
from app.errors import ValidationError
from app.services import sensitive
from tests.app.services.consolidation.fake_llm import FakeLlm, facts_reply, llm_vault

NOW = 1_790_000_000.0


@pytest.mark.parametrize("text, category", [
    ("my password for the bank app is hunter2", "credentials"),
    ("here's my api key sk-abc123abc123abc123abc123", "credentials"),
    ("passport number is X1234567, expires in May", "government_ids"),
    ("my salary went up to $72,000 this year", "finances"),
    ("I still owe my brother money for the car", "finances"),
    ("I was diagnosed with asthma last spring", "health"),
    ("my therapist thinks the new meds help", "health"),
    ("I live at 42 Harbour Street now", "address"),
])
def test_categories_are_found_by_their_words_and_shapes(text: str, category: str) -> None:
    assert category in sensitive.categories_of(text)


@pytest.mark.parametrize("text", ["I moved to Lisbon last spring", "we adopted a puppy",
                                  "my sister Ana works at a bakery",
                                  "the weather has been lovely"])
def test_ordinary_talk_touches_no_category(text: str) -> None:
    assert sensitive.categories_of(text) == set()


def test_never_sent_to_the_llm_but_still_read_by_the_rules(vault_dir: Path, fast_kdf: object,
                                                           fake: FakeLlm) -> None:
    v = llm_vault(vault_dir, "pw-never", fast_kdf, NOW, fake)
    try:
        v.set_setting("privacy.never_send", "health,credentials")
        v.remember(Draft("I was diagnosed with asthma in March", speaker="Sam",
                         occurred_at=NOW - 3600))
        v.remember(Draft("I moved to Lisbon last spring", speaker="Sam",
                         occurred_at=NOW - 1800))
        fake.script(facts_reply([{"subject": "Sam", "predicate": "lives_in",
                                  "object": "Lisbon", "statement": "Sam lives in Lisbon"}]))
        report = v.consolidate(now=NOW).value
        sent = json.dumps(fake.requests)
        assert fake.requests and "Lisbon" in sent
        assert "asthma" not in sent and "diagnosed" not in sent
        assert report.counts.get("kept_from_llm") == 1
    finally:
        v.lock()


def test_never_stored_when_the_person_chooses(vault_dir: Path, fast_kdf: object) -> None:
    from app.facade import Vault
    v = Vault.create(vault_dir, "pw-store", kdf=fast_kdf, threaded=False,  # type: ignore[arg-type]
                     use_chroma=False, load_model=False).vault
    try:
        v.set_setting("privacy.never_store", "finances")
        with pytest.raises(ValidationError, match="never to store"):
            v.remember(Draft("my salary is 48,000 euros"))
        r = v.import_turns([
            Turn("s", "me", "my salary is 48,000 euros a year", NOW, "s:1"),
            Turn("s", "me", "I owe the bank for the flat", NOW + 1, "s:2"),
            Turn("s", "me", "we went hiking on Sunday", NOW + 2, "s:3")]).value
        assert r.added == 1
        assert [(s.what, s.count) for s in r.skipped] == [
            ("turns about finances (never stored, your setting)", 2)]
        from app.api import MemoryQuery
        texts = [m.text for m in v.page_memories(MemoryQuery(status=None)).rows]
        assert not any("salary" in t or "owe" in t for t in texts)
    finally:
        v.lock()


def test_open_slots_meet_whatever_they_are_called(vault_dir: Path, fast_kdf: object) -> None:
    """Issue 23 item 2: any slot an assistant names holds one value at a time ("milk in
    coffee", "vet"), and names of one slot meet ("employer" and "works at")."""
    from app.api import AssistantFact
    from app.facade import Vault
    v = Vault.create(vault_dir, "pw-slots", kdf=fast_kdf, threaded=False,  # type: ignore[arg-type]
                     use_chroma=False, load_model=False).vault
    try:
        v.pair_agent("helper")
        first = v.remember_fact(AssistantFact(subject="Maya", attribute="milk in coffee",
                                              value="oat", valid_from=NOW - 86_400 * 30),
                                agent="helper").value
        later = v.remember_fact(AssistantFact(subject="Maya", attribute="coffee milk",
                                              value="soy", valid_from=NOW), agent="helper").value
        assert first.status == later.status == "saved" and later.contradictions == 1
        job = v.remember_fact(AssistantFact(subject="Maya", attribute="employer",
                                            value="Acme"), agent="helper").value
        other = v.remember_fact(AssistantFact(subject="Maya", attribute="works at",
                                              value="Globex"), agent="helper").value
        assert job.status == "saved" and other.contradictions == 1
        likes = v.remember_fact(AssistantFact(subject="Maya", attribute="likes",
                                              value="jazz"), agent="helper").value
        more = v.remember_fact(AssistantFact(subject="Maya", attribute="likes",
                                             value="hiking"), agent="helper").value
        assert likes.status == more.status == "saved" and more.contradictions == 0
    finally:
        v.lock()
