"""Redaction before anything is sent (docs/security.md#redaction). Layer: app. Pure.

Names, emails and phone numbers are replaced by placeholders before sending when ``redact`` is
on, and restored in the parsed facts. The placeholders are plain letters, digits and
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
_PLACEHOLDER = re.compile(r"\[(PERSON|EMAIL|PHONE)_(\d{1,6})\]|(?<![\w\[])(PERSON|EMAIL|PHONE)"
                          r"_(\d{1,6})(?![\w\]])")
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
    alts = [rf"(?P<email>{_EMAIL})", rf"(?P<phone>(?<![\w+]){_PHONE}(?!\w))"]
    if forms:
        alts.append(r"(?P<person>(?<!\w)" + _trie_regex(forms) + r"(?!\w))")
    return re.compile("|".join(alts))


@lru_cache(maxsize=8)
def _names_rx(forms: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)(?:" + _trie_regex(forms) + r")(?!\w)")


class Redactor:
    """Replaces emails, phone numbers and known names by [EMAIL_n], [PHONE_n], [PERSON_n],
    the same value always by the same placeholder. ``mapping`` is placeholder -> original."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        self._rx = _redaction_rx(tuple(_name_forms(names)))
        self.mapping: dict[str, str] = {}
        self._back: dict[tuple[str, str], str] = {}
        self._count = {"PERSON": 0, "EMAIL": 0, "PHONE": 0}

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
