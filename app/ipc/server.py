"""The owner service: whichever process unlocked the vault serves ``VaultAPI`` on a Unix
socket in the vault folder. Layer: app (no Qt, no storage). Runs on: its own threads (one
accepting, one per connection); it calls the in-process ``Vault``, which is thread-safe.

Security (docs/security.md#the-owner-socket): the socket is ``<vault>/kept.sock``, created 0600
(umask) inside the 0700 folder, and every connection's peer credentials are checked
(``SO_PEERCRED``): only the same user. Identity belongs to the connection, never to a request:

- an **assistant's** connection (``hello`` with its key) reads global memories and its own and
  writes only its own (``AgentSession``);
- a **person's** connection (no ``hello``) reads every scope and writes as the person: into
  global memory, never "from" an assistant, unless it proved the password (``elevate``), which
  also unlocks the person's decisions (forget, resolve, pairing...);
- in **strict mode** (``owner.strict``, or ``kept serve --strict``) a person's connection does
  nothing but prove the password until it has, or its terminal session holds a ticket
  (``guard.Tickets``), so a process of the same user (an assistant with a shell) reads nothing
  without the person.

Limits: ``MAX_FRAME`` per message, a token bucket per connection, a read deadline per frame and
an idle timeout per connection, a cap on connections that evicts the stalest idle one before it
refuses a newcomer, one password derive at a time in the process (``app.kdf.KDF_GATE``, with a
cap on elevations in flight) and a growing delay after wrong passwords (``PasswordThrottle``).
A malformed or oversized request gets an error reply and calls nothing. Locking: call
``stop()`` before ``vault.lock()`` (``lock_vault`` does both in that order), so no request
reaches a vault that is being locked.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from app.agent_scope import AgentSession, check_wrapped
from app.api import VaultAPI
from app.errors import (
    AgentNotPaired,
    AppError,
    PasswordBusy,
    PasswordNeeded,
    RemoteRefused,
    VaultLocked,
    WrongKey,
)
from app.ipc import protocol as p
from app.ipc.guard import PasswordThrottle, Peer, Terminal, Tickets, peer_of, same_user
from app.kdf import KDF_GATE

log = logging.getLogger(__name__)

LOCKED_MESSAGE = ("Kept is locked: open Kept to unlock it (its window, or `kept unlock` in a "
                  "terminal).")
STRICT_MESSAGE = ("Kept is in strict mode: prove your password first (`kept` asks for it once "
                  "per terminal session).")

# Deadlines (seconds): the rest of a frame once its first byte came; the quiet time between
# requests before the owner closes a connection (clients reconnect on their next call).
FRAME_DEADLINE_S = 5.0
IDLE_TIMEOUT_S = 600.0
SWITCH_INTERVAL_S = 0.0005  # see start()
# Password checks: at most this many elevations queued, delayed or deriving at once, process
# wide; one more is answered "busy" at once.
MAX_ELEVATIONS = 4


def peer_uid(conn: socket.socket) -> int | None:
    """The uid of the process at the other end (Linux ``SO_PEERCRED``), None if unknown."""
    return peer_of(conn).uid


class _Bucket:
    """``rate`` requests a second on average, ``burst`` at once."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate, self.burst = rate, float(burst)
        self.tokens = float(burst)
        self.at = time.monotonic()

    def take(self) -> bool:
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


@dataclass
class Scope:
    """Per connection: the assistant its ``hello`` proved (then every call goes through its
    ``AgentSession``), or the person's own tools (``person`` once ``elevate`` proved the
    password); the peer it came from, and its wrong passwords so far."""
    agent: str | None = None
    key: str = ""
    session: AgentSession | None = None
    person: bool = False
    terminal: Terminal | None = None
    failures: int = 0


@dataclass
class _Conn:
    """The owner's view of one connection, for eviction: when it last finished a frame,
    whether a frame is half read, whether a request is running."""
    sock: socket.socket
    opened: float
    last: float
    frames: int = 0
    reading: bool = False
    busy: bool = False
    scope: Scope = field(default_factory=Scope)


class _Closed(Exception):
    """The connection is to end (a deadline passed, or it was evicted)."""


