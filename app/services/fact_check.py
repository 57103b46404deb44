"""Malformed facts never enter (issue 23 item 3). Layer: app. Pure.

Whatever proposed a fact (the rules, an LLM, an assistant), it is stored only when it reads as a
memory a person would accept: its holder is a name and not a pronoun, a title or a possessive
("Dr", "She", "Sara's"); its value is a whole phrase, not one cut short ("prefers short",
"reading Dune, the", "likes your coconut recommendation you gave a") and not a word that points
elsewhere ("likes them", "runs there", "likes that world"); a habit names what is done, not a
bare light verb ("usually does", "usually cooks"). The kinds come from a hand check of 225
extracted facts (bench/handcheck_issue23.tsv); the checks are about the shape of a phrase, not
about any sentence.
"""

from __future__ import annotations

import re

from app.domain.fact import FactCandidate

_POINTING = re.compile(r"\b(?:it|its|them|they|their|theirs|there|that|this|these|those|he|she|"
                       r"him|her|hers|your|yours|you|i|i'm|i've|i'd|me|we|us|our|one|ones|"
                       r"stuff|things?|something|anything|everything|so|such)\b", re.I)
# A value may not end on a word that needs something after it.
_DANGLING = frozenset("""a an the and or but so to of for with in on at by from as than that
which who whose my your his her its our their this these those i i'm you we they he she it
is are was were be been being have has had do does did will would can could should may might
must just very really too also not no gave got get make made take took put""".split())
_TITLES = frozenset("dr mr mrs ms miss prof sir madam mx st mt".split())
# Verbs that say nothing on their own as a habit.
_LIGHT = frozenset("""do does doing did go goes going went get gets getting got take takes
taking took make makes making made have has having had cook cooks cooking eat eats eating
drink drinks drinking bike bikes biking practice practices practise practises play plays
playing read reads reading watch watches watching run runs work works working""".split())
# Words that say when or how much, not what: a habit made of them says nothing.
_ADVERBS = frozenset("""next more less again today tonight meanwhile instead too lot lots
much often always sometimes usually later early late soon now then well out up""".split())
# Liked "things" that are no thing on their own (a reaction to something shown, cut from it):
# "likes color", "likes the idea", "likes spending time", "likes every day".
_VAGUE = frozenset("""idea ideas way color colour colors colours energy freedom tech vibe
vibes feeling feelings look looks time day every day spending time playing being doing
having making seeing getting going curling up thought thoughts moment moments view views
part parts bit bits kind sort""".split())
_VERB_START = re.compile(r"^(?:makes|made|thought|thinks|is|was|are|were|gets|got|gives|gave)\b",
                         re.I)
# A kind ("Ana's favourite book", "the review's date") never starts with an article or
# holds a possessive of its own: "Jon's the dance competition", "Tia's morning my flight".
_OWNED = re.compile(r"^(?:the|a|an)\b|\b(?:my|his|her|their|our|your)\b", re.I)
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’-]*")


def problem(f: FactCandidate) -> str | None:
    """Why ``f`` is not fit to be a memory, or None when it is."""
    subject = f.subject.strip()
    first = subject.split()[0].lower().strip(".") if subject else ""
    if not subject or first in _TITLES or subject.lower() in ("he", "she", "they", "it",
                                                               "him", "her", "them", "i"):
        return "its holder is not a name"
    if subject.endswith(("'s", "’s")):
        return "its holder keeps a possessive"
    if f.predicate == "corrects":
        return "a correction is read, never stored as a sentence of its own"
    qualifier = (f.qualifier or "").strip()
    if qualifier and f.predicate != "prefers" and (
            _POINTING.search(qualifier) or _OWNED.search(qualifier)
            or qualifier.split()[-1].lower() in _DANGLING):
        return "its kind is not a phrase of its own"  # "Jon's the dance competition"
    value = f.object.strip().strip(".,;:!?")
    words = _WORD.findall(value)
    if not words and f.predicate not in ("age", "count"):
        return "it has no value"
    if words and words[-1].lower().strip("'’") in _DANGLING:
        return "its value is cut short"
    if _POINTING.search(value) and f.predicate not in ("relation", "name"):
        return "its value points to something not said"
    if f.predicate == "relation" and value.endswith(("'s", "’s")):
        return "its value keeps a possessive"
    if f.predicate == "habit":
        content = [w for w in words if w.lower() not in _LIGHT and w.lower() not in _ADVERBS
                   and len(w) > 2]
        if not content:
            return "a habit with nothing but a light verb"
    if f.predicate in ("likes", "dislikes") and (value.lower() in _VAGUE
                                                  or _VERB_START.match(value)
                                                  or value.lower().split()[0] in ("way",)):
        return "what is liked is no thing of its own"
    return None


def keep(facts: list[FactCandidate]) -> tuple[list[FactCandidate], int]:
    """The facts fit to be stored, and how many were left out."""
    kept = [f for f in facts if problem(f) is None]
    return kept, len(facts) - len(kept)
