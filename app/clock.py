"""Injected clocks: real time for the app, fixed or stepped time for tests and benchmarks."""

from __future__ import annotations

import time
from datetime import UTC, datetime, tzinfo
from typing import Protocol, overload


class Clock(Protocol):
    def now(self) -> float: ...


class SystemClock:
    def now(self) -> float:
        return time.time()


class FixedClock:
    def __init__(self, at: float) -> None:
        self.at = at

    def now(self) -> float:
        return self.at

    def advance(self, seconds: float) -> None:
        self.at += seconds


def parse_iso(text: str) -> float:
    """ISO 8601 to UTC epoch seconds; a naive time is taken as UTC."""
    value = text.strip()
    if value.endswith("Z"):
        value = value[:-1] + "+00:00"
    dt = datetime.fromisoformat(value)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


@overload
def to_iso(ts: float) -> str: ...
@overload
def to_iso(ts: None) -> None: ...
@overload
def to_iso(ts: float | None) -> str | None: ...
def to_iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


def local_time(ts: float, tz: tzinfo | None = None) -> datetime:
    """A moment on the person's clock (``tz``, default this computer's zone), aware. A time
    the zone cannot hold (1 January of year 1 west of Greenwich is in year 0) stays in UTC."""
    try:
        return datetime.fromtimestamp(ts, tz).astimezone(tz) if tz is not None \
            else datetime.fromtimestamp(ts).astimezone()
    except (OverflowError, OSError, ValueError):
        return datetime.fromtimestamp(ts, UTC)
