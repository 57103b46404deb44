"""Dated events: a date already past when a new one was said is another occurrence, but the
same date again is a duplicate, and two past dates for one event are compared (issue 15)."""

from datetime import UTC, datetime

from app.services.contradiction import FactView, classify


def _at(day: str) -> float:
    return datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp()


def _deadline(i: int, value: str, said: str, *, change: bool = False) -> FactView:
    return FactView(i, "Kestrel project", "deadline", value, None, _at(said), 0.8,
                    change=change)


def test_the_same_past_date_said_again_is_a_duplicate() -> None:
    a = _deadline(1, "March 3 (2026-03-03)", "2026-02-01")
    b = _deadline(2, "March 3 (2026-03-03)", "2026-11-24")
    assert classify(a, b) == "duplicate"


def test_a_new_date_to_come_after_a_past_one_is_another_occurrence() -> None:
    a = _deadline(1, "March 3 (2026-03-03)", "2026-02-01")
    b = _deadline(2, "April 9 (2027-04-09)", "2026-11-24")
    assert classify(a, b) == "compatible"


def test_two_dates_for_one_event_said_before_either_passed_are_compared() -> None:
    a = _deadline(1, "March 3 (2026-03-03)", "2026-02-01")
    b = _deadline(2, "April 9 (2026-04-09)", "2026-02-10", change=True)
    assert classify(a, b) == "update"


def test_a_past_date_reported_after_another_past_one_is_compared() -> None:
    a = _deadline(1, "March 3 (2026-03-03)", "2026-02-01")
    b = _deadline(2, "April 9 (2026-04-09)", "2026-11-24")
    assert classify(a, b) == "contradiction"
