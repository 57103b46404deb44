"""A ``VaultAPI`` that calls the owner of a vault over its socket. Layer: app. Runs on: any
thread (calls on one ``RemoteVault`` are serialised; use one per thread for parallel reads).

It holds no key and opens no database: every call is one request to the process that
unlocked the vault (the window, or ``kept serve``). ``lock()`` only closes this connection:
the owner locks, a client never does. Calls the owner never serves (``protocol.REFUSED``)
raise ``RemoteRefused``.
"""

from __future__ import annotations

import inspect
import itertools
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar, cast

from app import errors
from app.api import (
    BackupRecord,
    Filters,
    Hit,
    ImportReport,
    Progress,
    Skipped,
    Turn,
    VaultAPI,
    merge_skipped,
)
from app.changes import NO_CHANGES, Result
from app.domain.memory import MemoryId
from app.errors import (
    AppError,
    OwnerNotRunning,
    PasswordBusy,
    PasswordNeeded,
    RemoteRefused,
    VaultLocked,
)
from app.ipc import protocol as p
from app.operations import Access

__all__ = ["RemoteVault", "connect", "owner_running"]

P = ParamSpec("P")
R = TypeVar("R")
LOCKED_MESSAGE = ("Kept is locked: open Kept to unlock it (its window, or `kept unlock` in a "
                  "terminal).")
_IMPORT_FRAME = p.MAX_FRAME // 2  # bytes of turns per import request (half the frame limit)


def owner_running(folder: Path, timeout: float = 1.0) -> bool:
    """True when something serves ``folder`` and answers a ping."""
    if not p.socket_path(folder).exists():
        return False
    try:
        with RemoteVault.at(folder, timeout=timeout) as remote:
            remote.ping()
        return True
    except AppError:
        return False


def connect(folder: Path, *, agent: str | None = None, key: str | None = None,
            timeout: float = 30.0, password: Callable[[], str] | None = None) -> RemoteVault:
    """A connected client (``OwnerNotRunning`` at once when nothing serves ``folder``)."""
    remote = RemoteVault.at(folder, timeout=timeout, agent=agent, key=key, password=password)
    remote.ping()
    return remote


class _Resend(Exception):
    """The owner closed this connection before it read the request."""


def _error(kind: str, message: str, hint: str | None, exit_code: int) -> AppError:
    """The owner's error as the same class when ``app.errors`` has it."""
    if kind == "VaultLocked":
        return VaultLocked(message or LOCKED_MESSAGE)
    if kind == "ProtocolError":
        return p.ProtocolError(message)
    cls = getattr(errors, kind, None)
    if isinstance(cls, type) and issubclass(cls, AppError):
        exc = cls.__new__(cls)
        AppError.__init__(exc, message, hint=hint)
    else:
        exc = AppError(message, hint=hint)
    exc.exit_code = exit_code
    return exc


if TYPE_CHECKING:
    _Contract = VaultAPI  # mypy reads every generated method from the contract itself
else:
    _Contract = object


