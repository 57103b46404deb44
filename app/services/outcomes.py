"""How an episode went (issue 27 item 8): the person's rating, and an outcome inferred from
what they say after it ("it went really well", "that was a disaster"). Layer: app. Pure.

Conservative by design: a cue counts only in a statement (no question, no "if", no "hope"),
said by the person, about something they reported in the same conversation within the last
few turns (or in the same turn: "the climbing went great today"). Enthusiasm alone ("it was
amazing", "so awesome") is no outcome: on LoCoMo dev those read as outcomes of the wrong turn
about half the time, so only "went well / badly", "a success / a disaster" and the like count. A negated cue ("it didn't go
well") flips its side. Everything else stays unknown: a wrong outcome would move a habit's
success count, a missing one leaves it as it was.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import NamedTuple

from app import words

RATINGS = words.EPISODE_RATINGS
REACH = 4  # turns back (same speaker, same conversation) a cue may point to

_GOOD = (r"went (?:really |very |so |pretty |quite |super )?(?:well|great|fine|smoothly|"
         r"brilliantly|perfectly|amazingly|better than (?:i |we )?expected)|"
         r"(?:was|were) (?:a )?(?:(?:huge|big|great|real|total|complete) )?(?:success|win|blast|"
         r"triumph)|nailed it|pulled it off|worked out (?:well|great|fine)")
_BAD = (r"went (?:really |very |so |pretty |quite )?(?:badly|terribly|wrong|poorly|horribly|"
        r"awfully|south|sideways)|(?:was|were) (?:a )?(?:(?:complete|total|absolute|real|huge|"
        r"bit of a) )?(?:disaster|failure|mess|nightmare|flop|fiasco|catastrophe)|"
        r"(?:was|were) a letdown|"
        r"didn'?t work out|fell (?:apart|through)|bombed|flopped|blew it")
_NEG_GOOD = (r"(?:didn'?t|did not) go (?:well|great|smoothly|as planned|to plan)|"
             r"(?:wasn'?t|was not|weren'?t|were not) (?:a )?(?:success|great|good)")
# Who or what went well: not "you" ("you nailed it" praises the other speaker).
_SUBJECT = r"(?:it|that|this|we|i|the \w+(?: \w+)?|my \w+(?: \w+)?|our \w+|(?!you\b)[a-z]{3,})"
_CUE_GOOD = re.compile(rf"\b{_SUBJECT} (?:(?:really|actually|totally|just) )?(?:{_GOOD})\b(?! to\b)", re.I)
_CUE_BAD = re.compile(rf"\b{_SUBJECT} (?:(?:really|actually|totally|just) )?(?:{_BAD})\b"
                      rf"|\b{_SUBJECT} (?:{_NEG_GOOD})\b", re.I)
_HEDGE = re.compile(r"\?|\b(?:if|hope|hoping|hopefully|wish|might|may|will|would|could|"
                    r"should|going to|gonna|fingers crossed|in case|whether)\b", re.I)


def side_of(text: str) -> int | None:
    """+1 (it went well), -1 (it went badly) or None (no clear outcome said)."""
    if _HEDGE.search(text):
        return None
    good, bad = bool(_CUE_GOOD.search(text)), bool(_CUE_BAD.search(text))
    if good == bad:  # neither, or both ("the talk went well but dinner was a disaster")
        return None
    return 1 if good else -1


class Turn(NamedTuple):
    id: int
    text: str
    speaker: str
    session: str


class Inferred(NamedTuple):
    episode: int   # the episode the outcome is about
    side: int      # +1 / -1
    cue: int       # the turn that said it (may be the episode itself)


def infer(turns: Sequence[Turn], reports: Callable[[str], bool]) -> list[Inferred]:
    """Outcomes said in ``turns`` (grouped by conversation, in order). ``reports(text)``:
    whether a turn reports something the person did (an activity, an event). The outcome is
    the cue turn's own when it reports one; else the nearest earlier turn of the same speaker
    within ``REACH`` of their turns that does. Assistants' and system turns are skipped."""
    out: list[Inferred] = []
    recent: dict[tuple[str, str], list[Turn]] = {}
    for t in turns:
        if t.speaker.lower() in ("assistant", "system"):
            continue
        mine = recent.setdefault((t.session, t.speaker), [])
        side = side_of(t.text)
        if side is not None:
            if reports(t.text):
                out.append(Inferred(t.id, side, t.id))
            else:
                target = next((p for p in reversed(mine[-REACH:]) if reports(p.text)
                               and side_of(p.text) is None), None)
                if target is not None:
                    out.append(Inferred(target.id, side, t.id))
        mine.append(t)
    return out


def side(rating: int | None, outcome_by: str | None, outcome: str | None) -> int | None:
    """An episode's side for habits: the person's rating (0, mixed, counts neither way);
    without one, an inferred outcome's."""
    if rating is not None:
        return rating or None
    if outcome_by == "inferred" and outcome in (RATINGS[1], RATINGS[-1]):
        return 1 if outcome == RATINGS[1] else -1
    return None
