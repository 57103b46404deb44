"""One owner per vault (issue 23 item 4): the person whose memory this is, whatever an import
calls them. Layer: app. Pure.

ChatGPT exports say "user", Claude's "human", notes "me", a hand-written import the person's
name: all are the owner. The owner's facts have one subject: the name the person gave (setting
``owner.name``: at ``kept init --name``, in Settings, or learned from "I'm Sam" / "my name is
Sam" in the person's own turns), else ``OWNER_FALLBACK`` until a name is known, when
consolidation renames what it had stored under the fallback.
"""

from __future__ import annotations

import re

# What exports call the person (an assistant's replies are never the owner's).
ALIASES = frozenset({"user", "human", "me", "i", "myself", "person", "owner", "you"})
OWNER_FALLBACK = "User"
_NAME_SAID = re.compile(
    r"(?:^|[.!?]\s+|,\s*|\b(?i:hi|hey|hello)[,!]?\s+)(?i:i'?m|i am|my name'?s|my name is|"
    r"call me|this is|it'?s)\s+([A-Z][a-z]{1,20})(?:\s+([A-Z][a-z]{1,20}))?\b(?![\w'-])")
_NOT_A_NAME = frozenset("""
Back Home Here Fine Good Great Okay Sorry Sure Glad Happy Just Not Still Also Going Trying
Done Ready Tired Busy Excited Thinking Looking Working Living Moving Planning Feeling Finally
Vegan Vegetarian English French German Spanish Portuguese Italian American British Canadian
Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April May June
July August September October November December Christmas Easter
""".split())


def is_owner(speaker: str | None, name: str | None) -> bool:
    s = (speaker or "").strip().casefold()
    if not s:
        return False
    return s in ALIASES or (bool(name) and s == (name or "").strip().casefold())


def subject(name: str | None) -> str:
    """What the owner's facts are about: their name, or the fallback until it is known."""
    return (name or "").strip() or OWNER_FALLBACK


def speaker_for(speaker: str | None, name: str | None) -> str | None:
    """An episode's speaker as extraction should see it: the owner under one name."""
    return subject(name) if is_owner(speaker, name) else speaker


def name_said(text: str) -> str | None:
    """The name the person gives for themself ("I'm Priya by the way", "my name is Sam
    Okafor"): the first name, or None."""
    for m in _NAME_SAID.finditer(text):
        first = m.group(1)
        if first not in _NOT_A_NAME:
            return first
    return None
