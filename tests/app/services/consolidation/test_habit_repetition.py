"""Habits from repetition (issue 27 item 5): the same activity on the same weekday or part of
the day, at least three times in four weeks, is a habit with its place and time, even when the
person never says "I <verb>"; one said almost every day is a daily habit. The turns are written
for this test as people type them (not taken from any dev set)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from app.services.habits import detect_patterns

TUESDAY_EVENING = datetime(2026, 9, 1, 19, 0, tzinfo=UTC)


def rows(texts: list[str], start: datetime, step: timedelta, who: str = "Maya"
         ) -> list[tuple[int, str, str, float, str]]:
    return [(n + 1, t, who, (start + n * step).timestamp(), f"s{n}")
            for n, t in enumerate(texts)]


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    import time
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()


def test_an_activity_named_on_the_same_weekday_is_a_habit_with_place_and_time() -> None:
    said = rows(["Climbing gym again tonight, finally sent the blue route at The Depot",
                 "back at The Depot, climbing with Jo, forearms dead",
                 "tuesday climbing session was packed",
                 "new problems set at The Depot, climbing till close",
                 "climbing tonight, skin is wrecked"], TUESDAY_EVENING, timedelta(weeks=1))
    [p] = detect_patterns(said)
    assert p.statement == ("Maya's climbing usually happens on Tuesdays, in the evening, "
                           "at The Depot")
    assert p.sources == [1, 2, 3, 4, 5]


def test_a_practice_said_almost_every_day_is_a_daily_habit() -> None:
    said = rows(["did my Spanish practice on the bus", "Spanish practice done, 40 day streak!",
                 "quick Spanish practice before work", "spanish practice with coffee",
                 "Spanish practice: subjunctive is evil"],
                datetime(2026, 9, 1, 7, 30, tzinfo=UTC), timedelta(days=1, minutes=41))
    [p] = detect_patterns(said)
    assert p.statement == "Maya's Spanish practice happens almost every day"
    assert len(p.sources) == 5


def test_three_times_spread_over_months_is_no_habit() -> None:
    said = rows(["climbing tonight", "climbing tonight", "climbing tonight"],
                TUESDAY_EVENING, timedelta(weeks=6))
    assert detect_patterns(said) == []


def test_the_same_day_counts_once_and_words_that_are_no_activity_make_nothing() -> None:
    same_day = rows(["climbing later", "climbing was great", "more climbing tomorrow"],
                    TUESDAY_EVENING, timedelta(minutes=30))
    chatter = rows(["Such an interesting meeting", "the evening was boring",
                    "nothing planned, anything goes", "the wedding is next month"],
                   TUESDAY_EVENING, timedelta(weeks=1))
    assert detect_patterns(same_day) == []
    assert detect_patterns(chatter) == []


def test_a_gerund_and_its_verb_make_one_habit() -> None:
    said = rows(["I went swimming at the pool", "swimming at the pool before work",
                 "I swam 40 lengths at the pool", "I went swimming again"],
                datetime(2026, 9, 5, 7, 0, tzinfo=UTC), timedelta(weeks=1))
    [p] = detect_patterns(said)
    assert p.key == "Maya|go swimming|weekday=5"
    assert p.statement == "Maya often goes swimming on Saturdays, in the morning, at the pool"
    assert p.sources == [1, 2, 3, 4]


def test_when_the_person_always_talks_is_not_a_habit_of_what_they_talk_about() -> None:
    """Someone who chats every evening mentions painting on three evenings: that is when they
    talk, not when they paint (the time of a turn is the time of telling)."""
    evenings = rows([f"long day, nothing much ({n})" for n in range(10)],
                    datetime(2026, 9, 1, 20, 0, tzinfo=UTC), timedelta(days=1))
    painting = [(100 + n, "Painting again, the sunset one is nearly done", "Maya",
                 (datetime(2026, 9, 12, 20, 30, tzinfo=UTC) + timedelta(days=3 * n)).timestamp(),
                 f"p{n}") for n in range(3)]
    assert detect_patterns(sorted(evenings + painting, key=lambda r: r[3])) == []


def test_a_gerund_used_as_an_adjective_is_no_activity() -> None:
    said = rows(["that talk was so inspiring", "such an inspiring story",
                 "really inspiring people there"], TUESDAY_EVENING, timedelta(weeks=1))
    assert detect_patterns(said) == []


# --- through consolidation: counts that move, a habit that moves, undo -------------------------

def test_a_habit_counts_what_happened_and_ends_when_it_moves(vault_dir: Path,
                                                             fast_kdf: object) -> None:
    """Saturday runs for five weeks (one skipped), then Sunday runs: the Saturday habit
    counts its runs and the skipped one, then ends the day the Sunday one begins (superseded
    by it); undoing the run puts both back as they were."""
    from app.api import Turn
    from app.clock import FixedClock, parse_iso
    from app.facade import Vault
    from tests.inside import inside

    v = Vault.create(vault_dir, "pw-habits", kdf=fast_kdf, threaded=False,
                     clock=FixedClock(parse_iso("2026-12-01T00:00:00Z")), use_chroma=False,
                     load_model=False).vault

    def say(day: str, text: str, n: int) -> Turn:
        return Turn(f"s{n}", "Maya", text, parse_iso(day + "T08:00:00Z"), f"r{n}")

    def habits() -> dict[str, tuple[str, int, int]]:
        return {t: (s, ok, ko) for t, s, ok, ko in inside(v).db.read(lambda c: c.execute(
            "SELECT m.text, m.status, p.success_count, p.failure_count FROM memory m "
            "JOIN procedure p ON p.memory_id = m.id WHERE p.kind = 'procedure'").fetchall())}
    try:
        sats = ["2026-09-05", "2026-09-12", "2026-09-19", "2026-09-26"]
        v.import_turns([say(d, "I went running along the canal, 5k", n)
                        for n, d in enumerate(sats)])
        v.import_turns([say("2026-10-03", "skipped running today, too tired", 10)])
        v.consolidate(now=parse_iso("2026-10-04T00:00:00Z"))
        saturday = "Maya often goes running on Saturdays, in the morning"
        assert habits() == {saturday: ("active", 4, 1)}

        suns = ["2026-10-11", "2026-10-18", "2026-10-25", "2026-11-01"]
        v.import_turns([say(d, "Sunday run is the new thing, went running by the river", 20 + n)
                        for n, d in enumerate(suns)])
        run = v.consolidate(now=parse_iso("2026-11-02T00:00:00Z")).value
        sunday = "Maya often goes running on Sundays, in the morning"
        assert habits() == {saturday: ("superseded", 4, 1), sunday: ("active", 4, 0)}
        assert run.counts["habits_replaced"] == 1

        v.undo_run(run.run_id)
        assert habits() == {saturday: ("active", 4, 1)}
    finally:
        v.lock()


def test_a_place_named_by_its_activity_and_a_name_said_alone_make_habits() -> None:
    """Chat wording with no "I": "back from the swimming pool", "piano again tonight"."""
    swim = rows(["back from the swimming pool, 40 lengths", "swimming pool with Mia tonight",
                 "the swimming pool was freezing", "swimming pool again, new goggles"],
                TUESDAY_EVENING, timedelta(weeks=1))
    [p] = detect_patterns(swim)
    assert p.statement.startswith("Maya's swimming usually happens on Tuesdays")
    piano = rows(["piano again tonight, the Chopin is coming along", "Piano done before dinner",
                  "so tired. piano with Mrs Okafor again anyway"],
                 TUESDAY_EVENING + timedelta(days=1), timedelta(weeks=1), who="Sam")
    [q] = detect_patterns(piano)
    assert "piano" in q.statement.lower() and "Wednesdays" in q.statement


def test_a_name_said_alone_joins_its_practice_and_daily_words_make_it_daily() -> None:
    said = rows(["my French lesson this morning, past tense", "French on Babbel again, streak 4",
                 "daily French done, finally", "French lesson again, verbs"],
                datetime(2026, 9, 1, 7, 30, tzinfo=UTC), timedelta(days=3, minutes=20))
    [p] = detect_patterns(said)
    assert p.statement == "Maya's French lesson happens almost every day"
    assert len(p.sources) == 4


def test_one_offs_and_things_that_are_no_activity_make_no_habit() -> None:
    """Precision: the same wording as above, but once, twice, on different days, or about the
    weather, gives nothing."""
    weather = rows(["rain again today, ugh", "rain again. of course", "Rain again, third week"],
                   TUESDAY_EVENING, timedelta(weeks=1))
    twice = rows(["piano again tonight", "piano done"], TUESDAY_EVENING, timedelta(weeks=1))
    scattered = rows(["swimming pool this morning", "swimming pool with Jo",
                      "swimming pool again", "at the swimming pool now"],
                     TUESDAY_EVENING, timedelta(days=2, hours=7))
    once = rows(["went to the bowling alley for Leo's birthday", "pottery class was fun",
                 "Sushi again? sure"], TUESDAY_EVENING, timedelta(weeks=1))
    for said in (weather, twice, scattered, once):
        assert detect_patterns(said) == [], said[0][1]
