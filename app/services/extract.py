"""Offline rule-based fact extraction (docs/memory-model.md#extraction). Layer: app. Pure; no I/O.

Patterns for identity, relationships, work, places, preferences, dates and deadlines, and
habits. First-person statements are about the speaker. Relative dates ("next Friday") are read
against the episode's own time with ``dateparser``. Confidence is the pattern's reliability:
explicit first-person statements are trusted more than hedged ones ("I think", "maybe").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import UTC, datetime
from functools import lru_cache
from typing import Literal

from app.domain.fact import EpisodeView, FactCandidate
from app.services.contradiction import NONE
from app.services.memory_words import forget_request
from app.services.text import content_tokens, is_small_talk

_NAME = r"[A-Z][a-zA-Z'\-]+(?: [A-Z][a-zA-Z'\-]+){0,2}"
_OBJ = r"[A-Za-z0-9][\w'&.\- ]{0,60}?"
# Where an object ends: punctuation (a full stop only before a space, so "D.C." and "3.5" stay
# whole), a conjunction, a relative clause, a companion ("with my partner"), a purpose ("to be
# closer to"), or a time or reason phrase ("after my injury", "for the new job").
_END = (r"(?=\s*(?:[,!?;:]|(?<=\s)[-\u2013\u2014]+(?=\s)|(?<!\bSt)(?<!\bMt)(?<!\bDr)\.(?=\s|$)|\band\b|\bbut\b|\bbecause\b|\bsince\b|\bwhere\b|"
        r"\bwhich\b|\bwho\b|\bwith\b|\bwhile\b|\bmy whole life\b|\ball my life\b|\bafter\b|\bbefore\b|\bduring\b|\bso\b|"
        r"\bfor (?:the|a|an|my|our|his|her|their|work|school|ages|long|about|over|nearly|"
        r"almost|around|more than|less than|\w+ (?:years?|months?|weeks?|days?|decades?))\b|"
        r"\bto (?:be|get|start|study|work|join|live|help|take|see|spend|try|learn)\b|$))")
RELATIONS = ("mother", "mom", "mum", "father", "dad", "sister", "brother", "wife", "husband",
             "partner", "girlfriend", "boyfriend", "son", "daughter", "friend", "best friend",
             "boss", "manager", "colleague", "roommate", "neighbour", "neighbor", "cousin",
             "aunt", "uncle", "grandma", "grandmother", "grandpa", "grandfather", "mentor",
             "fiance", "fiancee")
_REL = "|".join(sorted((re.escape(r) for r in RELATIONS), key=len, reverse=True))
_HEDGE = re.compile(r"\b(maybe|might|perhaps|i think|probably|not sure|i guess|thinking "
                    r"about|considering|planning to|want to|wish)\b", re.I)
# Negation is looked for in the fact's own clause only ("I'm not sure, but I live in X" is not a
# negated fact). "No longer", "used to", "stopped" also state a change (see _CHANGE).
_NEG = re.compile(r"\b(?:no longer|not|never|stopped|quit|gave up|used to|left my job|"
                  r"left working)\b|n't\b", re.I)
# Words anywhere in the sentence that state a change over time: the fact is then an update of
# what was true before, not a contradiction. "For six years now" is a duration, not a change.
_CHANGE = re.compile(
    r"\b(?:(?<!years )(?<!months )(?<!weeks )(?<!while )(?<!ages )(?<!long )(?<!right )now|nowadays|"
    r"these days|any ?more|no longer|again|used to|switched|moved|relocated|started|began|"
    r"became|got (?:promoted|married|engaged|divorced|hired)|turned|(?:my|a|the|our) (?-i:new)|"
    r"joined|quit|stopped|gave up|graduated|changed|pushed|postponed|extended|moved on)\b", re.I)
_ADV = (r"(?: (?:now|still|currently|also|actually|really|not|no longer|don't|do not|never|"
        r"used to))*")
# Heads of job titles, for "I'm a nurse" without an employer ("I'm a morning person" is not one).
_ROLES = (r"(?:nurse|teacher|doctor|physician|surgeon|dentist|pharmacist|therapist|psychologist|"
          r"engineer|developer|programmer|designer|architect|lawyer|attorney|accountant|student|"
          r"chef|cook|baker|barista|waiter|waitress|bartender|pilot|scientist|researcher|"
          r"professor|lecturer|librarian|writer|author|journalist|editor|photographer|artist|"
          r"musician|actor|actress|manager|consultant|analyst|electrician|plumber|carpenter|"
          r"mechanic|firefighter|paramedic|police officer|soldier|farmer|cashier|driver|"
          r"freelancer|entrepreneur|intern|vet|veterinarian|translator|producer|social worker|"
          r"nanny|receptionist|secretary|banker|economist|director|founder|officer|technician|"
          r"assistant|coordinator|administrator|specialist|clerk|tutor|coach|trainer)")
# "I'm a regular at the pub", "a big fan of ...": not jobs.
_NOT_ROLE = r"(?!(?:[a-z\-]+ ){0,2}(?:fan|regular|member|guest|customer|patient|client|visitor|user|subscriber)\b)"
# "I'm not a morning person at all", "for now": not an employer.
_NOT_ORG = (r"(?!(?:all|the moment|home|night|work|times|least|first|once|heart|ease|best|worst|"
            r"now|the same time|the time|a while)\b)")
_ROLE_AT = r"(?P<role>(?:[a-z\-]+ ){0,2}[a-z\-]+)"
# Everyday activities: "I smoke", "I don't drink coffee", "I quit smoking" are habits.
_ACTIVITIES = ("drink", "eat", "smoke", "vape", "run", "jog", "swim", "cycle", "bike", "ride",
               "play", "practise", "practice", "meditate", "cook", "drive", "walk", "hike",
               "climb", "read", "watch", "take", "go", "do", "work out", "exercise", "train",
               "wake up", "get up", "sleep", "skip", "attend", "surf", "ski", "dance", "sing",
               "paint", "write", "bake", "knit", "garden", "fish", "box", "lift", "row")
_DOUBLED = frozenset({"run", "jog", "swim", "skip", "get", "shop", "stop", "sit"})


def _gerund(verb: str) -> str:
    head, _, rest = verb.partition(" ")
    if head in _DOUBLED:
        g = head + head[-1] + "ing"
    elif head.endswith("e") and not head.endswith(("ee", "ye", "oe")) and head != "be":
        g = head[:-1] + "ing"
    else:
        g = head + "ing"
    return f"{g} {rest}".strip()


_BASE = {_gerund(v).split()[0]: v.split()[0] for v in _ACTIVITIES}
_ACT = "|".join(sorted((re.escape(v) for v in _ACTIVITIES), key=len, reverse=True))
_ACTING = "|".join(sorted((re.escape(_gerund(v)) for v in _ACTIVITIES), key=len, reverse=True))
_FREQ = r"(?: (?:usually|always|normally|often|sometimes|regularly|generally|mostly|rarely))*"
# A job held only at some times ("on weekends I work at a bar") does not exclude another one.
_SCOPE = re.compile(r"\b(?:on|at|during|over|in) (?:the )?(weekends?|weekdays?|week|nights?|"
                    r"evenings?|summers?|winters?|holidays)\b|\b(part[- ]time|on the side)\b",
                    re.I)
# Having none: "I'm an only child", "I don't have any pets", "I have no kids", "I don't own a
# car". (predicate, qualifier, what the statement says)
_NONE_KINDS = {"sibling": ("relation", "sibling", "siblings"), "brother": ("relation", "sibling",
               "siblings"), "kid": ("relation", "child", "children"),
               "child": ("relation", "child", "children"), "pet": ("pet_name", "pet", "pets"),
               "car": ("car", None, "car"), "partner": ("relation", "partner", "partner"),
               "boyfriend": ("relation", "partner", "partner"),
               "girlfriend": ("relation", "partner", "partner"),
               "live": ("lives_with", None, "one living with them")}
_HAVE_NONE = re.compile(
    r"\bi(?:'m| am) an only child\b|\bi(?: (?:don't|do not|no longer|never))(?: really| even)? "
    r"(?:have|own|had)(?: any| a| an)? (?P<k>siblings?|brothers? or sisters?|kids?|children|"
    r"child|pets?|car|partner|boyfriend|girlfriend)\b|\bi(?:'ve| have) (?:got )?no (?P<k2>"
    r"siblings|brothers or sisters|kids|children|pets|car|partner|boyfriend|girlfriend)\b|"
    r"\bi(?: now| still| currently)? (?P<alone>live) (?:alone|by myself|on my own)\b", re.I)
# "Lucas and I broke up", "I broke up with Lucas": a partner no longer.
_BROKE_UP = re.compile(r"(?i:\b(?:i (?:broke|split) up with|i(?:'m| am) divorced from) )(?P<o>"
                       + _NAME + r")\b|\b(?P<o2>" + _NAME + r") and [Ii] (?i:broke up|split up|"
                       r"separated|got divorced|divorced)\b")
# Places that employ people, for "I joined a startup called X".
_ORG = (r"(?:startup|start-up|company|firm|agency|practice|studio|lab|bank|hospital|clinic|"
        r"school|council|charity|ngo|consultancy|nonprofit|non-profit|publisher|newspaper)")

# (regex, predicate, category, confidence, change, kind)
# kind: "obj" -> object is group 'o'; qualifier in group 'q' when present.
_PATTERNS: list[tuple[re.Pattern[str], str, str, float, bool]] = [
    (re.compile(r"(?i:\bmy name is )(?P<o>" + _NAME + ")"), "name", "identity", .9, False),
    (re.compile(r"\bi(?:'m| am) (?P<o>\d{1,3})(?: years old| years of age|(?=\s*(?:[,!?;]|\.(?!\d)|"
                r"$)))", re.I), "age", "identity", .85, False),
    (re.compile(r"\bi(?:'ve)? (?:just )?turned (?P<o>\d{1,3})\b", re.I), "age", "identity", .85,
     True),
    (re.compile(r"\b(?:i|we)(?:'ve| have)? ?(?:just |recently |finally )?(?:moved|relocated) "
                r"(?:back |out )?(?:to|into [\w' ]{1,30}? in) (?P<o>" + _OBJ + ")" + _END, re.I),
     "lives_in", "place", .85, True),
    (re.compile(r"\b(?:i|we)(?:(?:'ve| have) lived|(?:'m|'re| am| are)(?: now| still| currently)? "
                r"(?:living|based)|" + _ADV + r" live)(?: with [\w' ]{1,30}?)? in "
                r"(?P<o>" + _OBJ + ")" + _END, re.I), "lives_in", "place", .8, False),
    (re.compile(r"\bi(?:'m| am) (?:originally )?from (?P<o>" + _OBJ + ")" + _END, re.I),
     "from", "place", .8, False),
    # "I grew up in Ohio": one childhood place, but not the same claim as "I'm from X".
    (re.compile(r"\bi (?P<q>grew up) in (?P<o>" + _OBJ + ")" + _END, re.I), "from", "place", .8,
     False),
    (re.compile(r"\bi(?:'ve| have)?(?: now| just| recently)? ?(?:started|began) (?:working|a new "
                r"job|a job) (?:at|for|with) (?P<o>" + _OBJ + ")" + _END, re.I), "works_at", "work",
     .85, True),
    (re.compile(r"(?:\bi(?:'ve| have)?(?: just| recently)?|\bi\b[^.!?]{1,60}?\band(?: then| just)?)"
                r" joined (?P<o>(?:an? |the )?(?:[\w\-]+ )?"
                + _ORG + r"\b(?: (?:called|named) " + _NAME + r")?|" + _NAME + r"(?= as (?:a|an) ))",
                re.I), "works_at", "work", .8, True),
    (re.compile(r"\bi(?:'ve| have)?(?: just| finally| recently)? (?:left|quit) (?:my job (?:at|with)"
                r"|working (?:at|for)) (?P<o>" + _OBJ + ")" + _END, re.I), "works_at", "work", .8,
     True),
    (re.compile(r"\bi(?:'m| am)?" + _ADV + r" (?:work|working) (?:at|for) (?P<o>" + _OBJ + ")"
                + _END, re.I), "works_at", "work", .8, False),
    # "I'm a junior designer at Figma": the job, and where (a school for students).
    (re.compile(r"\bi(?:'m| am)" + _ADV + r" (?:a|an) " + _NOT_ROLE + r"(?P<o>(?:[a-z\-]+ ){0,2}"
                r"[a-z\-]+) (?:at|for|with) " + _NOT_ORG + "[A-Za-z0-9]", re.I), "job", "work", .75,
     False),
    (re.compile(r"\bi(?:'m| am)" + _ADV + r" (?:a|an) (?P<o>(?:[a-z\-]+ ){0,2}" + _ROLES
                + r")\b", re.I), "job", "work", .75, False),
    (re.compile(r"\bi(?:'m| am)" + _ADV + r" (?:a|an) " + _NOT_ROLE
                + r"(?!(?:[a-z\-]+ ){0,2}student\b)" + _ROLE_AT + r" (?:at|for|with) " + _NOT_ORG
                + r"(?P<o>" + _OBJ
                + ")" + _END, re.I), "works_at", "work", .75, False),
    (re.compile(r"\b(?:i(?:'m| am)" + _ADV + r" (?:a |an )?(?:[a-z\-]+ ){0,2}student (?:at|of)|"
                r"i(?:'m| am)?" + _ADV + r" (?:study|studying|enrolled) at) (?P<o>" + _OBJ + ")"
                + _END, re.I), "school", "education", .8, False),
    (re.compile(r"\bi(?:'m| am)?" + _ADV + r" (?:work|working) as (?:a|an) "
                r"(?P<o>[a-z][a-z\- ]{2,40}?)" + _END, re.I), "job", "work", .8, False),
    (re.compile(r"(?i:\bmy (?:new |current |other )?(?P<q>" + _REL + r")(?:'s name)?,? "
                r"(?:is (?:called |named )?|named |called )?)(?P<o>" + _NAME + ")"), "relation",
     "relationship", .85, False),
    (re.compile(r"\b(?P<o>" + _NAME + r")(?: is|'s) my (?P<q>" + _REL + r")\b"), "relation",
     "relationship", .85, False),
    # "My favorite food used to be sushi, but now it's ramen": the new one, then the old one
    # (negated and a change through "used to").
    (re.compile(r"\bmy favou?rite (?P<q>[a-z ]{2,30}?) used to be [^.!?]{1,60}?,? but (?:now )?"
                r"(?:it's|it is|its) (?:now )?(?P<o>" + _OBJ + ")" + _END, re.I), "favorite",
     "preference", .85, True),
    (re.compile(r"\bmy favou?rite (?P<q>[a-z ]{2,30}?) used to be (?P<o>" + _OBJ + ")" + _END,
                re.I), "favorite", "preference", .85, True),
    (re.compile(r"\bmy favou?rite (?P<q>[a-z ]{2,30}?) (?:is|'s|has always been|has been) "
                r"(?P<o>" + _OBJ + ")" + _END, re.I), "favorite", "preference", .85, False),
    (re.compile(r"\bi" + _ADV + r" (?:do |absolutely )?(?:love|adore|enjoy) (?P<o>" + _OBJ + ")" + _END,
                re.I), "likes", "preference", .7, False),
    (re.compile(r"\bi" + _ADV + r" like (?P<o>" + _OBJ + ")" + _END, re.I), "likes",
     "preference", .65, False),
    (re.compile(r"\bi(?: (?:really|actually|absolutely|still|also|just|honestly))* (?:hate|"
                r"can't stand|cannot stand|dislike|detest) (?P<o>" + _OBJ + ")" + _END, re.I),
     "dislikes", "preference", .7, False),
    # "I prefer tea over coffee": which of the two, so the reverse disagrees.
    (re.compile(r"\bi" + _ADV + r" prefer (?P<o>" + _OBJ + r") (?:over|to|rather than|more than|"
                r"instead of) (?P<alt>" + _OBJ + ")" + _END, re.I), "prefers", "preference", .7,
     False),
    (re.compile(r"\bi" + _ADV + r" prefer (?P<o>" + _OBJ + ")" + _END, re.I), "prefers",
     "preference", .7, False),
    (re.compile(r"\bi(?:'m| am)" + _ADV + r" (?:a|an|such an?) (?P<o>[a-z\-]+ person|night owl|"
                r"early bird|introvert|extrovert|homebody|perfectionist)\b", re.I), "trait",
     "identity", .75, False),
    (re.compile(r"\bi(?:'m| am)(?: not| no longer)?(?: also)? allergic to (?P<o>" + _OBJ + ")"
                + _END, re.I), "allergic_to", "health", .9, False),
    (re.compile(r"\bi(?:'m| am)(?: not| no longer)? (?:a )?(?:vegetarian|vegan|pescatarian)\b",
                re.I), "diet", "health", .85, False),
    (re.compile(r"(?i:\bi(?: have|'ve got| got) (?:a|an) (?P<q>dog|cat|puppy|kitten|bird|"
                r"rabbit|hamster|horse|fish|turtle) (?:named|called) )(?P<o>" + _NAME + ")"),
     "pet_name", "possession", .85, False),
    (re.compile(r"\b(?P<s>" + _NAME + r")'s birthday is (?:on )?(?P<o>[\w ,]{3,30}?)" + _END),
     "birthday", "date", .85, False),
    (re.compile(r"\bmy birthday(?: is|'s|s)(?: on)? (?P<o>[\w ,]{3,30}?)" + _END, re.I),
     "birthday", "date", .85, False),
    # Dates of events a person has once: "our wedding anniversary is June 3rd".
    (re.compile(r"\b(?:my|our) (?P<q>(?:wedding |engagement )?anniversary|wedding|graduation|"
                r"due date)(?: is|'s)(?: on)? (?P<o>[\w ,]{3,30}?)" + _END, re.I), "date_of",
     "date", .8, False),
    # "The report deadline is / got pushed to May 19" before the general "deadline is".
    (re.compile(r"\b(?:the|my|our) (?P<q>[a-z][\w ]{1,40}?) deadline (?:is (?:now )?(?:on )?|"
                r"(?:got|has been|was|is being) (?:pushed|moved|extended|postponed|brought forward)"
                r"(?: back)? (?:to|until) )(?P<o>[\w ,]{3,30}?)" + _END, re.I), "deadline", "date",
     .8, False),
    (re.compile(r"\b(?:the )?deadline (?:for (?P<q>[\w ]{2,40}?) )?is (?:on )?(?P<o>[\w ,]{3,30}?)"
                + _END, re.I), "deadline", "date", .8, False),
    # "I'm seeing someone called Theo", "I'm dating Ana", "I'm engaged to Chris".
    (re.compile(r"(?i:\bi(?:'m| am)(?: now| currently)? (?:seeing|dating|going out with) "
                r"(?:someone |a (?:guy|girl|man|woman) )?(?:called |named )?)(?P<o>" + _NAME + ")"),
     "relation", "relationship", .75, False),
    (re.compile(r"(?i:\bi(?:'m| am)(?: now)? (?P<q>engaged|married) to )(?P<o>" + _NAME + ")"),
     "relation", "relationship", .85, False),
    # "I live with my partner and our kids" (any number of people; "I live alone" says none).
    (re.compile(r"\b(?:i|we)(?:'ve| have)?" + _ADV + r" (?:live|living|lived) with (?P<o>"
                + _OBJ + ")" + _END, re.I), "lives_with", "relationship", .75, False),
    # Places been to: "I've (never) been to Japan", "I went to Japan last year".
    (re.compile(r"(?i:\b(?:i(?:'ve| have)" + _ADV + r" been|i(?: once| already)? (?:went|travell?ed|"
                r"flew)|i(?:'ve| have)?" + _ADV + r" visited) to )(?P<o>" + _NAME + ")"),
     "visited", "place", .7, False),
    (re.compile(r"(?i:\bi(?:'ve| have)?" + _ADV + r" visited )(?P<o>" + _NAME + ")"),
     "visited", "place", .7, False),
    (re.compile(r"(?i:\bi (?:drive|own)(?: a| an)(?: old| new)? )(?P<o>[A-Z][\w\-]+"
                r"(?: [A-Z0-9][\w\-]*){0,2})"), "car", "possession", .75, False),
    (re.compile(r"\bi(?:'m| am)(?: not| no longer| now)? (?:married|single|engaged|divorced|"
                r"dating someone)\b", re.I), "relationship_status", "relationship", .85, False),
    # Habits of everyday activities: "I smoke about half a pack a day", "I don't drink coffee",
    # "I quit smoking", "I've started running", "I switched from tennis to padel".
    (re.compile(r"\bi" + _ADV + _FREQ + r" (?!do (?:love|like|enjoy|hate|adore|miss|think|"
                r"know|feel|want|need|wish|hope)\b|do-)(?P<o>(?:" + _ACT
                + r")\b[\w'\- ]{0,50}?)" + _END,
                re.I), "habit", "habit", .75, False),
    (re.compile(r"\bi(?:'ve| have)?(?: just| recently| finally)? (?:started|began|took up|quit|"
                r"stopped|gave up) (?P<o>(?:" + _ACTING + r")\b[\w'\- ]{0,50}?)" + _END, re.I),
     "habit", "habit", .75, True),
    (re.compile(r"\bi(?:'ve| have)?(?: just| recently)? (?P<neg>(?P<noun>switched)) from (?P<o>" + _OBJ
                + r") to ", re.I), "habit", "habit", .7, True),
    (re.compile(r"\bi(?:'ve| have)?(?: just| recently)? (?P<noun>switched) (?:from [^,.!?]{1,40}? )?to "
                r"(?P<o>" + _OBJ + ")" + _END, re.I), "habit", "habit", .7, True),
    (re.compile(r"\bi (?:usually|always|normally|often|tend to) (?P<o>[a-z][\w'\- ]{3,60}?)"
                + _END, re.I), "habit", "habit", .75, False),
]
_STATUS = re.compile(r"\b(married|single|engaged|divorced|dating someone)\b", re.I)
_DIET = re.compile(r"\b(vegetarian|vegan|pescatarian)\b", re.I)

_MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august",
                "september", "october", "november", "december")
_TRIM = re.compile(r"^(?:the|a|an|my|our)\s+", re.I)


_LEAD = re.compile(r"^(?:definitely|honestly|probably|actually|really|still|now|currently|"
                   r"always|also|just|obviously|totally)\s+", re.I)
_SPELLING = {"colour": "color", "flavour": "flavor", "favourite": "favorite",
             "theatre": "theater", "neighbour": "neighbor"}


def _qualifier(q: str | None) -> str | None:
    """'the grant proposal' -> 'grant proposal'; 'colour' -> 'color'."""
    if not q:
        return None
    q = re.sub(r"^(?:the|a|an|my|our)\s+", "", q.strip().lower())
    q = re.sub(r"\s+(?:ever|of all time|right now|at the moment|these days|so far|in the "
               r"world|now|too|as well)$", "", q)  # "favorite book ever" -> "book"
    return " ".join(_SPELLING.get(w, w) for w in q.split()) or None


# A habit's object cut off mid-phrase ("play acoustic guitar about", "go to often") loses its
# dangling words; one that points back at something said before ("play that game", "read it",
# "write another one") or names a one-off ("the book I read last year") is no habit.
_HABIT_TAIL = re.compile(r"(?:\s+(?:a|an|the|my|about|to|of|for|with|at|in|on|often|too|"
                         r"again|around|so|really|just))+$", re.I)
_HABIT_REF = re.compile(r"\b(?:it(?! (?:out|off|up|easy|slow)\b)|that|this|these|those|them|"
                        r"another|one|some|anything|something|everything|nothing|last|"
                        r"yesterday|ago|while back|other day)\b", re.I)
_LIGHT_VERBS = frozenset(("do", "go", "take", "get"))
_RUNS_A_PLACE = re.compile(r"run (?:a|an|my|our|the|\w+'s)(?: own)? (?:[\w\-]+ ){0,2}[\w\-]*?(?:store|shop|"
                           r"business|company|studio|restaurant|caf[eé]|bakery|blog|channel|"
                           r"podcast|club|team|group|charity|website|salon|bar|gym|practice|"
                           r"firm|startup|agency|farm|school|department|kitchen|shelter)s?\b",
                           re.I)


def _habit_object(obj: str, sentence: str) -> str | None:
    """The habit's object tidied, or None when the words are no habit (a question, a bare
    light verb: "Can I do anything to help?", "that's why I go!")."""
    if sentence.rstrip().endswith("?"):
        return None
    obj = _HABIT_TAIL.sub("", obj).strip()
    verb, _, rest = obj.partition(" ")
    if _HABIT_REF.search(rest) or re.match(r"(?:is|are|was|were)\b", rest):
        return None  # "all I do is sleep": the verb is inside a subject
    if _RUNS_A_PLACE.match(obj) or re.match(r"work out (?:of|at|for|from)\b", obj, re.I):
        return None  # "run my own studio", "work out of Chicago": a job, not exercise
    if verb.lower() in _LIGHT_VERBS and not content_tokens(rest):
        return None
    return obj or None


def _clean(obj: str) -> str:
    obj = re.split(r"\s[-\u2013\u2014]+\s", obj, maxsplit=1)[0]  # "pottery - the creativity"
    obj = _LEAD.sub("", obj.strip(" .,'\""))
    # "a startup called Brightwave" -> "Brightwave"
    obj = re.sub(r"^(?:an? |the )?(?:[\w\-]+ ){0,3}?(?:called|named) (?=[A-Z])", "", obj)
    while True:  # "allergic to cockroaches as well", "at Marlow & Finch at the moment"
        cut = _TAIL.sub("", obj)
        if cut == obj:
            return obj.strip()
        obj = cut


# Words after a value that say when, or nothing: "now", "as well", "at the moment", "ever".
_TAIL = re.compile(r"\s+(?:now|too|again|anymore|right now|these days|lately|a lot|so much|"
                   r"at the moment|as well|for now|ever|either|here|though|honestly|anyway|"
                   r"instead|originally|at all|in the (?:spring|summer|fall|autumn|winter)|"
                   r"recently|today|yesterday|tonight|this (?:week|month|year|morning|weekend|"
                   r"spring|summer|fall|autumn|winter)|last (?:week|month|year|night|weekend|"
                   r"spring|summer|fall|autumn|winter|\w+day)|(?:a )?(?:few|couple of) "
                   r"(?:days|weeks|months|years) ago|\w+ (?:days|weeks|months|years) ago|"
                   r"in (?:" + "|".join(_MONTH_NAMES) + r")(?: \d{4})?|in \d{4})$", re.I)


def _own(phrase: str, speaker: str) -> str:
    """'my sneaker collection' said by John -> "John's sneaker collection": a value keeps
    whose it is (the speaker's, whoever holds the fact) instead of a "my" that points back to
    whoever said it. "His"/"her" would guess a gender; a "me" or "I" left in the value is
    refused by fact_check."""
    return re.sub(r"\bmy\b", f"{speaker}'s", phrase, flags=re.I)


# "an" before a vowel sound: not before "uni-", "use", "eu-", "one" ("a university", "a
# one-off"); before a silent h ("an hour").
_A_AN = re.compile(r"\ba (?=(?![A-Z]{2})(?!(?i:uni|use|usu|uti|eu|one|once|ur[aeiou]))[aeiouAEIOU]|"
                   r"(?:hour|honest|heir|honou?r)\w*\b)")
_AN_A = re.compile(r"\ban (?=(?!(?:hour|honest|heir|honou?r)\w*\b)[b-df-hj-np-tv-z]|"
                   r"(?:uni|use|usu|eu|one)\w*)")


def _articles(statement: str) -> str:
    """'John has a ankle injury' -> 'John has an ankle injury' (and 'an university' -> 'a')."""
    return _AN_A.sub("a ", _A_AN.sub("an ", statement))


# A habit already saying how often needs no "usually": "does physio every day", "most weeks".
_HOW_OFTEN = re.compile(r"\b(?:(?:every|each|most|all) (?:single |other )?(?:day|night|morning|"
                        r"evening|afternoon|week|weekend|month|year|time|[a-z]+day)s?|(?:daily|"
                        r"weekly|nightly|monthly|yearly|twice|once|everyday)|\d+ times|"
                        r"(?:a|per) (?:day|week|month|year|night)|on (?:weekends|weeknights|"
                        r"[a-z]+days))\b", re.I)
# A statement asked or embedded, not made: "what should I write", "do I like it", "where I
# do my best writing", "if I move to Leeds", "which I love".
_NOT_SAID = re.compile(r"\b(?:all|what|where|how|which|who|whom|whose|should|shall|can|could|"
                       r"would|do|does|did|will|may|might|must|if|unless|whether|wish)\s+$",
                       re.I)


_PARTICLES = frozenset("up out down in around together away back off over time".split())
_CONJ_STOP = frozenset("""i i'm i've i'd i'll me my we our you your he his she her they their
it its this that these those the a an is are was were am be have has had do does did will
would can could so then also just really not very too all""".split())
_PHRASE_END = r"(?=\s*(?:[,!?;:]|\.(?=\s|$)|$))"


def _whole_liking(text: str, end: int, obj: str) -> str | None:
    """A liked thing cut short where the object ended at ``end``, made whole when the words
    after it belong to it: "curling up" + "with a good book", "action" + "and sci-fi
    movies" (a head noun shared), "the sights" + "and sounds" (an article shared)."""
    rest, words = text[end:], obj.split()
    if words and words[0].lower().endswith("ing") and (
            len(words) == 1 or len(words) == 2 and words[1].lower() in _PARTICLES):
        w = re.match(r"\s+with\s+(?P<x>[A-Za-z][\w'\- ]{1,40}?)" + _END, rest)
        if w:
            return f"{obj} with {_clean(w.group('x'))}"
    c = re.match(r"\s+and\s+(?P<x>[a-z][\w'\-]*(?: [a-z][\w'\-]*){0,2})" + _PHRASE_END, rest)
    if c and not set(c.group("x").lower().split()) & _CONJ_STOP:
        x = c.group("x").split()
        if len(words) == 1 and 2 <= len(x) <= 3 and x[-1].lower().endswith("s") or \
                len(x) == 1 and len(words) >= 2 and words[-2].lower() in ("the", "my", "our"):
            return f"{obj} and {c.group('x')}"
    return obj


# Words of a turn reacting to something shown: "that photo's amazing", "where did you take
# this picture?", "wow, looks great". A definite thing liked there ("I love the dark sky",
# "I love all the yellow leaves") is in the picture, not a lasting liking.
_SHOWN = re.compile(r"\b(?:photos?|pictures?|pics?|paintings?|drawings?|snaps?|images?|"
                    r"selfies?|screenshots?|look(?:s|ing)? (?:so |really )?(?:great|amazing|"
                    r"awesome|beautiful|gorgeous|lovely|stunning|incredible|cool|good|nice|"
                    r"cozy|fun|delicious)|(?:that|this|it)(?:'s| is| looks) (?:so |really )?"
                    r"(?:gorgeous|beautiful|amazing|awesome|stunning|lovely|cool|incredible)|"
                    r"where did you (?:take|get|find)|did you (?:make|take|paint|draw))\b",
                    re.I)
_DEFINITE = re.compile(r"^(?:all (?:of )?)?(?:the|that|this|these|those)\b", re.I)
# "I used to love ...": a past liking, neither a present one nor a stated end of it.
_USED_TO = re.compile(r"\bused to\s+(?:\w+\s+){0,2}$", re.I)


def _reaction(text: str, obj: str) -> bool:
    return bool(_DEFINITE.match(obj) and _SHOWN.search(text))


def _not_said(text: str, at: int) -> bool:
    """Whether a first-person statement at ``at`` ("I ...", "we ...") is asked or embedded
    ("why I love X" is said: "that's why I love X")."""
    return bool(re.match(r"(?:i|we)\b", text[at:], re.I)) and \
        bool(_NOT_SAID.search(text[_clause_start(text, at):at]))


@lru_cache(maxsize=1)
def _dateparser() -> object:
    import dateparser
    return dateparser


_DATEISH = re.compile(r"\d|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\b|"
                      r"\b(?:mon|tues|wednes|thurs|fri|satur|sun)day\b|\b(?:today|tonight|"
                      r"tomorrow|next|this|end of|midnight|noon)\b", re.I)
_DAY_ONLY = re.compile(r"^(?:[a-z]+day,? )?(?:the )?(\d{1,2})(?:st|nd|rd|th)?$", re.I)


def resolve_date(text: str, at: float) -> str | None:
    """A date phrase read relative to when it was said ("next Friday" -> 2026-05-08)."""
    base = datetime.fromtimestamp(at, UTC).replace(tzinfo=None)
    day = _DAY_ONLY.match(text.strip())
    if day:  # "the 12th", "Friday the 12th": dateparser reads a lone 12 as December
        n, year, month = int(day.group(1)), base.year, base.month
        if n < base.day:
            year, month = (year + 1, 1) if month == 12 else (year, month + 1)
        try:
            return datetime(year, month, n).date().isoformat()
        except ValueError:
            return None
    try:
        dp = _dateparser()
        d = dp.parse(text, settings={"RELATIVE_BASE": base,  # type: ignore[attr-defined]
                                     "PREFER_DATES_FROM": "future", "STRICT_PARSING": False})
    except Exception:  # dateparser has many failure modes on free text; a date is optional
        return None
    if d and not re.search(r"\d|\b(?:mon|tues|wednes|thurs|fri|satur|sun)day\b|\b(?:today|"
                           r"tonight|tomorrow|week)\b", text, re.I):
        return str(d.strftime("%Y-%m"))  # "in December": the month, not a day dateparser made up
    return d.date().isoformat() if d else None


def _statement(subject: str, predicate: str, obj: str, qualifier: str | None) -> str:
    if predicate == "relation":
        return f"{obj} is {subject}'s {qualifier}"
    if predicate == "from" and qualifier == "grew up":
        return f"{subject} grew up in {obj}"
    if predicate == "car":
        return f"{subject} drives a {obj}"
    if predicate == "visited":
        return f"{subject} has been to {obj}"
    if predicate == "lives_with":
        return f"{subject} lives with {obj}"
    if predicate == "favorite":
        return f"{subject}'s favorite {qualifier} is {obj}"
    if predicate == "pet_name":
        return f"{subject} has a {qualifier} named {obj}"
    if predicate == "birthday":
        return f"{subject}'s birthday is {obj}"
    if predicate == "date_of":
        return f"{subject}'s {qualifier or 'date'} is {obj}"
    if predicate == "deadline":
        return f"The {qualifier + ' ' if qualifier else ''}deadline is {obj}"
    if predicate == "prefers" and qualifier and " vs " in qualifier:
        other = next((x for x in qualifier.split(" vs ") if x != obj.casefold()), "")
        return f"{subject} prefers {obj} to {other}".rstrip(" to")
    if predicate in ("job", "trait"):
        return f"{subject} is {'an' if obj[:1].lower() in 'aeiou' else 'a'} {obj}"
    if predicate == "school":
        return f"{subject} studies at {obj}"
    verbs = {"lives_in": "lives in", "from": "is from", "works_at": "works at", "job": "is a",
             "likes": "likes", "dislikes": "dislikes", "prefers": "prefers",
             "allergic_to": "is allergic to", "age": "is", "name": "is called",
             "relationship_status": "is", "diet": "is", "habit": "usually"}
    tail = " years old" if predicate == "age" else ""
    if predicate == "habit":  # "does physio every day", not "usually does ... every day"
        return f"{subject} {'' if _HOW_OFTEN.search(obj) else 'usually '}{third_person(obj)}"
    return f"{subject} {verbs.get(predicate, predicate.replace('_', ' '))} {obj}{tail}"


def _negated_statement(subject: str, predicate: str, obj: str, qualifier: str | None,
                       changed: bool) -> str:
    """'Sam no longer lives in Lisbon' (a stated change) or 'Sam is not allergic to nuts'."""
    positive = _statement(subject, predicate, obj, qualifier)
    rest = positive[len(subject) + 1:] if positive.startswith(subject + " ") else None
    if rest is None:  # "Sam's favorite book is (no longer) Dune", "The deadline ..."
        if " is " in positive:
            return positive.replace(" is ", " is no longer " if changed else " is not ", 1)
        return f"{'No longer' if changed else 'Not'} true: {positive}"
    if predicate == "habit":
        return (f"{subject} no longer {third_person(obj)}" if changed
                else f"{subject} does not {obj}")
    verb, _, tail = rest.partition(" ")
    if changed and verb not in ("is", "has"):
        return f"{subject} no longer {rest}"
    if verb in ("is", "has"):
        return f"{subject} {verb} {'no longer' if changed else 'not'} {tail}".rstrip()
    base = {"lives": "live", "works": "work", "likes": "like", "prefers": "prefer",
            "usually": "usually"}.get(verb, verb.removesuffix("s"))
    return f"{subject} does not {base} {tail}".rstrip()


_HOLE = "\x00"


def object_of(subject: str, predicate: str, qualifier: str | None, negated: bool,
              statement: str) -> str | None:
    """The object a fact's sentence names, read back through the sentence templates above:
    "Sam lives in Braga" (lives_in) -> "Braga". For a fact the person corrected, whose new
    wording has no stored object; None when the sentence does not follow a template."""
    templates = [_negated_statement(subject, predicate, _HOLE, qualifier, c)
                 for c in (False, True)] if negated else \
        [_statement(subject, predicate, _HOLE, qualifier)]
    text = statement.strip().rstrip(".!").strip()
    for t in templates:
        if t.count(_HOLE) != 1:
            continue
        head, tail = (re.escape(x) for x in t.split(_HOLE))
        head = re.sub(r"\\ a\\ $", r"\\ an?\\ ", head)  # "is a nurse" / "is an engineer"
        m = re.fullmatch(head + r"(?P<o>.+?)" + tail, text, re.I)
        if m and m.group("o").strip():
            return m.group("o").strip()
    return None


def _clause_start(text: str, pos: int) -> int:
    cut = max(text.rfind(c, 0, pos) for c in ",;:.!?")
    low = text.lower()
    return max(cut, low.rfind(" but ", 0, pos), low.rfind(" and ", 0, pos)) + 1


def _clause_end(text: str, pos: int) -> int:
    m = re.compile(r"[,;:!?\n]|\.(?=\s|$)|\s(?:but|and)\s", re.I).search(text, pos)
    return m.start() if m else len(text)


def _sentence_start(text: str, pos: int) -> int:
    return max(text.rfind(c, 0, pos) for c in ".!?\n") + 1


def _sentence_end(text: str, pos: int) -> int:
    m = re.compile(r"[!?\n]|\.(?=\s|$)").search(text, pos)
    return m.start() if m else len(text)


def third_person(phrase: str) -> str:
    """'run on Saturdays' -> 'runs on Saturdays' (enough for habit statements)."""
    first, _, rest = phrase.partition(" ")
    irregular = {"go": "goes", "have": "has", "do": "does", "be": "is"}
    low = first.lower()
    if low in irregular:
        verb = irregular[low]
    elif low.endswith(("s", "sh", "ch", "x", "z", "o")):
        verb = first + "es"
    elif low.endswith("y") and len(low) > 1 and low[-2] not in "aeiou":
        verb = first[:-1] + "ies"
    else:
        verb = first + "s"
    return f"{verb} {rest}".strip()


def extract(ep: EpisodeView) -> list[FactCandidate]:
    """Facts stated in one episode, about its speaker (first person) or a named person."""
    text = ep.text
    speaker = (ep.speaker or "user").strip() or "user"
    if speaker.lower() in ("assistant", "system"):
        return []  # the assistant's words are not facts about the person
    if is_small_talk(text):
        return []  # "Thanks!", "ok cool": nothing to learn (issue 23 item 6)
    if forget_request(text):
        return []  # "please forget what I told you about X": a request, not more about X
    hedged = bool(_HEDGE.search(text))
    out: list[FactCandidate] = []
    seen: set[tuple[str, str, str]] = set()
    # Object spans taken per predicate: a more specific pattern (listed first) wins over a
    # general one reading the same words ("prefer tea over coffee" vs "prefer <anything>").
    taken: dict[str, list[tuple[int, int]]] = {}
    for rx, predicate, category, conf, change in _PATTERNS:
        for m in rx.finditer(text):
            groups = m.groupdict()
            subject = speaker
            qualifier = _qualifier(groups.get("q"))
            if predicate == "relationship_status":
                obj = _STATUS.search(m.group(0)).group(1).lower()  # type: ignore[union-attr]
            elif predicate == "diet":
                obj = _DIET.search(m.group(0)).group(1).lower()  # type: ignore[union-attr]
            else:
                obj = _clean(groups.get("o") or "")
            if groups.get("s"):
                subject = groups["s"]
            if not obj or len(obj) < 2:
                continue
            span = m.span("o") if groups.get("o") is not None else m.span()
            if any(span[0] < e and s < span[1] for s, e in taken.get(predicate, ())):
                continue
            if _not_said(text, m.start()):
                continue  # "what should I write ...?", "it's where I do my best writing"
            if predicate == "relation" and re.search(r"(?:\bis|'s)\s+$", text[:m.start()]) and \
                    re.search(r",\s*$", text[:span[0]]):
                continue  # "Karen's my boss, Linda manages ...": the boss is Karen
            sentence = text[_sentence_start(text, m.start()):_sentence_end(text, m.end())]
            if predicate in ("likes", "dislikes"):
                obj = _whole_liking(text, span[1], obj)
                if obj is None or predicate == "likes" and (
                        _reaction(text, obj) or _USED_TO.search(text[_clause_start(
                            text, m.start()):span[0]])):
                    continue  # "I love the dark sky" said of a photo; "I used to love X"
            if predicate == "lives_in":  # "a flat in Camden" -> "Camden"
                obj = re.sub(r"^(?:(?:a|an|the|my|our) )?(?:[\w\-]+ ){0,2}?(?:flat|apartment|house|"
                             r"place|room|studio|condo|bungalow|cottage|home|loft|dorm) in ", "",
                             obj, flags=re.I)
            if predicate == "lives_with":  # "my parents in Glasgow" -> "their parents"
                obj = re.sub(r"^my\b", "their", re.split(r"\s+in\s+", obj)[0], flags=re.I)
            if predicate == "favorite" and obj[:1].isupper():
                more = re.match(r" (?:and|&) [A-Z][\w'\-]*(?: [A-Z][\w'\-]*)*", text[span[1]:])
                if more:  # "Parks and Rec", "Pride and Prejudice"
                    obj += more.group(0)
            if predicate == "habit":  # "quitting smoking" -> "smoke"
                w = re.match(r"\s+with\s+(?P<x>(?:(?:my|a|the|our) )?(?:breakfast|brunch|lunch|"
                             r"dinner|supper|meals?|food|coffee|tea|dessert))\b", text[span[1]:],
                             re.I)
                if w:  # "a glass of wine" + "with dinner" (a companion stays out: "with my son")
                    obj = f"{obj} with {_clean(w.group('x'))}"
                first, _, rest = obj.partition(" ")
                obj = _habit_object(f"{_BASE.get(first.lower(), first)} {rest}".strip(),
                                    text[_clause_start(text, m.start()):
                                         _clause_end(text, m.end()) + 1])
                if not obj:
                    continue
            if groups.get("alt"):
                alt = _TRIM.sub("", _clean(groups["alt"]))
                qualifier = " vs ".join(sorted((_TRIM.sub("", obj).casefold(), alt.casefold())))
            if predicate == "relation":
                qualifier = {"mom": "mother", "mum": "mother", "dad": "father",
                             "neighbor": "neighbour", "engaged": "fiance", "married": "spouse",
                             None: "partner"}.get(qualifier, qualifier)
            lead = ""  # the article the statement keeps: "likes the ocean" (object "ocean")
            if predicate in ("likes", "dislikes", "prefers", "lives_in", "works_at", "from",
                             "school"):
                article = _TRIM.match(obj)
                said = article.group(0) if article else ""
                word = said.split()[0].lower() if said else ""
                if predicate != "prefers" and (word in ("the", "my") or word in ("a", "an")
                                               and (predicate in ("works_at", "lives_in")
                                                    or re.match(r"(?:an?) (?:good|nice|great|"
                                                                r"decent|proper|real)\b", obj,
                                                                re.I))):
                    lead = said  # "likes a good horror movie"
                obj = _TRIM.sub("", obj)
            obj = _own(obj, speaker)
            key = (predicate, qualifier or "", obj.casefold())
            if key in seen:
                continue
            seen.add(key)
            taken.setdefault(predicate, []).append(span)
            clause = text[_clause_start(text, span[0]):m.end()]  # the object's own clause
            negated = (bool(groups.get("neg")) or bool(_NEG.search(clause))) and \
                predicate not in ("dislikes",)
            changed = change or bool(_CHANGE.search(sentence))
            c = conf - (0.25 if hedged else 0.0)
            if predicate in ("works_at", "job") and not qualifier:
                whole = text[_clause_start(text, span[0]):_clause_end(text, m.end())]
                scope = _SCOPE.search(whole)
                if scope:
                    qualifier = (scope.group(1) or scope.group(2)).lower().rstrip("s")
            valid_from = ep.occurred_at if predicate in ("lives_in", "works_at", "job",
                                                          "relationship_status") else None
            if predicate in ("birthday", "deadline", "date_of"):
                if not _DATEISH.search(obj):
                    continue  # "the deadline is tight"
                if predicate == "date_of" and qualifier and qualifier.endswith("anniversary"):
                    qualifier = "anniversary"  # wedding anniversary = our anniversary
                resolved = resolve_date(obj, ep.occurred_at)
                if resolved:
                    obj = f"{obj} ({resolved})" if not re.match(r"\d{4}-", obj) else obj
            store = "procedural" if predicate in ("habit", "prefers") else "semantic"
            shown = _own(lead, speaker) + obj
            statement = _statement(subject, predicate, shown, qualifier) if not negated \
                else _negated_statement(subject, predicate, shown, qualifier, changed)
            if predicate in ("works_at", "job") and qualifier:
                statement += f" ({qualifier})"  # "Sam works at the bar (weekend)"
            if groups.get("noun"):  # "switched from tennis to padel": things, not verbs
                statement = f"{subject} {'no longer does' if negated else 'does'} {obj}"
            out.append(FactCandidate(
                subject=subject, predicate=predicate, object=obj,
                statement=_articles(statement),
                category=category, confidence=round(max(0.1, c), 3), change=changed,
                negated=negated, valid_from=valid_from, store=store,  # type: ignore[arg-type]
                qualifier=qualifier, source_ids=(ep.id,)))
    out.extend(_having_none(text, speaker, ep, hedged))
    out = [f for f in out if not _PRONOUN_OBJ.match(f.object) or f.object == NONE]
    known = {(f.subject, f.predicate, f.qualifier, f.object.casefold()) for f in out}
    for f in _more(text, speaker, ep, hedged):
        k4 = (f.subject, f.predicate, f.qualifier, f.object.casefold())
        if k4 not in known:
            known.add(k4)
            out.append(f)
    if _CORRECTION.search(text):  # "sorry, I misspoke": the earlier one was never true
        out = [replace(f, change=False) if f.change else f for f in out]
    return out


def _having_none(text: str, speaker: str, ep: EpisodeView, hedged: bool) -> list[FactCandidate]:
    """'I have no pets', 'I'm an only child', 'Lucas and I broke up': negated facts whose
    object is NONE (any stated one disagrees) or the former partner."""
    out: list[FactCandidate] = []
    for m in _HAVE_NONE.finditer(text):
        kind = (m.group("k") or m.group("k2") or m.group("alone") or "sibling").lower()
        kind = re.sub(r"(?:ren|s)$", "", kind.split()[0]) if kind != "children" else "child"
        predicate, qualifier, noun = _NONE_KINDS.get(kind, ("relation", "sibling", "siblings"))
        sentence = text[_sentence_start(text, m.start()):_sentence_end(text, m.end())]
        changed = bool(_CHANGE.search(sentence))
        noun = f"a {noun}" if noun in ("car", "partner") else noun
        if predicate == "lives_with":
            out.append(FactCandidate(
                subject=speaker, predicate=predicate, object=NONE,
                statement=f"{speaker} lives alone", category="relationship",
                confidence=round(.8 - (.25 if hedged else 0), 3), change=changed, negated=True,
                source_ids=(ep.id,)))
            continue
        out.append(FactCandidate(
            subject=speaker, predicate=predicate, object=NONE,
            statement=f"{speaker} {'no longer has' if changed else 'has no'} "
                      f"{noun.removeprefix('a ') if not changed else noun}",
            category="possession" if predicate != "relation" else "relationship",
            confidence=round(.8 - (.25 if hedged else 0), 3), change=changed, negated=True,
            qualifier=qualifier, source_ids=(ep.id,)))
    for m in _BROKE_UP.finditer(text):
        name = m.group("o") or m.group("o2")
        out.append(FactCandidate(
            subject=speaker, predicate="relation", object=name,
            statement=f"{name} is no longer {speaker}'s partner", category="relationship",
            confidence=round(.8 - (.25 if hedged else 0), 3), change=True, negated=True,
            qualifier="partner", source_ids=(ep.id,)))
    return out


def extract_all(episodes: Iterable[EpisodeView]) -> list[FactCandidate]:
    out: list[FactCandidate] = []
    for ep in episodes:
        out.extend(extract(ep))
    return out


# --- people and projects (PARA) ----------------------------------------------------------

_CAP = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][a-z]{2,}(?: [A-Z][a-z]{2,})?)\b")
_NOT_NAMES = frozenset("""
I Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April May
June July August September October November December Hey Hi Hello Thanks Thank Yes Yeah Wow
Oh Sure Okay Good Great Nice Love Also Well So But And The This That What When Where Why How
Who Which Sounds Congrats Congratulations Awesome Amazing Cool Sorry Please Absolutely Totally
Definitely Really Just Lol Haha Omg Christmas Easter Halloween Thanksgiving God English
Honestly Actually Seriously Personally Basically Literally Frankly Anyway Anyways Btw Plus Now
Still Yep Yup Nah Okay Ok Hmm Gosh Lately Recently Currently I'm I've I'd I'll We We're We've
We'd We'll You You're You've They They're They've He He's She She's It It's
""".split())
_PROJECT = re.compile(r"\b(?:project|launch of|working on the) (?P<o>[A-Z][\w\-]+(?: [A-Z][\w\-]+)?)")
_COMPANY = re.compile(r"\b(?:work(?:ing|s)? (?:at|for)|job at|joined) (?P<o>[A-Z][\w&\-]+(?: [A-Z][\w&\-]+)?)")


