"""A hybrid logical clock for sync operations (issue 29 item 2). Layer: app. Runs on: any
thread; one ``HybridClock`` per device, guarded by its own lock.

A stamp is (wall milliseconds, counter, device). It stays close to the wall clock, yet never
goes backwards on one device and always sorts after every stamp the device has seen (Kulkarni
et al., "Logical physical clocks", 2014): a device whose clock is ten minutes slow still
stamps a reply after the message it answers. Ties between devices break on the device id, so
the order is total and the same on every device.

A remote stamp far in the future (a device whose clock is set a year ahead) is still
observed: refusing it would leave that device's ops unmerged forever. ``skew_ms`` says how
far ahead it was, so the caller can warn the person.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

# Device ids: what E's keys give a device (hex of a key hash) or a short name in tests.
DEVICE_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")
# Fixed widths, so the text form sorts like the stamp: 15 digits of milliseconds reach the
# year 33658; a counter past 999,999 in one millisecond moves the clock on 1 ms instead.
_WALL_DIGITS = 15
_COUNTER_MAX = 999_999
_STAMP_RE = re.compile(r"(\d{15})\.(\d{6})\.([A-Za-z0-9_-]{1,64})")


class StampError(ValueError):
    """A stamp or device id that is not well formed."""


def check_device(device: object) -> str:
    if not isinstance(device, str) or not DEVICE_RE.fullmatch(device):
        raise StampError("a device id is 1 to 64 letters, digits, '-' or '_'")
    return device


@dataclass(frozen=True, slots=True, order=True)
class Stamp:
    """One point of the total order: compare stamps with ``<``; ``str(stamp)`` sorts alike."""

    wall_ms: int
    counter: int
    device: str

    def __post_init__(self) -> None:
        check_device(self.device)
        if isinstance(self.wall_ms, bool) or not isinstance(self.wall_ms, int) \
                or not 0 <= self.wall_ms < 10 ** _WALL_DIGITS:
            raise StampError("a stamp's wall time is milliseconds since 1970, 0 or more")
        if isinstance(self.counter, bool) or not isinstance(self.counter, int) \
                or not 0 <= self.counter <= _COUNTER_MAX:
            raise StampError(f"a stamp's counter is 0 to {_COUNTER_MAX}")

    def __str__(self) -> str:
        return f"{self.wall_ms:0{_WALL_DIGITS}d}.{self.counter:06d}.{self.device}"

    @classmethod
    def parse(cls, text: object) -> Stamp:
        m = _STAMP_RE.fullmatch(text) if isinstance(text, str) else None
        if m is None:
            raise StampError("a stamp is written '<15-digit ms>.<6-digit counter>.<device>'")
        return cls(int(m.group(1)), int(m.group(2)), m.group(3))


def _wall_ms() -> int:
    return time.time_ns() // 1_000_000


class HybridClock:
    """This device's clock. ``tick()`` stamps a local op; ``observe(stamp)`` takes in a stamp
    read from another device, so that every later ``tick()`` sorts after it."""

    def __init__(self, device: str, wall_ms: Callable[[], int] = _wall_ms,
                 last: Stamp | None = None) -> None:
        self.device = check_device(device)
        self._wall = wall_ms
        self._lock = threading.Lock()
        # Resuming from the last stamp this device wrote (kept in the journal) keeps the clock
        # monotonic across restarts even if the wall clock was set back meanwhile.
        self._l = last.wall_ms if last is not None else 0
        self._c = last.counter if last is not None else 0

    @property
    def last(self) -> Stamp:
        with self._lock:
            return Stamp(self._l, self._c, self.device)

    def _set(self, l_new: int, c_new: int) -> Stamp:
        if c_new > _COUNTER_MAX:  # a million stamps in one ms: borrow the next millisecond
            l_new, c_new = l_new + 1, 0
        self._l, self._c = l_new, c_new
        return Stamp(l_new, c_new, self.device)

    def tick(self) -> Stamp:
        """A stamp for a local event (an op this device writes): after every earlier one."""
        with self._lock:
            pt = self._wall()
            if pt > self._l:
                return self._set(pt, 0)
            return self._set(self._l, self._c + 1)

    def observe(self, remote: Stamp) -> Stamp:
        """Take in a stamp received from another device; returns this device's new stamp."""
        with self._lock:
            pt = self._wall()
            l_new = max(self._l, remote.wall_ms, pt)
            if l_new == self._l and l_new == remote.wall_ms:
                c_new = max(self._c, remote.counter) + 1
            elif l_new == self._l:
                c_new = self._c + 1
            elif l_new == remote.wall_ms:
                c_new = remote.counter + 1
            else:
                c_new = 0
            return self._set(l_new, c_new)

    def skew_ms(self, remote: Stamp) -> int:
        """How far ``remote`` is ahead of this device's wall clock (0 when it is not)."""
        return max(0, remote.wall_ms - self._wall())
