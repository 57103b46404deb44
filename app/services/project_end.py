"""When a project ends (issue 27 item 3; references 000 and 001: a finished project moves to
archives). Layer: app (pure functions, no SQL). Used by consolidation's entities step
(``pipeline.Pipeline._archive_projects``).

A memory ends a project when one of its sentences names the project and says it is over,
in one of two shapes:

- the project, then a completion word: "The kitchen renovation is finally finished",
  "the app launched last week", "the garden project got cancelled", "the book is done!";
- a completion verb, then the project: "we wrapped up the kitchen renovation", "I finally
  shipped the app", "we gave up on the garden project", "she called off the wedding".

It does not when the sentence asks, plans or denies ("Is the renovation done?", "the
renovation will be finished in May", "we're almost done with the book", "I never finished
the book", "once the renovation is done ...").
"""

from __future__ import annotations

import re

# Completion words after the project ("... is finished"); "done"/"over"/"complete" need a
# verb before them ("is done"), the past forms stand alone ("the app launched").
_AUX = (r"(?:is|was|'s|are|were|got|has been|have been|had been|became|went)"
        r"(?: (?:finally|officially|now|all|totally|completely|fully|just|really))*")
_ADJ = r"(?:finished|done|over|complete|completed|launched|shipped|cancell?ed|wrapped up|" \
       r"called off|abandoned|scrapped|published|released|live|a wrap|behind (?:us|me))"
_PAST = r"(?:finished|launched|shipped|wrapped up|went live|ended|got cancell?ed|" \
        r"was cancell?ed|fell through)"
# Completion verbs before the project ("we wrapped up ...").
_VERB = r"(?:finished|completed|launched|shipped|cancell?ed|wrapped up|called off|" \
        r"abandoned|scrapped|dropped|published|released|gave up on|given up on|quit|" \
        r"closed|ended|finalised|finalized|handed in|submitted|put an end to|" \
        r"(?:got|have got|'ve got) (?:the )?(?:last|final) \w+ (?:of|for|on))"
# What plans, asks or denies: the sentence says nothing ended.
_NOT = re.compile(r"n't\b|\b(?:not|never|no longer|almost|nearly|soon|will|'ll|going to|gonna|"
                  r"hope|hoping|want|wants|plan|plans|planning|until|when|once|if|before|"
                  r"yet|about to|close to|halfway|might|may|should|could|would|would've|"
                  r"can't wait|by the time|wish)\b", re.I)
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
_FILLER = r"(?:[\w'\-,]+ ){0,4}?"


def _patterns(name: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    n = r"(?<![\w'])" + re.escape(name) + r"(?![\w])"
    after = re.compile(n + r"(?: project)? " + _FILLER + r"(?:" + _AUX + r" " + _ADJ + r"|"
                       + _PAST + r")\b", re.I)
    before = re.compile(r"\b" + _VERB + r" (?:(?:the|my|our|his|her|their|that|this|"
                        r"writing|building|making|planning|working on|renovating|with) )*"
                        + _FILLER + n, re.I)
    return after, before


def ends(text: str, name: str) -> bool:
    """Whether ``text`` says project ``name`` is over (finished, launched, cancelled...)."""
    if name.casefold() not in text.casefold():
        return False
    after, before = _patterns(name)
    for m in _SENTENCE.finditer(text):
        sentence = m.group(0).strip()
        if not sentence or sentence.endswith("?"):
            continue
        hit = after.search(sentence) or before.search(sentence)
        if hit is None:
            continue
        # what plans or denies counts in the clause up to the completion word
        if _NOT.search(sentence, 0, hit.end()):
            continue
        return True
    return False
