"""The words a person reads: store names, tiers, strength and confidence, times, links as
sentences, counts. Layer: app, pure (no Qt, no I/O), so the window and the CLI's text output
say the same thing (docs/design: "the person never sees an internal name"). JSON output keeps
the machine forms (``short_term``, ISO times); nothing here is parsed back.

Times are the local zone's, written as people write them: "today 09:14", "yesterday 18:02",
"15 June 2026, 20:00". Numbers stay reachable: every word for a score has a tooltip text that
gives the number and what it is made of.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import date, datetime, tzinfo

from app.clock import local_time
from app.domain.memory import LinkKind, Store, Tier

__all__ = [
    "STORE_NAMES", "STORE_ONE", "TIER_NAMES", "TIER_CHART", "TIER_NOTE", "confidence_word",
    "count", "day", "history_line", "link_sentence", "said", "short", "store_name",
    "store_noun", "store_one", "strength_tip", "strength_word", "tier_tip", "tier_word", "when",
    "when_iso", "hour_text", "calendar_day", "things", "ALSO_GONE", "also_gone", "forget_groups",
    "forget_sentence", "confidence_tip", "join", "RUN_KINDS", "WEEKDAYS", "run_kind",
    "relevance_word", "relevance_tip", "why_lines", "shared_name", "routing_sentence",
]

# The stores as the navigation and the charts name them (what each holds).
STORE_NAMES: dict[str, str] = {
    Store.SHORT_TERM: "Conversation", Store.EPISODIC: "Events", Store.SEMANTIC: "Facts",
    Store.PROCEDURAL: "Habits", Store.IMPLICIT: "Patterns", Store.WORKING: "Working memory"}
# One memory of a store, as a list row or the detail pane labels it.
STORE_ONE: dict[str, str] = {
    Store.SHORT_TERM: "Conversation", Store.EPISODIC: "Event", Store.SEMANTIC: "Fact",
    Store.PROCEDURAL: "Habit", Store.IMPLICIT: "Pattern", Store.WORKING: "Working memory"}
# (one, many) as a sentence counts them: "the fact", "2 conversation turns".
_NOUNS: dict[str, tuple[str, str]] = {
    Store.SHORT_TERM: ("conversation turn", "conversation turns"),
    Store.EPISODIC: ("event", "events"), Store.SEMANTIC: ("fact", "facts"),
    Store.PROCEDURAL: ("habit", "habits"), Store.IMPLICIT: ("pattern", "patterns"),
    Store.WORKING: ("note", "notes")}


def store_name(store: str) -> str:
    """A store's name ("Facts"); an unknown one with its underscores as spaces."""
    return STORE_NAMES.get(store, store.replace("_", " ").capitalize())


_ORDER = {s: n for n, s in enumerate(STORE_ONE)}


def store_one(store: str) -> str:
    """One memory's store as a label: "Fact", "Conversation"."""
    return STORE_ONE.get(store, store.replace("_", " ").capitalize())


def store_noun(store: str, n: int = 1) -> str:
    one, many = _NOUNS.get(store, (store.replace("_", " "),) * 2)
    return one if n == 1 else many


def count(n: int, one: str, many: str) -> str:
    """ "1 memory", "2 memories", "1,204 memories"."""
    return f"{n:,} {one if n == 1 else many}"


def things(stores: Iterable[str], *, the: bool = True) -> str:
    """Memories named by what they are: "the fact", "2 facts and an event", "3 habits".
    ``the``: a single one is "the fact" (else "a fact")."""
    by: dict[str, int] = {}
    for s in stores:
        by[s] = by.get(s, 0) + 1
    if sum(by.values()) == 1:
        (s,) = by
        noun = store_noun(s)
        return f"the {noun}" if the else f"{'an' if noun[0] in 'aeiou' else 'a'} {noun}"
    parts = [count(n, store_noun(s), store_noun(s, 2)) if n > 1
             else f"{'an' if store_noun(s)[0] in 'aeiou' else 'a'} {store_noun(s)}"
             for s, n in sorted(by.items(), key=lambda kv: (-kv[1], _ORDER.get(kv[0], 9)))]
    return join(parts)


