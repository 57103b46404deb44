"""Employers, schools and organisations from what people say (issue 27 item 3; reference 000
files companies with their people). Layer: app (pure functions, no SQL). Used by
consolidation's entities step, beside ``extract.mentions`` (which finds "works at X" and
names ending in Inc, Ltd, University...).

An organisation is a capitalised name after a word about working or studying there and
"at", "for", "by" or "with the", a few words apart at most: "got the job at Lurie", "my first day
at Kitewood", "an interview at Kitewood Studio", "she's a nurse at Mercy", "I teach at
Hillcrest", "enrolled at Bristol Uni", "volunteering with the Red Cross"; or before an
employment verb: "Kitewood offered me the job", "Northwind hired me".

Stated (made at once, like a person in a stated relationship) when the memory speaks in the
first person ("I", "my", "Me!"): the speaker's own employer or school, or their household's.
"""

from __future__ import annotations

import re

_CUE = (r"(?:job|jobs|work|works|worked|working|employed|employer|interview|interviews|"
        r"interviewing|hired|shift|shifts|office|internship|intern|position|role|career|"
        r"first (?:day|week|month)|last day|colleagues?|boss|manager|team|joined|joining|"
        r"join|started|starting|teach|teaches|teaching|taught|study|studies|studying|"
        r"studied|student|enrolled|school|university|uni|college|classes|degree|"
        r"volunteer|volunteers|volunteering|volunteered|nurse|doctor|engineer|teacher|"
        r"designer|developer|researcher|manager|analyst|accountant|lawyer|consultant)")
_NAME = r"(?P<o>(?:the )?[A-Z][\w&'\-]*(?: (?:&|of|and) [A-Z][\w'\-]*| [A-Z][\w&'\-]*){0,3})"
_AFTER = re.compile(r"\b(?i:" + _CUE + r")(?: [\w']+){0,3}? (?:(?i:at|for|by|from) |"
                    r"(?i:with) (?=the ))" + _NAME)
_BEFORE = re.compile(r"\b" + _NAME.replace("(?:the )?", "") + r" (?i:offered me|hired me|"
                     r"took me on|accepted me|gave me the job|let me go|laid me off|fired me)")
# Capitalised words that follow "at" but name no organisation.
_NOT_ORG = frozenset("""I The A An My Our Monday Tuesday Wednesday Thursday Friday Saturday
Sunday January February March April May June July August September October November December
Christmas Easter Home Work Night Noon Midnight Lol Haha Oh Ok Okay""".split())
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|im|ive|my|me|we|our|us)\b", re.I)
_SENTENCE = re.compile(r"[^.!?\n]+")


def _clean(raw: str) -> str | None:
    words = raw.split()
    if words and words[0].casefold() == "the":
        words = words[1:]
    while words and words[-1] in ("&", "of", "and"):
        words.pop()
    if not words or words[0] in _NOT_ORG or len(" ".join(words)) < 3:
        return None
    return " ".join(words)


def organisations(text: str) -> dict[str, bool]:
    """The organisations ``text`` names as someone's workplace or school: name -> stated
    (said in the first person)."""
    out: dict[str, bool] = {}
    mine = _FIRST_PERSON.search(text) is not None  # a turn is one speaker's: "...? Me!"
    for s in _SENTENCE.finditer(text):
        sentence = s.group(0)
        for rx in (_AFTER, _BEFORE):
            for m in rx.finditer(sentence):
                name = _clean(m.group("o"))
                if name:
                    out[name] = out.get(name, False) or mine
    return out
