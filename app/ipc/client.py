"""A ``VaultAPI`` that calls the owner of a vault over its socket. Layer: app. Runs on: any
thread (calls on one ``RemoteVault`` are serialised; use one per thread for parallel reads).

It holds no key and opens no database: every call is one request to the process that
unlocked the vault (the window, or ``kept serve``). ``lock()`` only closes this connection:
the owner locks, a client never does. Calls the owner never serves (``protocol.REFUSED``)
raise ``RemoteRefused``.
"""

from __future__ import annotations

import itertools
import os
import socket
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar, cast

from app import errors
from app.api import (
    DEFAULT_ENTITY_KINDS,
    AgentRow,
    AssistantFact,
    BackupRecord,
    BackupRemade,
    CancelToken,
    Context,
    ContradictionItem,
    EntityRow,
    Explanation,
    FactOutcome,
    Filters,
    ForgetPlan,
    ForgetReport,
    History,
    Hit,
    ImportReport,
    InboxPage,
    InboxStatus,
    Insights,
    Listener,
    MemoryQuery,
    MemoryRead,
    MemoryRecord,
    Page,
    PendingForget,
    PendingStatus,
    Progress,
    ResolveChoice,
    RunReport,
    RunSummary,
    SettingValue,
    Skipped,
    Turn,
    UndoReport,
    VaultAPI,
    VaultStatus,
    merge_skipped,
)
from app.changes import NO_CHANGES, Result
from app.domain.memory import Draft, Memory, MemoryId
from app.errors import AppError, OwnerNotRunning, RemoteRefused, VaultLocked
from app.ipc import protocol as p

__all__ = ["RemoteVault", "connect", "owner_running"]

T = TypeVar("T")
LOCKED_MESSAGE = "The vault is locked: unlock Kept."
_IMPORT_FRAME = p.MAX_FRAME // 2  # bytes of turns per import request (half the frame limit)


def owner_running(folder: Path, timeout: float = 1.0) -> bool:
    """True when something serves ``folder`` and answers a ping."""
    if not p.socket_path(folder).exists():
        return False
    try:
        with RemoteVault(folder, timeout=timeout) as remote:
            remote.ping()
        return True
    except AppError:
        return False


def connect(folder: Path, *, agent: str | None = None, key: str | None = None,
            timeout: float = 30.0) -> RemoteVault:
    """A connected client (``OwnerNotRunning`` at once when nothing serves ``folder``)."""
    remote = RemoteVault(folder, timeout=timeout, agent=agent, key=key)
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


