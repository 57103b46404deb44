"""Who is at the other end of an owner connection, and what it has proved: peer credentials,
the terminal session a peer runs in, strict mode's session tickets, and the growing delay after
wrong passwords. Layer: app (no Qt, no storage). Runs on: the owner's connection threads; every
class here is thread-safe.

Threat (docs/security.md#the-owner-socket): any process of the vault's OS user can connect to
``kept.sock``, an assistant with a shell included. Identity therefore comes from the connection
(``SO_PEERCRED``, an assistant's key at ``hello``, a password proved on that connection), never
from a request field. Strict mode adds, like sudo's timestamp: the person's reads and writes
need the password, once per terminal session for ``ticket_minutes``.
"""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

_UCRED = struct.Struct("3i")  # pid, uid, gid


@dataclass(frozen=True, slots=True)
class Terminal:
    """A peer's terminal session: its session id, controlling terminal and the session
    leader's start time (so a reused session id is another session). Only a process with a
    controlling terminal has one; an assistant's tool process without a terminal has none
    and can never hold a ticket."""
    sid: int
    tty: int
    leader_start: int


@dataclass(frozen=True, slots=True)
class Peer:
    pid: int | None
    uid: int | None
    terminal: Terminal | None


def _stat_fields(pid: int) -> list[str] | None:
    """``/proc/PID/stat`` after the command name (which may hold spaces and parentheses)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode("ascii", "replace")
    except OSError:
        return None
    return raw[raw.rfind(")") + 2:].split()


def terminal_of(pid: int) -> Terminal | None:
    """The terminal session of ``pid`` (Linux ``/proc``), None without a controlling terminal
    or where ``/proc`` is missing."""
    fields = _stat_fields(pid)
    # After the name: state ppid pgrp session tty_nr tpgid ... starttime is field 22 (1-based
    # over the whole line), index 19 here.
    if fields is None or len(fields) < 20:
        return None
    sid, tty = int(fields[3]), int(fields[4])
    if tty == 0 or sid <= 0:
        return None
    leader = _stat_fields(sid)
    if leader is None or len(leader) < 20:
        return None
    return Terminal(sid, tty, int(leader[19]))


def peer_of(conn: socket.socket) -> Peer:
    """The process at the other end (Linux ``SO_PEERCRED``); unknown fields are None."""
    opt = getattr(socket, "SO_PEERCRED", None)
    if opt is None:
        return Peer(None, None, None)
    pid, uid, _gid = _UCRED.unpack(conn.getsockopt(socket.SOL_SOCKET, opt, _UCRED.size))
    return Peer(int(pid), int(uid), terminal_of(int(pid)) if pid > 0 else None)


class Tickets:
    """Strict mode's session tickets: the password proved once in a terminal session serves
    every connection from that session for ``minutes()`` (sudo's ``timestamp_type=tty``).
    Held in the owner's memory only; lock drops them all."""

    def __init__(self, minutes: Callable[[], float],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._minutes, self._clock = minutes, clock
        self._until: dict[Terminal, float] = {}
        self._guard = threading.Lock()

    def grant(self, terminal: Terminal | None) -> bool:
        """A ticket for ``terminal``; False (nothing granted) for a peer with no terminal."""
        if terminal is None:
            return False
        with self._guard:
            self._until[terminal] = self._clock() + 60.0 * self._minutes()
        return True

    def valid(self, terminal: Terminal | None) -> bool:
        if terminal is None:
            return False
        with self._guard:
            until = self._until.get(terminal)
            if until is None:
                return False
            if self._clock() >= until:
                del self._until[terminal]
                return False
            return True

    def drop(self, terminal: Terminal | None) -> None:
        if terminal is not None:
            with self._guard:
                self._until.pop(terminal, None)

    def clear(self) -> None:
        with self._guard:
            self._until.clear()


class PasswordThrottle:
    """A growing delay before each password check that follows wrong ones: per connection
    (0 s for the first try, then ``base`` doubling to ``cap``), and process-wide (after
    ``free`` wrong passwords within ``window`` seconds from any connections, the same curve),
    whichever is longer. A right password clears both. The delay is served before the
    derive, outside the one-at-a-time KDF gate, so it costs no memory and blocks no one else."""

    def __init__(self, *, base: float = 0.5, cap: float = 10.0, free: int = 3,
                 window: float = 600.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.base, self.cap, self.free, self.window = base, cap, free, window
        self._clock = clock
        self._failures: list[float] = []
        self._guard = threading.Lock()

    def _curve(self, n: int) -> float:
        return 0.0 if n <= 0 else min(self.cap, self.base * 2 ** (n - 1))

    def delay(self, conn_failures: int) -> float:
        now = self._clock()
        with self._guard:
            self._failures = [t for t in self._failures if now - t < self.window]
            recent = len(self._failures)
        return max(self._curve(conn_failures), self._curve(recent - self.free + 1))

    def failed(self) -> None:
        with self._guard:
            self._failures.append(self._clock())

    def succeeded(self) -> None:
        with self._guard:
            self._failures.clear()


def same_user(peer: Peer) -> bool:
    return peer.uid is None or peer.uid == os.getuid()
