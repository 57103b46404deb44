"""Changes from assistants and what every result says of a memory (issue 26 items 1 and 2).
Layer: app. Runs on: any worker thread (the writes inside ``Database.write``).

An assistant says a value changed with ``remember_fact(..., replaces=ID)`` or
``change=True``. In its own scope the change settles at once: the earlier value's validity
ends at ``valid_from``, it is superseded by the new fact (a SUPERSEDES link, its history), and
the run's log lets Undo put it back. A person's (global) fact is never replaced by an
assistant: the new value is stored in the assistant's scope and an Inbox item
"<assistant> says this changed" waits for the person (accepted with keep "b": the new value
becomes the person's, confirmed, and the old one ends at ``valid_from``). No migration: the
item is a contradiction whose reason says so (``is_change_reason``).

``describe``: who wrote each memory of a result ("person", "kept" for what consolidation
derived, or the assistant's name) and a change waiting for it (``Currency`` "pending" with a
``PendingChange``), shown only to whom can see the proposed value.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from app.api import Currency, PendingChange
from app.domain.memory import LinkKind, MemoryId
from app.errors import NotFound, ValidationError

if TYPE_CHECKING:
    from app.domain.fact import FactCandidate
    from app.ports import Database
    from app.services.consolidation.pipeline import Pipeline
    from app.services.consolidation.runlog import RunLog

CHANGE_SUFFIX = " says this changed"
_CHANGE = re.compile(r"^[a-z0-9._-]{1,64}" + re.escape(CHANGE_SUFFIX) + "$")
_DERIVED_STORES = ("semantic", "procedural", "implicit")


def change_reason(agent: str) -> str:
    return f"{agent}{CHANGE_SUFFIX}"


def is_change_reason(reason: str) -> bool:
    """An Inbox item made by an assistant's change (its reason, "<assistant> says this
    changed")."""
    return bool(_CHANGE.match(reason or ""))


def changer(reason: str) -> str:
    return reason[:-len(CHANGE_SUFFIX)] if is_change_reason(reason) else ""


# --- what a result says of each memory ---------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Said:
    """One memory of a result as ``describe`` needs it."""
    id: int
    agent: str
    store: str
    user_validated: bool
    currency: Currency | None


@dataclass(frozen=True, slots=True)
class Described:
    currency: Currency | None
    written_by: str
    confirmed_by_person: bool


def describe(db: Database, rows: Any, items: Sequence[Said], viewer: str | None
             ) -> dict[int, Described]:
    """``written_by``, ``confirmed_by_person`` and a pending change for each item. ``viewer``:
    the assistant asking (None: the person), who sees a change only if it sees the value
    proposed (another assistant's value never leaks through the mark)."""
    if not items:
        return {}
    ids = [i.id for i in items]
    facts = [i.id for i in items if i.agent == "global" and i.store in _DERIVED_STORES]

    def read(conn: Any) -> tuple[set[int], list[Any]]:
        return (rows.derived_ids(conn, facts) if facts else set(),
                rows.open_changes(conn, ids))
    derived, changes = db.read(read)
    pending: dict[int, PendingChange] = {}
    for cid, a, b, reason, agent, valid_from, text, obj in changes:
        if not is_change_reason(reason):
            continue
        if viewer is not None and agent not in ("global", viewer):
            continue
        change = PendingChange(cid, MemoryId(b), obj or text, valid_from,
                               changer(reason) or agent)
        for mid in (a, b):
            pending.setdefault(mid, change)
    out: dict[int, Described] = {}
    for i in items:
        if i.agent != "global":
            by = i.agent
        elif i.store == "implicit" or i.id in derived:
            by = "kept"
        else:
            by = "person"
        c = i.currency
        waiting = pending.get(i.id)
        if waiting is not None and (c is None or c.state != "superseded"):
            c = Currency("pending", pending=waiting)
        out[i.id] = Described(c, by, i.user_validated)
    return out


