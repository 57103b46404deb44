"""Which near-duplicate facts and habits merge (issue 27 item 4; references 002 and 003: what
repeats is one memory with more sources). Layer: app. Pure.

Two active memories of one scope merge when they say the same thing about the same holder in
other words:

- **facts**: the same subject and slot (``slots.canonical_predicate``: "employer" and "works
  at" are one slot), and one value's content words are all in the other's ("Northwind" and
  "Northwind as a product designer"). The one that says more is kept; a value that adds
  nothing to the other is the duplicate. Different values ("Northwind", "Fabrikam") never
  merge: that is a change or a contradiction, settled elsewhere;
- **habits**: the same holder, the same activity (its verb's stem: "runs", "goes running" and
  "went running" are one) on the same weekday; a habit consolidation counts (a procedure with
  its days) is kept over one a sentence stated.

The merged one is superseded by the one kept, which takes over its sources (the caller).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from app.services.habits import WEEKDAYS, _stem
from app.services.slots import canonical_predicate
from app.services.text import content_tokens

Scope = tuple[str, str | None]


@dataclass(frozen=True, slots=True)
class FactItem:
    id: int
    scope: Scope
    subject: str
    predicate: str
    value: str
    occurred_at: float
    validated: bool


@dataclass(frozen=True, slots=True)
class HabitItem:
    id: int
    scope: Scope
    holder: str
    text: str               # the statement ("Maya usually runs on Saturday mornings")
    trigger: str | None     # a counted habit's key ("Maya|go running|weekday=5")
    occurred_at: float


def fact_merges(facts: Iterable[FactItem]) -> list[tuple[int, int]]:
    """(duplicate, kept) pairs among ``facts``."""
    groups: dict[tuple[Scope, str, str], list[FactItem]] = defaultdict(list)
    for f in facts:
        groups[(f.scope, f.subject.casefold(), canonical_predicate(f.predicate))].append(f)
    out: list[tuple[int, int]] = []
    for items in groups.values():
        if len(items) < 2:
            continue
        words = {f.id: set(content_tokens(f.value)) for f in items}
        # Most words first (the one that says most is kept), then validated, then oldest.
        ranked = sorted(items, key=lambda f: (-len(words[f.id]), not f.validated,
                                              f.occurred_at, f.id))
        gone: set[int] = set()
        for i, keep in enumerate(ranked):
            if keep.id in gone:
                continue
            for dup in ranked[i + 1:]:
                if dup.id not in gone and words[dup.id] and words[dup.id] <= words[keep.id] \
                        and not dup.validated:
                    out.append((dup.id, keep.id))
                    gone.add(dup.id)
    return out


_DAY = re.compile(r"\b(" + "|".join(d.lower() for d in WEEKDAYS) + r")s?\b")
_LIGHT = frozenset({"go", "goes", "went", "do", "does", "did", "usually", "often", "always",
                    "has", "have", "is", "are"})


def _activity(text: str, holder: str) -> str | None:
    """The activity's stem: "Maya usually runs on Saturday mornings" -> "run"; "Maya often
    goes running on Saturdays" -> "run"."""
    low = text.casefold().removeprefix(holder.casefold()).strip()
    word: str
    for word in re.findall(r"[a-z']+", low):
        if word in _LIGHT:
            continue
        if word.endswith("ing") and len(word) > 5:
            return _stem(word)
        return word[:-1] if word.endswith("s") and not word.endswith("ss") else word
    return None


def _habit_key(h: HabitItem) -> tuple[Scope, str, str, str] | None:
    if h.trigger is not None and h.trigger.count("|") >= 2:  # a habit consolidation counts
        who, act, *slot = h.trigger.split("|")
        day = next((int(s.split("=")[1]) for s in slot if s.startswith("weekday=")), None)
        verb = act.split(" ")[-1] if act.startswith("go ") else act.split(" ")[0]
        stem = _stem(verb) if verb.endswith("ing") and len(verb) > 5 else verb
        if day is None or not who:
            return None
        return h.scope, who.casefold(), stem, WEEKDAYS[day].lower()
    days = set(_DAY.findall(h.text.casefold()))
    said = _activity(h.text, h.holder)
    if len(days) != 1 or said is None or not h.holder:
        return None
    return h.scope, h.holder.casefold(), said, days.pop()


def _counted(h: HabitItem) -> bool:
    return h.trigger is not None and h.trigger.count("|") >= 2


def habit_merges(habits: Sequence[HabitItem]) -> list[tuple[int, int]]:
    """(duplicate, kept) pairs among ``habits``: a counted habit is kept over a stated one,
    else the oldest."""
    groups: dict[tuple[Scope, str, str, str], list[HabitItem]] = defaultdict(list)
    for h in habits:
        key = _habit_key(h)
        if key is not None:
            groups[key].append(h)
    out: list[tuple[int, int]] = []
    for items in groups.values():
        if len(items) < 2:
            continue
        keep, *rest = sorted(items, key=lambda h: (not _counted(h), h.occurred_at, h.id))
        out += [(h.id, keep.id) for h in rest]
    return out
