"""The words a person reads (app/words.py, issue 25 item 5): local times as people write them,
counts that agree in number, the forget plan's groups adding up. No Qt."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from app import words

NOW = datetime(2026, 6, 15, 20, 0, tzinfo=UTC).timestamp()  # a Monday evening
TOKYO = timezone(timedelta(hours=9))


def test_when_says_today_yesterday_or_the_date_in_the_zone_given() -> None:
    assert words.when(NOW - 600, now=NOW, tz=UTC) == "today 19:50"
    assert words.when(NOW - 26 * 3600, now=NOW, tz=UTC) == "yesterday 18:00"
    assert words.when(NOW + 13 * 3600, now=NOW, tz=UTC) == "tomorrow 09:00"
    assert words.when(NOW - 3 * 86_400, now=NOW, tz=UTC) == "12 June 2026, 20:00"
    assert words.when(NOW - 400 * 86_400, now=NOW, tz=UTC) == "11 May 2025, 20:00"
    # The same moment in Tokyo is 05:00 the next morning: the local day decides "today".
    assert words.when(NOW, now=NOW, tz=TOKYO) == "today 05:00"
    assert words.when(NOW - 6 * 3600, now=NOW, tz=TOKYO) == "yesterday 23:00"
    assert words.when(None, never="never") == "never"


def test_day_and_iso_times() -> None:
    assert words.day(NOW, now=NOW, tz=UTC) == "today"
    assert words.day(NOW - 86_400, now=NOW, tz=UTC) == "yesterday"
    assert words.day(NOW - 10 * 86_400, now=NOW, tz=UTC) == "5 June 2026"
    assert words.when_iso("2026-06-15T09:14:00Z", now=NOW, tz=UTC) == "today 09:14"
    assert words.when_iso("2026-06-01T20:00:00+00:00", now=NOW, tz=UTC) == "1 June 2026, 20:00"
    assert words.when_iso("not a time") == "" and words.when_iso(None) == ""


def test_the_clock_hook_decides_today() -> None:
    before = words.clock
    words.clock = lambda: NOW
    try:
        assert words.when(NOW - 60, tz=UTC) == "today 19:59"
    finally:
        words.clock = before


def test_counts_agree_in_number() -> None:
    assert words.count(1, "memory", "memories") == "1 memory"
    assert words.count(0, "memory", "memories") == "0 memories"
    assert words.count(1204, "memory", "memories") == "1,204 memories"
    assert words.things(["semantic"]) == "the fact"
    assert words.things(["episodic"], the=False) == "an event"
    assert words.things(["semantic", "semantic", "episodic"]) == "2 facts and an event"


def test_store_tier_strength_and_links_in_words() -> None:
    assert [words.store_name(s) for s in ("short_term", "episodic", "semantic", "procedural",
                                         "implicit")] == ["Conversation", "Events", "Facts",
                                                          "Habits", "Patterns"]
    assert words.store_one("semantic") == "Fact"
    assert words.tier_word("hot") == "Fresh" and "7 days" in words.tier_tip("hot")
    assert words.strength_word(0.38) == "medium"
    tip = words.strength_tip(0.38, {"importance": 0.6, "recency": 0.69})
    assert "0.38" in tip and "importance 0.60" in tip and "recency 0.69" in tip
    assert words.confidence_word(0.41) == "Kept is unsure"
    assert words.confidence_word(1.0) == "confirmed by you"
    other = words.said("short_term", "I moved to Porto", "Sam",
                       datetime(2026, 6, 1, 12, tzinfo=UTC).timestamp(), now=NOW, tz=UTC)
    assert other == "what Sam said on 1 June 2026: “I moved to Porto”"
    assert words.link_sentence("DERIVED_FROM", True, other).startswith(
        "Learned from what Sam said on 1 June 2026")
    assert words.link_sentence("SUPERSEDES", False, "the fact “x”") == "Replaced by the fact “x”"
    assert words.history_line("created", True, at="today 09:14") == "today 09:14 · learned"


def test_forget_groups_add_up_and_say_what_goes() -> None:
    items = [("matched", "semantic"), ("version", "semantic"), ("version", "semantic"),
             ("source", "short_term"), ("source", "episodic")]
    groups = words.forget_groups(items)
    assert [w for w, _n in groups] == [
        "the fact", "2 earlier versions",
        "the conversation it came from"]
    assert sum(n for _w, n in groups) == len(items)
    assert words.forget_sentence(groups) == (
        "the fact, 2 earlier versions and the conversation it came from (5 memories)")
    assert words.things(["episodic", "short_term"], the=False) == (
        "a conversation turn and an event")
    assert words.also_gone({"link": 1, "history": 3, "memory_fts": 5, "vector": 5,
                            "run_change": 2}) == [
        ("link to another memory", 1), ("history entries", 3),
        ("lines in the consolidation log", 2)]


def test_the_first_and_last_moments_a_vault_accepts_are_said_in_any_zone() -> None:
    """1 January of year 1 (UTC) is in year 0 west of Greenwich, and the last second of 9999
    is in year 10000 east of it: Python cannot hold either, so they are said in UTC (the CLI's
    `history` failed on such a memory in the slow fuzz test)."""
    first, last = -62_135_596_800.0, 253_402_300_799.0
    west, east = timezone(timedelta(hours=-8)), timezone(timedelta(hours=14))
    assert words.when(first, tz=west, now=0) == "1 January 1, 00:00"
    assert words.day(last, tz=east, now=0) == "31 December 9999"
    assert words.when(last, tz=west, now=0) == "31 December 9999, 15:59"


def test_every_link_kind_reads_as_a_sentence_from_both_sides() -> None:
    """Issue 27 item 7: each kind, seen from its source and from its target, starts with
    words (no kind name, no underscore), and the two sides of an asymmetric kind differ."""
    from app.domain.memory import LinkKind
    other = "what Sam said on 1 June 2026: “the renovation is done”"
    seen = {}
    for kind in LinkKind:
        out = words.link_sentence(kind, True, other)
        back = words.link_sentence(kind, False, other)
        for s in (out, back):
            assert s.endswith(other) and "_" not in s and kind.value not in s, s
            assert s[0].isupper()
        seen[kind] = (out, back)
    for kind in ("PRECEDED_BY", "DERIVED_FROM", "SUPERSEDES", "PROMOTED_FROM", "REINFORCES",
                 "MENTIONS"):
        assert seen[LinkKind(kind)][0] != seen[LinkKind(kind)][1], kind
    assert seen[LinkKind.PRECEDED_BY] == (f"Came after {other}", f"Followed by {other}")
    # Between two conversations, and a RELATES_TO that knows whom both name.
    across = words.link_sentence("PRECEDED_BY", True, other, across=True)
    assert across != seen[LinkKind.PRECEDED_BY][0] and "earlier conversation" in across
    assert "later conversation" in words.link_sentence("PRECEDED_BY", False, other, across=True)
    assert words.link_sentence("RELATES_TO", True, other, about="Mia") == \
        f"Also about Mia: {other}"
    # ``about`` and ``across`` only change the kinds they describe.
    assert words.link_sentence("SUPERSEDES", True, other, across=True, about="Mia") == \
        seen[LinkKind.SUPERSEDES][0]


@pytest.mark.parametrize(("a", "b", "skip", "name"), [
    ("Mia started at Kitewood in May.", "Had lunch with Mia and Tom yesterday", ["Sam"], "Mia"),
    ("My sister Ana Lopez moved to Lyon", "I called Ana Lopez today", [], "Ana Lopez"),
    ("Yesterday was long", "Yesterday I ran 5k", [], None),  # a sentence start, not a name
    ("Sam likes tea", "Sam runs on Saturdays", ["sam"], None),  # the speaker is skipped
    ("The Kitewood launch slipped", "Kitewood hired two people", [], "Kitewood"),
    ("i think so", "no idea", [], None),
])
def test_shared_name_finds_whom_two_memories_are_about(a: str, b: str, skip: list[str],
                                                       name: str | None) -> None:
    assert words.shared_name(a, b, skip=skip) == name
    assert words.shared_name(b, a, skip=skip) == name  # either way round


@pytest.mark.parametrize("text, shown", [
    ("2026-07-11", "Saturday 11 July 2026"),
    ("2024-02-29", "Thursday 29 February 2024"),
    ("2026-02-30", "2026-02-30"),   # no such day: the text as it came
    ("20260711", "20260711"),       # fromisoformat takes it; a Timeline day is never written so
    ("2026-7-11", "2026-7-11"),
    ("2026-07-1x", "2026-07-1x"),
    ("", ""),
])
def test_calendar_day_reads_only_a_whole_iso_day(text: str, shown: str) -> None:
    assert words.calendar_day(text) == shown
    assert (words.iso_day(text) is None) == (text == shown)


def test_when_answers_from_memory_follow_midnight() -> None:
    """``when`` keeps its answers (a list refresh asks for every visible row once a second),
    but never past midnight: the same moment said at 23:59:50 and at 00:00:05 is "today"
    then "yesterday", even within one ten-minute bucket."""
    nepal = timezone(timedelta(hours=5, minutes=45))  # its midnight is not on a bucket's edge
    at = datetime(2026, 7, 11, 9, 14, tzinfo=nepal).timestamp()
    late = datetime(2026, 7, 11, 23, 59, 50, tzinfo=nepal).timestamp()
    after = datetime(2026, 7, 12, 0, 0, 5, tzinfo=nepal).timestamp()
    assert int(late // 600) == int(after // 600)
    assert words.when(at, now=late, tz=nepal) == "today 09:14"
    assert words.when(at, now=late, tz=nepal) == "today 09:14"  # from memory
    assert words.when(at, now=after, tz=nepal) == "yesterday 09:14"
    assert words.when(at, now=after, tz=nepal, short=True) == "yesterday 09:14"
    far = datetime(2026, 9, 1, tzinfo=nepal).timestamp()
    assert words.when(at, now=far, tz=nepal) == "11 July 2026, 09:14"
    assert words.when(at, now=far, tz=nepal, short=True) == "11 Jul 2026, 09:14"
