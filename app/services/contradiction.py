"""Do two facts disagree, and if so, who wins (docs/memory-model.md#contradictions-and-slots,
reference 003). Layer: app. Pure.

classify(a, b) -> "duplicate" | "update" | "contradiction" | "compatible"
- same subject and a single-valued predicate (or a relation that admits one person, or the
  same favourite) with a different object: an **update** when the newer one is stated as a
  change ("I moved to", "I no longer ..."), else a **contradiction**;
- a statement and its negation ("I'm allergic to nuts" / "I'm not allergic to nuts"), or likes
  vs dislikes of the same thing: likewise (an update only when the newer one states a change:
  "no longer", "anymore", "started"). A negation also meets a more specific statement of the
  same thing ("no longer at the bakery" / "at the bakery on Elm Street");
- same subject, predicate and object: a **duplicate** (merged, corroborating); one object a
  more detailed form of the other ("New York" / "New York City") is compatible.

resolve(a, b) applies the 003 order: a user-validated fact wins; else the newer wins when its
confidence > .7; else a confidence margin > .2 wins; else the person decides (inbox).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from rapidfuzz import fuzz

from app import policy
from app.domain.fact import MULTI_VALUED, SINGLE_VALUED

Verdict = Literal["duplicate", "update", "contradiction", "compatible"]
SINGLE_RELATIONS = frozenset({"mother", "father", "wife", "husband", "partner", "girlfriend",
                              "boyfriend", "boss", "manager", "fiance", "fiancee", "spouse"})
# A general word for a kind of relation (or pet) covers the specific ones: "Lucas and I broke up"
# (partner) meets "my boyfriend is Lucas"; "I'm an only child" (sibling) meets "my sister Ana".
GENERIC = {
    "partner": frozenset({"boyfriend", "girlfriend", "husband", "wife", "fiance", "fiancee",
                          "spouse"}),
    "spouse": frozenset({"husband", "wife"}),
    "sibling": frozenset({"sister", "brother"}),
    "child": frozenset({"son", "daughter"}),
    "pet": frozenset({"dog", "cat", "puppy", "kitten", "bird", "rabbit", "hamster", "horse",
                      "fish", "turtle"}),
}
# The object of "I have no pets", "I'm an only child", "I don't own a car": none at all, so any
# stated one disagrees.
NONE = "(none)"
OPPOSITES = {("likes", "dislikes"), ("dislikes", "likes"), ("prefers", "dislikes"),
             ("dislikes", "prefers")}


@dataclass(frozen=True, slots=True)
class FactView:
    id: int
    subject: str
    predicate: str
    object: str | None      # None: a corrected fact whose new wording names no known object
    qualifier: str | None
    occurred_at: float
    confidence: float
    user_validated: bool = False
    negated: bool = False
    change: bool = False


def _norm(text: str) -> str:
    text = re.sub(r"\(\d{4}-\d\d-\d\d\)", "", text.casefold())
    return re.sub(r"[^a-z0-9 ]+", " ", text).strip()


_ISO = re.compile(r"\((\d{4})-(\d\d-\d\d)\)")


def same_object(x: str, y: str) -> bool:
    dx, dy = _ISO.search(x), _ISO.search(y)
    if dx and dy and dx.group(2) == dy.group(2):
        return True  # "the 3rd of May (2026-05-03)" / "May 3 (2025-05-03)": the same day
    a, b = _norm(x), _norm(y)
    if not a or not b:
        return a == b
    return a == b or fuzz.token_sort_ratio(a, b) >= 90


_STOP = frozenset("the a an my our his her their of on in at to for and with".split())


def _stem(word: str) -> str:
    """Crude, symmetric: smoking/smoke/smokes -> smok, running/run -> run."""
    for suffix, repl in (("ing", ""), ("ies", "y"), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            word = word[:-len(suffix)] + repl
            break
    word = word.removesuffix("e") if len(word) > 3 else word
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiou":
        word = word[:-1]
    return word


def _content(text: str) -> frozenset[str]:
    return frozenset(_stem(w) for w in _norm(text).split() if w not in _STOP)


def covers(x: str, y: str) -> bool:
    """One object names the other's thing with less detail: 'bakery' / 'bakery on Elm Street',
    'smoking' / 'smoke half a pack a day'."""
    tx, ty = _content(x), _content(y)
    small, big = (tx, ty) if len(tx) <= len(ty) else (ty, tx)
    return bool(small) and any(len(w) >= 3 for w in small) and small <= big


# A diet rules out eating some things: "I'm vegetarian" vs "I eat meat pretty much every day".
_MEAT = "meat beef pork chicken steak bacon ham lamb sausage turkey veal burger"
_DIET_EXCLUDES = {
    "vegetarian": frozenset(f"{_MEAT} fish seafood".split()),
    "pescatarian": frozenset(_MEAT.split()),
    "vegan": frozenset(f"{_MEAT} fish seafood cheese egg dairy milk butter honey yogurt".split()),
}


def _diet_clash(diet: FactView, habit: FactView) -> bool:
    if diet.predicate != "diet" or habit.predicate != "habit" or diet.negated or habit.negated \
            or diet.object is None or habit.object is None:
        return False
    words = _content(habit.object)
    banned = {_stem(w) for w in _DIET_EXCLUDES.get(_norm(diet.object), ())}
    return bool(words & {_stem(v) for v in ("eat", "drink", "have")}) and bool(words & banned)


def qualifiers_meet(x: str | None, y: str | None) -> bool:
    a, b = x or "", y or ""
    return a == b or b in GENERIC.get(a, ()) or a in GENERIC.get(b, ())


def _single(p: str, qualifier: str | None) -> bool:
    if p == "prefers":  # "tea vs coffee": one of the two
        return qualifier is not None
    if p == "relation":
        return (qualifier or "") in SINGLE_RELATIONS
    return p in SINGLE_VALUED or p not in MULTI_VALUED  # an open slot: one value at a time


# Predicates whose value is a moment: one already past when the newer fact was said is a
# different occurrence ("the meeting is on the 3rd", a month later "the meeting is on the 9th").
EVENT_PREDICATES = frozenset({"date_of", "time_of", "deadline"})
# Stated relationship (married, single, ...) against a relation that implies one.
_STATUS_OF = {"husband": "married", "wife": "married", "spouse": "married"}
# How far a relationship has gone. A later status further along than an earlier status or
# relation is a change over time (dating Theo, then engaged; "my girlfriend", then married),
# not a contradiction; one further back is compared as any one-value fact.
_STAGE = {"single": 0, "dating someone": 1, "engaged": 2, "married": 3, "divorced": 4}
# The status a relation says: "my girlfriend" is dating, "my fiance" engaged.
_RELATION_STATUS = {"boyfriend": "dating someone", "girlfriend": "dating someone",
                    "fiance": "engaged", "fiancee": "engaged", **_STATUS_OF}


def _further(older: FactView, newer: FactView) -> bool:
    """Whether ``newer`` (a relationship status) is further along than ``older`` (a status or
    a relation), both affirmed."""
    if older.negated or newer.negated or newer.predicate != "relationship_status":
        return False
    said = (_RELATION_STATUS.get(older.qualifier or "") if older.predicate == "relation"
            else _norm(older.object or "") if older.predicate == "relationship_status" else None)
    before = _STAGE.get(said) if said else None
    after = _STAGE.get(_norm(newer.object or ""))
    return before is not None and after is not None and after > before


def _passed(older: FactView, newer: FactView) -> bool:
    if older.predicate not in EVENT_PREDICATES or older.object is None:
        return False
    if older.predicate == "time_of":
        return newer.occurred_at - older.occurred_at > 7 * 86400
    m = _ISO.search(older.object)
    if not m:
        return newer.occurred_at - older.occurred_at > 60 * 86400
    from datetime import UTC, datetime
    said = datetime.fromtimestamp(newer.occurred_at, UTC).date().isoformat()
    if f"{m.group(1)}-{m.group(2)}" >= said:
        return False
    # The older date had passed when the newer was said: a new date still to come is another
    # occurrence; one that had passed too is a report on the same (past) event.
    n = _ISO.search(newer.object or "")
    return n is None or f"{n.group(1)}-{n.group(2)}" >= said


def _correction(fix: FactView, other: FactView) -> Verdict | None:
    """'It's KPMG, not Deloitte' (predicate ``corrects``: object the right value, qualifier
    the wrong one) against an earlier fact whose object is the wrong one."""
    if fix.predicate != "corrects" or other.predicate == "corrects" or fix.qualifier is None \
            or other.object is None or other.negated or fix.occurred_at < other.occurred_at:
        return None
    wrong = _norm(fix.qualifier)
    obj = _norm(re.sub(r"\(\d{4}-\d\d-\d\d\)", "", other.object))
    if wrong and (wrong == obj or re.search(rf"\b{re.escape(wrong)}\b", obj)
                  and len(wrong) >= 2 and not covers(fix.object or "", other.object)):
        return "contradiction"
    return None


def classify(a: FactView, b: FactView) -> Verdict:
    if _norm(a.subject) != _norm(b.subject):
        return "compatible"
    fix = _correction(a, b) or _correction(b, a)
    if fix:
        return fix
    if "corrects" in (a.predicate, b.predicate):
        return "duplicate" if a.predicate == b.predicate and same_object(
            a.object or "", b.object or "") and a.qualifier == b.qualifier else "compatible"
    older, newer = (a, b) if a.occurred_at <= b.occurred_at else (b, a)
    if _passed(older, newer) and not (a.predicate == b.predicate and a.negated == b.negated
                                      and same_object(a.object or "", b.object or "")):
        return "compatible"  # another occurrence; the same one again is still a duplicate
    if _further(older, newer):
        return "update"
    status = next((x for x in (a, b) if x.predicate == "relationship_status"), None)
    rel = next((x for x in (a, b) if x.predicate == "relation"), None)
    if status and rel and not rel.negated and status.object:
        implied = _STATUS_OF.get(rel.qualifier or "", "partnered" if (rel.qualifier or "") in
                                 GENERIC["partner"] else None)
        stated = _norm(status.object)
        if implied and (status.negated and stated == "married" and implied == "married" or
                        not status.negated and stated in ("single", "divorced")):
            change = newer.change or (newer.negated and not older.negated)
            return "update" if change or newer is rel else "contradiction"
        return "compatible"
    change = newer.change or (newer.negated and not older.negated)
    if a.object is None or b.object is None:
        # The person reworded a fact beyond our templates: nothing to compare it with, except
        # that a one-value predicate holds one value (resolve() then keeps the person's).
        same = a.predicate == b.predicate and qualifiers_meet(a.qualifier, b.qualifier)
        if same and a.negated == b.negated and _single(a.predicate, a.qualifier):
            return "update" if change else "contradiction"
        return "compatible"
    if (a.predicate, b.predicate) in OPPOSITES:
        if a.negated or b.negated:
            return "compatible"  # "I don't like X" agrees with "I dislike X"
        if same_object(a.object, b.object):
            return "update" if change or newer.occurred_at - older.occurred_at > 30 * 86400 \
                else "contradiction"
        return "compatible"
    if _diet_clash(a, b) or _diet_clash(b, a):
        return "update" if change else "contradiction"
    if a.predicate != b.predicate:
        return "compatible"
    if not qualifiers_meet(a.qualifier, b.qualifier):
        # Ana is my sister / Ana is my friend: one person, two relations, both can hold;
        # favourite book vs favourite colour.
        return "compatible"
    if a.negated != b.negated:
        if NONE in (a.object, b.object) or same_object(a.object, b.object) \
                or covers(a.object, b.object):
            # "I'm not allergic to nuts" denies; "I'm no longer ..." / "I've started ..." changes.
            return "update" if newer.change else "contradiction"
        return "compatible"  # "no longer in Lisbon" and "in Porto" agree
    if same_object(a.object, b.object):
        return "duplicate"
    if a.negated:  # both negated, different things
        return "compatible"
    if not _single(a.predicate, a.qualifier):
        return "compatible"
    if covers(a.object, b.object):
        return "compatible"  # "New York" / "New York City", "Google" / "Google's London office"
    return "update" if change else "contradiction"


@dataclass(frozen=True, slots=True)
class Decision:
    winner: int | None      # None: the person decides
    loser: int | None
    rule: str


def resolve(a: FactView, b: FactView) -> Decision:
    """003 order. ``a`` and ``b`` are the two sides of a contradiction."""
    if a.user_validated != b.user_validated:
        w, lo = (a, b) if a.user_validated else (b, a)
        return Decision(w.id, lo.id, "user-validated fact wins")
    if a.user_validated and b.user_validated:
        return Decision(None, None, "both confirmed by the person")
    older, newer = (a, b) if a.occurred_at <= b.occurred_at else (b, a)
    if newer.occurred_at > older.occurred_at and newer.confidence > policy.NEWER_WINS_CONFIDENCE:
        return Decision(newer.id, older.id, "newer fact with confidence > .7 wins")
    if abs(a.confidence - b.confidence) > policy.CONFIDENCE_MARGIN:
        w, lo = (a, b) if a.confidence > b.confidence else (b, a)
        return Decision(w.id, lo.id, "confidence margin > .2 wins")
    return Decision(None, None, "sent to the person")
