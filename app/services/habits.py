"""Habits and behaviour statistics (docs/memory-model.md#the-six-stores: procedural and implicit
stores). Layer: app. Pure.

A habit is an action the person reports at least three times on the same weekday or at a
similar hour, or right after the same other action in a session ("after dinner I walk").
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
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
    first_at: float = 0.0
    misses: tuple[int, ...] = ()  # later turns saying it did not happen ("skipped climbing")

    @property
    def activity(self) -> str:
        """``who|activity``: the part of the key two eras of one habit share."""
        who, act, *_ = self.key.split("|")
        return f"{who}|{act}"


# Activities named as a gerund ("climbing again tonight") or as a practice ("my Spanish
# practice", "yoga class"): a habit is often said without "I <verb>". Gerunds that are no
# activity (auxiliaries, adjectives, times of day) are left out.
# A gerund said as an activity: after go/went/did... ("went climbing"), at the start of a
# clause ("Climbing tonight"), after a day word ("tuesday climbing"), or before a time or a
# practice word ("climbing again", "climbing session"); not as an adjective ("so inspiring").
_WHEN_WORDS = (r"tonight|today|tomorrow|this morning|this evening|again|later|later on|"
               r"session|class|lesson|practice|club|trip|with|before|after|till|until|"
               r"every|each|on (?:mon|tues|wednes|thurs|fri|satur|sun)days?|"
               # the place named by its activity: "the climbing gym", "the swimming pool"
               r"gym|wall|pool|studio|hall|centre|center|court|track|rink|lane|lanes")
_GERUND = re.compile(
    r"(?:(?<=\bgo )|(?<=\bwent )|(?<=\bgoing )|(?<=\bgone )|(?<=\bbeen )|(?<=\bgoes )"
    r"|(?<=\bdid some )|(?<=\bdo some )|(?<=\bsome )|(?<=day )|(?<=days )"
    r"|(?<=^)|(?<=[.,!?;:(] )|(?<=[.,!?;:(]))([A-Za-z]{3,}ing)\b"
    rf"|\b([A-Za-z]{{3,}}ing)(?= (?:{_WHEN_WORDS})\b)", re.I)
_NOT_ACTIVITY = frozenset("""thing things something anything nothing everything morning evening
during being going getting having feeling looking thinking saying doing trying making taking
coming using king ring spring string bring wedding building ceiling sibling darling pudding
interesting amazing boring exciting annoying ending beginning swing wing sting pending ongoing
outstanding upcoming following according including regarding wondering wanting waiting
starting finishing leaving staying living moving happening kidding missing keeping seeing
telling asking giving putting letting setting sitting standing talking working knowing
charming stunning lovely willing daring ping ting cling fling sling thing's tonight
hoping needing loving liking hating meaning asking calling""".split())
_PRACTICE = re.compile(r"\b([A-Za-z]{3,}) (practice|practise|lesson|lessons|class|classes|"
                       r"session|workout|training|streak|rehearsal)\b")
_PLACE = re.compile(r"\bat ((?:the )?(?:[A-Z][\w'&-]*)(?: [A-Z][\w'&-]*){0,3}|"
                    r"the (?:[a-z]+ )?(?:gym|pool|park|studio|club|track|wall|court|library|"
                    r"church|centre|center|market|office|rink|field))\b")
_SINGULAR = {"lessons": "lesson", "classes": "class"}
# A turn that says an activity did not happen: a cue up to three words before it.
_MISS = (r"\b(?:skip(?:ped)?|miss(?:ed)?|didn'?t|did not|couldn'?t|could not|no|cancel(?:l?ed)?|"
         r"bail(?:ed)? on|instead of|without)\b(?:\W+\w+){0,3}?\W+")
_SAID_DAILY = re.compile(r"\b(?:daily|every (?:single )?(?:day|morning|evening|night)|"
                         r"each (?:day|morning|evening)|streak)\b", re.I)
WINDOW = 28 * 86400   # "at least three times in four weeks"
PARTS = ((5, 12, "in the morning"), (12, 17, "in the afternoon"), (17, 22, "in the evening"))


def _part_of_day(hour: int) -> str:
    return next((w for lo, hi, w in PARTS if lo <= hour < hi), "at night")


def _named_activities(text: str) -> list[str]:
    """'Climbing gym again tonight' -> ['climbing']; 'did my Spanish practice' ->
    ['Spanish practice'] (the modifier as written)."""
    out = []
    for m in _PRACTICE.finditer(text):
        what = m.group(1)
        if what.lower() in STOPWORDS or (what.lower().endswith("ing")
                                         and what.lower() not in _NOT_ACTIVITY):
            continue  # "climbing session" is climbing
        out.append(f"{what if what[0].isupper() else what.lower()} "
                   f"{_SINGULAR.get(m.group(2).lower(), m.group(2).lower())}")
    for m in _GERUND.finditer(text):
        g = (m.group(1) or m.group(2)).lower()
        if g not in _NOT_ACTIVITY and not any(g in o.lower() for o in out):
            out.append(g)
    for name in _bare_names(text):
        if not any(name.lower() in o.lower() for o in out):
            out.append(name if name[0].isupper() else name.lower())
    return list(dict.fromkeys(out))


# A subject-less report of an activity said by its name alone: "Spanish on Duolingo again
# today", "daily Spanish done", "yoga again tonight", "piano done before dinner". The name opens
# a clause (after "daily", "more", "some" at most), may have "on/at/with" and two words after it,
# and "again" or "done" follows.
_BARE = re.compile(r"(?:^|(?<=[.,!?;:] ))(?:(?:daily|more|some|morning|evening) )?"
                   r"([A-Za-z]{3,})(?: (?:on|at|with) [\w'-]+(?: [\w'-]+)?)? (?:again|done)\b", re.I)
# Names that open "... again" without being an activity ("rain again", "same again").
_NOT_BARE = frozenset("""rain raining snow snowing traffic same this that these those it here there
what when then now work school nothing everything something monday tuesday wednesday thursday
friday saturday sunday today tonight tomorrow yesterday back once never always
""".split())


def _bare_names(text: str) -> list[str]:
    """'Spanish on Duolingo again today' -> ['Spanish']; 'yoga again tonight' -> ['yoga']."""
    return [m.group(1) for m in _BARE.finditer(text)
            if m.group(1).lower() not in STOPWORDS | _NOT_BARE | _NOT_ACTIVITY]


def _stem(gerund: str) -> str:
    """'climbing' -> 'climb', 'swimming' -> 'swim' (to match an 'I <verb>' action)."""
    base = gerund[:-3]
    if len(base) > 2 and base[-1] == base[-2]:
        base = base[:-1]
    return base


def _in_window(times: list[float], minimum: int, seconds: float = WINDOW) -> bool:
    """``minimum`` of ``times`` (sorted) within ``seconds`` (four weeks)."""
    return any(times[i + minimum - 1] - times[i] <= seconds
               for i in range(len(times) - minimum + 1))


def _place(texts: list[str]) -> str | None:
    """The place said in at least two of the reports ("at The Depot", "at the pool")."""
    seen = Counter(m.group(1) for t in texts for m in _PLACE.finditer(t))
    if not seen:
        return None
    place, n = seen.most_common(1)[0]
    return place if n >= 2 else None


def detect_patterns(rows: Sequence[tuple[int, str, str, float, str]], minimum: int = 3
                    ) -> list[Pattern]:
    """rows: (episode id, text, speaker, occurred_at, session), in time order.

    An activity is what the person says they did ("I went climbing", an ``actions`` phrase) or
    names ("climbing again tonight", "my Spanish practice"). It is a habit when it falls on the
    same weekday (or the same part of the day) on at least ``minimum`` different days within
    four weeks, those days being at least 60 % of the days it is mentioned on; one said almost
    every day (``minimum`` + 2 days within two weeks) is a daily habit. The statement says
    where, when it is said in two reports."""
    seen: dict[tuple[str, str], list[tuple[int, float]]] = defaultdict(list)
    named: dict[tuple[str, str], list[tuple[int, float]]] = defaultdict(list)
    missed: dict[tuple[str, str], list[tuple[int, float]]] = defaultdict(list)
    texts: dict[int, str] = {}
    shown: dict[str, str] = {}  # a named activity as first written ("Spanish practice")
    go_form: set[str] = set()   # gerunds also said as "I went <gerund>"
    order: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    last_in_session: dict[tuple[str, str], tuple[str, int]] = {}
    people = [r for r in rows if r[2].lower() not in ("assistant", "system")]
    # Activities named as gerunds anywhere, by stem: "I swam" and "I went swimming" count
    # for "swimming" when the person also names it so.
    gerunds = {_stem(t): t for _, text, *_ in people for t in _named_activities(text)
               if t.endswith("ing")}
    # A name said alone ("Spanish again today") is the practice it is also called by
    # ("my Spanish practice"): one habit, not two.
    practiced = {t.split(" ")[0].lower(): t for _, text, *_ in people
                 for t in _named_activities(text) if " " in t}
    talk_days: dict[str, dict[object, float]] = defaultdict(dict)  # who -> day -> a moment
    for mid, text, who, at, session in people:
        texts[mid] = text
        talk_days[who].setdefault(_local(at).date(), at)
        acts = []
        for act in actions(text):
            verb, _, rest = act.partition(" ")
            gerund = gerunds.get(verb) or gerunds.get(verb.removesuffix("e")) or (
                rest if verb == "go" and rest in gerunds.values() else None)
            if gerund is not None:
                named[(who, gerund)].append((mid, at))  # one a day: find() drops repeats
                if verb == "go":
                    go_form.add(gerund)  # "goes climbing" reads better than "climbing happens"
                continue
            acts.append(act)
        for act in acts:
            seen[(who, act)].append((mid, at))
            prev = last_in_session.get((who, session))
            if prev and prev[0] != act:
                order[(who, prev[0], act)] += [prev[1], mid]
            last_in_session[(who, session)] = (act, mid)
        things = [practiced.get(t.lower(), t) if " " not in t else t
                  for t in _named_activities(text)]
        for thing in dict.fromkeys(things):
            if re.search(_MISS + re.escape(thing.split(" ")[0]), text, re.I):
                missed[(who, thing.lower())].append((mid, at))
                continue
            named[(who, thing.lower())].append((mid, at))
            shown.setdefault(thing.lower(), thing)
    out: list[Pattern] = []

    def subject(who: str) -> str:
        return who or "The person"

    def one_a_day(hits: list[tuple[int, float]]) -> list[tuple[int, float]]:
        days: dict[object, tuple[int, float]] = {}
        for mid, at in hits:
            days.setdefault(_local(at).date(), (mid, at))
        return list(days.values())

    def key(act: str) -> str:
        return f"go {act}" if act in go_form else act  # the key "I went climbing" always had

    def say(who: str, act: str, named: bool, when: str) -> str:
        if named and act in go_form:
            named, act = False, f"go {act}"
        if named:
            act = shown.get(act, act)
            often = "" if when == "almost every day" else "usually "
            return f"{subject(who)}'s {act} {often}happens {when}"
        return f"{subject(who)} often {third_person(act)} {when}"

    def common(who: str, hits: list[tuple[int, float]], slot: Callable[[float], object]
               ) -> tuple[object, list[tuple[int, float]]] | None:
        """The slot (weekday, part of day) most of ``hits`` fall in, with those hits, when it
        holds ``minimum`` of them within four weeks, at least 60 % of them, and is not simply
        when the person talks: at most 40 % of their other days fall in it."""
        slot_of, n = Counter(slot(at) for _, at in hits).most_common(1)[0]
        src = [(m, at) for m, at in hits if slot(at) == slot_of]
        if n < minimum or n / len(hits) < 0.6 or not _in_window([a for _, a in src], minimum):
            return None
        mine = {_local(at).date() for _, at in hits}
        other = {d: at for d, at in talk_days[who].items() if d not in mine}
        if len(other) >= 5 and sum(slot(at) == slot_of for at in other.values()) > \
                0.4 * len(other):
            return None
        return slot_of, src

    def find(who: str, act: str, hits: list[tuple[int, float]], named: bool
             ) -> Pattern | None:
        hits = one_a_day(hits)
        if len(hits) < minimum:
            return None
        where = _place([texts[m] for m, _ in hits])
        at_place = f", at {where}" if where else ""
        last = max(at for _, at in hits)
        first = min(at for _, at in hits)
        lost = tuple(m for m, at in missed.get((who, act), ()) if at > first)
        said_daily = sum(1 for m, _ in hits if _SAID_DAILY.search(texts[m]))
        weekly = common(who, hits, lambda at: _local(at).weekday())
        if said_daily >= 2 and _in_window([a for _, a in hits], minimum):
            # The person calls it daily ("daily Spanish done", "day 3 of my streak"): the
            # weekday the reports happen to share says less than their own word.
            return Pattern(f"{who}|{key(act)}|daily", who,
                           say(who, act, named, "almost every day") + at_place, [act],
                           [m for m, _ in hits], last, first, lost)
        if weekly is not None:
            day, src = weekly
            assert isinstance(day, int)
            usual, k = Counter(_part_of_day(_local(a).hour) for _, a in src).most_common(1)[0]
            when = f"on {WEEKDAYS[day]}s" + (f", {usual}" if k >= minimum else "")
            return Pattern(f"{who}|{key(act)}|weekday={day}", who,
                           say(who, act, named, when) + at_place, [act], [m for m, _ in src],
                           last, first, lost)
        if _in_window([a for _, a in hits], minimum + 2, 14 * 86400):
            return Pattern(f"{who}|{key(act)}|daily", who,
                           say(who, act, named, "almost every day") + at_place, [act],
                           [m for m, _ in hits], last, first, lost)
        daily = common(who, hits, lambda at: _part_of_day(_local(at).hour))
        if daily is not None:
            part, src = daily
            return Pattern(f"{who}|{key(act)}|part={part}", who,
                           say(who, act, named, str(part)) + at_place, [act],
                           [m for m, _ in src], last, first, lost)
        return None

    def eras(who: str, act: str, hits: list[tuple[int, float]], named: bool
             ) -> list[Pattern]:
        """The habit over all its days; or, when it moved (Saturdays, then Sundays), the
        earlier one and the one of its last four weeks, in time order."""
        hits = one_a_day(hits)
        whole = find(who, act, hits, named)
        if (whole is not None and "|weekday=" in whole.key) or len(hits) < 2 * minimum:
            return [] if whole is None else [whole]
        last = max(at for _, at in hits)
        older = find(who, act, [h for h in hits if h[1] <= last - WINDOW], named)
        recent = find(who, act, [h for h in hits if h[1] > last - WINDOW], named)
        if recent is not None and (whole is None or "|weekday=" in recent.key):
            return [p for p in (older, recent) if p is not None]
        return [] if whole is None else [whole]

    for is_named, groups in ((False, seen), (True, named)):
        for (who, act), hits in groups.items():
            out.extend(eras(who, act, hits, is_named))
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


def reports_activity(text: str) -> bool:
    """Whether a turn reports something the person did in the first person ("I went
    climbing", "I cooked for eight"): what an outcome said later can be about
    (``app.services.outcomes``). Named activities alone ("climbing again") are not enough:
    on LoCoMo dev they matched turns about someone else's doings."""
    return bool(actions(text))


def habit_counts(p: Pattern, sides: dict[int, int]) -> tuple[int, int]:
    """(success, failure) of a habit: its reports succeed and the turns saying it did not
    happen fail (``misses``), except that an episode rated, or said to have gone, badly
    (``sides``: episode id -> +1 / -1, ``app.services.outcomes.side``) is a failure, and
    a missed one rated well is a success."""
    bad = sum(1 for m in p.sources if sides.get(m) == -1)
    good_miss = sum(1 for m in p.misses if sides.get(m) == 1)
    return len(p.sources) - bad + good_miss, len(p.misses) - good_miss + bad