class RemoteVault(_Contract):
    """``VaultAPI`` over the owner's socket. Lazy: connects on the first call.

    Its operations are made from the contract (``_remote``, below the class): none is written
    here but the few that do more than one request. For mypy the class derives from
    ``VaultAPI``, so every call is checked against the contract's signature; build one with
    ``RemoteVault.at`` (mypy counts the contract's members as abstract on a direct call).
    ``password``, when given, is asked for the first time the owner needs it."""

    def __init__(self, folder: Path, *, timeout: float = 30.0, agent: str | None = None,
                 key: str | None = None, password: Callable[[], str] | None = None) -> None:
        self._folder = Path(folder)
        self.path = p.socket_path(self._folder)
        self.timeout = timeout
        self.agent, self._key = agent, key
        self._sock: socket.socket | None = None
        self._ids = itertools.count(1)
        self._guard = threading.Lock()
        self._session: p.SessionInfo | None = None
        self._password = password
        self._proved = False

    @classmethod
    def at(cls, folder: Path, *, timeout: float = 30.0, agent: str | None = None,
           key: str | None = None, password: Callable[[], str] | None = None) -> RemoteVault:
        return cls(folder, timeout=timeout, agent=agent, key=key, password=password)

    # --- connection ----------------------------------------------------------------------
    def _connect(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            with p.address(self.path) as where:
                sock.connect(where)
        except (FileNotFoundError, ConnectionRefusedError, NotADirectoryError) as exc:
            sock.close()
            raise OwnerNotRunning() from exc
        except OSError as exc:
            sock.close()
            raise OwnerNotRunning() from exc
        if self.agent is not None:
            try:
                self._roundtrip(sock, "hello", {"agent": self.agent, "key": self._key})
            except _Resend:
                sock.close()
                raise OwnerNotRunning("Kept closed the connection; try again.") from None
            except BaseException:
                sock.close()
                raise
        self._sock = sock
        self._proved = False  # a proof belongs to one connection
        return sock

    def close(self) -> None:
        with self._guard:
            sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()

    def __enter__(self) -> RemoteVault:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _roundtrip(self, sock: socket.socket, method: str, args: Mapping[str, object]
                   ) -> object:
        mid = next(self._ids)
        try:
            sock.sendall(p.encode_request(mid, method, args))
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise _Resend() from exc  # the owner had closed it: nothing was sent
        except TimeoutError as exc:
            raise OwnerNotRunning("Kept did not answer in time; nothing was changed by this "
                                  "command unless Kept finishes it.") from exc
        except OSError as exc:
            raise OwnerNotRunning() from exc
        try:
            payload = p.read_frame(sock.recv)
        except p.ProtocolError:
            payload = None  # a frame cut short: the owner went away mid-reply
        except TimeoutError as exc:
            raise OwnerNotRunning("Kept did not answer in time; nothing was changed by this "
                                  "command unless Kept finishes it.") from exc
        except OSError as exc:
            raise OwnerNotRunning() from exc
        if payload is None:
            raise OwnerNotRunning()
        reply = p.decode_reply(payload)
        if reply.id not in (mid, 0):
            raise p.ProtocolError("A reply answered another request.")
        if not reply.ok:
            if reply.id == 0 and reply.kind == "ConnectionClosed":
                raise _Resend()  # closed idle before it read this request: send it again
            raise _error(reply.kind, reply.message, reply.hint, reply.exit_code)
        return p.decode_result(method, reply.result) if method in p.METHODS else reply.result

    def _call(self, method: str, *, slow: bool = False, **args: object) -> object:
        """One request; ``slow`` for one that may take minutes (a backup of a big vault): no
        reply timeout. A connection the owner closed while idle (its idle timeout, or its
        slot given to a newcomer) is opened again and the request sent once more: the owner
        says so before it closes, and never reads a request it then drops."""
        with self._guard:
            for attempt in range(2):
                fresh = self._sock is None
                sock = self._sock or self._connect()
                if slow:
                    sock.settimeout(None)
                try:
                    return self._roundtrip(sock, method, args)
                except _Resend:
                    self._sock = None
                    sock.close()
                    if fresh or attempt:
                        raise OwnerNotRunning("Kept closed the connection; try again.") \
                            from None
                except (OwnerNotRunning, p.ProtocolError):
                    self._sock = None
                    sock.close()
                    raise
                finally:
                    if slow and self._sock is sock:
                        sock.settimeout(self.timeout)
            raise AssertionError("unreachable")

    def ping(self) -> int:
        reply = self._call(p.PING)
        assert isinstance(reply, dict)
        return int(reply["version"])

    def session(self) -> p.SessionInfo:
        if self._session is None:
            info = self._call(p.SESSION)
            assert isinstance(info, p.SessionInfo)
            self._session = info
        return self._session

    def logout(self) -> None:
        """Drop what this connection proved, and its terminal session's ticket."""
        self._call(p.LOGOUT)

    def unlock_owner(self, password: str) -> bool:
        """Unlock a ``kept serve`` that locked itself when idle (``kept unlock``): True when it
        was locked and is open again, False when it was not locked. ``WrongKey`` for a wrong
        password; ``RemoteRefused`` from the window, which unlocks in its own dialog."""
        reply = self._call(p.UNLOCK, password=password)
        assert isinstance(reply, dict)
        return bool(reply.get("unlocked"))

    # --- the operations: one generic call each, made from the contract ------------------
    def _invoke(self, name: str, args: Mapping[str, object]) -> object:
        """One operation of ``VaultAPI`` (its arguments bound by ``_operation``). The
        person's decisions prove the password first when this client can ask for it
        (``password``); an answer "this needs your password" (strict mode, or an argument
        only the person may give) is met the same way, once."""
        op = p.OPERATIONS[name]
        if op.access.person and not self._proved and self._password is not None:
            self._prove()
        try:
            return self._call(name, slow=op.slow, **args)
        except PasswordNeeded:
            if self._password is None:
                raise
            self._prove()
            return self._call(name, slow=op.slow, **args)

    def _prove(self, tries: int = 4) -> None:
        """The password to the owner; when it is busy checking others (several ``kept`` at
        once), wait and try again, a few times."""
        assert self._password is not None
        pw = self._password()
        for attempt in range(tries):
            try:
                self.verify_password(pw)
                return
            except PasswordBusy:
                if attempt == tries - 1:
                    raise
                time.sleep(0.5 + attempt)

    def verify_password(self, password: str) -> None:
        """Prove the password to the owner: this connection may then make the person's
        decisions (forget, resolve, pairing...). ``WrongKey`` when it is not the password."""
        self._call(p.ELEVATE, password=password)
        self._proved = True

    # --- session: learnt at connect -----------------------------------------------------
    @property
    def folder(self) -> Path:
        return self._folder

    @property
    def locked(self) -> bool:
        try:
            return self.session().locked
        except (OwnerNotRunning, VaultLocked):
            return True

    @property
    def semantic_search(self) -> bool:
        return self.session().semantic_search

    def background_work(self) -> list[str]:
        return []  # the owner's jobs, not this process's

    def lock(self) -> Result[None]:
        """Close this client's connection (the owner stays unlocked)."""
        self.close()
        return Result(None, NO_CHANGES)

    # --- operations with more to them than one request ----------------------------------
    def import_turns(self, turns: Sequence[Turn], *, progress: Progress | None = None,
                     batch: int = 256, follow: bool = False) -> Result[ImportReport]:
        """In requests of at most half a frame each; each request is the owner's
        ``import_turns`` (whole batches, re-import adds nothing), so an interrupted import
        is completed by running it again, as in-process."""
        chunks: list[list[Turn]] = [[]]
        size = 0
        for t in turns:
            n = len(t.text.encode("utf-8", "surrogatepass")) + 512
            if chunks[-1] and size + n > _IMPORT_FRAME:
                chunks.append([])
                size = 0
            chunks[-1].append(t)
            size += n
        added, skipped, changes, done = 0, 0, NO_CHANGES, 0
        ids: list[MemoryId] = []
        left_out: tuple[Skipped, ...] = ()
        send = self._operation(VaultAPI.import_turns)
        for chunk in chunks:
            if not chunk:
                continue
            res = send(tuple(chunk), batch=batch, follow=follow)
            added += res.value.added
            skipped += res.value.skipped_duplicates
            left_out = merge_skipped(left_out, res.value.skipped)
            ids += res.value.ids
            changes = changes.merge(res.changes)
            done += len(chunk)
            if progress is not None:
                progress(done, len(turns))
        report = ImportReport(turns=len(turns), added=added, skipped_duplicates=skipped,
                              sessions=len({t.session for t in turns}), ids=tuple(ids),
                              skipped=left_out)
        return Result(report, changes)

    def recall_batch(self, queries: Sequence[tuple[str, str, float | None]], *, k: int = 10,
                     filters: Filters | None = None, progress: Progress | None = None
                     ) -> list[tuple[str, list[Hit]]]:
        """64 queries a request, so a long batch reports progress and fits a frame."""
        out: list[tuple[str, list[Hit]]] = []
        send = self._operation(VaultAPI.recall_batch)
        step = 64
        for start in range(0, len(queries), step):
            out += send(list(queries[start:start + step]), k=k, filters=filters)
            if progress is not None:
                progress(len(out), len(queries))
        return out

    def backup(self, path: Path, password: str | None = None, *,
               progress: Progress | None = None) -> Result[BackupRecord]:
        """The owner writes the file: the path goes absolute (its working folder differs)."""
        return self._operation(VaultAPI.backup)(Path(os.path.abspath(path)), password)

    def _operation(self, fn: Callable[Concatenate[Any, P], R]) -> Callable[P, R]:
        """The remote call of one ``VaultAPI`` method, typed as the contract declares it."""
        return partial(_remote(fn), self)


def _remote(fn: Callable[..., R]) -> Callable[..., R]:
    """The generic method for operation ``fn`` of ``VaultAPI``: its arguments bound by the
    contract's own signature (defaults filled, callbacks and tokens left here, iterables
    made lists), sent, and the reply decoded to the declared type by the protocol."""
    name = fn.__name__
    sig = inspect.signature(fn)
    op = p.OPERATIONS[name]

    if op.access is Access.HELPER:
        def helper(self: RemoteVault, *args: object, **kwargs: object) -> R:
            from app.facade import Vault
            local: Callable[..., R] = getattr(Vault, name)
            return local(*args, **kwargs)
        return helper

    if not op.access.remote:
        def refused(self: RemoteVault, *args: object, **kwargs: object) -> R:
            raise RemoteRefused(f"{name} cannot be done through Kept's local connection: "
                                f"{op.why}.")
        return refused

    def call(self: RemoteVault, *args: object, **kwargs: object) -> R:
        bound = sig.bind(self, *args, **kwargs)
        bound.apply_defaults()
        sent = {k: (list(v) if isinstance(v, Iterable) and not isinstance(v, str | bytes |
                                                                       tuple | Mapping)
                    else v)
                for k, v in bound.arguments.items() if k not in p.LOCAL_ARGS}
        return cast(R, self._invoke(name, sent))
    call.__name__ = call.__qualname__ = name
    call.__doc__ = fn.__doc__
    return call


# Every operation of the contract the class does not define itself gets its generic method.
for _name in p.OPERATIONS:
    if _name not in vars(RemoteVault) and p.OPERATIONS[_name].access is not Access.SESSION:
        setattr(RemoteVault, _name, _remote(getattr(VaultAPI, _name)))
