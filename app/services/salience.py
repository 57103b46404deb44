"""Salience routing (reference 004's ``salience_score``; issue 27 item 1). Layer: app. Pure.

Every incoming turn gets a salience in [0, 1] from rules that generalise (no sentence is quoted):
content words, first person, named things, change cues, numbers and dates; two
filters pull a turn down: small talk ("Thanks!", "ok cool", "lol", greetings;
``text.is_small_talk``; a dismissal: "never mind", "nvm, found it") and transient requests to the assistant about the text at hand ("can
you summarise this", "translate that into French"), plus bare reactions with nothing of the
speaker's own ("Wow, that sounds amazing!"). A turn at or above
``policy.SALIENCE_EPISODE_MIN`` also becomes an episode; below it, it stays short-term only
and expires by short-term's retention (``policy.DECAY['working']``).

Precision over recall: a turn that states a fact, a plan, a change, a preference or an event
must never fall below the threshold, so every positive signal is enough on its own for a
turn with two content words ("moved to Lisbon", "new job!", "my sister is Ana").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from app import policy
from app.services.text import STOPWORDS, content_tokens, is_small_talk, tokens

_FIRST_PERSON = frozenset("i i'm i've i'd i'll me my mine myself we we're we've our ours us "
                          "im ive".split())
# Something happened, changes or is planned: verbs and markers of events and changes.
_CHANGE = re.compile(
    r"\b(?:new|now|moved|moving|move|started|starting|start|began|begin|became|become|got|"
    r"getting|joined|joining|quit|quitting|left|leaving|stopped|finished|finishing|graduated|"
    r"married|engaged|divorced|pregnant|born|hired|fired|promoted|retired|bought|sold|"
    r"booked|signed|adopted|lost|won|broke|changed|switched|decided|planning|plan|going to|"
    r"gonna|will|tomorrow|yesterday|tonight|today|last|next|since|anymore|no longer|used to|"
    r"just|finally|visited|went|met|came|started|trip|job|birthday|wedding|"
    r"love|loves|loved|hate|hates|prefer|prefers|favorite|favourite|allergic|always|never|"
    r"usually|every)\b", re.I)
_NUMBER = re.compile(
    r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|twenty|hundred|thousand|"
    r"january|february|march|april|may|june|july|august|september|october|november|december|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend|week|month|year)\b",
    re.I)
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-zA-Z'’-]+")
_RELATION = re.compile(
    r"\b(?:mom|mum|mother|dad|father|sister|brother|wife|husband|partner|friend|son|daughter|"
    r"boss|colleague|kids?|family|grandma|grandpa|aunt|uncle|cousin|girlfriend|boyfriend|"
    r"dog|cat|pet)\b", re.I)
# A request about the text at hand, with nothing of the person in it: done once, then gone.
_TRANSIENT = re.compile(
    r"^\s*(?:(?:hey|ok|okay|so|now|please|pls)[,!]?\s+)*(?:(?:can|could|would|will) you\s+"
    r"(?:please\s+)?|please\s+|pls\s+|)(?:summari[sz]e|sum up|translate|rephrase|reword|rewrite|"
    r"proofread|shorten|paraphrase|explain|define|format|fix(?: the)? (?:grammar|typos?|"
    r"spelling)|correct (?:the )?(?:grammar|spelling)|make (?:it|this|that) (?:shorter|longer|"
    r"nicer|clearer|more formal|less formal)|give me (?:a|the) (?:summary|tl;?dr)|tl;?dr)\b"
    r"(?:\s+(?:(?:it|this|that|these|those|the|my|your)(?:\s+(?:above|following|last|whole|"
    r"text|paragraph|article|email|message|page|document|bit|part|chat|conversation|thread|"
    r"answer|reply|note|notes|list|section|sentence|post))*|for me|again|please|into \w+|"
    r"to \w+|in \w+|briefly|in (?:a|one) (?:few words|sentence|paragraph)))*\s*[.?!]*\s*$",
    re.I)
# Taking back what one just asked, with nothing else ("never mind", "nvm, found it", "scratch
# that", "ignore my last message"): a dismissal says nothing to remember ("never" and "found"
# would otherwise read as a preference and an event).
_DISMISS = re.compile(
    r"^\s*(?:(?:oh|ah|ok|okay|actually|wait|hmm|um|sorry|no|nah)[,.!]?\s+)*"
    r"(?:never\s?mind|nvm|forget (?:it|that|about it|i asked)|scratch that|"
    r"ignore (?:that|this|me|my last (?:message|question|one))|(?:it )?doesn'?t matter|"
    r"no matter|disregard (?:that|this))"
    r"(?:[,.!;]?\s*(?:then|sorry|thanks|it'?s fine|all good|found it|figured it out|got it|"
    r"sorted|i'?ll (?:do it|figure it out|ask later)|not important|my bad))*\s*[.!?]*\s*$",
    re.I)
# Reactions: a turn whose every content word is one of these says nothing of its own.
_REACTION = frozenset("""
wow cool great nice awesome amazing wonderful fantastic incredible beautiful lovely sweet cute
fun funny sounds sound looks look seems seem good bad sad glad happy sorry hear heard love
interesting impressive exciting excited congrats congratulations haha lol omg yay woah whoa
totally absolutely definitely true right agree agreed exactly indeed awesome super really so
much thing things stuff such wonderful brilliant perfect pretty kind thank thanks hope
""".split())


@dataclass(frozen=True, slots=True)
class Salience:
    """The routing decision for one turn: its score, the stores it goes to and why, in plain
    words (``explain`` shows it)."""
    score: float
    stores: tuple[str, ...]
    reason: str
    by: str = "rules"  # "rules" or "llm"

    @property
    def episode(self) -> bool:
        return "episodic" in self.stores


def route(score: float, reason: str, by: str = "rules") -> Salience:
    """The stores for ``score``: short-term always; episodic too at or above the threshold."""
    score = round(min(1.0, max(0.0, score)), 3)
    keep = score >= policy.SALIENCE_EPISODE_MIN
    return Salience(score, ("short_term", "episodic") if keep else ("short_term",), reason, by)


def score(text: str) -> Salience:
    """Pure and cheap (regular expressions over one turn)."""
    t = text.strip()
    if is_small_talk(t) and not any(c.isdigit() for c in t):  # "1:15, got it. thx" keeps
        return route(0.05, "Small talk (greetings, thanks, acknowledgements)")
    if _DISMISS.match(t):
        return route(0.05, "Takes back a request (never mind)")
    if _TRANSIENT.match(t):
        return route(0.15, "A one-off request about the text at hand")
    words = tokens(t)
    content = content_tokens(t)
    first = any(w in _FIRST_PERSON for w in words)
    names = [n for n in _NAME.findall(t) if n.lower() not in STOPWORDS and n != "I"]
    people = bool(names) or bool(_RELATION.search(t))
    change = bool(_CHANGE.search(t))
    number = bool(_NUMBER.search(t))
    question = t.rstrip().endswith("?")
    reaction = bool(content) and all(w.strip("'!") in _REACTION for w in content)
    # A question stays: the answer that follows is read with it (an episode's full-text
    # context is its neighbouring episodes; dropping questions cost LoCoMo dev R@10).
    if reaction and not (first or names or number or question):
        return route(0.2, "A reaction with nothing new in it")
    if not content:
        return route(0.1, "No content words")
    s = 0.1 + 0.1 * min(len(content), 4)
    said = []
    if first:
        s += 0.15
        said.append("the speaker's own")
    if people:
        s += 0.15
        said.append("names a person or thing")
    if change:
        s += 0.2
        said.append("an event, change, plan or preference")
    if number:
        s += 0.1
        said.append("a number or date")
    if question:
        said.append("a question")
    reason = ", ".join(said) if said else "content words only"
    return route(s, reason[:1].upper() + reason[1:])
