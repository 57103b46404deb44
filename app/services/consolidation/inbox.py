"""The inbox (docs/memory-model.md#the-inbox): contradictions consolidation could not settle and
review requests (an LLM asked to forget a memory), answered by the person; every answer can be
reopened. Layer: app. Runs on: any worker thread.

A resolution stores what it kept and the statuses it changed (``prior``) in the item's
``resolution``, so :meth:`InboxService.reopen` puts the memories back exactly as they were,
whether the pipeline or the person settled the item.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from app.api import ContradictionItem, InboxPage, InboxStatus
from app.domain.memory import RunId
from app.errors import NotFound, ValidationError
from app.ports import Clock, ConsolidationRows, Database, InboxRows, MemoryState
from app.services.assistant_change import is_change_reason
from app.services.ingest import IngestService

RESOLVE_CHOICES = ("a", "b", "both", "edit", "still_true")


def prior_json(states: dict[int, MemoryState]) -> dict[str, dict[str, Any]]:
    """The ``prior`` of a resolution: each memory's state before, keyed by its id as text."""
    return {str(mid): s._asdict() for mid, s in states.items()}


class InboxService:
    """Owner: ``ConsolidationService`` (one per unlocked vault)."""

    def __init__(self, db: Database, clock: Clock, ingest: IngestService,
                 rows: ConsolidationRows, inbox: InboxRows) -> None:
        self.db = db
        self.clock = clock
        self.ingest = ingest
        self.rows = rows
        self.inbox = inbox

    def _items(self, conn: Any, ids: list[int]) -> list[ContradictionItem]:
        """The items of ``ids`` (in that order) with both sides, in batched queries."""
        found = self.inbox.rows(conn, ids)
        sides = self.inbox.sides(conn, [m for r in found for m in (r.a, r.b)])
        return [ContradictionItem(r.id, sides[r.a], sides[r.b], r.reason, r.status,
                                  r.resolution, r.created_at,
                                  None if r.run_id is None else RunId(r.run_id),
                                  "change" if r.kind == "contradiction"
                                  and is_change_reason(r.reason) else r.kind)
                for r in found]

    def contradictions(self, *, status: InboxStatus | None = "open"
                       ) -> list[ContradictionItem]:
        """Every item of a list (``None``: all of them), in the inbox's order. For the CLI and
        small lists; the window pages with :meth:`inbox_page`."""
        return self.db.read(lambda c: self._items(c, self.inbox.ids(c, status)))

    def inbox_page(self, status: InboxStatus, page: int = 0, size: int = 25) -> InboxPage:
        """Ids first, then only the page's rows, in batched queries (storage/inbox.py)."""
        if status not in self.inbox.STATUSES or size < 1:
            raise ValidationError("Choose open, auto or resolved, and a page size of 1 or more.")

        def read(conn: Any) -> InboxPage:
            ids = self.inbox.ids(conn, status)
            last = max(0, (len(ids) - 1) // size)
            p = min(max(0, page), last)
            reviews = self.inbox.count_reviews(conn, status)
            return InboxPage(status, p, size, len(ids), reviews,
                             tuple(self._items(conn, ids[p * size:(p + 1) * size])))
        return self.db.read(read)

    def inbox_items(self, ids: list[int] | tuple[int, ...]) -> list[ContradictionItem]:
        return self.db.read(lambda c: self._items(c, list(ids)))

    def inbox_count(self) -> int:
        """Open items (contradictions and review requests): the navigation's count."""
        return self.db.read(lambda c: self.inbox.count(c, "open"))

    def resolve(self, cid: int, keep: str, text: str | None = None, *,
                also: Callable[[Any], None] | None = None) -> int | None:
        """A contradiction: keep a | b | both (true at different times) | edit (with ``text``).
        A review request: still_true | edit (forgetting goes through the forget plan).
        ``also(conn)`` runs in the transaction that settles the item (sync journals the
        answer in the same commit)."""
        if keep not in RESOLVE_CHOICES:
            raise ValidationError("Choose a, b, both, edit or still true.")
        entry = self.db.read(lambda c: self.inbox.get(c, cid))
        if entry is None:
            raise NotFound("No contradiction or review request with that id.")
        a, b, status, kind, _res = entry
        row = self.db.read(lambda c: self.inbox.rows(c, [cid]))
        change = bool(row) and kind == "contradiction" and is_change_reason(row[0].reason)
        if status != "open":
            raise ValidationError("That item is already resolved; undo it first.")
        if (kind == "review" or a == b) and keep in ("a", "b", "both"):
            # One memory on both sides: "keep A" would supersede it by itself (issue 12).
            raise ValidationError(
                f"#{cid} is a review request about one memory ({a}), not two that disagree: "
                "answer it with still true or edit, or forget the memory.")
        if kind != "review" and keep == "still_true":
            raise ValidationError(f"#{cid} is a contradiction: choose a, b, both or edit.")
        now = self.clock.now()
        new_id: int | None = None
        if keep == "still_true" and self.ingest.get(a).status.value == "superseded":
            raise ValidationError(f"Memory {a} was already replaced by a newer version.")
        if keep == "edit":
            if not text:
                raise ValidationError("Give the corrected text.")
            new_id = int(self.ingest.correct(b, text))
        rows = self.rows

        def write(conn: Any) -> None:
            prior = rows.states(conn, (a, b) if a != b else (a,))
            extra: dict[str, Any] = {}
            if change and keep == "b":
                # An assistant's change, accepted: the new value becomes the person's
                # (global, confirmed) and the held one ends when the change took effect.
                extra = {"agent": {str(b): rows.agent_of(conn, b)}}
                rows.supersede(conn, a, b, now)
                rows.validate(conn, b)
                ends = rows.valid_from_of(conn, b)
                rows.set_valid_until(conn, a, ends if ends is not None
                                     else rows.occurred_at(conn, b))
                rows.set_agent(conn, b, "global")
            elif keep in ("a", "b"):
                winner, loser = (a, b) if keep == "a" else (b, a)
                rows.supersede(conn, loser, winner, now)
                rows.validate(conn, winner)
            elif keep == "both":
                first, second = sorted((a, b), key=lambda i: rows.occurred_at(conn, i))
                rows.set_valid_until(conn, first, rows.occurred_at(conn, second))
            elif keep == "still_true":
                rows.validate(conn, a)
                rows.add_history(conn, a, now, "confirmed", f"still true (review #{cid})")
            elif new_id is not None and a != b:
                rows.supersede(conn, a, new_id, now)
            self.inbox.settle(conn, cid, "resolved", json.dumps(
                {"keep": keep, "new": new_id, "prior": prior_json(prior), **extra}), now)
            if also is not None:
                also(conn)
        self.db.write_sync(write)
        return new_id

    def reopen(self, cid: int) -> None:
        """Undo one resolution (automatic or the person's): statuses as they were, open."""
        rows = self.rows

        def write(conn: Any) -> None:
            entry = self.inbox.get(conn, cid)
            if entry is None:
                raise NotFound("No contradiction with that id.")
            if entry.status == "open":
                return
            res = json.loads(entry.resolution or "{}")
            prior = res.get("prior", {})
            for mid, agent in (res.get("agent") or {}).items():  # an accepted change
                if agent:
                    rows.set_agent(conn, int(mid), str(agent))
            for mid, st in prior.items():
                rows.restore_state(conn, int(mid), MemoryState(
                    st["status"], st["superseded_by"], st["valid_until"], st["user_validated"],
                    st["confidence"]))
            self.inbox.reopen(conn, cid)
        self.db.write_sync(write)