# Entities are typed from the words around a name (issue 23 item 4): pets, places,
# organisations, works (a book, a film, a song), projects; a person otherwise.
_PET_WORDS = (r"(?:dog|cat|puppy|pup|kitten|kitty|hamster|rabbit|bunny|parrot|bird|horse|pony|"
              r"turtle|tortoise|fish|guinea pig|lizard|snake|ferret|doggo)")
_NAMED = r"(?P<o>[A-Z][\w'\-]+(?: [A-Z][\w'\-]+)?)"
_PET = re.compile(r"(?i:\b(?:my|our|his|her|their|the|a) (?:new |little |old )?" + _PET_WORDS
                  + r"s?,? (?:named |called )?)" + _NAMED + r"|\b(?P<o2>[A-Z][\w'\-]+),? "
                  r"(?i:(?:my|our|his|her|their) (?:new |little |old )?" + _PET_WORDS + r")\b")
_PLACE = re.compile(r"(?i:\b(?:live[sd]? in|living in|based in|moved to|moving to|move to|"
                    r"trip to|flew to|flying to|drove to|travel(?:l)?ed to|went to|going to|back "
                    r"(?:to|in)|visit(?:ed|ing)?|from|near|grew up in|born in|holiday in|"
                    r"vacation in|weekend in|stay(?:ed|ing)? in) )" + _NAMED)
