"""Redaction before any LLM call covers money, health, government ids, addresses and credentials
(issue 27 item 11), on text shaped like what people type, through the real extractor and a real
local HTTP server (``FakeLlm``): nothing private in the bytes sent, the real values back in the
facts."""

from __future__ import annotations

import pytest

from app.domain.fact import EpisodeView
from app.services.llm import LlmConfig, LlmExtractor, consent_text, redact, unredact
from app.services.llm.consent import EXAMPLE
from tests.app.services.consolidation.fake_llm import FakeLlm, facts_reply

T0 = 1_714_557_600.0

# (what a person typed, the private values in it)
SAID = [
    ("My salary is 48,000 euros and I was diagnosed with asthma in March.",
     ["48,000 euros", "asthma"]),
    ("ugh rent went up to £1,450 a month, landlord says it's 'market rate'", ["£1,450"]),
    ("Got my bonus, $3.2k, putting it all in savings lol", ["$3.2k"]),
    ("doc put me on sertraline 50mg for the anxiety, feeling a bit weird", ["sertraline 50mg",
                                                                          "anxiety"]),
    ("Mum's been diagnosed with type 2 diabetes so we're all eating less sugar",
     ["type 2 diabetes"]),
    ("new place is 27B Albion Street, LS2 8JS, come over saturday", ["27B Albion Street",
                                                                    "LS2 8JS"]),
    ("we moved to 1180 Maple Avenue, Austin TX 78704 last week", ["1180 Maple Avenue",
                                                                 "TX 78704"]),
    ("wifi password is Tr0ub4dor&3 if you need it", ["Tr0ub4dor&3"]),
    ("can you remember my PIN: 4821 for the storage unit", ["4821"]),
    ("my SSN is 078-05-1120, don't lose it", ["078-05-1120"]),
    ("NI number is AB 12 34 56 C for the form", ["AB 12 34 56 C"]),
    ("passport number is X12345678, expires 2031", ["X12345678"]),
    ("pay the deposit to GB33BUKB20201555555555 please", ["GB33BUKB20201555555555"]),
    ("the test key is sk-proj-4f9XkQ2mZ7yL1pW8vR3nT6bH", ["sk-proj-4f9XkQ2mZ7yL1pW8vR3nT6bH"]),
]

# What must stay: dates, times, counts, years, plain numbers, places without a house number.
KEPT = ("We met on 2024-05-01 at 10:30 with 3 friends in 2019; I ran 5 km in 31 minutes. "
        "I live in York and work at Northwind. Sunday 9:00 is fine.")


@pytest.mark.parametrize(("text", "private"), SAID, ids=[s[:24] for s, _ in SAID])
def test_each_private_value_is_replaced_and_comes_back(text: str, private: list[str]) -> None:
    sent, mapping = redact(text, [])
    for value in private:
        assert value not in sent, (value, sent)
    assert unredact(sent, mapping) == text


def test_ordinary_numbers_dates_and_places_are_left_alone() -> None:
    sent, mapping = redact(KEPT, ["Sam"])
    assert sent == KEPT and mapping == {}


def test_lower_case_words_are_not_names() -> None:
    """Names stay case-sensitive (only the value shapes and their cue words are not)."""
    sent, _ = redact("Will said he will call Ana, not ana or banana.", ["Will", "Ana"])
    assert sent == "[PERSON_1] said he will call [PERSON_2], not ana or banana."


def test_a_batch_sends_no_private_value_and_the_facts_get_them_back(fake: FakeLlm) -> None:
    episodes = [EpisodeView(id=100 + n, speaker="Marguerite", occurred_at=T0 + n, text=t)
                for n, (t, _) in enumerate(SAID)]
    fake.script(facts_reply([
        {"subject": "[PERSON_1]", "predicate": "salary", "object": "[MONEY_1]",
         "statement": "[PERSON_1] earns [MONEY_1]", "category": "work", "confidence": 0.9,
         "store": "semantic", "change": False, "source_ids": [100]},
        {"subject": "[PERSON_1]", "predicate": "condition", "object": "[HEALTH_1]",
         "statement": "[PERSON_1] was diagnosed with [HEALTH_1]", "category": "health",
         "confidence": 0.9, "store": "semantic", "change": False, "source_ids": [100]},
        {"subject": "[PERSON_1]", "predicate": "lives_at", "object": "[ADDRESS_1]",
         "statement": "[PERSON_1] lives at [ADDRESS_1]", "category": "place",
         "confidence": 0.9, "store": "semantic", "change": True, "source_ids": [105]}]))
    ex = LlmExtractor(LlmConfig(base_url=fake.base_url, model="m"))
    facts, _ = ex.extract(episodes, [], lambda raw, err: None)
    body = fake.raw_requests[0].decode("utf-8")
    for _text, private in SAID:
        for value in private:
            assert value not in body, value
    for ph in ("[MONEY_1]", "[HEALTH_1]", "[ADDRESS_1]", "[SECRET_1]", "[ID_1]",
               "[ACCOUNT_1]", "[PERSON_1]"):
        assert ph in body, ph
    said = {f.predicate: f for f in facts}
    assert said["salary"].object == "48,000 euros"
    assert said["condition"].statement == "Marguerite was diagnosed with asthma"
    assert said["lives_at"].object == "27B Albion Street"


def test_redaction_off_sends_the_values(fake: FakeLlm) -> None:
    fake.script(facts_reply([]))
    ex = LlmExtractor(LlmConfig(base_url=fake.base_url, model="m", redact=False))
    ex.extract([EpisodeView(id=1, speaker="M", occurred_at=T0, text=SAID[0][0])], [],
               lambda raw, err: None)
    assert "48,000 euros" in fake.raw_requests[0].decode("utf-8")


def test_the_consent_text_shows_what_is_sent() -> None:
    text = consent_text("https://api.example.com/v1")
    sent, _ = redact(EXAMPLE, ["Sam Reyes"])
    assert f"“{EXAMPLE}” is sent as “{sent}”" in text
    assert "£48,000" not in sent and "asthma" not in sent and "4 Mill Lane" not in sent
