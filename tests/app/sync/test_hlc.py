"""The hybrid logical clock (issue 29 item 2): monotonic on a device, causal across devices,
tolerant of a device whose clock is ten minutes off."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.sync.hlc import HybridClock, Stamp, StampError

TEN_MINUTES = 10 * 60 * 1000
T0 = 1_764_151_200_000  # 2025-11-26 10:00 UTC, in ms


class Wall:
    """A settable wall clock in ms (the person's computer clock, skew included)."""

    def __init__(self, ms: int) -> None:
        self.ms = ms

    def __call__(self) -> int:
        return self.ms


def test_ticks_never_go_back_even_when_the_wall_clock_does() -> None:
    wall = Wall(T0)
    clock = HybridClock("laptop", wall)
    first = clock.tick()
    wall.ms -= TEN_MINUTES  # the person sets the clock back (or NTP steps it)
    second, third = clock.tick(), clock.tick()
    assert first < second < third
    assert second.wall_ms == first.wall_ms and second.counter == first.counter + 1
    wall.ms = T0 + 5
    assert clock.tick() == Stamp(T0 + 5, 0, "laptop")  # back on the wall clock once it passes


def test_a_reply_from_a_slow_device_sorts_after_what_it_answers() -> None:
    fast, slow = Wall(T0 + TEN_MINUTES), Wall(T0)
    a, b = HybridClock("a", fast), HybridClock("b", slow)
    sent = a.tick()
    assert b.skew_ms(sent) == TEN_MINUTES
    b.observe(sent)
    reply = b.tick()
    assert reply > sent
    assert reply.wall_ms == sent.wall_ms  # carried forward, not the slow wall clock
    slow.ms += 1
    assert b.tick() > reply


def test_a_device_ten_minutes_slow_catches_back_up_to_its_wall_clock() -> None:
    wall = Wall(T0 - TEN_MINUTES)
    clock = HybridClock("b", wall)
    clock.observe(Stamp(T0, 7, "a"))
    assert clock.tick() == Stamp(T0, 9, "b")
    wall.ms = T0 + 1  # its own wall clock now passes what it saw
    assert clock.tick() == Stamp(T0 + 1, 0, "b")


def test_observe_takes_the_larger_counter_when_walls_are_equal() -> None:
    clock = HybridClock("b", Wall(T0))
    clock.tick()  # (T0, 0)
    assert clock.observe(Stamp(T0, 41, "a")) == Stamp(T0, 42, "b")
    assert clock.observe(Stamp(T0 - 1, 99, "a")) == Stamp(T0, 43, "b")


def test_a_full_counter_borrows_the_next_millisecond() -> None:
    clock = HybridClock("a", Wall(T0), last=Stamp(T0, 999_999, "a"))
    assert clock.tick() == Stamp(T0 + 1, 0, "a")


def test_a_restarted_clock_resumes_after_its_last_stamp() -> None:
    clock = HybridClock("a", Wall(T0 - TEN_MINUTES), last=Stamp(T0, 3, "a"))
    assert clock.tick() == Stamp(T0, 4, "a")


def test_the_text_form_sorts_like_the_stamps_and_parses_back() -> None:
    stamps = [Stamp(T0, 2, "b"), Stamp(T0, 10, "a"), Stamp(T0 + 1, 0, "a"), Stamp(5, 0, "z"),
              Stamp(T0, 2, "a")]
    assert sorted(stamps) == sorted(stamps, key=str)
    assert [Stamp.parse(str(s)) for s in stamps] == stamps


@pytest.mark.parametrize("bad", ["", "1.2.a", "000000000000001.000001.", "000000000000001.000001.a b",
                                 "00000000000001x.000001.a", None, 17])
def test_a_malformed_stamp_is_refused(bad: object) -> None:
    with pytest.raises(StampError):
        Stamp.parse(bad)


def test_a_bad_device_id_is_refused() -> None:
    with pytest.raises(StampError):
        HybridClock("two words")
    with pytest.raises(StampError):
        Stamp(T0, -1, "a")


# Three devices pass messages in a random order; "b" runs ten minutes fast or slow.
steps = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2), st.integers(0, 3_000),
                           st.booleans()), min_size=1, max_size=60)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps, st.sampled_from([-TEN_MINUTES, TEN_MINUTES]))
def test_order_stays_causal_with_ten_minutes_of_skew_on_one_device(
        plan: list[tuple[int, int, int, bool]], skew: int) -> None:
    true_ms = T0
    offsets = [0, skew, 0]
    walls = [Wall(T0 + o) for o in offsets]
    clocks = [HybridClock(n, w) for n, w in zip("abc", walls, strict=True)]
    last: list[Stamp | None] = [None, None, None]
    for sender, receiver, advance, deliver in plan:
        true_ms += advance
        for w, o in zip(walls, offsets, strict=True):
            w.ms = true_ms + o
        sent = clocks[sender].tick()
        prev = last[sender]
        assert prev is None or sent > prev  # monotonic on one device
        last[sender] = sent
        if deliver and receiver != sender:
            got = clocks[receiver].observe(sent)
            reply = clocks[receiver].tick()
            assert sent < got < reply  # whatever the skew: an answer sorts after its question
            last[receiver] = reply
        # A stamp never runs ahead of the fastest wall clock (bounded drift).
        assert sent.wall_ms <= true_ms + max(offsets)