_PLACE_SUFFIX = re.compile(r"\b(?:[A-Z][\w'\-]+ )+(?:Street|St|Road|Rd|Avenue|Ave|Park|Beach|"
                           r"Lake|Mountain|Hill|Bay|River|Square|Station|Airport|City|Town|"
                           r"Island|Valley|Heights|Village)\b")
_ORG_SUFFIX = re.compile(r"\b(?:[A-Z][\w'&\-]+ )+(?:Inc|Ltd|LLC|Labs?|Bank|Corp|Group|Studios?|"
                         r"Café|Cafe|Coffee|Gym|Fitness|Clinic|Hospital|School|University|"
                         r"College|Bakery|Restaurant|Bar|Pub|Foods|Company|Agency|Partners|Media|"
                         r"Games|Tech|Systems|Club|Centre|Center|Library|Museum|Theatre|"
                         r"Theater)\b")
_WORK = re.compile(r"(?i:\b(?:reading|read|reread|finished|started|watching|watched|"
                   r"rewatching|bingeing|binged|listening to|the book|the novel|the film|the "
                   r"movie|the show|the series|the song|the album|the podcast|the game|playing) )"
                   r"(?P<o>\"[^\"]{2,60}\"|“[^”]{2,60}”|(?:The |A )?[A-Z][\w'\-]*(?: (?:of|the|"
                   r"and|in|a|to|on|for|[A-Z][\w'\-]*)){0,6})")
