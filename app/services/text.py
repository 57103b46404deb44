"""Text helpers: emotional and social scores, date words, tokens. Layer: app. Pure."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’-]*")
_NAME = re.compile(r"\b([A-Z][a-z]{2,})\b")
_RELATION = re.compile(
    r"\b(mom|mother|dad|father|sister|brother|wife|husband|partner|friend|son|daughter|boss|"
    r"colleague|kids?|family|grandma|grandpa|aunt|uncle|cousin|girlfriend|boyfriend)\b", re.I)

# Stop words for lexical queries: function words that match everything and mean nothing.
STOPWORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further
had has have having he her here hers herself him himself his how i if in into is it its itself
just me more most my myself no nor not now of off on once only or other our ours ourselves out
over own same she should so some such than that the their theirs them themselves then there
these they this those through to too under until up very was we were what when where which
while who whom why will with would you your yours yourself yourselves s t don't didn't doesn't
isn't wasn't aren't weren't i'm you're he's she's it's we're they're i've you've we've they've
i'd you'd he'd she'd we'd they'd i'll you'll he'll she'll we'll they'll let's that's what's
there's here's who's how's also ever like really yeah oh hey hi thanks thank yes ok okay
""".split())


@lru_cache(maxsize=1)
def _vader() -> Any:
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer
    return SentimentIntensityAnalyzer()


def emotional_score(text: str) -> float:
    """Strength of feeling in [0, 1] (VADER compound magnitude,
    003/docs/memory-model.md#emotional-and-social)."""
    try:
        compound = float(_vader().polarity_scores(text[:2000])["compound"])
    except Exception:  # a lexicon problem must never block remembering
        return 0.0
    return round(abs(compound), 4)


def social_score(text: str, speaker: str | None = None) -> float:
    """People in it: names (capitalised words not at sentence start) and relationship words."""
    names = {m for m in _NAME.findall(text) if m.lower() not in STOPWORDS}
    if speaker:
        names.discard(speaker)
    relations = len(_RELATION.findall(text))
    return round(min(1.0, 0.25 * len(names) + 0.2 * relations), 4)


def tokens(text: str) -> list[str]:
    return [t.lower().replace("’", "'") for t in _WORD.findall(text)]


def content_tokens(text: str) -> list[str]:
    return [t for t in tokens(text) if t not in STOPWORDS and len(t) > 1]


def date_words(ts: float) -> str:
    """A time as people write it: "1:56 pm on 8 May, 2023" (FTS keys and dense text; a
    question's "in May 2023" then matches: +.016 R@10 on LoCoMo dev)."""
    d = datetime.fromtimestamp(ts, UTC)
    hour = d.hour % 12 or 12
    return f"{hour}:{d.minute:02d} {'am' if d.hour < 12 else 'pm'} on {d.day} {d:%B}, {d.year}"


def approx_tokens(text: str) -> int:
    """Rough LLM token count (about 4 characters a token) for context budgets."""
    return max(1, (len(text) + 3) // 4)


# Small talk (issue 23 item 6): what carries no memory on its own. A turn is small talk when it
# is short and every word is one of these (greetings, thanks, acknowledgements, sign-offs), or
# it is an assistant's stock politeness. Words, not sentences: "ok thanks!!", "Thank you so
# much :)", "hi again", "sounds good, will do" all qualify; "thanks, my sister loved it" not.
_SMALL_WORDS = frozenset("""
hi hello hey hiya heya yo morning evening afternoon night good gn gm bye goodbye cya later see
ya you soon thanks thank thx ty cheers appreciate appreciated it that much so very a lot lots
again ok okay k kk alright alrighty right sure yes yeah yep yup no nope nah fine cool great nice
awesome perfect lovely brilliant excellent amazing wonderful super sweet neat ah oh ooh aha hmm
hm um uh wow lol haha hahaha lmao omg got gotcha understood noted makes sense sounds will do
welcome np problem worries you're youre my pleasure glad happy to help helped there all set
done deal totally absolutely definitely indeed true exactly fair enough same here me too
anytime of course course just checking in back i'm im i am here hello again
""".split())
_ASSISTANT_FILLER = re.compile(
    r"^(?:you'?re (?:very |so )?welcome|happy to help|glad (?:i could|to) help|"
    r"any ?time|no problem|my pleasure|let me know if (?:you need|there'?s) anything else|"
    r"is there anything else)\b[^.?!]*[.?!]*\s*(?:let me know[^.?!]*[.?!]*|"
    r"(?:have|enjoy) (?:a|your|the)[^.?!]*[.?!]*|good luck[^.?!]*[.?!]*)?\s*$", re.I)
_WORDISH = re.compile(r"[a-z']+")


def is_small_talk(text: str) -> bool:
    """True for turns that say nothing to remember: "Thanks!", "ok cool", "hi again",
    "You're welcome! Let me know if you need anything else." Pure and cheap."""
    t = text.strip().lower().replace("’", "'")
    if not t:
        return True
    if len(t) <= 160 and _ASSISTANT_FILLER.match(t):
        return True
    words = _WORDISH.findall(t)
    return 0 < len(words) <= 8 and all(w.strip("'") in _SMALL_WORDS for w in words)
