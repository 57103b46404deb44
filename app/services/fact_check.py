"""Malformed facts never enter (issue 23 item 3). Layer: app. Pure.

Whatever proposed a fact (the rules, an LLM, an assistant), it is stored only when it reads as a
memory a person would accept: its holder is a name and not a pronoun, a title or a possessive
("Dr", "She", "We", "I've", "Sara's"); its value is a whole phrase, not one cut short ("prefers
short", "reading Dune, the", "likes spending time") and not a word that points elsewhere
("likes them", "runs there", "likes his tech", "likes talking about my kids"); a habit names
what is done, not a bare light verb ("usually does"); a liking names a thing, not a time ("likes
every day"), a part of something unnamed ("the structure of the language") or an idiom ("likes
my chances"); an employer is named ("works at team" is not); a role is a noun, not an adjective
or a judgement ("is an allergic", "is an amazing cook"); a sentence never runs a possessive into
a pronoun's ("Bea's her flight"). The kinds come from hand checks of extracted facts
(bench/handcheck_issue23*.tsv); the checks are about the shape of a phrase, not about any
sentence. The repairs (whose a "my" is, articles, cut values, a time's day) are made where the
rules build the phrase (app/services/extract.py).
"""

from __future__ import annotations

import re

from app.domain.fact import FactCandidate

_POINTING = re.compile(r"\b(?:it|its|them|they|their|theirs|there|here|that|this|these|those|"
                       r"he|she|him|his|her|hers|your|yours|you|i|i'm|i've|i'd|i'll|me|my|mine|"
                       r"myself|we|us|our|ours|one|ones|stuff|things?|something|anything|"
                       r"everything|so|such)\b", re.I)
# A value may not end on a word that needs something after it.
_DANGLING = frozenset("""a an the and or but so to of for with in on at by from as than that
which who whose my your his her its our their this these those i i'm you we they he she it
is are was were be been being have has had do does did will would can could should may might
must just very really too also not no gave got get make made take took put""".split())
_TITLES = frozenset("dr mr mrs ms miss prof sir madam mx st mt".split())
# Holders that are no name: "I've lives in Vancouver", "We lives in Denver".
_PRONOUNS = frozenset("""he she they it him her them i me we us you i'm i've i'd i'll we're
we've we'd we'll you're you've they're they've he's she's it's someone somebody everyone
everybody anyone nobody this that""".split())
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
vibes feeling feelings look looks time day thought thoughts moment moments view views
part parts bit bits kind sort playing being doing having making seeing getting going action
stuff chances odds""".split()) | {"spending time", "curling up", "hanging out", "chilling out",
                     "getting out", "going out", "being there", "getting together"}
# A value that only says when or how often: "likes every day", "usually does most weeks".
_WHEN = re.compile(r"^(?:(?:every|each|most|all|some|any) (?:single |other )?(?:day|night|"
                   r"morning|evening|afternoon|week|weekend|month|year|time|season|summer|"
                   r"winter|spring|fall|autumn|[a-z]+day)s?|(?:on |at )?(?:weekends?|nights?|"
                   r"[a-z]+days)|daily|weekly|nightly|always|sometimes|often|nowadays|"
                   r"these days|at the moment|right now|(?:this|next|last) \w+|today|"
                   r"tonight|tomorrow|yesterday|lately|recently)$", re.I)
# A liked part of something not named: "the structure of the language", "the colours in it".
_PART_OF = re.compile(r"^(?:the )?(?:structure|idea|concept|theme|message|vibe|atmosphere|"
                      r"energy|colou?rs?|design|look|sound|taste|smell|feel|texture|details?|"
                      r"shape|style|way|part|aspect|combination|mix|contrast|composition|"
                      r"lighting|view|scenery|rest|story|plot|ending|beginning|end|start|"
                      r"history|culture|rules?|logic|flow|pace|rhythm|spirit|nature|quality)"
                      r" (?:of|in|on|about|behind) (?:the|this|that|these|those|it|its|them)\b",
                      re.I)
# "An amazing cook", "a great teacher": a judgement of a skill, not a job.
_JUDGED = re.compile(r"(?:amazing|great|good|excellent|fantastic|terrible|awful|bad|awesome|"
                     r"brilliant|wonderful|incredible|talented|natural|decent|superb|"
                     r"phenomenal|lousy|born)\b", re.I)
# An employer named by a common noun only: "works at team", "works at the company".
_NO_EMPLOYER = frozenset("""team squad band group crew family club side company firm business
place office job work organisation organization department unit""".split())
# Adjectives ("allergic", "famous", "interested") are not roles; these nouns end like them.
_ROLE_NOUNS = frozenset("""mechanic medic paramedic critic cleric comic mystic academic
cynic""".split())
# A statement where a possessive runs into a pronoun's: "Bea's her flight", "Tia's morning my
# flight" (not "Sam's the best", which may be "Sam is").
_CLASH = re.compile(r"\w['’]s (?:\w+ )?(?:my|his|her|their|our|your|its)\b", re.I)
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
    if not subject or first in _TITLES or subject.lower().replace("’", "'") in _PRONOUNS:
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
                                                  or value.lower().split()[0] in ("way",)
                                                  or _PART_OF.match(value)):
        return "what is liked is no thing of its own"
    if f.predicate in ("likes", "dislikes", "habit", "prefers") and _WHEN.match(value):
        return "its value only says when"
    if f.predicate in ("works_at", "employer") and value.lower().removeprefix("the ") \
            in _NO_EMPLOYER:
        return "its employer is not named"
    if f.predicate in ("job", "role") and _JUDGED.match(value):
        return "its role is a judgement (a skill, not a job)"
    if f.predicate in ("job", "role"):
        last = value.lower().split()[-1] if value.split() else ""
        if last not in _ROLE_NOUNS and (last.endswith(("ous", "ful", "less", "able", "ible",
                                                       "ic")) or last.endswith("ed")):
            return "its role is an adjective"
    if _CLASH.search(f.statement):
        return "its sentence runs two possessives together"
    return None


def keep(facts: list[FactCandidate]) -> tuple[list[FactCandidate], int]:
    """The facts fit to be stored, and how many were left out."""
    kept = [f for f in facts if problem(f) is None]
    return kept, len(facts) - len(kept)