_LEADING = frozenset("""joined started visited went love loved met called at in to from we i
our my""".split())
_MONTH_OR_DAY = frozenset(m.capitalize() for m in _MONTH_NAMES) | {
    "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}


def mentions(text: str) -> dict[str, str]:
    """Names mentioned in a text, with their kind: person, pet, place, company (an
    organisation), project or work (a book, a film, a song), from the words around them."""
    out: dict[str, str] = {}

    def put(name: str | None, kind: str) -> None:
        words = (name or "").strip("\"“” ,.").removesuffix("'s").split()
        while len(words) > 1 and (words[0].lower() in _LEADING or kind != "work"
                                  and words[0] in _NOT_NAMES):
            words = words[1:]  # "Joined Ironworks Gym": the sentence's first word is no name
        name = " ".join(words)
        head = words[0] if words else ""
        if name and (kind == "work" or head not in _NOT_NAMES) and name not in _MONTH_OR_DAY \
                and name not in out:
            out[name] = kind
    for m in _WORK.finditer(text):
        put(m.group("o"), "work")
    for m in _COMPANY.finditer(text):
        put(m.group("o"), "company")
    for m in _ORG_SUFFIX.finditer(text):
        put(m.group(0), "company")
    for m in _PET.finditer(text):
        put(m.group("o") or m.group("o2"), "pet")
    for m in _PLACE_SUFFIX.finditer(text):
        put(m.group(0), "place")
    for m in _PLACE.finditer(text):
        put(m.group("o"), "place")
    for m in _PROJECT.finditer(text):
        put(m.group("o"), "project")
    for m in _CAP.finditer(text):
        name = m.group(1)
        first = name.split()[0]
        if first in _NOT_NAMES or name in out or any(name in k for k in out):
            continue
        out[name] = "person"
    return out


# --- issue 15: how people really talk ------------------------------------------------------
# Facts said in passing, in longer turns: third-person facts ("my brother Tom lives in Oslo"),
# promotions ("got promoted to senior developer"), counts ("we have three dogs now"), events
# and times ("the review got pushed to Thursday the 16th", "my spin class is at 6:30"), health
# states (an injury, then healed), what someone is reading or watching, pets in passing, and
# corrections ("it's KPMG, not Deloitte"). Each pattern asks for the shape of a statement, not
# for particular words of the development set; facts whose object is a pronoun are dropped.

_PRONOUN_OBJ = re.compile(r"^(?:it|its|it's|him|her|them|they|that|this|these|those|one|"
                          r"some|something|anything|everything|nothing|to|me|us|you|so|too|"
                          r"there|here|what|which|who|how|when|is|was|being|doing)\b", re.I)
_NUMS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
         "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2,
         "zero": 0, "no": 0}