def join(parts: list[str]) -> str:
    """ "a", "a and b", "a, b and c"."""
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def short(text: str, n: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


# --- times -------------------------------------------------------------------------------

# What "today" is measured from. The screenshot tests set it to their fixed vault time, so
# "today"/"yesterday" do not depend on the day the tests run; nothing else changes it.
clock: Callable[[], float] = time.time

def _day_word(at: datetime, now: datetime) -> str | None:
    delta = (at.date() - now.date()).days
    return {0: "today", -1: "yesterday", 1: "tomorrow"}.get(delta)


def when(ts: float | None, *, now: float | None = None, tz: tzinfo | None = None,
         never: str = "", short: bool = False) -> str:
    """A moment in the local zone: "today 09:14", "yesterday 18:02", "15 June 2026, 20:00"
    ("15 Jun 2026, 20:00" when ``short``: a list's column). ``now`` and ``tz`` are for tests
    (default: the clock and the local zone)."""
    if ts is None:
        return never
    now = clock() if now is None else now
    key = (ts, short, tz, int(now // _WHEN_FRESH_S))
    said = _when_said.get(key)
    if said is not None:
        ref_day, text = said
        if ref_day == _ref_day(now, tz):
            return text
    at = local_time(ts, tz)
    ref = local_time(now, tz)
    word = _day_word(at, ref)
    if word is not None:
        text = f"{word} {at:%H:%M}"
    else:
        text = f"{at.day} {at:%b %Y}, {at:%H:%M}" if short else f"{at.day} {at:%B %Y}, {at:%H:%M}"
    if len(_when_said) >= _WHEN_KEEP:
        _when_said.clear()
    _when_said[key] = (ref.date(), text)
    return text


# ``when`` is asked for every visible row at each list refresh (an import refreshes once a
# second), and each answer took four of the C library's local-time conversions (0.1-0.2 ms
# each here: it checks the zone file every time). So answers are kept, for a moment
# (``_WHEN_FRESH_S``: a change of the computer's zone shows within it) and for the same
# "today" (checked against the reference day, itself kept for a second).
_WHEN_FRESH_S = 600
_WHEN_KEEP = 4096
_when_said: dict[tuple[float, bool, tzinfo | None, int], tuple[date, str]] = {}
_ref_days: dict[tuple[int, tzinfo | None], date] = {}


def _ref_day(now: float, tz: tzinfo | None) -> date:
    key = (int(now), tz)
    day = _ref_days.get(key)
    if day is None:
        if len(_ref_days) >= 64:
            _ref_days.clear()
        day = _ref_days[key] = local_time(now, tz).date()
    return day


def day(ts: float | None, *, now: float | None = None, tz: tzinfo | None = None,
        never: str = "an unknown day") -> str:
    """A day in the local zone: "today", "yesterday", "15 June 2026"."""
    if ts is None:
        return never
    at = local_time(ts, tz)
    ref = local_time(clock() if now is None else now, tz)
    return _day_word(at, ref) or f"{at.day} {at:%B %Y}"


def when_iso(text: str | None, *, now: float | None = None, tz: tzinfo | None = None
             ) -> str:
    """``when`` of an ISO 8601 time (as ``SourceView.occurred_at`` carries it)."""
    if not text:
        return ""
    from app.clock import parse_iso
    try:
        ts = parse_iso(text)
    except ValueError:
        return ""
    return when(ts, now=now, tz=tz)


def iso_day(text: str) -> date | None:
    """The day of ``text`` written exactly YYYY-MM-DD (a Timeline day), else None. Not
    ``strptime``: its first call costs milliseconds of the window's first paint (its module and
    regular expressions), and the navigation parses a day per Timeline item."""
    if len(text) != 10 or text[4] != "-" or text[7] != "-" or not text.replace("-", "").isdigit():
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None


def calendar_day(text: str) -> str:
    """A day written YYYY-MM-DD (a Timeline day) as people write it: "Saturday 11 July 2026"."""
    d = iso_day(text)
    return text if d is None else f"{d:%A} {d.day} {d:%B %Y}"


def hour_text(hour: int) -> str:
    """An hour of the day on a schedule, local time: "03:00"."""
    return f"{hour % 24:02d}:00"


# What started a consolidation run (``RunSummary.kind``: the job's name, or who asked).
RUN_KINDS: dict[str, str] = {
    "consolidation": "consolidation", "heartbeat": "quick look at new conversation",
    "decay": "daily decay and archival", "synthesis": "weekly synthesis",
    "assistant_fact": "a fact from an assistant"}
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def run_kind(kind: str) -> str:
    return RUN_KINDS.get(kind, kind.replace("_", " "))


# --- scores ------------------------------------------------------------------------------

TIER_NAMES: dict[str, str] = {Tier.HOT: "Fresh", Tier.WARM: "Quiet", Tier.COLD: "Fading"}
# The Insights chart: honest about what counts (issue 25: an import is all "fresh").
TIER_CHART: dict[str, str] = {Tier.HOT: "Fresh (this week)", Tier.WARM: "Quiet (this month)",
                              Tier.COLD: "Fading (older)"}
TIER_NOTE = ("A memory counts from the latest of when it happened, when Kept learned it and "
             "when an assistant last used it: fresh within 7 days, quiet within 30, then "
             "fading (a memory used often stays fresh longer). What you import is fresh "
             "this week, however long ago it happened.")


_TIER_TIPS: dict[str, str] = {
    Tier.HOT: "happened, was learned or was used in the last 7 days",
    Tier.WARM: "was last new or used between a week and a month ago",
    Tier.COLD: "has not been new or used for over a month; fading memories are archived in time"}


def tier_word(tier: str | None) -> str:
    return TIER_NAMES.get(tier, tier.capitalize()) if tier else ""


def tier_tip(tier: str | None) -> str:
    if not tier:
        return ""
    what = _TIER_TIPS.get(tier, "")
    return f"{tier_word(tier)}: it {what}." if what else tier_word(tier)


def strength_word(composite: float) -> str:
    """ "strong", "medium", "weak": how high recall ranks it and how long it lasts."""
    return "strong" if composite >= 0.6 else "medium" if composite >= 0.35 else "weak"


_PARTS = (("importance", "importance"), ("recency", "recency"), ("frequency", "use"),
          ("emotional", "feeling"), ("social", "people"))


def strength_tip(composite: float, parts: Mapping[str, float] | None = None) -> str:
    """The number behind the word, and (given the parts) what it is made of."""
    out = (f"Strength {composite:.2f} of 1 ({strength_word(composite)}): strong memories come "
           "first in recall and are archived last.")
    if parts:
        made = ", ".join(f"{word} {parts[k]:.2f}" for k, word in _PARTS if k in parts)
        out += f"\nMade of {made}."
    return out


def confidence_word(confidence: float | None, *, confirmed: bool = False) -> str:
    """How sure Kept is that a memory is right, in words."""
    if confirmed or (confidence is not None and confidence >= 1.0):
        return "confirmed by you"
    if confidence is None:
        return ""
    return ("Kept is sure" if confidence >= 0.8 else "Kept is fairly sure" if confidence >= 0.6
            else "Kept is unsure" if confidence >= 0.4 else "Kept doubts it")


def confidence_tip(confidence: float | None) -> str:
    if confidence is None:
        return ""
    return (f"Confidence {confidence:.2f} of 1: how sure Kept is that it is right (its source, "
            "how often it was said again, how recent, whether you confirmed it).")


# --- links and sources as sentences -------------------------------------------------------

def said(store: str, text: str, speaker: str | None, occurred_at: float | None, *,
         now: float | None = None, tz: tzinfo | None = None) -> str:
    """Another memory as a sentence names it: "what Sam said on 15 June 2026" for a
    conversation turn or an event someone said, else "the fact “…”"."""
    if speaker and store in (Store.SHORT_TERM, Store.EPISODIC):
        on = day(occurred_at, now=now, tz=tz)
        on = on if on in ("today", "yesterday") else f"on {on}"
        return f"what {speaker} said {on}: “{short(text, 60)}”"
    return f"the {store_noun(store)} “{short(text, 60)}”"


# (this memory is the link's source, this memory is its target) -> sentence start. Each kind
# read from both sides: FOLLOWED_BY is PRECEDED_BY seen from the earlier memory.
_LINKS: dict[str, tuple[str, str]] = {
    LinkKind.DERIVED_FROM: ("Learned from", "Kept learned from this:"),
    LinkKind.PROMOTED_FROM: ("Kept for longer from", "Kept for longer as"),
    LinkKind.SUPERSEDES: ("Replaces", "Replaced by"),
    LinkKind.CONTRADICTS: ("Disagrees with", "Disagrees with"),
    LinkKind.SIMILAR_TO: ("Says much the same as", "Says much the same as"),
    LinkKind.RELATES_TO: ("About the same person or thing as",
                          "About the same person or thing as"),
    LinkKind.PRECEDED_BY: ("Came after", "Followed by"),
    LinkKind.MENTIONS: ("Mentions", "Mentioned in"),
    LinkKind.REINFORCES: ("Said again, which supports", "Said again in"),
}
# PRECEDED_BY between two conversations (the first mention of a topic in one, its last
# mention in the conversation before about it).
_LINKS_ACROSS = ("Picks up from an earlier conversation:", "Picked up in a later conversation:")


def link_sentence(kind: str, outgoing: bool, other: str, *, across: bool = False,
                  about: str | None = None) -> str:
    """ "Learned from what Sam said on 15 June 2026: “…”". ``outgoing``: the shown memory
    is the link's source; ``other``: the other memory as ``said`` names it; ``across``: the
    two were said in different conversations (a PRECEDED_BY between them); ``about``: the
    person or thing both name, for RELATES_TO ("About Mia, like the fact “…”")."""
    if kind == LinkKind.PRECEDED_BY and across:
        return f"{_LINKS_ACROSS[0] if outgoing else _LINKS_ACROSS[1]} {other}"
    if kind == LinkKind.RELATES_TO and about:
        return f"Also about {about}: {other}"
    start = _LINKS.get(kind, (kind.replace("_", " ").capitalize(),) * 2)
    return f"{start[0] if outgoing else start[1]} {other}"


_NAME = re.compile(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*")


def shared_name(a: str, b: str, *, skip: Iterable[str] = ()) -> str | None:
    """A name both texts use (a capitalised word or run that is not a common word, "The",
    "Yesterday", nor in ``skip``: the speakers), the longest: what a RELATES_TO link is
    about, in the texts' own words. None when they share none."""
    from app.services.text import STOPWORDS
    skipped = {s.casefold() for s in skip}

    def names(text: str) -> set[str]:
        out = set()
        for m in _NAME.finditer(text):
            run = m.group(0).split()
            while run and (run[0].casefold() in STOPWORDS or run[0].casefold() in _NOT_NAMES):
                run = run[1:]  # "The Kitewood launch": a sentence's first word goes
            if run and " ".join(run).casefold() not in skipped:
                out.add(" ".join(run))
        return out
    both = names(a) & names(b)
    return max(sorted(both), key=len) if both else None


# Capitalised at a sentence start, never a name.
_NOT_NAMES = frozenset("""yesterday today tomorrow tonight thanks thank yes yeah no okay ok
hey hi hello sure well also still just really maybe great good nice cool wow oh so but and
then now last next this that my our your his her their its we they he she it you""".split())


_HISTORY = {"created": "learned", "confirmed": "confirmed by you", "rated": "rated by you",
            "superseded": "replaced by a newer version", "corrected": "written by you as a "
            "correction", "archived": "archived", "restored": "restored from the Archive",
            "shared": "shared by you with all assistants",
            "unshared": "sharing undone by you: its assistant's own again"}


def history_line(action: str, this: bool, *, at: str) -> str:
    """A history entry: "today 09:14 · learned"; ``this`` False for another version's."""
    what = _HISTORY.get(action, action.replace("_", " "))
    return f"{at} · {what}" if this else f"{at} · another version: {what}"


# --- forgetting: the plan and its report in the same words --------------------------------

# What goes with the memories besides themselves, per table (``ForgetPlan.rows``,
# ``ForgetReport.deleted``), as (one, many); a table not named here is a part of a memory the
# person never sees on its own (its words in the search index, its vector, an event's or a
# fact's own columns) and goes without being counted apart.
ALSO_GONE: dict[str, tuple[str, str]] = {
    "link": ("link to another memory", "links to other memories"),
    "history": ("history entry", "history entries"),
    "entity": ("person or project known only from it", "people and projects known only from it"),
    "entity_mention": ("mention of a person or project", "mentions of people and projects"),
    "contradiction": ("Inbox item", "Inbox items"),
    "llm_reply": ("stored reply of the extraction model", "stored replies of the extraction model"),
    "run_change": ("line in the consolidation log", "lines in the consolidation log"),
    # Not a table: entity summaries that may quote what goes, cleared to be written again.
    "summaries": ("summary of a person or project, to write again",
                  "summaries of people and projects, to write again"),
}
FORGET_ROLES = ("matched", "version", "derived", "source")


def forget_groups(items: Iterable[tuple[str, str]]) -> list[tuple[str, int]]:
    """The memories a plan forgets, as (words, how many) per role, from (role, store) pairs:
    "the fact" 1, "earlier versions" 2, "the conversation it came from" 3. The counts add up
    to the plan's memories."""
    by: dict[str, list[str]] = {}
    for role, store in items:
        by.setdefault(role, []).append(store)
    it = "it" if len(by.get("matched", [])) <= 1 else "them"
    out: list[tuple[str, int]] = []
    for role in FORGET_ROLES:
        stores = by.get(role, [])
        if not stores:
            continue
        n = len(stores)
        if role == "matched":
            label = things(stores)
        elif role == "version":
            label = "an earlier version" if n == 1 else f"{n} earlier versions"
        elif role == "derived":
            label = f"{things(stores, the=False)} learned only from {it}"
        else:
            label = f"the conversation {it} came from"
        out.append((label, n))
    return out


def also_gone(rows: Mapping[str, int]) -> list[tuple[str, int]]:
    """What else goes, counted in the person's words (see ``ALSO_GONE``)."""
    return [(ALSO_GONE[k][0 if n == 1 else 1], n) for k in ALSO_GONE
            if (n := int(rows.get(k, 0)))]


def forget_sentence(groups: list[tuple[str, int]]) -> str:
    """ "the fact, 2 earlier versions and the conversation it came from (6 memories)"."""
    n = sum(c for _w, c in groups)
    return f"{join([w for w, _c in groups])} ({count(n, 'memory', 'memories')})"


# --- search results: relevance and "why this result" --------------------------------------

# A hit's relevance against the best one of its search (``relevance_word``).
GOOD_SHARE = 0.6
BEST_SHARE = 0.9


def relevance_word(score: float, best: float) -> str:
    """ "best match", "good", "weaker": a search result's score beside the best one's."""
    share = score / best if best > 0 else 0.0
    return "best match" if share >= BEST_SHARE else "good" if share >= GOOD_SHARE else "weaker"


def relevance_tip(score: float, best: float) -> str:
    return (f"Relevance {score:.2f} for this search ({relevance_word(score, best)}; the best "
            f"match has {best:.2f}). Freshness and strength are the memory's own.")


def why_lines(parts: Mapping[str, float]) -> list[str]:
    """Why recall ranked a memory where it did, in sentences, from the parts of its score
    (``Explanation.breakdown``)."""
    if parts.get("note_not_in_top_200"):
        return ["It is no longer among the best matches for this search."]
    out: list[str] = []
    lexical, dense = parts.get("lexical", 0.0), parts.get("dense", 0.0)
    if lexical >= 0.99:
        out.append("It has the words you searched for.")
    elif lexical > 0:
        out.append("It has some of the words you searched for.")
    else:
        out.append("It has none of the words you searched for.")
    if dense >= 0.7:
        out.append("Its meaning is close to what you searched for.")
    elif dense >= 0.35:
        out.append("Its meaning is somewhat like what you searched for.")
    else:
        out.append("Its meaning is far from what you searched for.")
    if parts.get("slot"):
        out.append("It answers the kind of question you asked.")
    if parts.get("session", 0.0) >= 0.05:
        out.append("It was said in a conversation that matches your search.")
    if parts.get("person"):
        out.append("It is about a person you named.")
    boost = parts.get("boost", 1.0)
    if boost > 1.05:
        out.append("Its kind of memory counts for more in a search like this.")
    elif boost < 0.95:
        out.append("It counts for less: its kind, or it is in the Archive.")
    if parts.get("lift"):
        out.append("It was moved up beside what it was learned from.")
    if parts.get("current"):
        out.append("It was moved up: it is the latest word on what you asked.")
    if parts.get("small_talk"):
        out.append("It reads as small talk, so it counts for less.")
    if "composite" in parts:
        out.append(f"Its strength ({strength_word(parts['composite'])}) adds a little.")
    return out


# How an event went (issue 27 item 8): an episode's rating in words, also the outcome Kept
# writes when it infers one (``app.services.outcomes``).
EPISODE_RATINGS = {1: "went well", 0: "mixed", -1: "went badly"}


def routing_sentence(salience: float, stores: Iterable[str], reason: str,
                     by: str = "rules", *, score: bool = True) -> str:
    """Where an incoming turn went and why (``api.RoutingView``): "Salience 0.72 (the
    speaker's own, an event, change, plan or preference): kept as a conversation turn and an
    event." Short-term only: "...: kept as a conversation turn only; it fades with the
    conversation."
    """
    kept = [str(s) for s in stores]
    rated = " (rated by the LLM)" if by == "llm" else ""
    if kept == [Store.SHORT_TERM.value]:
        where = "kept as a conversation turn only; it fades with the conversation"
    else:
        nouns = [store_noun(s) for s in sorted(kept, key=lambda s: _ORDER.get(s, 99))]
        where = "kept as " + " and ".join(f"a{'n' if n[0] in 'aeiou' else ''} {n}"
                                          for n in nouns)
    why = reason[:1].lower() + reason[1:]
    if not score:  # the window: words, not numbers
        return f"{where[:1].upper() + where[1:]} ({why}){rated}."
    return f"Salience {salience:.2f}{rated} ({why}): {where}."


# issue 27 item 3: an entity's kind in plain words, an archive with what it was and when it ended
_KIND_WORDS = {"person": "person", "pet": "pet", "place": "place", "company": "organisation",
               "project": "project", "area": "area", "resource": "resource",
               "work": "book, film or song", "archive": "archived"}
MERGE_REASONS = {"kind": "the same name, read as two kinds of thing",
                 "name": "the same name written another way",
                 "embedding": "a longer name for the same thing"}


def entity_kind(kind: str, was_kind: str | None = None, ended_at: float | None = None,
                ended_how: str | None = None, *, now: float | None = None,
                tz: tzinfo | None = None) -> str:
    """"project", or for an archive "project, finished 3 May 2026" (said to be over) or
    "project, quiet since 3 May 2026" (not mentioned for months)."""
    if kind != "archive" or not was_kind:
        return _KIND_WORDS.get(kind, kind)
    what = _KIND_WORDS.get(was_kind, was_kind)
    if ended_at is None:
        return f"{what}, archived"
    on = day(ended_at, now=now, tz=tz)
    return f"{what}, quiet since {on}" if ended_how == "idle" else f"{what}, finished {on}"


# A consolidation run's report counts, by key -> words (one, many): the window's run list, its
# "What it changed" line and `kept consolidate` all say them from this one table. Every key a
# step can count (``rl.counts[...]``) has words here (tests/guards/test_run_words.py checks it);
# ("", "") = bookkeeping left unsaid.
RUN_COUNT_WORDS: dict[str, tuple[str, str]] = {
    "facts_created": ("fact learned", "facts learned"),
    "procedures_created": ("habit found", "habits found"),
    "habits_recounted": ("habit's count updated", "habits' counts updated"),
    "facts_merged": ("fact merged into one that says the same",
                     "facts merged into ones that say the same"),
    "habits_merged": ("habit merged into one that says the same",
                      "habits merged into ones that say the same"),
    "habits_replaced": ("habit replaced by a new one", "habits replaced by new ones"),
    "contradictions_found": ("contradiction found", "contradictions found"),
    "auto_resolved": ("resolved by the policy", "resolved by the policy"),
    "sent_to_inbox": ("sent to your inbox", "sent to your inbox"),
    "facts_corroborated": ("fact corroborated", "facts corroborated"),
    "entities_created": ("person, project, area or resource found",
                         "people, projects, areas and resources found"),
    "statistics_updated": ("pattern updated", "patterns updated"),
    "summaries_written": ("summary written", "summaries written"),
    "sessions_summarised": ("long conversation summarised as an event",
                            "long conversations summarised as events"),
    "similar_links": ("near-duplicate linked", "near-duplicates linked"),
    "sequence_links": ("turn linked to the one before", "turns linked to the ones before"),
    "related_links": ("fact linked to a related one", "facts linked to related ones"),
    "promoted": ("memory promoted", "memories promoted"),
    "rescored": ("memory rescored", "memories rescored"),
    "archived": ("memory archived", "memories archived"),
    "boosted": ("memory strengthened on schedule", "memories strengthened on schedule"),
    "confidence_moved": ("fact's confidence updated", "facts' confidence updated"),
    "already_known": ("fact already known", "facts already known"),
    "changes_settled": ("assistant's change settled", "assistants' changes settled"),
    "closed_both_replaced": ("contradiction closed (both sides replaced since)",
                             "contradictions closed (both sides replaced since)"),
    "corrected_by_person": ("fact you corrected in your own words",
                            "facts you corrected in your own words"),
    "said_changes": ("", ""),  # each is also a contradiction found: said once
    "entities_merged": ("person or project merged with its double",
                        "people and projects merged with their doubles"),
    "episodes_set_aside": ("small-talk turn set aside", "small-talk turns set aside"),
    "facts_already_given": ("fact an assistant had already given",
                            "facts an assistant had already given"),
    "facts_refused": ("fact refused as malformed", "facts refused as malformed"),
    "forget_asked": ("request to forget, from a conversation",
                     "requests to forget, from conversations"),
    "kept_from_llm": ("private turn kept from the LLM", "private turns kept from the LLM"),
    "outcomes_inferred": ("event's outcome inferred", "events' outcomes inferred"),
    "owner_named": ("time you said your name", "times you said your name"),
    "projects_archived": ("finished project archived", "finished projects archived"),
    "routed_by_llm": ("turn sorted by the LLM", "turns sorted by the LLM"),
}


def run_counts(counts: Mapping[str, int], *, limit: int | None = None) -> str:
    """Non-zero run counts as words, largest first: "7 facts learned, 5 patterns updated"
    ("nothing new" when none). A key without words is said with spaces; one whose words are
    empty is left out."""
    parts = []
    for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        one, many = RUN_COUNT_WORDS.get(k, (k.replace("_", " "),) * 2)
        if n and many:
            parts.append(f"{n} {one if n == 1 else many}")
    if not parts:
        return "nothing new"
    if limit is not None and len(parts) > limit:
        return ", ".join(parts[:limit]) + f", and {len(parts) - limit} more"
    return ", ".join(parts)


# What undoing a run does, by change-log kind (the ``rl.change(conn, KIND, ...)`` kinds), as
# ``undo_plan`` counts it before and ``undo_run`` after: (one, many, verb), verb "remove" or
# "restore"; "" = bookkeeping the person never sees. The window's Undo question and report and
# `kept undo` say it from this one table (tests/guards/test_run_words.py checks every kind).
UNDO_CHANGE_WORDS: dict[str, tuple[str, str, str]] = {
    "created": ("memory it made", "memories it made", "remove"),
    "entity": ("person or project it found", "people and projects it found", "remove"),
    "contradiction": ("contradiction it raised (it leaves the Inbox)",
                      "contradictions it raised (they leave the Inbox)", "remove"),
    "link": ("link it drew", "links it drew", "remove"),
    "status": ("memory it archived, merged or replaced",
               "memories it archived, merged or replaced", "restore"),
    "confidence": ("confidence it changed", "confidences it changed", "restore"),
    "statistic": ("statistic it updated", "statistics it updated", "restore"),
    "boost": ("strength it raised", "strengths it raised", "restore"),
    "entity_archived": ("project it archived", "projects it archived", "restore"),
    "entity_merged": ("person or project it merged", "people and projects it merged",
                      "restore"),
    "episode_outcome": ("event's outcome it inferred", "events' outcomes it inferred",
                        "restore"),
    "habit_counts": ("habit count it updated", "habit counts it updated", "restore"),
    "routing": ("turn's sorting it changed", "turns' sorting it changed", "restore"),
    "settled": ("contradiction it closed", "contradictions it closed", "restore"),
    "confidence_factors": ("", "", ""), "mention": ("", "", ""), "watermark": ("", "", "")}


def undo_text(run_id: int, counts: Mapping[str, int], *, done: bool = False) -> str:
    """"Undoing run 5 removes 14 memories it made and 2 people and projects it found, and puts
    back 3 memories it archived, merged or replaced as they were before it." from
    ``undo_plan``'s counts; ``done``: the same, said of ``undo_run``'s counts afterwards
    ("Run 5 undone: removed ..., and put back ...")."""
    said: dict[str, list[str]] = {"remove": [], "restore": []}
    for kind, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        one, many, verb = UNDO_CHANGE_WORDS.get(kind, (kind.replace("_", " "),) * 2 + ("remove",))
        if n and verb:
            said[verb].append(count(n, one, many))
    remove, restore = ("removed", "put back") if done else ("removes", "puts back")
    clauses = []
    if said["remove"]:
        clauses.append(f"{remove} {join(said['remove'])}")
    if said["restore"]:
        clauses.append(f"{restore} {join(said['restore'])} as they were before it")
    if done:
        return f"Run {run_id} undone: {', and '.join(clauses) or 'nothing you can see changed'}."
    if not clauses:
        return f"Run {run_id} changed nothing you can see; undoing it only marks it undone."
    return f"Undoing run {run_id} {', and '.join(clauses)}."
