"""What changed in the sync folder, by ``stat`` only (issue 29: a tick as soon as a file lands,
and idle ticks that skip what did not change; docs/sync.md#the-owners-sync-job). Layer: app
(file metadata in the folder; no content read, no network). Runs on: ``Listings`` on the sync
job's thread (any thread: it holds a lock); ``FolderWatch`` on a daemon thread of its own.

- ``Listings`` is ``os.listdir`` kept by the directory's ``stat`` (mtime in ns, inode, size):
  a directory whose stat is the same as when it was listed has the same names (adding, renaming
  or deleting an entry sets its mtime). A listing is trusted only once its mtime is
  ``SETTLED_S`` in the past (a file system with coarse times, FAT's 2 s, or a second entry
  landing in the same tick of the clock, would otherwise hide a name), and never for longer
  than ``MAX_AGE_S``: at worst a name is seen a minute late, never lost. ``token`` gives the
  caller the same proof for its own caches (``EpochKeeper.acks``: files are written once, so
  the same names are the same contents).
- ``FolderWatch`` polls every ``POLL_S`` the stat of the folder's directories that other
  devices write (``log`` every poll; ``snap``, ``ack``, ``keys``, ``certs``, ``revoked`` every
  ``SLOW_EVERY``-th: the top of each and one directory per device under it, this device's own
  left out, so its own writes wake nothing) and calls ``changed`` once when one moved, then
  waits ``QUIET_S`` before it looks again (a sync tool landing many files makes a few ticks,
  not one per file). Two or three ``stat`` calls a poll for two devices; a top directory is
  listed again only when its own stat moved (a new device), never a log. Linux inotify would save the polls but needs ctypes and a fallback everywhere else
  (macOS, Windows, network mounts where it does not fire); the poll is the same code on all.

Nothing here reads a file or logs a name.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Hashable
from pathlib import Path

log = logging.getLogger(__name__)

SETTLED_S = 2.0     # a listing is kept once its directory's mtime is this far in the past
MAX_AGE_S = 60.0    # and listed again at least this often whatever its stat says
# FolderWatch: how often the directories' stats are read. Measured on the 2-core dev machine
# (two watches over a two-device folder, 10 s, load 14): 0.25 s cost 76 ms of CPU a minute for
# the two, 0.5 s 26 (the thread's wake-ups alone: 25 at 0.25 s); 0.5 s adds 0.125 s to the mean
# wait for a file, well under the 2 s interval it replaces.
POLL_S = 0.5
QUIET_S = 0.25      # and how long it waits after calling ``changed``
WATCHED = ("log", "snap", "ack", "keys", "certs", "revoked")  # WATCHED[0] every poll,
SLOW_EVERY = 4  # the others every SLOW_EVERY-th (a new key or acknowledgement is not urgent)


def _stat_key(st: os.stat_result) -> tuple[int, int, int]:
    return (st.st_mtime_ns, st.st_ino, st.st_size)


class Listings:
    """``names(path)``: the sorted entries of a directory (empty when it does not exist),
    listed again only when its stat changed; see the module's note. One per process
    (``LISTINGS``): the cache is by path, whoever reads it."""

    def __init__(self, clock: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._clock, self._monotonic = clock, monotonic
        self._lock = threading.Lock()
        # path -> (stat key, listed at (monotonic), names)
        self._seen: dict[str, tuple[tuple[int, int, int], float, tuple[str, ...]]] = {}
        self.listed = 0  # real listdir calls (tests, the bench)

    def names(self, path: Path) -> tuple[str, ...]:
        return self._look(path)[0]

    def token(self, path: Path) -> Hashable | None:
        """A value equal from one call to the next only while the directory's names are the
        same and the proof is settled; None when it is not (the caller must not cache)."""
        return self._look(path)[1]

    def _look(self, path: Path) -> tuple[tuple[str, ...], Hashable | None]:
        where = os.fspath(path)
        try:
            key = _stat_key(os.stat(where))
        except (FileNotFoundError, NotADirectoryError):
            with self._lock:
                self._seen.pop(where, None)
            return (), ("absent",)
        now = self._monotonic()
        with self._lock:
            hit = self._seen.get(where)
        if hit is not None and hit[0] == key and now - hit[1] < MAX_AGE_S:
            return hit[2], (key, hit[1])
        try:
            names = tuple(sorted(os.listdir(where)))
        except (FileNotFoundError, NotADirectoryError):
            return (), None
        self.listed += 1
        settled = self._clock() - key[0] / 1e9 >= SETTLED_S
        with self._lock:
            if settled:
                self._seen[where] = (key, now, names)
            else:
                self._seen.pop(where, None)
        return names, ((key, now) if settled else None)


LISTINGS = Listings()


class FolderStamp:
    """The stats of the directories other devices write under ``base`` (``<folder>/v1``),
    its own device's left out: what ``FolderWatch`` compares from one poll to the next. A top
    directory's entries are listed again only when its own stat moved (a new device's
    directory), so a poll is a dozen ``stat`` calls and nothing else."""

    def __init__(self, base: Path, me: str, tops: tuple[str, ...] = WATCHED) -> None:
        self.me = me
        self._tops = [os.path.join(os.fspath(base), top) for top in tops]
        self._subs: dict[str, tuple[tuple[int, int, int], list[str]]] = {}

    def _under(self, top: str, key: tuple[int, int, int]) -> list[str]:
        hit = self._subs.get(top)
        if hit is not None and hit[0] == key:
            return hit[1]
        subs: list[str] = []
        with os.scandir(top) as entries:
            for e in entries:
                if e.name != self.me and not e.name.startswith("."):
                    subs.append(e.path)
        subs.sort()
        self._subs[top] = (key, subs)
        return subs

    def read(self) -> tuple[tuple[int, int, int] | None, ...]:
        out: list[tuple[int, int, int] | None] = []
        for top in self._tops:
            try:
                key = _stat_key(os.stat(top))
                subs = self._under(top, key)
            except (FileNotFoundError, NotADirectoryError):
                out.append(None)
                continue
            out.append(key)
            for sub in subs:
                try:
                    out.append(_stat_key(os.stat(sub)))
                except OSError:
                    out.append(None)
        return tuple(out)


class FolderWatch:
    """Calls ``changed`` (on its own thread) soon after another device's file lands in
    ``base``; see the module's note. ``start`` once, ``stop`` any time (idempotent).
    ``fired`` counts the calls (tests assert on it, not on a timing)."""

    def __init__(self, base: Path, me: str, changed: Callable[[], None], *,
                 poll: float = POLL_S, quiet: float = QUIET_S) -> None:
        self.base, self.me, self._changed = base, me, changed
        self._poll, self._quiet = poll, quiet
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.fired = 0

    def start(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="kept-sync-watch", daemon=True)
        self._thread.start()

    def stop(self, wait: float = 1.0) -> None:
        self._stop.set()
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join(wait)

    @property
    def running(self) -> bool:
        t = self._thread
        return t is not None and t.is_alive() and not self._stop.is_set()

    def _run(self) -> None:
        try:
            fast = FolderStamp(self.base, self.me, WATCHED[:1])
            slow = FolderStamp(self.base, self.me, WATCHED[1:])
            last = [fast.read(), slow.read()]
            polls = 0
            while not self._stop.wait(self._poll):
                polls += 1
                now = [fast.read(), slow.read() if polls % SLOW_EVERY == 0 else last[1]]
                if now == last:
                    continue
                last = now
                self.fired += 1
                try:
                    self._changed()
                except Exception as exc:  # a watcher must not die of its listener
                    log.warning("sync watch: listener failed (%s)", type(exc).__name__)
                self._stop.wait(self._quiet)
        except Exception as exc:  # the interval tick still runs: sync goes on without it
            log.warning("sync watch stopped (%s)", type(exc).__name__)
