"""Redaction before anything is sent (docs/security.md#redaction). Layer: app. Pure.

When ``redact`` is on, what identifies or exposes the person is replaced by placeholders
before sending and restored in the parsed facts: known names, emails and phone numbers, and
(issue 27) credentials, government ids, bank and card numbers, money amounts, health
conditions and street addresses, found by the shapes of their values and the words around them
(offline, explainable: the same vocabulary as ``app.services.sensitive``). The model still sees
*that* someone earns [MONEY_1] or was diagnosed with [HEALTH_1], so it can extract the fact,
and the fact comes back with the real value. The placeholders are plain letters, digits and
brackets, so they can be swapped back inside JSON text without escaping.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from functools import lru_cache
from typing import Any

from app.domain.fact import FactCandidate

_EMAIL = r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,24}"
_PHONE = r"\+?(?:\(\d{1,4}\)[ .\-]?)?\d[\d .\-()]{5,22}\d"
_NOT_PHONE = re.compile(r"\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}(?!\d)|\d+\.\d+$")  # dates, decimals
# Every kind of placeholder, in the order the regex tries them at one position.
KINDS = ("SECRET", "ID", "ACCOUNT", "EMAIL", "ADDRESS", "MONEY", "PHONE", "HEALTH", "PERSON")
_KIND_RX = "|".join(KINDS)
_PLACEHOLDER = re.compile(rf"\[({_KIND_RX})_(\d{{1,6}})\]|(?<![\w\[])({_KIND_RX})"
                          r"_(\d{1,6})(?![\w\]])")

# Credentials: the value after "password is", "PIN:"..., and key shapes (OpenAI, GitHub,
# Slack, AWS), and long random-looking tokens.
_SECRET = (r"(?i:(?<=password is )|(?<=password: )|(?<=passcode is )|(?<=pin is )"
           r"|(?<=pin: )|(?<=pin code is )|(?<=passphrase is )|(?<=code is )|(?<=key is )"
           r"|(?<=token is )|(?<=password's ))[^\s,;]{3,64}"
           r"|\b(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}|\bgh[pousr]_[A-Za-z0-9]{20,}"
           r"|\bxox[abpr]-[A-Za-z0-9-]{10,}|\bAKIA[0-9A-Z]{16}\b")
# Government ids: US SSN, UK National Insurance, and the number after "passport number",
# "driver's licence number", "tax id", "NIF", "BSN"...
_ID = (r"\b\d{3}-\d{2}-\d{4}\b|\b[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b"
       r"|(?i:(?<=passport number is )|(?<=passport number )|(?<=passport no\. )"
       r"|(?<=passport is )|(?<=licence number is )|(?<=license number is )"
       r"|(?<=tax id is )|(?<=nif is )|(?<=bsn is )|(?<=id number is )|(?<=ssn is ))"
       r"[A-Za-z0-9-]{5,20}")
# Bank and card numbers: an IBAN, a 16-digit card number, a UK sort code with its account.
_ACCOUNT = (r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){3,7}(?: ?[A-Z0-9]{1,3})?\b"
            r"|\b(?:\d{4}[ -]?){3}\d{4}\b|\b\d{2}-\d{2}-\d{2} \d{8}\b")
# Money: a currency sign or word with its amount ("48,000 euros", "£1.2k", "$300 a month").
_SCALE = r"(?:\s?(?:k|m|bn|thousand|million|billion|grand)\b)?"
_MONEY = (rf"(?i:[$€£¥₹]\s?\d[\d,.]*\d{_SCALE}|[$€£¥₹]\s?\d{_SCALE}"
          rf"|\b\d[\d,.]*{_SCALE}\s?(?:dollars|euros|pounds|quid|bucks|usd|eur|gbp|chf|yen)\b"
          r"|\b\d[\d,.]*k (?:a|per) (?:year|month)\b)")
# Street addresses: a house number, a name and a street word; UK postcodes; US state + ZIP.
_ADDRESS = (r"\b\d{1,5}[A-Za-z]?,?\s+(?:[A-Z][\w'-]+\s){1,3}(?i:Street|St|Road|Rd|Avenue|Ave"
            r"|Lane|Ln|Drive|Dr|Boulevard|Blvd|Way|Court|Ct|Place|Pl|Crescent|Close|Terrace"
            r"|Gardens|Grove|Square|Sq|Parade|Row|Straße|Strasse|Rue|Calle)\b"
            r"|\b[A-Z]{1,2}\d[A-Z\d]? ?\d[A-Z]{2}\b|\b[A-Z]{2} \d{5}(?:-\d{4})?\b")
# Health: named conditions, and what follows "diagnosed with" / "suffer from" / "prescribed".
_CONDITIONS = (
    "depression", "anxiety", "panic attacks", "panic disorder", "adhd", "autism", "diabetes",
    "type 1 diabetes", "type 2 diabetes", "asthma", "cancer", "breast cancer", "leukemia",
    "leukaemia", "lymphoma", "tumor", "tumour", "hiv", "aids", "hepatitis", "herpes",
    "chlamydia", "ptsd", "ocd", "bipolar disorder", "bipolar", "schizophrenia", "epilepsy",
    "migraines", "migraine", "crohn's disease", "crohn's", "ibs", "celiac disease",
    "coeliac disease", "endometriosis", "pcos", "long covid", "covid", "insomnia",
    "sleep apnea", "sleep apnoea", "dementia", "alzheimer's", "parkinson's",
    "multiple sclerosis", "lupus", "arthritis", "hypertension", "high blood pressure",
    "anorexia", "bulimia", "eating disorder", "addiction", "alcoholism", "miscarriage",
    "heart condition", "heart disease", "kidney disease", "stroke", "heart attack")
# Words that end the name of a condition ("diagnosed with asthma in May", "... for a cough").
_STOP = ("(?:for|and|or|but|in|on|at|by|to|from|with|since|after|before|last|this|when|while"
         "|because|so|which|that|who|yesterday|today|again|too|as)")
_HEALTH = (r"(?i:(?<=diagnosed with )|(?<=suffers from )|(?<=suffer from )|(?<=prescribed )"
           r"|(?<=treated for )|(?<=treatment for ))(?:an? )?[a-z][\w'-]*"
           rf"(?: (?!{_STOP}\b)[a-z0-9][\w'-]*){{0,2}}"
           r"|\b[A-Za-z][\w-]+ \d+ ?(?i:mg)\b")


def _words_rx(words: Iterable[str]) -> str:
    return r"(?i:\b(?:" + "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)) \
        + r")\b)"


_FIXED = (rf"(?P<secret>{_SECRET})|(?P<id>{_ID})|(?P<account>{_ACCOUNT})"
          rf"|(?P<email>{_EMAIL})|(?P<address>{_ADDRESS})|(?P<money>{_MONEY})"
          rf"|(?P<phone>(?<![\w+]){_PHONE}(?!\w))"
          rf"|(?P<health>{_HEALTH}|{_words_rx(_CONDITIONS)})")
_SAFE_NAME = re.compile(r"[^\W\d_][\w'\u2019.\- ]{0,58}[\w.]")
_NOT_NAMES = frozenset({"user", "assistant", "system", "me", "i", "person", "email", "phone"})


def _name_forms(names: Iterable[str]) -> list[str]:
    """Capitalised names (and the capitalised parts of multi-word names) safe to redact. Only
    letters, digits, apostrophes, dots, hyphens and spaces: a placeholder can be swapped back
    inside JSON text without escaping."""
    out: dict[str, None] = {}
    for raw in names:
        if not isinstance(raw, str):
            continue
        name = " ".join(raw.split())
        if not _SAFE_NAME.fullmatch(name) or not name[0].isupper():
            continue
        for form in [name, *name.split(" ")]:
            if (len(form) >= 2 and form[0].isupper() and form.casefold() not in _NOT_NAMES
                    and _SAFE_NAME.fullmatch(form)):
                out[form] = None
    return sorted(out, key=len, reverse=True)


def _trie_regex(words: Iterable[str]) -> str:
    """One alternation for many words, as a character trie: re tries one branch per character
    instead of every word at every position (thousands of known names stay fast)."""
    root: dict[str, Any] = {}
    for w in words:
        node = root
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict[str, Any]) -> str:
        alts = [re.escape(ch) + emit(child) for ch, child in sorted(node.items()) if ch]
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        if "" in node:
            return f"(?:{body})?" if len(alts) == 1 else body + "?"
        return body
    return emit(root)


@lru_cache(maxsize=8)
def _redaction_rx(forms: tuple[str, ...]) -> re.Pattern[str]:
    """Compiled once per set of known names (a consolidation run reuses it for every batch)."""
    alts = [_FIXED]
    if forms:
        alts.append(r"(?P<person>(?<!\w)" + _trie_regex(forms) + r"(?!\w))")
    return re.compile("|".join(alts))


@lru_cache(maxsize=8)
def _names_rx(forms: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)(?:" + _trie_regex(forms) + r")(?!\w)")


class Redactor:
    """Replaces what it finds by [SECRET_n], [ID_n], [ACCOUNT_n], [EMAIL_n], [ADDRESS_n],
    [MONEY_n], [PHONE_n], [HEALTH_n] and [PERSON_n], the same value always by the same
    placeholder. ``mapping`` is placeholder -> original."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        self._rx = _redaction_rx(tuple(_name_forms(names)))
        self.mapping: dict[str, str] = {}
        self._back: dict[tuple[str, str], str] = {}
        self._count = dict.fromkeys(KINDS, 0)

    def _sub(self, m: re.Match[str]) -> str:
        value = m.group(0)
        kind = m.lastgroup or ""
        if kind == "phone":
            digits = sum(c.isdigit() for c in value)
            if not 7 <= digits <= 15 or _NOT_PHONE.match(value):
                return value
        label = kind.upper()
        key = (label, value)
        if key not in self._back:
            self._count[label] += 1
            ph = f"[{label}_{self._count[label]}]"
            self._back[key] = ph
            self.mapping[ph] = value
        return self._back[key]

    def redact(self, text: str) -> str:
        return self._rx.sub(self._sub, text)

    @property
    def counts(self) -> dict[str, int]:
        return dict(self._count)


def redact(text: str, names: Iterable[str] = ()) -> tuple[str, dict[str, str]]:
    """Redact one text; return it with the placeholder -> original mapping."""
    r = Redactor(names)
    return r.redact(text), r.mapping


def unredact(text: str, mapping: Mapping[str, str]) -> str:
    """Put the originals back for [PERSON_n]-style placeholders (also written without the
    brackets); unknown placeholders stay as they are."""
    if not mapping or not text:
        return text

    def back(m: re.Match[str]) -> str:
        label = m.group(1) or m.group(3)
        num = m.group(2) or m.group(4)
        return mapping.get(f"[{label}_{num}]", m.group(0))
    return _PLACEHOLDER.sub(back, text)


def _unredact_fact(f: FactCandidate, mapping: Mapping[str, str]) -> FactCandidate:
    if not mapping:
        return f
    return replace(f, subject=unredact(f.subject, mapping), object=unredact(f.object, mapping),
                   statement=unredact(f.statement, mapping),
                   qualifier=None if f.qualifier is None else unredact(f.qualifier, mapping))