_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6,
             "seventh": 7, "eighth": 8, "ninth": 9, "tenth": 10}
_NUM = r"(?:\d{1,3}|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|zero)"
_COUNTABLE = (r"(?:dogs?|cats?|kids?|children|sons?|daughters?|grandkids?|grandchildren|"
              r"plants?|turtles?|pets?|birds?|fish|chickens?|horses?|rabbits?|hamsters?|"
              r"guinea pigs?|cars?|bikes?|jobs?|roommates?|siblings?|brothers?|sisters?|"
              r"tattoos?|houses?|books?|puppies|kittens?)")
# A correction of what was said before: the new statement was always the true one.
_CORRECTION = re.compile(
    r"\b(?:i misspoke|i mixed (?:that|it|them|those) up|i got (?:that|it) wrong|i told you "
    r"wrong|that's not right|that is not right|that's wrong|scratch that|i meant to say|"
    r"did i say|i said [^.!?]{1,30}? (?:earlier|before)|i mis(?:said|read|heard)|my bad|"
    r"correction)\b", re.I)
_X_NOT_Y = re.compile(r"(?:\bactually |\bit's |\bit is |\bis |\b's )?(?P<new>[\w'\-:]+(?: [\w'\-:]+){0,3}?),? "
                      r"not (?:the |a |an )?(?P<old>[\w'\-:]+(?: [\w'\-:]+){0,3}?)"
                      r"(?=\s*(?:[,!?;]|\.(?=\s|$)|$))", re.I)
_BODY = (r"(?:ankle|knee|wrist|back|shoulder|neck|hip|elbow|foot|feet|leg|arm|hand|finger|"
         r"toe|hamstring|calf|ribs?|nose|thumb|head)")
_ILLNESS = r"(?:flu|cold|covid|a fever|fever|migraines?|pneumonia|bronchitis|strep|the flu)"
_SUBJ_REL = r"(?:[Mm]y|[Oo]ur) (?P<rel>" + _REL + r"|wife|husband|kid|son|daughter)"
_SUBJ = r"(?:" + _SUBJ_REL + r"(?:,? (?P<sname>" + _NAME + r"))?)"
_TIME = r"(?P<o>\d{1,2}(?::\d\d)?\s?(?:[ap]\.?m\.?)?|noon|midnight)"
_EVENT = (r"(?P<q>(?:(?!(?:the|a|an|my|our|your|his|her|their|its|this|that|these|those|is|"
          r"was|and|but|so|or|to|at|on|in|for|of|with|i|we|you|he|she|they|it|me|us|them)\b)"
          r"[a-z]+ ){0,2}(?:meeting|appointment|review|call|class|lesson|session|"
          r"party|shower|wedding|dinner|lunch|brunch|flight|train|interview|exam|test|"
          r"concert|game|match|tournament|qualifier|competition|conference|offsite|trip|"
          r"surgery|checkup|check-up|visit|recital|ceremony|launch|event|shift|standup|"
          r"practice|workshop|presentation|pickup|date))")
_SAID_DATE = r"(?P<o>(?:(?:on|for) )?(?:[A-Z][a-z]+day(?: the \d{1,2}(?:st|nd|rd|th)?)?|" \
    r"(?:the )?\d{1,2}(?:st|nd|rd|th)?(?: of [A-Z][a-z]+)?|[A-Z][a-z]+ \d{1,2}(?:st|nd|rd|th)?|" \
    r"next (?:week|month|year|spring|summer|fall|autumn|winter|[A-Z][a-z]+day)|tomorrow)" \
    r"(?: (?:morning|afternoon|evening|night))?)"


# "No, not really", "yes, not yet": answers, not corrections.
_FILLER = re.compile(r"^(?:no|yes|yeah|nah|really|sure|bad|much|yet|only|just|now|exactly|"
                     r"always|ever|again|quite|at all|anymore|so|too|very|even|that|oh|ok|okay|"
                     r"well|sorry)$", re.I)


def _count(word: str) -> int | None:
    w = word.lower()
    return int(w) if w.isdigit() else _NUMS.get(w)


def _singular(noun: str) -> str:
    n = noun.lower()
    return {"children": "child", "grandchildren": "grandchild", "puppies": "puppy",
            "fish": "fish", "feet": "foot"}.get(n, n[:-1] if n.endswith("s") and not
                                                  n.endswith("ss") else n)