class OwnerServer:
    """Serve ``vault`` on ``socket_path(vault.folder)`` until ``stop()``.

    ``strict``: True or False fixes strict mode (``kept serve --strict``); None follows the
    vault's ``owner.strict`` setting, read at most once a second."""

    def __init__(self, vault: VaultAPI, *, path: Path | None = None, rate: float = 500.0,
                 burst: int = 1000, max_connections: int = 32,
                 on_request: Callable[[], None] | None = None, strict: bool | None = None,
                 frame_deadline: float = FRAME_DEADLINE_S, idle_timeout: float = IDLE_TIMEOUT_S,
                 max_elevations: int = MAX_ELEVATIONS,
                 throttle: PasswordThrottle | None = None) -> None:
        check_wrapped()  # every agent operation fixes its scope in AgentSession
        self.vault = vault
        self.path = path or p.socket_path(vault.folder)
        self.rate, self.burst, self.max_connections = rate, burst, max_connections
        self.on_request = on_request
        self.frame_deadline, self.idle_timeout = frame_deadline, idle_timeout
        self.max_elevations = max_elevations
        self.throttle = throttle or PasswordThrottle()
        self.tickets = Tickets(self._ticket_minutes)
        self.last_request = time.monotonic()
        self._strict = strict
        self._strict_cache: tuple[float, bool] = (0.0, False)
        self._sock: socket.socket | None = None
        self._conns: dict[socket.socket, _Conn] = {}
        self._elevations = 0
        self._guard = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._inode: int | None = None  # of the socket file this server bound
        # ``kept serve --idle-lock`` (app/standby.py): opens a vault that locked itself when
        # idle, with the person's password (``unlock``), or, for an assistant's call, from
        # this device's keychain when the person opted in (``wake``). None: locked stays locked.
        self.unlocker: Callable[[str], bool] | None = None
        self.wake: Callable[[str, str], None] | None = None

    # --- life --------------------------------------------------------------------------
    def start(self) -> None:
        # A request's thread waits for the GIL behind whatever else runs in the owner (the
        # reads log, consolidation, the lexicon build) for up to the switch interval, 5 ms by
        # default: most of an assistant's slowest calls (issue 26, item 9).
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        self._remove_stale()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)  # the file is born 0600: no window where others could connect
        try:
            with p.address(self.path) as where:
                sock.bind(where)
        except OSError:
            sock.close()
            raise
        finally:
            os.umask(old)
        os.chmod(self.path, 0o600)
        self._inode = os.stat(self.path).st_ino
        sock.listen(128)
        self._sock = sock
        self._thread = threading.Thread(target=self._accept_loop, name="kept-ipc-accept",
                                        daemon=True)
        self._thread.start()
        log.info("serving on %s", self.path)

    def _remove_stale(self) -> None:
        """A socket file left by an owner that died. Only an owner calls this, and only one
        process can own the vault (the folder lock), so whatever is there is stale."""
        with contextlib.suppress(FileNotFoundError):
            if self.path.is_socket() or self.path.exists():
                self.path.unlink()

    @property
    def serving(self) -> bool:
        return self._sock is not None and not self._stopping.is_set()

    @property
    def connections(self) -> int:
        with self._guard:
            return len(self._conns)

    def stop(self) -> None:
        """Close the listening socket, remove the file, end every connection, drop every
        ticket. Idempotent."""
        self._stopping.set()
        self.tickets.clear()
        sock, self._sock = self._sock, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
            if self.still_bound():  # never the socket of an owner that took the vault over
                with contextlib.suppress(FileNotFoundError):
                    self.path.unlink()
        with self._guard:
            conns = list(self._conns)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2.0)

    def still_bound(self) -> bool:
        """The socket file is still the one this server bound: another owner (the window,
        opening a vault that ``kept serve`` had locked) replaces it when it takes over."""
        try:
            return self._inode is not None and os.stat(self.path).st_ino == self._inode
        except OSError:
            return False

    def lock_vault(self) -> None:
        """Stop serving first, then lock: clients see the socket go, never a half-locked
        vault."""
        self.stop()
        self.vault.lock()

    # --- strict mode -------------------------------------------------------------------------
    @property
    def strict(self) -> bool:
        if self._strict is not None:
            return self._strict
        at, value = self._strict_cache
        now = time.monotonic()
        if now - at >= 1.0:
            try:
                value = bool(self.vault.setting("owner.strict"))
            except AppError:
                value = True  # cannot tell (locking): the safe answer
            self._strict_cache = (now, value)
        return value

    def _ticket_minutes(self) -> float:
        try:
            minutes = self.vault.setting("owner.ticket_minutes")
        except AppError:
            minutes = None
        return float(minutes) if isinstance(minutes, int | float) else 5.0

    # --- connections -------------------------------------------------------------------------
    def _accept_loop(self) -> None:
        while not self._stopping.is_set():
            sock = self._sock
            if sock is None:
                return
            try:
                conn, _ = sock.accept()
            except OSError:
                return  # closed by stop()
            threading.Thread(target=self._serve_conn, args=(conn,), name="kept-ipc-conn",
                             daemon=True).start()

    def _admit(self, conn: socket.socket, peer: Peer) -> _Conn | None:
        """A slot for ``conn``: when all are taken, the connection that has been quiet longest
        and is not running a request gives its slot up (a half-sent frame first, then one that
        never finished a frame, then the longest idle), so stalled clients never lock out new
        ones. None when every slot is running a request."""
        now = time.monotonic()
        victim: _Conn | None = None
        with self._guard:
            if self._stopping.is_set():
                return None
            if len(self._conns) >= self.max_connections:
                idle = [c for c in self._conns.values() if not c.busy]
                if not idle:
                    return None
                victim = min(idle, key=lambda c: (not c.reading, c.frames > 0, c.last))
                del self._conns[victim.sock]
            state = _Conn(conn, now, now, scope=Scope(terminal=peer.terminal))
            self._conns[conn] = state
        if victim is not None:
            log.info("connection slots full: closed the stalest connection")
            self._goodbye(victim.sock, "Kept had too many connections and closed this idle "
                                       "one; connect again.")
        return state

    def _goodbye(self, conn: socket.socket, message: str) -> None:
        """Tell a client its connection ends with no request lost (it reconnects and sends
        again), then end it."""
        with contextlib.suppress(OSError):
            conn.settimeout(0.2)
            conn.sendall(p.encode_error(0, "ConnectionClosed", message))
        with contextlib.suppress(OSError):
            conn.shutdown(socket.SHUT_RDWR)

    def _serve_conn(self, conn: socket.socket) -> None:
        state: _Conn | None = None
        try:
            peer = peer_of(conn)
            if not same_user(peer):
                log.warning("refused a connection from uid %s", peer.uid)
                conn.settimeout(1.0)
                self._send(conn, p.encode_error(0, "PermissionDenied",
                                                "Only the vault's own user may connect."))
                return
            state = self._admit(conn, peer)
            if state is None:
                conn.settimeout(1.0)
                if self._stopping.is_set():
                    self._send(conn, p.encode_error(0, "VaultLocked", LOCKED_MESSAGE, None,
                                                    VaultLocked.exit_code))
                else:
                    self._send(conn, p.encode_error(0, "Busy", "Too many connections to "
                                                    "Kept, all of them busy; try again."))
                return
            self._loop(state)
        except (OSError, _Closed):
            pass  # the client went away, a deadline passed, or stop() shut the connection
        finally:
            with self._guard:
                if state is not None and self._conns.get(conn) is state:
                    del self._conns[conn]
            conn.close()

    def _reader(self, state: _Conn) -> Callable[[int], bytes]:
        """``recv`` with deadlines: up to ``idle_timeout`` for a frame's first byte, then the
        whole frame within ``frame_deadline``."""
        conn = state.sock
        started: list[float] = []

        def recv(n: int) -> bytes:
            if started:
                left = started[0] + self.frame_deadline - time.monotonic()
                if left <= 0:
                    raise _Closed()
                conn.settimeout(left)
            else:
                conn.settimeout(self.idle_timeout)
            try:
                data = conn.recv(n)
            except TimeoutError:
                if not started:
                    self._goodbye(conn, "Kept closed this connection after "
                                        f"{self.idle_timeout / 60:g} quiet minutes; connect "
                                        "again.")
                raise _Closed() from None
            if data and not started:
                started.append(time.monotonic())
                state.reading = True
            return data
        return recv

    def _loop(self, state: _Conn) -> None:
        conn = state.sock
        bucket = _Bucket(self.rate, self.burst)
        while not self._stopping.is_set():
            try:
                payload = p.read_frame(self._reader(state))
            except p.Oversized as exc:
                conn.settimeout(1.0)
                self._send(conn, p.encode_error(0, "ProtocolError", exc.user_message))
                return  # the stream cannot be resynchronised: close it
            except p.ProtocolError:
                return  # truncated frame: the client is gone
            if payload is None:
                return
            with self._guard:
                if self._conns.get(conn) is not state:
                    return  # evicted while its frame arrived: the goodbye told it to resend
                state.reading, state.busy = False, True
                state.frames += 1
            try:
                reply = self.handle(payload, bucket, state.scope)
                conn.settimeout(self.frame_deadline)  # a client that never reads: cut off
                self._send(conn, reply)
            finally:
                with self._guard:
                    state.busy = False
                    state.last = time.monotonic()

    @staticmethod
    def _send(conn: socket.socket, data: bytes) -> None:
        conn.sendall(data)

    # --- one request -----------------------------------------------------------------------
    def handle(self, payload: bytes, bucket: _Bucket | None = None,
               scope: Scope | None = None) -> bytes:
        """The reply frame for one request frame's payload. Never raises."""
        mid = p.request_id(payload)
        try:
            req = p.decode_request(payload)
        except p.ProtocolError as exc:
            return p.encode_error(mid, "ProtocolError", exc.user_message)
        if bucket is not None and not bucket.take():
            return p.encode_error(req.id, "RateLimited",
                                  "Too many requests; slow down and try again.")
        self.last_request = time.monotonic()
        if self.on_request is not None:
            self.on_request()
        try:
            value = self._call(req, scope or Scope())
            return p.encode_result(req.id, req.method, value)
        except VaultLocked:
            return p.encode_error(req.id, "VaultLocked", LOCKED_MESSAGE, None,
                                  VaultLocked.exit_code)
        except AppError as exc:
            return p.encode_error(req.id, type(exc).__name__, exc.user_message, exc.hint,
                                  exc.exit_code)
        except Exception as exc:  # the boundary: a bug must not end the owner
            # Only the class: a message may quote what memories say.
            log.error("request %s failed: %s", req.method, type(exc).__name__)
            return p.encode_error(req.id, "InternalError",
                                  f"Unexpected error in Kept ({type(exc).__name__}).")

    def _call(self, req: p.Request, scope: Scope) -> object:
        if req.method == p.PING:
            return {"version": p.VERSION}
        if req.method == p.HELLO:
            return self._hello(req, scope)
        if req.method == p.UNLOCK:
            return self._unlock(str(req.args["password"]), scope)
        if scope.agent is not None:
            self._wake(scope.agent, scope.key)
        if self._stopping.is_set() or self.vault.locked:
            raise VaultLocked()
        if req.method == p.SESSION:
            strict = scope.agent is None and self.strict
            return p.SessionInfo(p.VERSION, str(self.vault.folder), self.vault.locked,
                                 self.vault.semantic_search, strict,
                                 not strict or self._proved(scope))
        if scope.agent is not None:
            if req.method not in p.AGENT_METHODS:
                raise RemoteRefused(f"An assistant cannot call {req.method}: the person "
                                    "decides that in Kept.")
            # A key revoked while connected stops working at the next call.
            self.vault.verify_agent(scope.agent, scope.key)
            assert scope.session is not None
            return getattr(scope.session, req.method)(**req.args)
        if req.method == p.ELEVATE:
            self._elevate(str(req.args["password"]), scope)
            return {"version": p.VERSION}
        if req.method == p.LOGOUT:
            scope.person = False
            self.tickets.drop(scope.terminal)
            return {"version": p.VERSION}
        if self.strict and not self._proved(scope):
            raise PasswordNeeded(STRICT_MESSAGE)
        if p.METHODS[req.method].person and not scope.person:
            raise PasswordNeeded()
        return getattr(self.vault, req.method)(**self._as_person(req, scope))

    def _proved(self, scope: Scope) -> bool:
        return scope.person or self.tickets.valid(scope.terminal)

    def _as_person(self, req: p.Request, scope: Scope) -> dict[str, object]:
        """The arguments of a person's request, with identity fixed by the connection: what
        it writes is the person's (global) unless the password was proved on it; it never
        asks to forget in an assistant's name; nothing it writes counts as confirmed by the
        person without the password."""
        args = dict(req.args)
        if scope.person:
            return args
        if req.method == "remember":
            draft = args["draft"]
            if getattr(draft, "agent", "global") != "global":
                raise PasswordNeeded("This connection writes as you (global memory): "
                                     "prove your password to name an assistant's scope.")
            args["draft"] = replace(draft, user_validated=False)  # type: ignore[type-var]
        elif req.method == "remember_fact" and args.get("agent", "global") != "global":
            raise PasswordNeeded("This connection writes as you (global memory): prove your "
                                 "password to name an assistant's scope.")
        elif req.method == "request_forget":
            raise RemoteRefused("Forget requests come from an assistant's own connection; "
                                "you can forget directly (`kept forget`).")
        return args

    def _elevate(self, password: str, scope: Scope) -> None:
        """Prove the password on this connection (and, for a peer in a terminal, a ticket for
        its terminal session). Wrong ones wait longer each time; a flood is answered busy."""
        def verify() -> bool:
            with KDF_GATE.remote(self._stopping):
                self.vault.verify_password(password)
            return True
        self._prove(scope, verify)

    def _prove(self, scope: Scope, check: Callable[[], bool]) -> bool:
        """Run one password ``check`` (``_elevate``'s, or ``kept unlock``'s): counted with
        every check in flight (a flood is answered busy), after the wait this connection's
        failures earned; a right password proves the person on this connection."""
        with self._guard:
            if self._elevations >= self.max_elevations:
                raise PasswordBusy()
            self._elevations += 1
        try:
            wait = self.throttle.delay(scope.failures)
            if wait > 0 and self._stopping.wait(wait):
                raise VaultLocked()
            try:
                result = check()
            except WrongKey:
                scope.failures += 1
                self.throttle.failed()
                raise
        finally:
            with self._guard:
                self._elevations -= 1
        self.throttle.succeeded()
        scope.failures = 0
        scope.person = True
        self.tickets.grant(scope.terminal)
        return result

    def _wake(self, agent: str, key: str) -> None:
        """An assistant calls a vault locked when idle: ``wake`` may open it from this
        device's keychain (the person's opt-in, and only for a paired assistant's key: it
        decides, and never raises)."""
        if self.wake is not None and self.vault.locked and not self._stopping.is_set():
            self.wake(agent, key)

    def _unlock(self, password: str, scope: Scope) -> dict[str, int]:
        """``kept unlock``: the password opens a ``kept serve`` locked when idle. Wrong
        passwords wait longer each time, as for ``elevate``; a right one also proves the
        password on this connection."""
        if scope.agent is not None:
            raise RemoteRefused("An assistant cannot unlock Kept: the person does.")
        if self.unlocker is None:
            raise RemoteRefused("This Kept unlocks in its window: type the password there.")
        if not self.vault.locked:
            return {"version": p.VERSION, "unlocked": 0}
        unlocker = self.unlocker
        opened = self._prove(scope, lambda: bool(unlocker(password)))
        return {"version": p.VERSION, "unlocked": int(opened)}

    def _hello(self, req: p.Request, scope: Scope) -> object:
        agent, key = req.args.get("agent"), req.args.get("key")
        if agent is not None:
            if not isinstance(agent, str) or not isinstance(key, str):
                raise AgentNotPaired()
            self._wake(agent, key)
            if self.vault.locked:
                raise VaultLocked()
            self.vault.verify_agent(agent, key)  # AgentNotPaired: unknown, revoked, wrong key
            scope.agent, scope.key = agent, key
            scope.person = False
            scope.session = AgentSession(self.vault, agent)
        return {"version": p.VERSION}