def own_currency(status: str, superseded_by: int | None, valid_until: float | None,
                 superseded_at: float | None = None) -> Currency:
    """A memory's mark without a query: superseded (and by what, since when) or current."""
    if status == "superseded":
        return Currency("superseded", None if superseded_by is None else MemoryId(superseded_by),
                        None, valid_until if valid_until is not None else superseded_at)
    return Currency("current")


# --- an assistant's change ---------------------------------------------------------------------

@dataclass
class ChangeOutcome:
    created: int | None = None
    replaced: int | None = None
    inbox: int | None = None
    known: bool = False


def store_change(p: Pipeline, rl: RunLog, fact: FactCandidate, scope: tuple[str, str | None],
                 now: float, replaces: int | None, *,
                 also: Callable[[Any, ChangeOutcome], None] | None = None) -> ChangeOutcome:
    """Store ``fact`` as a change (see the module docstring); inside the run ``rl``.
    ``also(conn, outcome)`` runs at the end of the transaction that stored it (not when the
    value was known already)."""
    from app.services.contradiction import FactView, classify, qualifiers_meet
    from app.services.slots import canonical_predicate
    fact = replace(fact, predicate=canonical_predicate(fact.predicate), change=True)
    agent = scope[0]
    vecs = p.ingest.embed([fact.statement])
    out = ChangeOutcome()
    rows = p.rows

    def same_slot(v: FactView) -> bool:
        return (v.predicate == fact.predicate and qualifiers_meet(v.qualifier, fact.qualifier)
                and v.negated == fact.negated)

    def write(conn: Any) -> None:
        own = [v for v, _ in p._fact_views(conn, fact.subject, scope)]
        shared = ([v for v, _ in p._fact_views(conn, fact.subject, ("global", None))]
                  if scope != ("global", None) else [])
        occurred = p._occurred(conn, fact, now)
        probe = FactView(-1, fact.subject, fact.predicate, fact.object, fact.qualifier,
                         occurred, fact.confidence, False, fact.negated, True)
        if replaces is not None:
            m = rows.get_memory(conn, replaces)
            if m is None or m.agent not in ("global", agent):
                raise NotFound(f"No memory {replaces} that you can see: pass an id from "
                               "recall, context or get_memory.")
            if m.status.value == "superseded":
                raise ValidationError(
                    f"Memory {replaces} was already replaced by {m.superseded_by}: replace "
                    "that one, or leave out 'replaces'.")
            targets = [replaces]
            views = {v.id: v for v in own + shared}
            held = views.get(replaces)
            if held is not None and classify(held, probe) == "duplicate":
                out.known = True
                return
            own_t = [replaces] if m.agent == agent else []
            shared_t = [replaces] if m.agent == "global" and agent != "global" else []
            if agent == "global":
                own_t = targets
        else:
            if any(same_slot(v) and classify(v, probe) == "duplicate" for v in own + shared):
                out.known = True  # the slot holds this value already
                return
            own_t = [v.id for v in own if same_slot(v)]
            shared_t = [v.id for v in shared if same_slot(v)]
        mid = p._insert_fact(conn, rl, fact, now, scope,
                             min(1.0, max(0.0, fact.confidence)))
        out.created = mid
        ends = fact.valid_from if fact.valid_from is not None else occurred
        for old in own_t:
            p._supersede(conn, rl, old, mid, now)
            rows.set_valid_until(conn, old, ends)
            rl.counts["changes_settled"] += 1
            out.replaced = out.replaced or old
        for old in shared_t:
            cid = p.inbox.add_contradiction(conn, old, mid, change_reason(agent), rl.run_id,
                                            now)
            if cid is None:
                continue
            rl.change(conn, "contradiction", None, id=cid)
            if rows.add_link(conn, mid, old, LinkKind.CONTRADICTS, now):
                rl.change(conn, "link", mid, src=mid, dst=old, kind="CONTRADICTS")
            rl.counts["contradictions_found"] += 1
            rl.counts["sent_to_inbox"] += 1
            rl.ids["inbox"].append(cid)
            out.inbox = out.inbox or cid
        if also is not None:
            also(conn, out)
    p.db.write_sync(write)
    if out.created is not None and vecs is not None:
        p.ingest.store_vectors([out.created], vecs)
    return out