def _rel_subject(speaker: str, rel: str | None, name: str | None) -> str:
    if name and name.split()[0] not in _NOT_NAMES:
        return name
    r = {"mom": "mother", "mum": "mother", "dad": "father", "kid": "child",
         "neighbor": "neighbour"}.get((rel or "").lower(), (rel or "").lower())
    return f"{speaker}'s {r}"


class _Facts:
    """The facts found so far in one episode's text (``_more``): ``add`` keeps one of each."""

    def __init__(self, text: str, ep: EpisodeView, hedged: bool, correcting: bool) -> None:
        self.text, self.ep, self.hedged, self.correcting = text, ep, hedged, correcting
        self.out: list[FactCandidate] = []

    def add(self, subject: str, predicate: str, obj: str, statement: str, category: str,
            conf: float, *, change: bool = False, negated: bool = False,
            qualifier: str | None = None, at: int = 0,
            store: Literal["semantic", "procedural"] = "semantic") -> None:
        obj = obj.strip(" ,.'\"")
        if not obj or (_PRONOUN_OBJ.match(obj) and obj != NONE):
            return
        if _not_said(self.text, at):
            return  # "should I tell my boss ...?", "where my flight is ..."
        speaker = (self.ep.speaker or "user").strip() or "user"
        obj, statement = _own(obj, speaker), _articles(_own(statement, speaker))
        sentence = self.text[_sentence_start(self.text, at):_sentence_end(self.text, at)]
        changed = (change or bool(_CHANGE.search(sentence))) and not self.correcting
        valid = self.ep.occurred_at if predicate in (
            "lives_in", "works_at", "job", "reading", "watching", "condition") else None
        if any(f.predicate == predicate and f.subject == subject and f.object.casefold()
               == obj.casefold() and f.qualifier == qualifier for f in self.out):
            return
        self.out.append(FactCandidate(
            subject=subject, predicate=predicate, object=obj, statement=statement,
            category=category, confidence=round(max(.1, conf - (.25 if self.hedged else 0)), 3),
            change=changed, negated=negated, valid_from=valid, store=store,
            qualifier=qualifier, source_ids=(self.ep.id,)))


def _more(text: str, speaker: str, ep: EpisodeView, hedged: bool) -> list[FactCandidate]:
    """The rule families below, in order, over one episode's text."""
    correcting = bool(_CORRECTION.search(text)) or bool(
        re.search(r"\b(?:actually|sorry|oops|wait)\b", text, re.I) and _X_NOT_Y.search(text))
    f = _Facts(text, ep, hedged, correcting)
    for family in _FAMILIES:
        family(text, speaker, f)
    return f.out


# A role said with a judgement is a skill, not a job: "an amazing cook", "a great teacher".
_JUDGED = re.compile(r"(?:amazing|great|good|excellent|fantastic|terrible|awful|bad|awesome|"
                     r"brilliant|wonderful|incredible|talented|natural|decent|superb|"
                     r"phenomenal|lousy|born)\b", re.I)


def _third_person(text: str, speaker: str, f: _Facts) -> None:
    # Third-person facts: "my brother Tom lives in Oslo", "my husband works at Boeing",
    # "my wife is a teacher at the middle school", "my son just turned 16", "Tom moved to Bergen".
    subj_rx = r"(?:\b" + _SUBJ + r"|(?<![\w'])(?P<bare>" + _NAME + r"))"
    for m in re.finditer(subj_rx + r"(?:'s| is)? (?:(?:still|now|currently|actually|also|"
                         r"finally|just|recently) )*(?P<verb>lives in|moved(?: back)? to|"
                         r"relocated(?: back)? to|is back (?:home )?in|'s back (?:home )?in|"
                         r"works (?:at|for)|(?:is |'s )?(?:a|an|the) |got promoted to |"
                         r"turned |is (?=\d)|'s (?=\d))", text):
        rel, name, bare = m.group("rel"), m.group("sname"), m.group("bare")
        if bare:
            if bare.split()[0] in _NOT_NAMES or m.start() == _sentence_start(text, m.start()) \
                    and bare.split()[0] in ("My", "Our", "The", "So", "And"):
                continue
            if not re.match(r"(?:lives|moved|relocated|is back|'s back|works|got promoted)",
                            m.group("verb")):
                continue  # "Sam is a ..." too often a description, not a role
            subject = bare
        else:
            subject = _rel_subject(speaker, rel, name)
        verb = m.group("verb").strip()
        rest = text[m.end():].lstrip()
        if verb.startswith(("lives", "moved", "relocated", "is back", "'s back")):
            om = re.match(r"(?P<o>" + _OBJ + ")" + _END, rest)
            if om and re.match(r"[A-Z]", om.group("o")):
                f.add(subject, "lives_in", _TRIM.sub("", _clean(om.group("o"))),
                    f"{subject} lives in {_clean(om.group('o'))}", "place", .8,
                    change=not verb.startswith("lives"), at=m.start())
        elif verb.startswith("works"):
            om = re.match(r"(?P<o>" + _OBJ + ")" + _END, rest)
            if om:
                f.add(subject, "works_at", _TRIM.sub("", _clean(om.group("o"))),
                    f"{subject} works at {_clean(om.group('o'))}", "work", .8, at=m.start())
        elif verb in ("turned",) or verb in ("is", "'s") and re.match(r"\d", rest):
            om = re.match(r"(?P<o>\d{1,3})\b(?! ?(?:%|percent|minutes|hours|dollars|bucks|k\b))",
                         rest)
            if om and (not bare) and int(om.group("o")) < 120:
                f.add(subject, "age", om.group("o"), f"{subject} is {om.group('o')} years old",
                    "identity", .8, change=verb == "turned", at=m.start())
        else:  # a role: "my wife is a teacher at the middle school", "got promoted to principal"
            om = re.match(r"(?P<o>(?:[a-z\-]+ ){0,2}" + _ROLES + r"|(?:[a-z\-]+ ){0,2}"
                         r"(?:principal|nurse|chef|lead|partner|paramedic|firefighter))\b"
                         r"(?: (?:at|for|in) (?P<at>" + _OBJ + ")" + _END + ")?", rest)
            if om and not bare and not _JUDGED.match(om.group("o")):  # "an amazing cook"
                f.add(subject, "job", om.group("o"), f"{subject} is a {om.group('o')}", "work", .75,
                    change="promoted" in verb, at=m.start())


def _work(text: str, speaker: str, f: _Facts) -> None:
    # Promotions and new roles of the speaker, the role and the employer apart:
    # "got promoted to senior developer", "they made me sous chef at Osteria Rossi",
    # "I became the vice principal at Lincoln", "I finally got a job as a paralegal at a firm",
    # "I'm working as a barista at Little Owl Coffee".
    for m in re.finditer(r"(?i:\b(?:i (?:just |finally |recently )?(?:got |was |have been "
                         r"|'ve been )?promoted to|(?:they|he|she|my boss|my manager|the company)"
                         r" (?:just )?promoted me(?: to)?|i (?:just |finally )?became|"
                         r"i(?:'ve| have)? (?:just |finally )?(?:got|landed|started) (?:a|my|the)"
                         r" (?:new )?(?:job|position|role) as|i (?:just |recently )?started "
                         r"(?:out |working |work )?as|i(?:'m| am)(?: now| still)? "
                         r"(?:working|employed) as|i work as)) (?:an? |the )?(?P<o>(?:(?:[A-Z]{2,4}"
                         r"|[a-z\-]+) ){0,2}[a-z\-]+?)(?= (?:at|for|with|in) |\s*[,.!?;]|\s+(?:and|but|so|"
                         r"last|this|since|now|which|who)\b|$)", text):
        role = _clean(m.group("o"))  # "a nurse last year" -> "nurse"
        if not role or _PRONOUN_OBJ.match(role) or role in ("job", "position"):
            continue
        if re.search(r"\bbecame$", text[:m.start("o")].rstrip(), re.I) and not re.fullmatch(
                r"(?:[a-z\-]+ ){0,2}" + _ROLES, role, re.I):
            continue  # "once I became allergic": no article, no role
        promoted = not re.search(r"working|employed|work as", m.group(0), re.I)
        f.add(speaker, "job", role, f"{speaker} is {'an' if role[0] in 'aeiou' else 'a'} {role}",
            "work", .8, change=promoted, at=m.start())
        at = re.match(r" (?:at|for|with) (?P<o>" + _OBJ + ")" + _END, text[m.end():])
        if at and not re.match(r"(?:a|an|the) (?:firm|company|startup|place|shop|store)\b",
                               at.group("o"), re.I):
            org = _TRIM.sub("", _clean(at.group("o")))
            f.add(speaker, "works_at", org, f"{speaker} works at {org}", "work", .8,
                change=promoted, at=m.start())
    # "I teach third grade at Lincoln Elementary": a teacher there.
    # "I teach at a high school in Ohio": a teacher, but Ohio is no employer.
    for m in re.finditer(r"\bI (?:still |now )?teach (?:(?!at\b)[\w\-]+ ){0,4}(?:at|in) "
                         r"(?P<o>[A-Za-z][\w'&\- ]{1,40}?)" + _END, text):
        f.add(speaker, "job", "teacher", f"{speaker} is a teacher", "work", .7, at=m.start())
        if re.search(r"\bat [A-Z]", m.group(0)):
            f.add(speaker, "works_at", _clean(m.group("o")), f"{speaker} works at "
                f"{_clean(m.group('o'))}", "work", .75, at=m.start())
    # Jobs lost or left: "I lost my job at Door Dash", "I left Target in March".
    for m in re.finditer(r"(?i:\bi (?:just |also |recently |finally )?(?:lost|left|quit) "
                         r"(?:my job (?:at|with) (?:the )?|my job as (?:an? )?|(?:the )?)?)"
                         r"(?P<o>[A-Z][\w&'\-]+(?: [A-Z][\w&'\-]+){0,2}|(?<=as a )[a-z]+|"
                         r"(?<=as an )[a-z]+)", text):
        o = m.group("o")
        if o.split()[0] in _NOT_NAMES:
            continue
        pred = "job" if re.search(r"as an? $", text[:m.start("o")]) else "works_at"
        f.add(speaker, pred, o, f"{speaker} no longer {'is a' if pred == 'job' else 'works at'}"
            f" {o}", "work", .75, change=True, negated=True, at=m.start())


def _moves(text: str, speaker: str, f: _Facts) -> None:
    # Moves said naturally: a new home of the speaker's named with its place, whatever the
    # verb ("we're settling into the new house in Sheffield", "unpacking in our new flat in
    # Leeds", "the keys to our place in Oslo", "I'm in Phoenix these days").
    for m in re.finditer(r"(?i:\b(?:i|we|i'm|we're|i've|we've|our|my)\b[^.!?;]{0,40}?\b(?:new|own"
                         r"|first) (?:house|home|place|flat|apartment|condo|room)\b[^.!?;,]{0,15}?"
                         r"\bin |\b(?:we|i) (?:finally |just )?moved (?:into|in to) (?:a|our|my|"
                         r"the) (?:new )?[\w ]{0,20}?in )(?P<o>" + _NAME + ")", text):
        if _NEG.search(text[_clause_start(text, m.start()):m.start("o")]) or _HEDGE.search(
                text[_clause_start(text, m.start()):m.start("o")]):
            continue  # "we're not getting a new place in Oslo", "maybe a new flat in Leeds"
        f.add(speaker, "lives_in", m.group("o"), f"{speaker} lives in {m.group('o')}", "place",
            .8, change=True, at=m.start())
    for m in re.finditer(r"(?i:\bi(?:'m| am) (?:in|living in|based in) )(?P<o>" + _NAME +
                         r")(?i:,? (?:these days|nowadays))", text):
        f.add(speaker, "lives_in", m.group("o"), f"{speaker} lives in {m.group('o')}", "place",
            .75, at=m.start())
    for m in re.finditer(r"(?i:\b(?:my|our) (?:little |tiny |new |old )?(?:flat|apartment|house|"
                         r"place|condo) in )(?P<o>" + _NAME + ")", text):
        if re.search(r"\b(?:old|used to|former|previous)\b", text[max(0, m.start() - 20):
                                                                   m.start("o")], re.I):
            continue
        f.add(speaker, "lives_in", m.group("o"), f"{speaker} lives in {m.group('o')}", "place",
            .7, at=m.start())


