"""The owner service: whichever process unlocked the vault serves ``VaultAPI`` on a Unix
socket in the vault folder. Layer: app (no Qt, no storage). Runs on: its own threads (one
accepting, one per connection); it calls the in-process ``Vault``, which is thread-safe.

Security: the socket is ``<vault>/kept.sock``, created 0600 (umask) inside the 0700 folder,
and every connection's peer credentials are checked (``SO_PEERCRED``): only the same user.
Limits: ``MAX_FRAME`` per message, a token bucket per connection, a cap on connections. A
malformed or oversized request gets an error reply and calls nothing. Locking: call
``stop()`` before ``vault.lock()`` (``lock_vault`` does both in that order), so no request
reaches a vault that is being locked.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from app.agent_scope import AgentSession
from app.api import VaultAPI
from app.errors import AgentNotPaired, AppError, PasswordNeeded, RemoteRefused, VaultLocked
from app.ipc import protocol as p

log = logging.getLogger(__name__)

LOCKED_MESSAGE = "The vault is locked: unlock Kept."
_UCRED = struct.Struct("3i")  # pid, uid, gid


def peer_uid(conn: socket.socket) -> int | None:
    """The uid of the process at the other end (Linux ``SO_PEERCRED``), None if unknown."""
    opt = getattr(socket, "SO_PEERCRED", None)
    if opt is None:
        return None
    _pid, uid, _gid = _UCRED.unpack(conn.getsockopt(socket.SOL_SOCKET, opt, _UCRED.size))
    return int(uid)


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
    password)."""
    agent: str | None = None
    key: str = ""
    session: AgentSession | None = None
    person: bool = False


class OwnerServer:
    """Serve ``vault`` on ``socket_path(vault.folder)`` until ``stop()``."""

    def __init__(self, vault: VaultAPI, *, path: Path | None = None, rate: float = 500.0,
                 burst: int = 1000, max_connections: int = 32,
                 on_request: Callable[[], None] | None = None) -> None:
        self.vault = vault
        self.path = path or p.socket_path(vault.folder)
        self.rate, self.burst, self.max_connections = rate, burst, max_connections
        self.on_request = on_request
        self.last_request = time.monotonic()
        self._sock: socket.socket | None = None
        self._conns: set[socket.socket] = set()
        self._guard = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    # --- life --------------------------------------------------------------------------
    def start(self) -> None:
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
        sock.listen(64)
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

    def stop(self) -> None:
        """Close the listening socket, remove the file, end every connection. Idempotent."""
        self._stopping.set()
        sock, self._sock = self._sock, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
        with self._guard:
            conns = list(self._conns)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2.0)

    def lock_vault(self) -> None:
        """Stop serving first, then lock: clients see the socket go, never a half-locked
        vault."""
        self.stop()
        self.vault.lock()

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

    def _serve_conn(self, conn: socket.socket) -> None:
        try:
            uid = peer_uid(conn)
            if uid is not None and uid != os.getuid():
                log.warning("refused a connection from uid %d", uid)
                self._send(conn, p.encode_error(0, "PermissionDenied",
                                                "Only the vault's own user may connect."))
                return
            with self._guard:
                if len(self._conns) >= self.max_connections or self._stopping.is_set():
                    busy = True
                else:
                    busy = False
                    self._conns.add(conn)
            if busy:
                self._send(conn, p.encode_error(0, "Busy", "Too many connections to Kept; "
                                                "try again."))
                return
            self._loop(conn)
        except OSError:
            pass  # the client went away, or stop() shut the connection
        finally:
            with self._guard:
                self._conns.discard(conn)
            conn.close()

    def _loop(self, conn: socket.socket) -> None:
        bucket = _Bucket(self.rate, self.burst)
        scope = Scope()
        while not self._stopping.is_set():
            try:
                payload = p.read_frame(conn.recv)
            except p.Oversized as exc:
                self._send(conn, p.encode_error(0, "ProtocolError", exc.user_message))
                return  # the stream cannot be resynchronised: close it
            except p.ProtocolError:
                return  # truncated frame: the client is gone
            if payload is None:
                return
            self._send(conn, self.handle(payload, bucket, scope))

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
        if self._stopping.is_set() or self.vault.locked:
            raise VaultLocked()
        if req.method == p.SESSION:
            return p.SessionInfo(p.VERSION, str(self.vault.folder), self.vault.locked,
                                 self.vault.semantic_search)
        if scope.agent is not None:
            if req.method not in p.AGENT_METHODS:
                raise RemoteRefused(f"An assistant cannot call {req.method}: the person "
                                    "decides that in Kept.")
            # A key revoked while connected stops working at the next call.
            self.vault.verify_agent(scope.agent, scope.key)
            assert scope.session is not None
            return getattr(scope.session, req.method)(**req.args)
        if req.method == p.ELEVATE:
            self.vault.verify_password(str(req.args["password"]))
            scope.person = True
            return {"version": p.VERSION}
        if p.METHODS[req.method].person and not scope.person:
            raise PasswordNeeded()
        return getattr(self.vault, req.method)(**req.args)

    def _hello(self, req: p.Request, scope: Scope) -> object:
        agent, key = req.args.get("agent"), req.args.get("key")
        if agent is not None:
            if not isinstance(agent, str) or not isinstance(key, str):
                raise AgentNotPaired()
            if self.vault.locked:
                raise VaultLocked()
            self.vault.verify_agent(agent, key)  # AgentNotPaired: unknown, revoked, wrong key
            scope.agent, scope.key = agent, key
            scope.session = AgentSession(self.vault, agent)
        return {"version": p.VERSION}
