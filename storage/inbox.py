"""The inbox's reads: contradictions and review requests, one page at a time. Layer: storage.
Runs on: a reader thread (any thread with its own connection).

Ids first, then rows (Anki's browser): one indexed query gives a list's ids (2,435 settled
items are ~10 kB of ints), the caller slices a page, and the page's rows and both sides of
each come from a fixed number of batched queries, however long the list is. The first version
read every item of every list with four queries per side (9 s for 2,435 items at 100k
memories, issue 12).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from app.api import MemoryView
from app.domain.memory import MemoryId, Status
from app.ports import InboxEntry, InboxRow
from storage.batching import chunks as _chunks
from storage.batching import marks as _marks
from storage.sqlcipher import Connection

STATUSES = ("open", "auto", "resolved")


def ids(conn: Connection, status: str | None) -> list[int]:
    """A list's ids in the inbox's order: open ones oldest first (answered in turn), settled
    ones newest first; ``None``: every item, by id."""
    if status is None:
        return [r[0] for r in conn.execute("SELECT id FROM contradiction ORDER BY id")]
    order = "ASC" if status == "open" else "DESC"
    return [r[0] for r in conn.execute(
        f"SELECT id FROM contradiction WHERE status = ? ORDER BY id {order}", (status,))]


def count(conn: Connection, status: str) -> int:
    return int(conn.execute("SELECT count(*) FROM contradiction WHERE status = ?",
                            (status,)).fetchone()[0])


def count_reviews(conn: Connection, status: str) -> int:
    return int(conn.execute(
        "SELECT count(*) FROM contradiction WHERE status = ? AND kind = 'review'",
        (status,)).fetchone()[0])


def get(conn: Connection, cid: int) -> InboxEntry | None:
    """(a, b, status, kind, resolution) of one item, or None."""
    row = conn.execute("SELECT a, b, status, kind, resolution FROM contradiction WHERE id = ?",
                       (cid,)).fetchone()
    return None if row is None else InboxEntry(int(row[0]), int(row[1]), row[2], row[3], row[4])


def rows(conn: Connection, cids: Sequence[int]) -> list[InboxRow]:
    """The items ``cids`` (without their sides), in the order given (ids that no longer exist
    are skipped)."""
    found: dict[int, InboxRow] = {}
    for chunk in _chunks(list(cids)):
        for r in conn.execute(
                "SELECT id, a, b, reason, status, resolution, created_at, run_id, kind "
                f"FROM contradiction WHERE id IN ({_marks(len(chunk))})", list(chunk)):
            found[int(r[0])] = InboxRow(*r)
    return [found[c] for c in cids if c in found]


def sides(conn: Connection, mids: Iterable[int]) -> dict[int, MemoryView]:
    """Each memory's side of a card: text, status, date, confidence, its conversation refs
    (its own and its sources') and the memories it was learned from. Batched: one query for
    the memories, one recursive query for every provenance chain, one for the refs."""
    todo = sorted(set(int(m) for m in mids))
    out: dict[int, MemoryView] = {}
    if not todo:
        return out
    mem: dict[int, tuple[Any, ...]] = {}
    for chunk in _chunks(todo):
        for r in conn.execute("SELECT id, text, status, occurred_at, confidence, ref FROM memory "
                              f"WHERE id IN ({_marks(len(chunk))})", list(chunk)):
            mem[int(r[0])] = tuple(r)
    # The queue of a recursive CTE is FIFO, so each root's chain comes out in the order its
    # own query would give (as in repo.refs_of).
    prov: dict[int, list[int]] = {}
    for chunk in _chunks(todo):
        values = ",".join(["(?)"] * len(chunk))
        for root, anc in conn.execute(
                f"WITH RECURSIVE up(root, id) AS (SELECT column1, column1 FROM (VALUES {values}) "
                "UNION SELECT up.root, l.dst FROM link l JOIN up ON l.src = up.id "
                "WHERE l.kind IN ('DERIVED_FROM','PROMOTED_FROM')) "
                "SELECT root, id FROM up WHERE id != root", list(chunk)):
            prov.setdefault(int(root), []).append(int(anc))
    refs: dict[int, str] = {m: r[5] for m, r in mem.items() if r[5] is not None}
    ancestors = sorted({a for chain in prov.values() for a in chain} - set(mem))
    for chunk in _chunks(ancestors):
        for mid, ref in conn.execute(f"SELECT id, ref FROM memory WHERE id IN "
                                     f"({_marks(len(chunk))}) AND ref IS NOT NULL", list(chunk)):
            refs[int(mid)] = ref
    for mid in todo:
        m = mem.get(mid)
        chain = prov.get(mid, [])
        # (m is None cannot happen: a contradiction goes with its memories, ON DELETE CASCADE)
        out[mid] = MemoryView(
            MemoryId(mid), m[1] if m else "", Status(m[2]) if m else Status.ARCHIVED,
            m[3] if m else None,
            m[4] if m else None, tuple(dict.fromkeys(refs[c] for c in (mid, *chain) if c in refs)),
            tuple(MemoryId(c) for c in chain))
    return out


# --- writes (inside Database.write) ----------------------------------------------------------

def add_contradiction(conn: Connection, a: int, b: int, reason: str, run_id: int | None,
                      now: float) -> int | None:
    """A new open contradiction of ``a`` (the older) and ``b``; None if that pair is already
    an item."""
    cur = conn.execute("INSERT OR IGNORE INTO contradiction (a, b, reason, status, run_id, "
                       "created_at) VALUES (?,?,?,?,?,?)", (a, b, reason, "open", run_id, now))
    return int(cur.lastrowid or 0) if cur.rowcount else None


def add_review(conn: Connection, mid: int, reason: str, now: float) -> None:
    """A review request of one memory (``b`` repeats ``a``: the column is NOT NULL), unless
    the memory is gone or already superseded."""
    if conn.execute("SELECT 1 FROM memory WHERE id = ? AND status != 'superseded'",
                    (mid,)).fetchone():
        conn.execute("INSERT OR IGNORE INTO contradiction (a, b, reason, created_at, kind) "
                     "VALUES (?, ?, ?, ?, 'review')", (mid, mid, reason, now))


def settle(conn: Connection, cid: int, status: str, resolution: str, now: float) -> None:
    """``auto`` (a rule settled it) or ``resolved`` (the person did); ``resolution`` is the
    JSON reopen reads back."""
    conn.execute("UPDATE contradiction SET status = ?, resolution = ?, resolved_at = ? "
                 "WHERE id = ?", (status, resolution, now, cid))


def reopen(conn: Connection, cid: int) -> None:
    conn.execute("UPDATE contradiction SET status = 'open', resolution = NULL, "
                 "resolved_at = NULL WHERE id = ?", (cid,))


def open_with_both_ended(conn: Connection) -> list[int]:
    """Open items whose sides are both superseded (a review: its one memory): nothing is left
    for the person to choose between (issue 26)."""
    return [int(r[0]) for r in conn.execute(
        "SELECT c.id FROM contradiction c JOIN memory ma ON ma.id = c.a "
        "JOIN memory mb ON mb.id = c.b WHERE c.status = 'open' "
        "AND ma.status = 'superseded' AND mb.status = 'superseded' ORDER BY c.id")]