def _counts(text: str, speaker: str, f: _Facts) -> None:
    # Counts: "we have two dogs", "now we've got three kids", "down to two plants",
    # "I won my fourth tournament".
    for m in re.finditer(r"(?i:\b(?:i|we)(?:'ve| have)?(?: now| still)? (?:have|got|own)"
                         r"(?: got)? |\b(?:down|up) to (?:just )?|\bnow (?:i|we) have )"
                         r"(?P<n>" + _NUM + r") (?:(?:[a-z]+ ){0,1})?(?P<q>" + _COUNTABLE + r")\b",
                         text):
        n = _count(m.group("n"))
        if n is None:
            continue
        q = _singular(m.group("q"))
        q = {"kid": "child", "puppie": "puppy"}.get(q, q)
        f.add(speaker, "count", str(n), f"{speaker} has {n} {m.group('q').lower()}", "possession",
            .75, qualifier=q, change=bool(re.match(r"(?i)down|up|now", m.group(0))),
            at=m.start())
    for m in re.finditer(r"(?i:\bi (?:just )?won my (?P<n>first|second|third|fourth|fifth|sixth|"
                         r"seventh|eighth|ninth|tenth) )(?P<q>(?:[\w\-]+ ){0,2}(?:tournament|"
                         r"race|title|championship|match|game|award|medal|competition)s?)",
                         text):
        n = _ORDINALS[m.group("n").lower()]
        f.add(speaker, "count", str(n), f"{speaker} has won {n} {m.group('q').removesuffix('s')}{'s' if n > 1 else ''}", "possession",
            .7, qualifier=f"{m.group('q').split()[-1]} won", change=True, at=m.start())


def _pets(text: str, speaker: str, f: _Facts) -> None:
    # Pets in passing: "meet Toby, my puppy", "my dog Biscuit", "our dog is called Rufus",
    # "our dog's name is Bruno", "we adopted a cat named Miso", "the puppy's name is Cocoa".
    pet = r"(?P<q>dog|cat|puppy|kitten|pup|kitty|bird|rabbit|bunny|hamster|horse|turtle|" \
        r"tortoise|parrot|guinea pig|snake|lizard|gecko|ferret)"
    for rx in (r"(?i:\bmeet )(?P<o>" + _NAME + r")(?i:, (?:my|our) (?:new |little )?" + pet + r")\b",
               r"(?i:\b(?:my|our) (?:new |little |old )?" + pet + r",? )(?P<o>" + _NAME + r")\b",
               r"(?i:\b(?:my|our|the) (?:new |little )?" + pet + r"(?:'s name is|'s name's| is "
               r"(?:called|named)) (?:actually )?)(?P<o>" + _NAME + r")\b",
               r"(?i:\b(?:i|we) (?:just )?(?:adopted|got|rescued|brought home) (?:a|an|another)"
               r" (?:new |little |second |third )?" + pet + r",? (?:named |called )?)(?P<o>"
               + _NAME + r")\b"):
        for m in re.finditer(rx, text):
            o = m.group("o")
            if o.split()[0] in _NOT_NAMES:
                continue
            q = {"pup": "puppy", "kitty": "cat", "bunny": "rabbit"}.get(m.group("q").lower(),
                                                                      m.group("q").lower())
            f.add(speaker, "pet_name", o, f"{speaker} has a {q} named {o}", "possession", .8,
                qualifier=q, change=bool(re.search(r"adopted|got|rescued|brought", m.group(0))),
                at=m.start())


# An injury said as long past ("last season", "years ago", "when I was 12") or as overcome
# later in the turn ("I was able to overcome it", "came back", "all healed") is not current.
_LONG_AGO = re.compile(r"\b(?:last (?:season|year|summer|spring|fall|autumn|winter)|(?:a|\w+) "
                       r"(?:years?|months?|seasons?) ago|years back|when i was|back (?:in|when)|"
                       r"in (?:high school|college|\d{4})|as a (?:kid|child|teen))\b", re.I)
_OVERCOME = re.compile(r"\b(?:overcome|overcame|got over|recovered|healed|came back|bounced "
                       r"back|back on (?:my|the) feet|fully fit|behind me)\b", re.I)


_ILL_ARTICLE = {"flu": "the ", "cold": "a ", "fever": "a ", "migraine": "a "}


def _past_harm(text: str, at: int) -> bool:
    sentence = text[_sentence_start(text, at):_sentence_end(text, at)]
    return bool(_LONG_AGO.search(sentence) or _OVERCOME.search(text[at:]))


def _health(text: str, speaker: str, f: _Facts) -> None:
    # Health states: an injury or illness, then healed.
    for m in re.finditer(r"(?i:\bi (?:just )?(?:sprained|broke|twisted|hurt|injured|tore|pulled|"
                         r"strained|dislocated|fractured) my )(?P<o>" + _BODY + r")\b", text):
        part = m.group("o").lower()
        if _past_harm(text, m.start()):
            continue  # "last season I hurt my ankle ... I was able to overcome it"
        f.add(speaker, "condition", f"{part} injury", f"{speaker} has a {part} injury", "health",
            .75, change=True, at=m.start())
    for m in re.finditer(r"(?i:\b(?:this|my) (?:[a-z]+ )?(?P<o>injury|surgery|illness)\b)",
                         text):
        if re.search(r"\b(?:healed|recovered|over|gone|behind me|better)\b",
                     text[m.end():_sentence_end(text, m.end())], re.I) or _past_harm(text,
                                                                                 m.start()):
            continue
        f.add(speaker, "condition", "injury" if m.group("o").lower() != "illness" else "illness",
            f"{speaker} has an {m.group('o').lower()}", "health", .65, change=True, at=m.start())
    for m in re.finditer(r"(?i:\bi (?:got hurt|got injured|hurt myself))\b", text):
        f.add(speaker, "condition", "injury", f"{speaker} has an injury", "health", .65,
            change=True, at=m.start())
    for m in re.finditer(r"(?i:\b(?:my )?(?P<o>" + _BODY + r")(?: pain)?(?:'s| is| has)(?: "
                         r"(?:been|now|finally|totally|completely|all|fully))* (?P<how>healed|"
                         r"better|fine now|gone|killing me|hurting|sore|broken|sprained))\b",
                         text):
        part, how = m.group("o").lower(), m.group("how").lower()
        pain = "pain" in m.group(0).lower() or how in ("killing me", "hurting", "sore")
        what = f"{part} {'pain' if pain else 'injury'}"
        healed = how in ("healed", "better", "fine now", "gone")
        f.add(speaker, "condition", what, f"{speaker} {'no longer has' if healed else 'has'} "
            f"{'' if pain else 'a '}{what}", "health", .75, change=True, negated=healed,
            at=m.start())
    for m in re.finditer(r"(?i:\b(?:i(?:'ve| have)? (?:been )?(?:down with|sick with|got|caught)|"
                         r"i(?:'m| am) (?:sick with|down with)) (?:the |a |an )?)(?P<o>flu|cold|"
                         r"covid|fever|migraine|pneumonia|bronchitis)\b", text):
        f.add(speaker, "condition", m.group("o").lower(), f"{speaker} has "
            f"{_ILL_ARTICLE.get(m.group('o').lower(), '')}{m.group('o')}", "health", .75,
            change=True, at=m.start())
    for m in re.finditer(r"(?i:\b(?:the |my )?(?P<o>flu|cold|covid|fever|migraine|pneumonia)"
                         r"(?:'s| is| has)(?: finally| totally| completely)? (?:gone|over|"
                         r"cleared up))\b", text):
        f.add(speaker, "condition", m.group("o").lower(), f"{speaker} no longer has "
            f"{_ILL_ARTICLE.get(m.group('o').lower(), '')}{m.group('o')}", "health", .75,
            change=True, negated=True, at=m.start())


_MEDIUM = {"reading": r"\b(?:book|novel|read|reading|author|chapter|pages?|kindle|audiobook)",
           "watching": r"\b(?:show|series|season|episode|watch|watching|tv|netflix|film|movie|"
                       r"binge)"}


def _whole_title(o: str) -> str:
    """A title without the small words it ran on into: "Succession, the" -> "Succession"."""
    o = o.strip("\"“” ,")
    return re.sub(r"(?:,? (?:of|the|and|in|a|to|on|for))+$", "", o).strip(" ,")


def _media(text: str, speaker: str, f: _Facts) -> None:
    # What someone is reading or watching now.
    title = r"(?P<o>\"[^\"]{2,60}\"|“[^”]{2,60}”|(?:The |A )?[A-Z][\w'\-]*(?:,? (?:(?:of|the|and|" \
        r"in|a|to|on|for)|[A-Z][\w'\-]*),?){0,8}(?<!,))"
    for verb, pred in (("reading|rereading|re-reading|listening to", "reading"),
                       ("watching|rewatching|re-watching|bingeing|binging", "watching")):
        for m in re.finditer(r"(?i:\b(?:i(?:'m| am)|we(?:'re| are)|i(?:'ve| have) been|we(?:'ve|"
                             r" have) been)(?: now| currently| still| also| finally)? (?:"
                             + verb + r")|\b(?:i'm|we're|i am|we are) (?:now |about |almost )?"
                             r"(?:halfway|partway|most of the way) (?:through|into)|\b(?:i|we)(?:'ve| "
                             r"have)? (?:just )?started(?: " + ("reading" if pred == "reading"
                                                                else "watching") + r")?) "
                             + title, text):
            o = _whole_title(m.group("o"))
            if o.split()[0].lower() in ("i", "it", "a", "the") and len(o.split()) == 1:
                continue
            said = m.group(0).lower()
            if "started" in said and not re.search(r"started (?:reading|watching)", said) \
                    and not re.search(_MEDIUM[pred], text, re.I):
                continue  # "we've started The Bear": a book or a show? only its words say
            if re.search(r"halfway|partway|most of the way", said) and (
                    pred == "watching" and not re.search(_MEDIUM["watching"], text, re.I)
                    or pred == "reading" and re.search(_MEDIUM["watching"], text, re.I)
                    and not re.search(_MEDIUM["reading"], text, re.I)):
                continue  # "halfway through Dune": a book unless a show's words say otherwise
            f.add(speaker, pred, o, f"{speaker} is {pred} {o}", "media", .7,
                change=bool(re.search(r"started|now", m.group(0), re.I)), at=m.start())
    for m in re.finditer(r"(?i:\b(?:i|we)(?:'ve| have)? (?:just |finally )?finished )" + title,
                         text):
        o = _whole_title(m.group("o"))
        if len(o) < 3 or o.split()[0] in _NOT_NAMES:
            continue
        for pred in ("reading", "watching"):
            f.add(speaker, pred, o, f"{speaker} finished {o}", "media", .7, change=True,
                negated=True, at=m.start())
    for m in re.finditer(r"(?i:\bi(?:'m| am) not (?P<v>reading|watching) anything)", text):
        f.add(speaker, m.group("v").lower(), NONE, f"{speaker} is not {m.group('v')} anything",
            "media", .7, negated=True, at=m.start())


def _others(text: str, start: int, owner: str | None) -> bool:
    """Whether an event named at ``start`` is someone else's: "my sister's flight", "her
    flight", "Tom's party"."""
    return bool(owner and owner.endswith("'s")) or bool(re.search(
        r"(?:\b(?:his|her|their|your|its)|\w's)\s+$", text[max(0, start - 30):start], re.I))


def _whose(speaker: str, owner: str | None) -> str | None:
    """Whose an event is, as its statement says it, from the words before it: the speaker's
    ("my", "the", none: "Bea's"), a relative's ("my sister's" -> "Bea's sister's"), a named
    person's ("Tom's"); None when that is not said ("the team's"). The fact stays the
    speaker's: an event in their diary."""
    if not owner or not owner.endswith("'s"):
        return f"{speaker}'s"
    words = owner.removesuffix("'s").split()
    if words[0].lower() in ("my", "our") and re.fullmatch(_REL + "|kid|son|daughter|wife|"
                                                           "husband", words[-1].lower()):
        return f"{_rel_subject(speaker, words[-1], None)}'s"
    if len(words) == 1 and words[0][0].isupper() and words[0] not in _NOT_NAMES:
        return f"{words[0]}'s"
    return None


_WEEKDAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_DAY = re.compile(r"\b(?:(?P<every>(?:every|each) )?(?:(?:this|next|on) )?" + _WEEKDAY + r"(?P<pl>s)?|"
                  r"today|tonight|tomorrow|the day after tomorrow)(?: (?:morning|afternoon|"
                  r"evening|night)s?)?\b", re.I)


def _day_of(text: str, at: int, said_at: float) -> str:
    """The day a time is on, when its sentence says one, read against when it was said:
    " tomorrow morning (2026-03-13)", " on Friday (2026-03-13)"; a weekly one keeps no date
    (" every Tuesday morning", " on Tuesdays"); "" when it says none."""
    sentence = text[_sentence_start(text, at):_sentence_end(text, at)]
    m = _DAY.search(sentence)
    if not m:
        return ""
    day = re.sub(r"^on ", "", m.group(0).lower())
    day = re.sub(_WEEKDAY, lambda d: d.group(0).capitalize(), day)
    if m.group("every") or m.group("pl"):
        return f" {'' if m.group('every') else 'on '}{day}"  # weekly: no one date
    resolved = resolve_date(re.sub(r" (?:morning|afternoon|evening|night)$", "", day)
                            .replace("tonight", "today"), said_at)
    prep = "on " if re.match(r"[A-Z]", day) else ""
    return f" {prep}{day}" + (f" ({resolved})" if resolved else "")


def _on(date: str) -> str:
    """'on ' before a day or a date, nothing before 'next Monday', 'tomorrow'."""
    return "" if re.match(r"(?:next|this|tomorrow|tonight|today|in)\b", date, re.I) else "on "


def _events(text: str, speaker: str, f: _Facts) -> None:
    # Events and times: "the review meeting is on Tuesday the 14th", "the wedding is set for
    # September 20th", "the meeting got pushed to Thursday", "my spin class is at 6:30",
    # "moved my spin class to 7:15", "my shift starts at 7:30", "the flight lands in Boston".
    ev = r"\b(?:(?P<own>(?i:the|my|our)|(?:(?i:my|our) )?[a-z]+'s|[A-Z][a-z]+'s) )?" + _EVENT
    for m in re.finditer(ev + r"(?: (?:with|on|for|at) [\w' ]{1,25}?)?(?:'s| is| was)? ?(?:now |"
                         r"still |actually )?(?:(?:got |has been |was |been )?(?P<mv>pushed|"
                         r"moved|postponed|rescheduled|changed|bumped|delayed)(?: back| up)? "
                         r"(?:to|until) |(?:is |'s )?(?:set|scheduled|planned|booked) for |"
                         r"(?:starts|begins|leaves|lands|gets in|arrives|is|'s) (?P<at>at )?)"
                         r"(?:on )?(?:" + _TIME.replace("(?P<o>", "(?P<t>") + "|" + _SAID_DATE
                         + r")(?![\w:])", text):
        whose = _whose(speaker, m.group("own"))  # "my sister's flight": Bea's sister's
        if whose is None or _others(text, m.start(), None):
            continue  # "her flight", "the team's game": whose is not said
        q = m.group("q").lower()
        if m.group("t"):
            if not (":" in m.group("t") or re.search(r"[ap]\.?m|noon|midnight", m.group("t"))
                    or m.group("at")):
                continue
            obj, pred = re.sub(r"(\d\s?[ap]m)\.$", r"\1", m.group("t")), "time_of"
        else:
            obj, pred = m.group("o"), "date_of"
            obj = re.sub(r"^(?:on|for) ", "", obj)
            resolved = resolve_date(obj, f.ep.occurred_at)
            if resolved:
                obj = f"{obj} ({resolved})"
        day = _day_of(text, m.start(), f.ep.occurred_at) if pred == "time_of" else ""
        f.add(speaker, pred, obj, f"{whose} {q} is {'at ' if pred == 'time_of' else _on(obj)}"
            f"{obj}{day}", "date", .75, qualifier=q.split()[-1], change=bool(m.group("mv")),
            at=m.start())
    for m in re.finditer(r"(?i:\b(?:moved|pushed|rescheduled|changed|bumped) (?:my|our|the) )"
                         + _EVENT + r"(?: [\w' ]{1,20}?)? to (?:" + _TIME.replace("(?P<o>", "(?P<t>")
                         + "|" + _SAID_DATE + r")(?![\w:])", text):
        kind = m.group("q").lower()  # "spin class": the statement's; "class": the slot's
        q = kind.split()[-1]
        if m.group("t"):
            obj, pred = re.sub(r"(\d\s?[ap]m)\.$", r"\1", m.group("t")), "time_of"
        else:
            obj, pred = re.sub(r"^(?:on|for) ", "", m.group("o")), "date_of"
            resolved = resolve_date(obj, f.ep.occurred_at)
            obj = f"{obj} ({resolved})" if resolved else obj
        day = _day_of(text, m.start(), f.ep.occurred_at) if pred == "time_of" else ""
        f.add(speaker, pred, obj, f"{speaker}'s {kind} is moved to {obj}{day}", "date", .75,
            qualifier=q, change=True, at=m.start())
    for m in re.finditer(r"(?i:\b(?:the|my|our) )" + _EVENT + r"(?i:(?: got| was| has been| is)"
                         r" (?:cancell?ed|called off|postponed|pushed back))", text):
        if _others(text, m.start(), None):
            continue
        q = m.group("q").lower()
        off = re.search(r"cancell?ed|called off", m.group(0), re.I)
        f.add(speaker, "date_of", NONE, f"{speaker}'s {q} is {'cancelled' if off else 'postponed'}",
            "date", .7, qualifier=q.split()[-1], negated=True, change=True, at=m.start())
    # (Destinations of trips are left f.out: too easily two different trips.)


# A title, whole: "Lord of the Rings", "The Name of the Wind" (never from its middle).
_TITLE = (r"(?<!\bof )(?<!\bthe )(?<!\band )(?<!\bin )" + _NAME + r"(?: (?:(?:of|and|in|on|to|for)"
          r"(?: the| a| an)?|the) " + _NAME + r")*")


def _title_said(o: str) -> str | None:
    """A title without the sentence's first words ("Honestly Lord of the Flies"), None when
    nothing but such words is left ("So", "The")."""
    words = o.split()
    while words and words[0] in _NOT_NAMES and not (words[0] in ("The", "A") and len(words) > 1):
        words = words[1:]
    return " ".join(words) or None


def _preferences(text: str, speaker: str, f: _Facts) -> None:
    # Preferences from filler: "I do love X", "I'm such a sucker for X", "I'm really into X",
    # "X is my favorite book", "X has overtaken Y as my favorite show".
    for m in re.finditer(r"(?i:\bi(?:'m| am)(?: (?:really|so|totally|kind of|kinda|super|"
                         r"lately|also|now))* (?:such a sucker for|really into|into|obsessed "
                         r"with|hooked on|a big fan of|a huge fan of|crazy about) )(?P<o>"
                         + _OBJ + ")" + _END, text):
        whole = _whole_liking(text, m.end("o"), _clean(m.group("o")))
        o = _TRIM.sub("", whole or "")
        if len(o) < 3 or o.lower() in ("it", "this", "that") or _reaction(text, whole or ""):
            continue
        f.add(speaker, "likes", o, f"{speaker} likes {o}", "preference", .65, at=m.start(),
            store="semantic")
    for m in re.finditer(r"(?P<o>" + _TITLE + ")"
                         r"(?i:(?: has| have)? (?:officially |finally )?(?:overtaken|replaced|"
                         r"beaten|taken over from) (?:[\w' ]{1,40}?) as my (?:absolute |new |all-"
                         r"time )?favou?rite (?P<q>[a-z]+))", text):
        title = _title_said(m.group("o"))
        if title:
            f.add(speaker, "favorite", title, f"{speaker}'s favorite {m.group('q')} is {title}",
                "preference", .8, qualifier=_qualifier(m.group("q")), change=True, at=m.start())
    for m in re.finditer(r"(?P<o>" + _TITLE + ")"
                         r"(?i: (?:is|was|has always been) (?:still )?my (?:absolute |all-time )?"
                         r"favou?rite (?P<q>[a-z]+))", text):
        title = _title_said(m.group("o"))
        if title:
            f.add(speaker, "favorite", title, f"{speaker}'s favorite {m.group('q')} is {title}",
                "preference", .8, qualifier=_qualifier(m.group("q")), at=m.start())
    for m in re.finditer(r"(?i:\bmy favou?rite (?P<q>[a-z]+) (?:was|has) always (?:been )?)(?P<o>"
                         + _TITLE + ")", text):
        f.add(speaker, "favorite", m.group("o"), f"{speaker}'s favorite {m.group('q')} is "
            f"{m.group('o')}", "preference", .8, qualifier=_qualifier(m.group("q")),
            at=m.start())


def _relationships(text: str, speaker: str, f: _Facts) -> None:
    # One relationship said two ways: "my husband Pete" also says married; "I've never been
    # married" says not married.
    for m in re.finditer(r"(?i:\b(?:my|the) (?P<q>husband|wife|hubby|missus))\b", text):
        f.add(speaker, "relationship_status", "married", f"{speaker} is married",
            "relationship", .7, at=m.start())
    for m in re.finditer(r"(?i:\bi(?:'ve| have) never been married|\bi(?:'m| am) not married)",
                         text):
        f.add(speaker, "relationship_status", "married", f"{speaker} is not married",
            "relationship", .8, negated=True, at=m.start())
    for m in re.finditer(r"(?i:\b(?:i(?:'m| am)(?: now)?|we(?:'re| are)(?: now)?) (?:officially )?"
                         r"(?P<o>engaged|married|divorced|single))\b", text):
        if re.match(r"(?i)we", m.group(0)) and m.group("o").lower() in ("divorced", "single"):
            continue
        f.add(speaker, "relationship_status", m.group("o").lower(), f"{speaker} is "
            f"{m.group('o').lower()}", "relationship", .8,
            change=bool(re.search(r"officially|now", m.group(0), re.I)), at=m.start())
    # A wedding the speaker had is a marriage ("we got married", "we tied the knot", "my
    # girlfriend and I had a lovely wedding ceremony"; not "my sister's wedding", nor one to
    # come); "I've been seeing someone" is dating.
    for m in re.finditer(r"(?i:\b(?:i|we)(?:'ve| have)?(?: just| finally| recently| officially)? "
                         r"(?:got married|tied the knot|(?:had|celebrated) (?:(?:a|an|our|my|the) )?"
                         r"(?:(?!(?:to|for|about|of|the|a|an|our|my|their|his|her)\b)[a-z]+,? ){0,4}"
                         r"wedding\b(?! plan)))", text):
        if _NEG.search(text[_clause_start(text, m.start()):m.end()]):
            continue
        f.add(speaker, "relationship_status", "married", f"{speaker} is married",
            "relationship", .8, change=True, at=m.start())
    for m in re.finditer(r"(?i:\bi(?:'ve| have) been seeing someone|\bi(?:'m| am) seeing "
                         r"someone)\b", text):
        f.add(speaker, "relationship_status", "dating someone", f"{speaker} is dating someone",
            "relationship", .75, at=m.start())


def _corrections(text: str, speaker: str, f: _Facts) -> None:
    # Corrections: "it's KPMG I work at, not Deloitte", "she's actually 34, not 32": the new
    # value against the one it names as wrong.
    if f.correcting:
        for m in _X_NOT_Y.finditer(text):
            new, old = m.group("new"), m.group("old")
            new = re.sub(r"^(?:actually|it's|it is|is|the|a|an) ", "", new, flags=re.I)
            if _PRONOUN_OBJ.match(new) or _PRONOUN_OBJ.match(old) or new.lower() == old.lower() \
                    or _FILLER.match(new) or _FILLER.match(old):
                continue
            f.add(speaker, "corrects", new, f"{speaker} corrected {old} to {new}", "identity", .7,
                qualifier=old, at=m.start())


# The rule families of ``_more``, in the order they run (what an earlier family found is not
# added again: ``_Facts.add``).
_FAMILIES: tuple[Callable[[str, str, _Facts], None], ...] = (
    _third_person, _work, _moves, _counts, _pets, _health, _media, _events, _preferences,
    _relationships, _corrections)
