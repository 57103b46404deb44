"""Short-term summaries (issue 27 item 2, reference 003's session summarisation). Layer: app.
Pure (the embedding and the LLM call are passed in).

A long conversation (at least ``policy.SUMMARY_MIN_TURNS`` short-term turns not summarised
yet) becomes one episode, ``event_type`` "summary", with a DERIVED_FROM link to every turn it
summarises. Extractive by default: the conversation's sentences are ranked by how central they
are (cosine to the mean of the conversation's sentence vectors; content-word overlap without a
model) and how salient (``salience.score``: small talk never makes it in), near repeats of a
sentence already picked are skipped, and the picks are put back in time order within a length
budget (``policy.SUMMARY_MAX_CHARS``). With an LLM configured, the consolidation step asks it
instead (redacted, through the same transport), and falls back to this on any failure.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from app import policy
from app.services import salience
from app.services.text import content_tokens

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[\"“A-Z0-9])")
NEAR_REPEAT = 0.9   # a sentence this close (cosine) to one already picked adds nothing
PREFETCH = 8        # sentences embedded ahead with one asked for (``_Units``)
WHOLE_TURN_REPEAT = 0.94  # the same test between two whole turns' vectors (``_Units``)


@dataclass(frozen=True, slots=True)
class SummaryTurn:
    """One short-term turn of the conversation being summarised."""
    id: int
    speaker: str | None
    text: str
    occurred_at: float


@dataclass(frozen=True, slots=True)
class Sentence:
    turn: int          # index of its turn
    order: int         # position in the conversation
    speaker: str | None
    text: str
    salience: float


def sentences(turns: Sequence[SummaryTurn]) -> list[Sentence]:
    """Every sentence that could be in a summary: small talk, one-off requests and bare
    reactions (below the routing threshold) are left out."""
    out: list[Sentence] = []
    for i, t in enumerate(turns):
        for part in _SENTENCE.split(t.text.strip()):
            part = " ".join(part.split())
            if not part:
                continue
            s = salience.score(part)
            if s.episode:
                out.append(Sentence(i, len(out), t.speaker, part, s.score))
    return out


def _centrality(items: Sequence[Sentence], vecs: np.ndarray | None) -> np.ndarray:
    """In [0, 1]: cosine to the conversation's mean vector, or without vectors the share of
    a sentence's content words among the conversation's frequent ones."""
    if vecs is not None and len(vecs) == len(items):
        v = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-9)
        mean = v.mean(axis=0)
        mean = mean / max(float(np.linalg.norm(mean)), 1e-9)
        out: np.ndarray = np.clip(v @ mean, 0.0, 1.0)
        return out
    counts: Counter[str] = Counter(w for s in items for w in set(content_tokens(s.text)))
    top = max(counts.values(), default=1)
    return np.array([
        (sum(counts[w] for w in set(content_tokens(s.text))) / top
         / max(1, len(set(content_tokens(s.text))))) if content_tokens(s.text) else 0.0
        for s in items], dtype=np.float32)


def extractive(turns: Sequence[SummaryTurn],
               embed: Callable[[list[str]], np.ndarray | None] | None = None,
               max_chars: int = policy.SUMMARY_MAX_CHARS, *,
               turn_vecs: np.ndarray | None = None) -> tuple[str, list[int]]:
    """(summary text, indexes of the turns its sentences come from). Empty text when no
    sentence is worth keeping. ``turn_vecs``: one vector per turn that already exists (its
    event's, ``consolidation.summarise``): a sentence's centrality is then its turn's, and
    only the sentences that could be picked are embedded, for the near-repeat test
    (``_Units``); without it every sentence is embedded."""
    items = sentences(turns)
    if not items:
        return "", []
    known = turn_vecs is not None and len(turn_vecs) == len(turns)
    vecs: np.ndarray | None
    if known:
        assert turn_vecs is not None
        vecs = turn_vecs[[s.turn for s in items]]
    else:
        vecs = embed([s.text for s in items]) if embed is not None else None
    central = _centrality(items, vecs)
    rank = [policy.SUMMARY_W_CENTRAL * float(c) + (1 - policy.SUMMARY_W_CENTRAL) * s.salience
            for s, c in zip(items, central, strict=True)]
    unit = None
    if not known and vecs is not None and len(vecs) == len(items):
        unit = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-9)
    lazy = _Units(items, turns, turn_vecs, embed) if turn_vecs is not None and known and \
        embed is not None else None
    picked: list[int] = []
    used = 0
    order = sorted(range(len(items)), key=lambda j: (-rank[j], j))
    for n, i in enumerate(order):
        line = _line(items[i])
        if used + len(line) + 1 > max_chars:
            continue
        if unit is not None and any(float(unit[i] @ unit[j]) >= NEAR_REPEAT for j in picked):
            continue
        if lazy is not None and lazy.repeats(i, picked, [
                j for j in order[n + 1:] if used + len(_line(items[j])) + 1 <= max_chars]):
            continue
        picked.append(i)
        used += len(line) + 1
    picked.sort()
    return (" ".join(_line(items[i]) for i in picked),
            sorted({items[i].turn for i in picked}))


class _Units:
    """The near-repeat test with the vectors that exist. Two sentences that are each the
    whole of their turn are compared by their turns' vectors, at ``WHOLE_TURN_REPEAT`` (the
    turns' time and speaker make them alike: on dev chat, 151 of 151 pairs of whole turns
    whose sentences are near repeats (cosine >= ``NEAR_REPEAT``) and none of the other 6,709
    reach .94, while .90 takes 8 more). Any other pair is compared by its sentences' own
    vectors, embedded when first needed, with up to ``PREFETCH`` sentences that may be asked
    next in the same call (one call of 8 costs less than 8 calls of one)."""

    def __init__(self, items: Sequence[Sentence], turns: Sequence[SummaryTurn],
                 turn_vecs: np.ndarray,
                 embed: Callable[[list[str]], np.ndarray | None]) -> None:
        self.items, self.embed = items, embed
        whole = {i for i, t in enumerate(turns)
                 if sum(1 for part in _SENTENCE.split(t.text.strip()) if part.strip()) == 1}
        self.alone = [s.turn in whole for s in items]
        v = turn_vecs[[s.turn for s in items]]
        self.turn_unit = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-9)
        self.unit: dict[int, np.ndarray] = {}

    def repeats(self, i: int, picked: Sequence[int], ahead: Sequence[int]) -> bool:
        """Whether sentence ``i`` nearly repeats one ``picked``; ``ahead``: the sentences
        that may be asked next (rank order, fitting the budget left)."""
        both = [j for j in picked if self.alone[i] and self.alone[j]]
        if any(float(self.turn_unit[i] @ self.turn_unit[j]) >= WHOLE_TURN_REPEAT
               for j in both):
            return True
        others = [j for j in picked if not (self.alone[i] and self.alone[j])]
        if not others:
            return False  # nothing to compare by sentence: no vector needed
        need = [j for j in (i, *others) if j not in self.unit]
        if need:
            need += [j for j in ahead if not self.alone[j] and j not in self.unit
                     and j not in need][:PREFETCH]
            vecs = self.embed([self.items[j].text for j in need])
            if vecs is None:
                return False
            norms = np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-9)
            self.unit.update(zip(need, vecs / norms, strict=True))
        return any(float(self.unit[i] @ self.unit[j]) >= NEAR_REPEAT for j in others)


def _line(s: Sentence) -> str:
    return f"{s.speaker}: {s.text}" if s.speaker else s.text


def heading(turns: Sequence[SummaryTurn], day: str) -> str:
    """What the summary's text starts with: "Conversation on 8 May 2023 (41 turns, Ana and
    Ben):"."""
    people = list(dict.fromkeys(t.speaker for t in turns if t.speaker))
    who = (", ".join(people[:-1]) + " and " + people[-1]) if len(people) > 1 else \
        (people[0] if people else "")
    return f"Conversation on {day} ({len(turns)} turns{', ' + who if who else ''}):"
