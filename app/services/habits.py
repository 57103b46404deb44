"""Habits and behaviour statistics (docs/memory-model.md#the-six-stores: procedural and implicit
stores). Layer: app. Pure.

A habit is an action the person reports at least three times on the same weekday or at a
similar hour, or right after the same other action in a session ("after dinner I walk").
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from app.clock import local_time
from app.services.extract import third_person
from app.services.text import STOPWORDS

_PAST = {
    "went": "go", "ran": "run", "swam": "swim", "did": "do", "had": "have", "took": "take",
    "made": "make", "read": "read", "rode": "ride", "ate": "eat", "drove": "drive",
    "wrote": "write", "sang": "sing", "saw": "see", "met": "meet", "bought": "buy",
    "cooked": "cook", "played": "play", "visited": "visit", "walked": "walk", "watched": "watch",
    "baked": "bake", "hiked": "hike", "painted": "paint", "practiced": "practice",
    "practised": "practise", "meditated": "meditate", "called": "call", "studied": "study",
    "attended": "attend", "danced": "dance", "cleaned": "clean", "jogged": "jog",
    "biked": "bike", "climbed": "climb", "volunteered": "volunteer", "gardened": "garden",
    "worked": "work", "shopped": "shop", "skated": "skate", "surfed": "surf",
}
_BASE = set(_PAST.values())
_VERB = re.compile(r"\bI (?:just |also |finally |usually |always |often )?(" +
                   "|".join(sorted(set(_PAST) | _BASE, key=len, reverse=True)) +
                   r")\b((?: [\w'-]+){0,3})", re.I)
_SKIP = STOPWORDS | {"out", "some", "today", "yesterday", "tonight", "again", "back"}
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")




def _local(at: float) -> datetime:
    """A moment on the person's clock (this computer's time zone): habits and statistics say
    "Saturdays", "between 06:00 and 09:00", "most active hour: 09:00" as they live them."""
    return local_time(at)

def actions(text: str) -> list[str]:
    """'I went hiking with Jo' -> ['go hiking']."""
    out = []
    for m in _VERB.finditer(text):
        verb = m.group(1).lower()
        base = _PAST.get(verb, verb)
        obj = next((w.lower() for w in m.group(2).split() if w.lower() not in _SKIP), "")
        out.append(f"{base} {obj}".strip())
    return out


@dataclass(frozen=True, slots=True)
class Pattern:
    key: str
    who: str
    statement: str
    actions: list[str]
    sources: list[int]
    last_at: float


def detect_patterns(rows: Sequence[tuple[int, str, str, float, str]], minimum: int = 3
                    ) -> list[Pattern]:
    """rows: (episode id, text, speaker, occurred_at, session), in time order."""
    seen: dict[tuple[str, str], list[tuple[int, float]]] = defaultdict(list)
    order: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    last_in_session: dict[tuple[str, str], tuple[str, int]] = {}
    for mid, text, who, at, session in rows:
        if who.lower() in ("assistant", "system"):
            continue
        for act in actions(text):
            seen[(who, act)].append((mid, at))
            prev = last_in_session.get((who, session))
            if prev and prev[0] != act:
                order[(who, prev[0], act)] += [prev[1], mid]
            last_in_session[(who, session)] = (act, mid)
    out: list[Pattern] = []

    def subject(who: str) -> str:
        return who or "The person"

    for (who, act), hits in seen.items():
        if len(hits) < minimum:
            continue
        days = Counter(_local(at).weekday() for _, at in hits)
        day, n = days.most_common(1)[0]
        if n >= minimum and n / len(hits) >= 0.6:
            src = [m for m, at in hits if _local(at).weekday() == day]
            out.append(Pattern(f"{who}|{act}|weekday={day}", who,
                               f"{subject(who)} often {third_person(act)} on {WEEKDAYS[day]}s",
                               [act], src, max(at for _, at in hits)))
            continue
        hours = Counter(_local(at).hour // 3 for _, at in hits)
        slot, n = hours.most_common(1)[0]
        if n >= minimum and n / len(hits) >= 0.6:
            src = [m for m, at in hits if _local(at).hour // 3 == slot]
            out.append(Pattern(f"{who}|{act}|hours={slot * 3}", who,
                               f"{subject(who)} often {third_person(act)} between "
                               f"{slot * 3:02d}:00 and {slot * 3 + 3:02d}:00",
                               [act], src, max(at for _, at in hits)))
    for (who, first, then), ids in order.items():
        if len(ids) // 2 >= minimum:
            out.append(Pattern(f"{who}|{first}>{then}", who,
                               f"After they {first}, {subject(who)} usually {third_person(then)}",
                               [first, then], sorted(set(ids)), 0.0))
    return out


def statistics(rows: Sequence[tuple[float, float, str | None]],
               top_person: tuple[str, int] | None) -> dict[str, tuple[float, int, str]]:
    """metric -> (value, sample size, sentence). rows: (occurred_at, emotional, speaker)."""
    n = len(rows)
    if n == 0:
        return {}
    stamps = [_local(at) for at, _e, _s in rows]
    days = Counter(d.date() for d in stamps)
    weekdays = Counter(d.weekday() for d in stamps)
    hours = Counter(d.hour for d in stamps)
    emotional = sum(1 for _a, e, _s in rows if e > 0.5)
    wd, wd_n = weekdays.most_common(1)[0]
    hr, hr_n = hours.most_common(1)[0]
    out = {
        "episodes_per_active_day": (round(n / len(days), 2), n,
                                    f"About {n / len(days):.1f} events a day on active days "
                                    f"({n} events over {len(days)} days)"),
        "most_active_weekday": (float(wd), n, f"Most active day: {WEEKDAYS[wd]} "
                                f"({wd_n} of {n} events)"),
        "most_active_hour": (float(hr), n, f"Most active hour: {hr:02d}:00 "
                             f"({hr_n} of {n} events)"),
        "emotional_share": (round(emotional / n, 3), n, f"{100 * emotional / n:.0f}% of events "
                            f"carry strong feeling ({emotional} of {n})"),
    }
    if top_person:
        out["top_person_mentions"] = (float(top_person[1]), top_person[1],
                                      f"Most mentioned person: {top_person[0]} "
                                      f"({top_person[1]} memories)")
    return out
