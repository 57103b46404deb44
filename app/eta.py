"""How far long work has got and how long it still needs, in plain words (issue 28: an import's
progress and time estimate in the window and in ``kept import``). Layer: app. Pure: no I/O; the
clock is injected, so the window's poll (GUI thread) and the CLI's callback (its main thread)
share one estimate and tests drive it with a fake clock.

The rate is measured over the last ``WINDOW_S`` seconds, not since the start: an import's first
seconds include loading the model and the first batch's embedding with nothing committed yet,
and the machine's load changes while a 20-minute import runs. No estimate is given until
``SETTLE_S`` seconds and some progress have passed (a guess from one batch swings wildly).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

WINDOW_S = 30.0  # the rate is over this many seconds of recent progress
SETTLE_S = 2.0  # no estimate before this much time with progress


@dataclass(frozen=True, slots=True)
class Estimate:
    """``per_s`` and ``left_s`` are None until the rate has settled."""
    done: int
    total: int
    per_s: float | None
    left_s: float | None


class Rate:
    """Feed it (done, total) as work reports progress; it answers with an ``Estimate``.
    Not thread-safe: one caller (the thread that polls or prints)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.started = self._start = clock()
        self._seen: deque[tuple[float, int]] = deque()

    def update(self, done: int, total: int) -> Estimate:
        now = self._clock()
        seen = self._seen
        if not seen or done != seen[-1][1]:
            seen.append((now, done))
        while len(seen) > 2 and now - seen[1][0] >= WINDOW_S:
            seen.popleft()  # keep one point at or beyond the window's start
        t0, d0 = seen[0]
        if len(seen) < 2 or now - self._start < SETTLE_S or done <= d0 or now <= t0:
            return Estimate(done, total, None, None)
        per_s = (done - d0) / (now - t0)
        left = max(total - done, 0) / per_s
        return Estimate(done, total, per_s, left)


def duration_words(seconds: float) -> str:
    """"about 40 s", "about 3 min", "about 1 h 10 min": rounded as a person would say it."""
    s = max(0, round(seconds))
    if s < 60:
        return f"about {max(5, round(s / 5) * 5)} s" if s >= 5 else "a few seconds"
    minutes = round(s / 60)
    if minutes < 60:
        return f"about {minutes} min"
    h, m = divmod(minutes, 60)
    return f"about {h} h" + (f" {m} min" if m else "")


def progress_words(e: Estimate, unit: str) -> str:
    """"12,345 of 160,040 turns · 182 turns/s · about 14 min left" (the rate and the time left
    once they have settled)."""
    text = f"{e.done:,} of {e.total:,} {unit}"
    if e.per_s is not None and e.left_s is not None:
        text += f" · {e.per_s:,.0f} {unit}/s"
        if e.done < e.total:
            text += f" · {duration_words(e.left_s)} left"
    return text
