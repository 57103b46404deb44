"""An import's progress in words (issue 28): the rate over recent progress, the time left, and
``kept import``'s progress line (one updating line on a terminal, a plain line at most every
10 s otherwise). A fake clock drives them; nothing here sleeps."""

from __future__ import annotations

import io

import pytest

from app import eta
from app.cli import common


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_no_estimate_until_the_rate_settles_then_rate_and_time_left() -> None:
    clock = Clock()
    rate = eta.Rate(clock)
    assert rate.update(0, 1000).per_s is None
    clock.t += 1.0
    early = rate.update(100, 1000)
    assert early.per_s is None and early.left_s is None  # one second: too early to guess
    clock.t += 2.0
    e = rate.update(300, 1000)
    assert e.per_s == pytest.approx(100.0)  # 300 turns in 3 s
    assert e.left_s == pytest.approx(7.0)
    assert eta.progress_words(e, "turns") == "300 of 1,000 turns · 100 turns/s · about 5 s left"


def test_the_rate_follows_recent_progress_not_the_average_since_the_start() -> None:
    clock = Clock()
    rate = eta.Rate(clock)
    rate.update(0, 100_000)
    for i in range(1, 61):  # a minute at 10 turns/s (the model loading, a busy machine)
        clock.t += 1.0
        rate.update(10 * i, 100_000)
    fast_from = 600
    for i in range(1, 61):  # then a minute at 200 turns/s
        clock.t += 1.0
        e = rate.update(fast_from + 200 * i, 100_000)
    assert e.per_s is not None and 190 <= e.per_s <= 210, e.per_s  # not the ~105 average
    assert e.left_s == pytest.approx((100_000 - e.done) / e.per_s)


def test_a_stall_lowers_the_rate() -> None:
    clock = Clock()
    rate = eta.Rate(clock)
    rate.update(0, 1000)
    clock.t += 4.0
    before = rate.update(400, 1000).per_s
    clock.t += 4.0  # nothing committed for 4 s
    after = rate.update(400, 1000).per_s
    assert before is not None and after is not None and after < before


@pytest.mark.parametrize(("seconds", "words"), [
    (3, "a few seconds"), (42, "about 40 s"), (170, "about 3 min"), (3540, "about 59 min"),
    (4200, "about 1 h 10 min"), (7200, "about 2 h")])
def test_durations_in_words(seconds: float, words: str) -> None:
    assert eta.duration_words(seconds) == words


def test_finished_work_says_no_time_left() -> None:
    assert eta.progress_words(eta.Estimate(50, 50, 25.0, 0.0), "turns") == \
        "50 of 50 turns · 25 turns/s"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_kept_import_on_a_terminal_updates_one_line() -> None:
    clock, out = Clock(), Terminal()
    show = common.estimated_progress("Importing", "turns", stream=out, clock=clock)
    for done in (256, 512, 768, 1024):
        clock.t += 1.5
        show(done, 1024)
    text = out.getvalue()
    assert text.count("\r") == 4 and text.count("\n") == 1 and text.endswith("\n")
    assert "Importing 256 of 1,024 turns" in text  # no rate yet after 1.5 s
    assert "Importing 1,024 of 1,024 turns · 171 turns/s\n" in text


def test_kept_import_without_a_terminal_writes_a_plain_line_every_10_s() -> None:
    clock, out = Clock(), io.StringIO()
    show = common.estimated_progress("Importing", "turns", stream=out, clock=clock)
    for done in range(100, 2100, 100):  # 20 reports, 1 s apart, 100 turns/s
        clock.t += 1.0
        show(done, 5000)
    lines = out.getvalue().splitlines()
    assert lines == ["Importing 1,000 of 5,000 turns · 100 turns/s · about 40 s left",
                     "Importing 2,000 of 5,000 turns · 100 turns/s · about 30 s left"]
    assert "\r" not in out.getvalue()


def test_a_short_import_without_a_terminal_writes_nothing() -> None:
    """A script's stderr then holds at most its one error line (tests/app/cli)."""
    clock, out = Clock(), io.StringIO()
    show = common.estimated_progress("Importing", "turns", stream=out, clock=clock)
    for done in (256, 300):
        clock.t += 0.5
        show(done, 300)
    assert out.getvalue() == ""
