"""Never-remember categories (issue 23 item 6, reference 003's "never remember" rules). Layer:
app. Pure.

The person picks categories of what they say that must never reach an LLM endpoint (setting
``privacy.never_send``; by default credentials and government ids) and, if they choose, that
must never be stored at all (``privacy.never_store``; by default none). A category is found by
its vocabulary and the shapes of its values (a card number, an IBAN, "my password is ..."),
never by a model: it must work offline and explain itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

CATEGORIES: dict[str, tuple[str, ...]] = {
    "credentials": (
        r"\b(?:password|passcode|passphrase|pin(?: code)?|api key|secret key|access token|"
        r"auth token|private key|seed phrase|recovery phrase|2fa code|otp|login (?:is|details))"
        r"\b",
        r"\b(?:sk|pk|ghp|xox[bp])[-_][A-Za-z0-9]{16,}\b"),
    "government_ids": (
        r"\b(?:social security (?:number|no)|ssn|passport (?:number|no)|national insurance|"
        r"tax (?:id|number)|driver'?s licen[cs]e (?:number|no)|id card number|nif|bsn)\b",
        r"\b\d{3}-\d{2}-\d{4}\b"),
    "finances": (
        r"\b(?:salary|income|paycheck|pay rise|raise of|bank account|account number|iban|"
        r"sort code|routing number|credit card|debit card|card number|credit score|debt|debts|"
        r"loan|mortgage|overdraft|savings|net worth|owe|owes|owed|bankrupt|invest(?:ed|ment)s?)"
        r"\b",
        r"(?:[$€£¥]\s?\d[\d,.]*|\b\d[\d,.]*\s?(?:dollars|euros|pounds|usd|eur|gbp|k a year)\b)",
        r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){3,7}\b", r"\b(?:\d{4}[ -]?){3}\d{4}\b"),
    "health": (
        r"\b(?:diagnos(?:ed|is)|medication|meds|prescri(?:bed|ption)|therapy|therapist|"
        r"psychiatrist|depression|depressed|anxiety|panic attacks?|adhd|autism|diabetes|"
        r"asthma|cancer|tumou?r|chemo|hiv|std|sti|pregnan(?:t|cy)|miscarriage|ibs|crohn'?s|"
        r"surgery|biopsy|blood pressure|cholesterol|migraines?|epilepsy|bipolar|ptsd|"
        r"eating disorder|rehab|addiction|sober|symptoms?|illness|disease|condition)\b",),
    "address": (
        r"\b\d{1,5}\s+(?:[A-Z][a-z]+\s){1,3}(?:street|st|road|rd|avenue|ave|lane|ln|drive|dr|"
        r"boulevard|blvd|way|court|ct|place|pl)\b",
        r"\b(?:my address is|i live at)\b"),
}
_COMPILED = {name: tuple(re.compile(p, re.I) for p in pats) for name, pats in CATEGORIES.items()}
NEVER_SEND_DEFAULT = "credentials,government_ids"


def categories_of(text: str) -> set[str]:
    """The never-remember categories ``text`` touches."""
    return {name for name, rxs in _COMPILED.items() if any(rx.search(text) for rx in rxs)}


def parse(setting: object) -> set[str]:
    """A setting's comma list as known category names (unknown words are ignored)."""
    words = {w.strip().lower() for w in str(setting or "").split(",")}
    return words & set(CATEGORIES)


def blocked(text: str, chosen: Iterable[str]) -> str | None:
    """The first chosen category ``text`` touches, or None."""
    found = categories_of(text) & set(chosen)
    return min(found) if found else None
