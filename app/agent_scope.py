"""What a paired assistant may do, whatever it asks: the agent scope of issue 14. Layer: app.
Runs on: the caller's thread (the owner's connection handler, or ``kept mcp``'s test-only
in-process mode).

``AgentSession(vault, agent)`` wraps a ``VaultAPI`` for one verified assistant (``agent`` comes
from ``Vault.verify_agent`` at connect, never from a tool argument). It exposes only
``AGENT_METHODS``, with the same signatures as ``VaultAPI`` so one client serves both, but every
scope argument is overwritten: writes go into ``agent``'s scope, reads see global memories plus
``agent``'s own, never another assistant's. An assistant never forgets, confirms or
resolves: it can only ask (``request_forget``), and the person decides in Kept. It corrects
only its own memories (``correct_own``); a change to the person's goes to their Inbox. What it
reads (recall, context, explain) is recorded by id and time (``note_reads``) for the window.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from app.api import (
    AssistantFact,
    Context,
    ContradictionItem,
    Currency,
    EntityCard,
    Explanation,
    FactOutcome,
    Filters,
    Hit,
    InboxStatus,
    MemoryRow,
    MemoryView,
    PendingForget,
    PendingStatus,
    Result,
    VaultAPI,
    VaultStatus,
)
from app.domain.memory import Draft, MemoryId, Store
from app.errors import NotFound, ValidationError
from app.operations import operations

# What an assistant's connection may call (the owner refuses everything else): the members
# of ``VaultAPI`` marked ``agent`` (``app/operations.py``). ``AgentSession`` wraps each one
# (``check_wrapped``).
AGENT_METHODS = frozenset(n for n, o in operations(VaultAPI).items() if o.agent)

# Caps, whatever the client asks (docs/architecture.md#what-an-assistant-may-do: no "read
# everything").
MAX_K = 50
MAX_BUDGET = 4000
MAX_CONTRADICTIONS = 20
MAX_PENDING = 20
MAX_RECENT = 25

AGENT_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_.")


def check_agent_name(name: str) -> None:
    """Agent names are short lower-case labels (they appear in configs and memories)."""
    if not name or len(name) > 64 or not set(name) <= AGENT_NAME_CHARS or name == "global":
        raise ValidationError(
            "An assistant name is 1-64 characters of a-z, 0-9, '-', '_' or '.', not 'global'.")


class AgentSession:
    """One assistant's view of a vault. Holds no state but the vault and the agent name."""

    def __init__(self, vault: VaultAPI, agent: str) -> None:
        self._vault = vault
        self.agent = agent

    @property
    def folder(self) -> Path:
        return self._vault.folder

    @property
    def locked(self) -> bool:
        return self._vault.locked

    @property
    def semantic_search(self) -> bool:
        return self._vault.semantic_search

    def _filters(self, filters: Filters | None) -> Filters:
        # Archived-by-the-person and superseded stay out unless the person looks.
        return replace(filters or Filters(), agent=self.agent, include_archived=False,
                       only_archived=False)

    def _visible(self, mid: int) -> bool:
        try:
            return self._vault.get(mid).agent in ("global", self.agent)
        except NotFound:
            return False

    # --- writes: always this agent's scope -------------------------------------------------
    def remember(self, draft: Draft) -> Result[MemoryId]:
        # An assistant's word is not the person's confirmation.
        return self._vault.remember(replace(draft, agent=self.agent, user_validated=False))

    def remember_fact(self, fact: AssistantFact, *, agent: str = "global"
                      ) -> Result[FactOutcome]:
        # The vault refuses source ids this agent cannot see.
        return self._vault.remember_fact(fact, agent=self.agent)

    def correct_own(self, mid: int, text: str, *, agent: str = "") -> Result[MemoryId]:
        # Its own memories only: the vault refuses the person's and hides another's.
        return self._vault.correct_own(mid, text, agent=self.agent)

    def request_forget(self, *, agent: str = "", ids: Sequence[int] = (),
                       query: str | None = None, reason: str = "") -> Result[PendingForget]:
        return self._vault.request_forget(agent=self.agent, ids=ids, query=query,
                                          reason=reason)

    # --- reads: global + this agent ------------------------------------------------------
    def recall(self, query: str, *, k: int = 10, now: float | None = None,
               filters: Filters | None = None, touch: bool = True) -> list[Hit]:
        hits = self._vault.recall(query, k=max(1, min(k, MAX_K)), now=now,
                                  filters=self._filters(filters), touch=touch)
        self._vault.note_reads(self.agent, [h.id for h in hits], "recall")
        # Without the score's parts: no tool shows them (explain gives them for one memory),
        # and they were 40 % of the reply's bytes on the owner's socket (issue 26, item 9).
        return [replace(h, breakdown={}) for h in hits]

    def context(self, query: str, *, budget: int | None = None, now: float | None = None,
                filters: Filters | None = None) -> Context:
        budget = MAX_BUDGET if budget is None else max(0, min(budget, MAX_BUDGET))
        ctx = self._vault.context(query, budget=budget, now=now,
                                  filters=self._filters(filters))
        self._vault.note_reads(self.agent, [i.id for i in ctx.items if i.id is not None],
                               "context")
        return ctx

    def explain(self, mid: int, query: str | None = None, now: float | None = None
                ) -> Explanation:
        if not self._visible(mid):
            raise NotFound()  # the same answer as for an id that does not exist
        e = self._vault.explain(mid, query, now)
        self._vault.note_reads(self.agent, [mid], "explain")
        c = e.currency
        if c is not None and c.pending is not None and not self._visible(c.pending.memory_id):
            e = replace(e, currency=Currency("current"))  # another assistant's proposal
        sources = tuple(s for s in e.sources if self._visible(s.id))
        links = tuple(x for x in e.links
                      if self._visible(x.dst if x.src == mid else x.src))
        return replace(e, sources=sources, links=links)

    def contradictions(self, status: InboxStatus | None = "open"
                       ) -> list[ContradictionItem]:
        out = []
        for item in self._vault.contradictions(status):
            if self._visible(item.a.id) and self._visible(item.b.id):
                out.append(replace(item, a=self._view(item.a), b=self._view(item.b)))
            if len(out) >= MAX_CONTRADICTIONS:
                break
        return out

    def _view(self, v: MemoryView) -> MemoryView:
        return replace(v, sources=tuple(s for s in v.sources if self._visible(s)))

    def status(self, *, agent: str | None = None) -> VaultStatus:
        return self._vault.status(agent=self.agent)

    def pending_forgets(self, status: PendingStatus | None = "pending",
                        agent: str | None = None, limit: int = MAX_PENDING
                        ) -> list[PendingForget]:
        return self._vault.pending_forgets(status, self.agent, max(1, min(limit, MAX_PENDING)))

    # --- browsing (issue 26): one memory, the newest, a name's card, the Inbox -------------
    def get_memory(self, mid: int, *, agent: str | None = None) -> MemoryRow:
        if not self._visible(mid):
            raise NotFound()  # the same answer as for an id that does not exist
        return self._scoped(self._vault.get_memory(mid, agent=self.agent))

    def recent_memories(self, limit: int = 10, store: Store | None = None, *,
                        agent: str | None = None) -> list[MemoryRow]:
        rows = self._vault.recent_memories(max(1, min(limit, MAX_RECENT)), store,
                                           agent=self.agent)
        return [self._scoped(r) for r in rows]

    def entity(self, name: str, *, agent: str | None = None) -> EntityCard:
        card = self._vault.entity(name, agent=self.agent)
        return replace(card, current=tuple(self._scoped(r) for r in card.current),
                       earlier=tuple(self._scoped(r) for r in card.earlier))

    def inbox(self, limit: int = 5) -> list[ContradictionItem]:
        return self.contradictions("open")[:max(1, min(limit, MAX_CONTRADICTIONS))]

    def _scoped(self, row: MemoryRow) -> MemoryRow:
        """A row whose ``later_id`` points at another assistant's memory loses it."""
        c = row.currency
        if c is not None and c.later_id is not None and not self._visible(c.later_id):
            return replace(row, currency=replace(c, later_id=None, later_at=None))
        return row


    def forget_status(self, request_id: int | None = None, *, agent: str | None = None,
                      limit: int = MAX_PENDING) -> list[PendingForget]:
        # Only this assistant's own requests; another's id is "not found".
        return self._vault.forget_status(request_id, agent=self.agent,
                                         limit=max(1, min(limit, MAX_PENDING)))


def check_wrapped(cls: type = AgentSession) -> None:
    """Every operation marked ``agent`` on ``VaultAPI`` has its wrapper on ``cls``, which fixes
    its scope: the owner checks this before it serves (``OwnerServer``), so a new agent
    operation without one stops the owner at start, not an assistant's call at run time."""
    missing = sorted(n for n in AGENT_METHODS if n not in vars(cls))
    if missing:
        raise TypeError(f"AgentSession does not wrap {', '.join(missing)}: each operation an "
                        "assistant may call fixes its scope there (app/agent_scope.py)")
