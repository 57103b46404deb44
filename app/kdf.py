"""How password derivations share a process (docs/security.md#26-one-password-derive-at-a-time).
Layer: app (pure: threads only). Runs on: any thread. ``storage.crypto.derive_kek`` takes its turn
here; the owner socket marks its elevations ``remote()``.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import threading
import time
from collections.abc import Iterator

from app.errors import PasswordBusy, VaultLocked


class KdfGate:
    """One Argon2id derive at a time in this process
    (docs/security.md#26-one-password-derive-at-a-time).

    Why: ``cryptography`` (>= 44, OpenSSL >= 3.2) sets OpenSSL's thread limit to the core count
    and derives with as many threads as lanes; two derives with 4 lanes in two threads each
    wait for threads the other holds and never return (futex wait, 0 % CPU; reproduced on this
    2-core machine with cryptography 50.0.2, see docs/upstream-argon2-threads.md). Serialised,
    each derive takes its usual second and frees its memory before the next starts.

    Derives made for a remote client (``remote()``, the owner socket's elevations) wait behind
    every local one (the person's own unlock dialog, a password change in the window), and at
    most ``max_remote`` of them are queued or running: one more is refused at once with
    ``PasswordBusy``, and one that waits longer than ``remote_wait_s`` gets it too. Local
    derives always wait their turn (they are the person at the keyboard)."""

    def __init__(self, max_remote: int = 4, remote_wait_s: float = 30.0) -> None:
        self.max_remote, self.remote_wait_s = max_remote, remote_wait_s
        self._cond = threading.Condition()
        self._queue: list[tuple[int, int]] = []  # heap of (0 local / 1 remote, arrival)
        self._arrivals = itertools.count()
        self._running = False
        self._remote = 0  # remote derives queued or running
        self._local = threading.local()
        self.derives = 0  # how many ran (for tests and benches)

    @contextlib.contextmanager
    def remote(self, cancel: threading.Event | None = None) -> Iterator[None]:
        """Derives in this block on this thread are a remote client's; one still waiting
        when ``cancel`` is set (the owner stopped serving) gives up with ``VaultLocked``."""
        before = getattr(self._local, "remote", None)
        self._local.remote = cancel or threading.Event()
        try:
            yield
        finally:
            self._local.remote = before

    @property
    def waiting(self) -> int:
        with self._cond:
            return len(self._queue)

    @contextlib.contextmanager
    def turn(self) -> Iterator[None]:
        cancel: threading.Event | None = getattr(self._local, "remote", None)
        remote = cancel is not None
        with self._cond:
            if remote:
                if self._remote >= self.max_remote:
                    raise PasswordBusy()
                self._remote += 1
            me = (1 if remote else 0, next(self._arrivals))
            heapq.heappush(self._queue, me)
            deadline = time.monotonic() + self.remote_wait_s if remote else None
            try:
                while self._running or self._queue[0] != me:
                    if cancel is not None and cancel.is_set():
                        raise VaultLocked()
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        raise PasswordBusy()
                    self._cond.wait(None if left is None else min(left, 0.25))
            except BaseException:
                self._queue.remove(me)
                heapq.heapify(self._queue)
                if remote:
                    self._remote -= 1
                self._cond.notify_all()
                raise
            heapq.heappop(self._queue)
            self._running = True
        try:
            yield
        finally:
            with self._cond:
                self._running = False
                self.derives += 1
                if remote:
                    self._remote -= 1
                self._cond.notify_all()


KDF_GATE = KdfGate()