class RemoteVault:
    """``VaultAPI`` over the owner's socket. Lazy: connects on the first call."""

    def __init__(self, folder: Path, *, timeout: float = 30.0, agent: str | None = None,
                 key: str | None = None) -> None:
        self._folder = Path(folder)
        self.path = p.socket_path(self._folder)
        self.timeout = timeout
        self.agent, self._key = agent, key
        self._sock: socket.socket | None = None
        self._ids = itertools.count(1)
        self._guard = threading.Lock()
        self._session: p.SessionInfo | None = None

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

    def _call_slow(self, method: str, **args: object) -> object:
        return self._call(method, slow=True, **args)

    def ping(self) -> int:
        return cast(dict[str, int], self._call(p.PING))["version"]

    def session(self) -> p.SessionInfo:
        if self._session is None:
            self._session = cast(p.SessionInfo, self._call(p.SESSION))
        return self._session

    def may_read(self) -> bool:
        """False in strict mode until this connection (or its terminal session) proved the
        password; asked afresh each time."""
        self._session = None
        return self.session().may_read

    def logout(self) -> None:
        """Drop what this connection proved, and its terminal session's ticket."""
        self._call(p.LOGOUT)

    # --- session -------------------------------------------------------------------------
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

    def subscribe(self, listener: Listener) -> None:
        raise RemoteRefused(f"subscribe: {p.REFUSED['subscribe']}.")

    def watch_integrity(self, on_corrupt: Callable[[], None]) -> None:
        raise RemoteRefused(f"watch_integrity: {p.REFUSED['watch_integrity']}.")

    def background_work(self) -> list[str]:
        return []  # the owner's, not this process's

    def lock(self) -> Result[None]:
        """Close this client's connection (the owner stays unlocked)."""
        self.close()
        return Result(None, NO_CHANGES)

    # --- keys: never remote -------------------------------------------------------------
    def _refuse(self, name: str) -> AppError:
        return RemoteRefused(f"{name} cannot be done through Kept's local connection: "
                             f"{p.REFUSED[name]}.")

    def change_password(self, old: str, new: str) -> Result[None]:
        raise self._refuse("change_password")

    def rotate_data_key(self, password: str) -> Result[str | None]:
        raise self._refuse("rotate_data_key")

    def add_recovery_code(self, password: str | None = None) -> str:
        raise self._refuse("add_recovery_code")

    def remember_device(self) -> Result[None]:
        raise self._refuse("remember_device")

    def forget_device(self) -> Result[None]:
        raise self._refuse("forget_device")

    def status(self, *, agent: str | None = None) -> VaultStatus:
        return cast(VaultStatus, self._call("status", agent=agent))

    # --- ingestion and reading: local helpers, then remote calls ----------------------
    @staticmethod
    def validate_draft(d: Draft) -> Draft:
        from app.facade import Vault
        return Vault.validate_draft(d)

    @staticmethod
    def read_import(path: Path) -> list[Turn]:
        from app.facade import Vault
        return Vault.read_import(path)

    @staticmethod
    def check_endpoint(url: str) -> str:
        from app.facade import Vault
        return Vault.check_endpoint(url)

    @staticmethod
    def consent_text(url: str) -> str | None:
        from app.facade import Vault
        return Vault.consent_text(url)

    def remember(self, draft: Draft) -> Result[MemoryId]:
        return cast(Result[MemoryId], self._call("remember", draft=draft))

    def import_turns(self, turns: Sequence[Turn], *, progress: Progress | None = None,
                     batch: int = 256) -> Result[ImportReport]:
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
        for chunk in chunks:
            if not chunk:
                continue
            res = cast(Result[ImportReport],
                       self._call("import_turns", turns=tuple(chunk), batch=batch))
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

    def get(self, mid: int) -> Memory:
        return cast(Memory, self._call("get", mid=mid))

    def refs(self, ids: Iterable[int]) -> Mapping[MemoryId, list[str]]:
        return cast(Mapping[MemoryId, list[str]], self._call("refs", ids=list(ids)))

    # --- recall ------------------------------------------------------------------------
    def recall(self, query: str, *, k: int = 10, now: float | None = None,
               filters: Filters | None = None, touch: bool = True) -> list[Hit]:
        return cast(list[Hit], self._call("recall", query=query, k=k, now=now,
                                          filters=filters, touch=touch))

    def recall_batch(self, queries: Sequence[tuple[str, str, float | None]], *, k: int = 10,
                     filters: Filters | None = None, progress: Progress | None = None
                     ) -> list[tuple[str, list[Hit]]]:
        out: list[tuple[str, list[Hit]]] = []
        step = 64
        for start in range(0, len(queries), step):
            part = list(queries[start:start + step])
            out += cast(list[tuple[str, list[Hit]]],
                        self._call("recall_batch", queries=part, k=k, filters=filters))
            if progress is not None:
                progress(len(out), len(queries))
        return out

    def context(self, query: str, *, budget: int | None = None, now: float | None = None,
                filters: Filters | None = None) -> Context:
        return cast(Context, self._call("context", query=query, budget=budget, now=now,
                                        filters=filters))

    def explain(self, mid: int, query: str | None = None, now: float | None = None
                ) -> Explanation:
        return cast(Explanation, self._call("explain", mid=mid, query=query, now=now))

    # --- forget, correct, history, archive ------------------------------------------------
    def forget_plan(self, *, ids: Sequence[int] = (), query: str | None = None,
                    entity: str | None = None, include_sources: bool = True) -> ForgetPlan:
        return cast(ForgetPlan, self._call("forget_plan", ids=list(ids), query=query,
                                           entity=entity, include_sources=include_sources))

    def forget(self, plan: ForgetPlan) -> Result[ForgetReport]:
        return cast(Result[ForgetReport], self._call("forget", plan=plan))

    def correct(self, mid: int, text: str) -> Result[MemoryId]:
        return cast(Result[MemoryId], self._call("correct", mid=mid, text=text))

    def confirm(self, mid: int) -> Result[None]:
        return cast(Result[None], self._call("confirm", mid=mid))

    def history(self, mid: int) -> History:
        return cast(History, self._call("history", mid=mid))

    def archive(self, mid: int) -> Result[None]:
        return cast(Result[None], self._call("archive", mid=mid))

    def restore(self, mid: int) -> Result[None]:
        return cast(Result[None], self._call("restore", mid=mid))

    # --- consolidation and the inbox ---------------------------------------------------
    def consolidate(self, *, now: float | None = None, cancel: CancelToken | None = None,
                    progress: Progress | None = None, kind: str = "consolidation",
                    steps: tuple[str, ...] | None = None) -> Result[RunReport]:
        raise self._refuse("consolidate")

    def contradictions(self, status: InboxStatus | None = "open"
                       ) -> list[ContradictionItem]:
        return cast(list[ContradictionItem], self._call("contradictions", status=status))

    def inbox_page(self, status: InboxStatus, page: int = 0, size: int = 25) -> InboxPage:
        return cast(InboxPage, self._call("inbox_page", status=status, page=page, size=size))

    def inbox_items(self, ids: Sequence[int]) -> list[ContradictionItem]:
        return cast(list[ContradictionItem], self._call("inbox_items", ids=list(ids)))

    def inbox_count(self) -> int:
        return cast(int, self._call("inbox_count"))

    def resolve(self, cid: int, keep: ResolveChoice, text: str | None = None
                ) -> Result[MemoryId | None]:
        return cast(Result[MemoryId | None], self._call("resolve", cid=cid, keep=keep,
                                                        text=text))

    def reopen(self, cid: int) -> Result[None]:
        return cast(Result[None], self._call("reopen", cid=cid))

    def undo_run(self, run_id: int) -> Result[UndoReport]:
        return cast(Result[UndoReport], self._call("undo_run", run_id=run_id))

    def runs(self, limit: int = 20) -> list[RunSummary]:
        return cast(list[RunSummary], self._call("runs", limit=limit))

    # --- settings ------------------------------------------------------------------------
    def setting(self, key: str) -> SettingValue | None:
        return cast(SettingValue | None, self._call("setting", key=key))

    def set_setting(self, key: str, value: SettingValue) -> Result[None]:
        return cast(Result[None], self._call("set_setting", key=key, value=value))

    # --- browsing ------------------------------------------------------------------------
    def page_memories(self, query: MemoryQuery, after: tuple[float, int] | None = None,
                      limit: int = 200) -> Page:
        return cast(Page, self._call("page_memories", query=query, after=after, limit=limit))

    def count_memories(self, query: MemoryQuery) -> int:
        return cast(int, self._call("count_memories", query=query))

    def entities(self, kinds: tuple[str, ...] = DEFAULT_ENTITY_KINDS) -> list[EntityRow]:
        return cast(list[EntityRow], self._call("entities", kinds=kinds))

    def timeline_days(self, limit: int = 400) -> list[tuple[str, int]]:
        return cast(list[tuple[str, int]], self._call("timeline_days", limit=limit))

    def insights(self) -> Insights:
        return cast(Insights, self._call("insights"))

    def export_memories(self, query: MemoryQuery, after: int = 0, limit: int = 200
                        ) -> list[MemoryRecord]:
        return cast(list[MemoryRecord], self._call("export_memories", query=query,
                                                   after=after, limit=limit))

    # --- assistants (issue 14) ----------------------------------------------------------
    def pair_agent(self, name: str) -> Result[str]:
        return cast(Result[str], self._call("pair_agent", name=name))

    def revoke_agent(self, name: str) -> Result[None]:
        return cast(Result[None], self._call("revoke_agent", name=name))

    def agents(self) -> list[AgentRow]:
        return cast(list[AgentRow], self._call("agents"))

    def verify_agent(self, name: str, key: str) -> AgentRow:
        raise self._refuse("verify_agent")

    def remember_fact(self, fact: AssistantFact, *, agent: str = "global"
                      ) -> Result[FactOutcome]:
        return cast(Result[FactOutcome], self._call("remember_fact", fact=fact, agent=agent))

    def request_forget(self, *, agent: str, ids: Sequence[int] = (), query: str | None = None,
                       reason: str = "") -> Result[PendingForget]:
        return cast(Result[PendingForget], self._call(
            "request_forget", agent=agent, ids=list(ids), query=query, reason=reason))

    def pending_forgets(self, status: PendingStatus | None = "pending",
                        agent: str | None = None, limit: int = 50) -> list[PendingForget]:
        return cast(list[PendingForget], self._call("pending_forgets", status=status,
                                                    agent=agent, limit=limit))

    def pending_forget_plan(self, pid: int) -> ForgetPlan:
        return cast(ForgetPlan, self._call("pending_forget_plan", pid=pid))

    def close_pending_forget(self, pid: int, plan: ForgetPlan | None
                             ) -> Result[ForgetReport | None]:
        return cast(Result[ForgetReport | None], self._call("close_pending_forget", pid=pid,
                                                            plan=plan))

    def memory_reads(self, mid: int) -> list[MemoryRead]:
        return cast(list[MemoryRead], self._call("memory_reads", mid=mid))

    def note_reads(self, agent: str, ids: Sequence[int], via: str) -> None:
        raise self._refuse("note_reads")

    def verify_password(self, password: str) -> None:
        """Prove the password to the owner: this connection may then make the person's
        decisions (forget, resolve, pairing...). ``WrongKey`` when it is not the password."""
        self._call(p.ELEVATE, password=password)

    # --- backups (issue 16) --------------------------------------------------------------
    def backup(self, path: Path, password: str | None = None, *,
               progress: Progress | None = None) -> Result[BackupRecord]:
        """The owner writes the file: the path goes absolute (its working folder differs)."""
        return cast(Result[BackupRecord],
                    self._call_slow("backup", path=Path(os.path.abspath(path)),
                                    password=password))

    def backups(self) -> list[BackupRecord]:
        return cast(list[BackupRecord], self._call("backups"))

    def remake_backups(self, ids: Sequence[int], *, progress: Progress | None = None
                       ) -> Result[tuple[BackupRemade, ...]]:
        return cast(Result[tuple[BackupRemade, ...]],
                    self._call_slow("remake_backups", ids=list(ids)))


# mypy checks here that the client is a VaultAPI.
_: type[VaultAPI] = RemoteVault
