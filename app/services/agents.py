"""Paired assistants (issue 14): their keys, their forget requests, the log of what they read.
Layer: app (a service: it runs transactions through the ``Database`` port; no SQL here).
Runs on: the caller's thread; the read log is written by a timer thread.

Keys: only a SHA-256 of each key is stored (a key is 256 random bits, so a plain hash is
enough); a key checked once is remembered until the next pair or revoke, so the owner's check
on every call of a connected assistant costs no read. Reads: an assistant's recall, context
and explain are noted in memory (ids and times only) and written in one batch
``READS_FLUSH_S`` later, or at lock: a read never waits on a write.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace

from app.api import AgentRead, AgentRow, MemoryRead, PendingForget, PendingStatus
from app.clock import Clock
from app.errors import AgentNotPaired, NotFound, ValidationError
from app.ports import AgentRows, Connection, Database

log = logging.getLogger(__name__)

READS_FLUSH_S = 1.0  # assistants' reads are written at most this long after they happen
TOUCH_S = 60.0       # "last seen" is written at most once a minute per assistant


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


class AgentService:
    """Owner: the ``Vault`` facade (one per unlocked vault). ``on_reads_written`` is called
    (on the timer thread) after a batch of reads was written, for the window's Assistants."""

    def __init__(self, db: Database, clock: Clock, rows: AgentRows,
                 locked: Callable[[], bool]) -> None:
        self.db, self.clock, self.rows = db, clock, rows
        self.locked = locked  # the vault's keys are gone: the read log is not written
        self.on_reads_written: Callable[[], None] | None = None
        self._verified: dict[tuple[str, str], AgentRow] = {}
        self._generation = 0  # bumped by every pair and revoke
        self._touched: dict[str, float] = {}
        self._reads: list[tuple[str, tuple[int, ...], str, float]] = []
        self._reads_guard = threading.Lock()
        self._reads_timer: threading.Timer | None = None
        # Days an unanswered forget request lives (the facade reads ``forget.request_days``).
        self.request_days: Callable[[], float] = lambda: 30.0

    # --- pairing --------------------------------------------------------------------------
    def pair(self, name: str) -> str:
        """A new key for ``name`` (replacing any old one); only its hash is kept."""
        key = "kept_" + secrets.token_urlsafe(32)
        now = self.clock.now()
        self.db.write_sync(lambda c: self.rows.put_agent(c, name, key_hash(key), now))
        self._forget_verified()
        return key

    def revoke(self, name: str) -> None:
        now = self.clock.now()
        if not self.db.write_sync(lambda c: self.rows.revoke_agent(c, name, now)):
            raise ValidationError(f"No paired assistant named {name!r}.")
        self._forget_verified()

    def paired(self) -> list[AgentRow]:
        return list(self.db.read(self.rows.list_agents))

    def verify(self, name: str, key: str) -> AgentRow:
        """The paired assistant ``name`` if ``key`` is its current key; ``AgentNotPaired``
        otherwise (unknown, revoked or wrong key: one answer, so nothing is learned)."""
        hashed = key_hash(key)
        row = self._verified.get((name, hashed))
        if row is None:
            generation = self._generation
            stored = self.db.read(lambda c: self.rows.agent_key_hash(c, name))
            if stored is None or not hmac.compare_digest(stored, hashed):
                raise AgentNotPaired()
            row = self.db.read(lambda c: self.rows.get_agent(c, name))
            assert row is not None
            if generation == self._generation:  # no pair or revoke meanwhile
                self._verified[(name, hashed)] = row
        now = self.clock.now()
        if now - self._touched.get(name, 0.0) >= TOUCH_S:
            self._touched[name] = now
            self.db.write(lambda c: self.rows.touch_agent(c, name, now))
        return row

    def _forget_verified(self) -> None:
        self._generation += 1
        self._verified.clear()

    # --- what an assistant may see ----------------------------------------------------------
    def scopes_of(self, ids: Sequence[int]) -> dict[int, str]:
        """The scope (agent, or "global") of each id that exists."""
        wanted = [int(i) for i in ids]
        return self.db.read(lambda c: self.rows.agents_of(c, wanted)) if wanted else {}

    def check_visible(self, ids: Sequence[int], agent: str) -> None:
        """``NotFound`` unless every id is a memory ``agent`` can see (global or its own):
        another assistant's memory gets the same answer as one that does not exist."""
        scopes = self.scopes_of(ids)
        if any(scopes.get(int(i)) not in ("global", agent) for i in ids):
            raise NotFound()

    # --- forget requests ----------------------------------------------------------------------
    def add_request(self, agent: str, ids: list[int], query: str | None, reason: str
                    ) -> PendingForget:
        now = self.clock.now()
        pid = self.db.write_sync(lambda c: self.rows.add_pending_forget(
            c, agent, ids, query, reason, now))
        row = self.request(pid)
        assert row is not None
        return row

    def request(self, pid: int) -> PendingForget | None:
        cutoff, ttl = self._expiry()
        row = self.db.read(lambda c: self.rows.get_pending_forget(c, pid, cutoff, ttl))
        return None if row is None else _with_end(row, ttl)

    def requests(self, status: PendingStatus | None, agent: str | None, limit: int
                 ) -> list[PendingForget]:
        cutoff, ttl = self._expiry()
        return [_with_end(r, ttl) for r in self.db.read(
            lambda c: self.rows.pending_forgets(c, status, agent, max(1, min(limit, 500)),
                                                cutoff, ttl))]

    def _expiry(self) -> tuple[float, float]:
        """(asked before this: expired, the time a request lives), from ``request_days``."""
        ttl = max(0.0, float(self.request_days())) * 86400.0
        return self.clock.now() - ttl, ttl

    def declined(self, ids: Sequence[int]) -> tuple[list[int], float] | None:
        """The ids among ``ids`` the person already declined to forget (any assistant asked),
        and when they last declined: an assistant does not ask again (issue 26)."""
        wanted = {int(i) for i in ids}
        hit: set[int] = set()
        last = 0.0
        for r in self.requests("declined", None, 500):
            common = wanted & {int(i) for i in r.memory_ids}
            if common:
                hit |= common
                last = max(last, r.decided_at or r.created_at)
        return (sorted(hit), last) if hit else None

    def decide(self, pid: int, status: str) -> bool:
        """Close request ``pid`` as "done" or "declined"; False when it was not pending
        (an expired one is no longer pending)."""
        req = self.request(pid)
        if req is None or req.status != "pending":
            return False
        now = self.clock.now()
        return bool(self.db.write_sync(
            lambda c: self.rows.decide_pending_forget(c, pid, status, now)))

    # --- the read log ---------------------------------------------------------------------------
    def note_reads(self, agent: str, ids: Sequence[int], via: str) -> None:
        if not ids:
            return
        entry = (agent, tuple(int(i) for i in ids), via, self.clock.now())
        with self._reads_guard:
            self._reads.append(entry)
            if self._reads_timer is None:
                timer = threading.Timer(READS_FLUSH_S, self.flush_reads)
                timer.daemon = True
                self._reads_timer = timer
                timer.start()

    def flush_reads(self) -> None:
        """Write the reads noted so far (at the timer, and at lock before the keys go)."""
        with self._reads_guard:
            batch, self._reads = self._reads, []
            timer, self._reads_timer = self._reads_timer, None
        if timer is not None:
            timer.cancel()
        if not batch or self.locked():
            return

        def write(c: Connection) -> None:
            for agent, ids, via, at in batch:
                self.rows.add_reads(c, agent, ids, via, at)
        try:
            self.db.write_sync(write)
        except Exception as exc:  # a read log is not worth failing anything for
            log.warning("could not record assistants' reads: %s", type(exc).__name__)
            return
        if self.on_reads_written is not None:
            self.on_reads_written()

    def reads_of(self, mid: int) -> list[MemoryRead]:
        return list(self.db.read(lambda c: self.rows.memory_reads(c, mid)))

    def reads_by(self, agent: str, limit: int) -> list[AgentRead]:
        return self.db.read(lambda c: self.rows.reads_by(c, agent, max(1, min(limit, 1000))))


def _with_end(r: PendingForget, ttl: float) -> PendingForget:
    return replace(r, expires_at=r.created_at + ttl) if r.status == "pending" else r
