"""Paired assistants and their pending forget requests (issue 14). Layer: storage.
Runs on: the db-writer (writes) or a reader thread (reads); every function takes the
connection it is lent. Implements ``app.ports.AgentRows``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from app.api import AgentRead, AgentRow, MemoryRead, PendingForget
from app.domain.memory import MemoryId, Store
from storage.batching import chunks, marks
from storage.sqlcipher import Connection

_AGENT_COLS = "name, created_at, revoked_at, last_seen_at"
_PENDING_COLS = "id, agent, memory_ids, query, reason, created_at, status, decided_at"


def _agent(r: tuple[object, ...]) -> AgentRow:
    name, created, revoked, seen = r
    return AgentRow(name=str(name), created_at=float(created),  # type: ignore[arg-type]
                    revoked_at=None if revoked is None else float(revoked),  # type: ignore[arg-type]
                    last_seen_at=None if seen is None else float(seen))  # type: ignore[arg-type]


def put_agent(conn: Connection, name: str, key_hash: str, now: float) -> None:
    """Pair ``name`` (again): a new key hash, not revoked."""
    conn.execute(
        "INSERT INTO agent (name, key_hash, created_at) VALUES (?, ?, ?) ON CONFLICT(name) DO "
        "UPDATE SET key_hash = excluded.key_hash, created_at = excluded.created_at, "
        "revoked_at = NULL", (name, key_hash, now))


def agent_key_hash(conn: Connection, name: str) -> str | None:
    """The key hash of a paired, not revoked agent; None otherwise."""
    row = conn.execute("SELECT key_hash FROM agent WHERE name = ? AND revoked_at IS NULL",
                       (name,)).fetchone()
    return None if row is None else str(row[0])


def get_agent(conn: Connection, name: str) -> AgentRow | None:
    row = conn.execute(f"SELECT {_AGENT_COLS} FROM agent WHERE name = ?", (name,)).fetchone()
    return None if row is None else _agent(tuple(row))


def list_agents(conn: Connection) -> list[AgentRow]:
    return [_agent(tuple(r)) for r in conn.execute(
        f"SELECT {_AGENT_COLS} FROM agent ORDER BY name")]


def revoke_agent(conn: Connection, name: str, now: float) -> bool:
    cur = conn.execute("UPDATE agent SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL",
                       (now, name))
    return cur.rowcount > 0


def touch_agent(conn: Connection, name: str, now: float) -> None:
    conn.execute("UPDATE agent SET last_seen_at = ? WHERE name = ?", (now, name))


def _pending(r: tuple[object, ...]) -> PendingForget:
    pid, agent, ids, query, reason, created, status, decided = r
    return PendingForget(
        id=int(pid), agent=str(agent),  # type: ignore[call-overload]
        memory_ids=tuple(MemoryId(int(i)) for i in json.loads(str(ids))),
        query=None if query is None else str(query), reason=str(reason),
        created_at=float(created), status=str(status),  # type: ignore[arg-type]
        decided_at=None if decided is None else float(decided))  # type: ignore[arg-type]


def add_pending_forget(conn: Connection, agent: str, ids: list[int], query: str | None,
                       reason: str, now: float) -> int:
    cur = conn.execute(
        "INSERT INTO pending_forget (agent, memory_ids, query, reason, created_at) "
        "VALUES (?, ?, ?, ?, ?)", (agent, json.dumps(ids), query, reason, now))
    return int(cur.lastrowid or 0)


def get_pending_forget(conn: Connection, pid: int, expired_before: float = float("-inf"),
                       ttl: float = 0.0) -> PendingForget | None:
    row = conn.execute(f"SELECT {_expiring_cols()} FROM pending_forget WHERE id = ?",
                       (expired_before, expired_before, ttl, pid)).fetchone()
    return None if row is None else _pending(tuple(row))


def _expiring_cols() -> str:
    """``_PENDING_COLS`` with a pending request older than the first parameter reported as
    "expired", decided when it expired (created + the third parameter): expiry is read, not
    written, so a changed setting applies at once and a read never writes."""
    return _PENDING_COLS.replace(
        "status, decided_at",
        "CASE WHEN status = 'pending' AND created_at < ? THEN 'expired' ELSE status END, "
        "CASE WHEN status = 'pending' AND created_at < ? THEN created_at + ? "
        "ELSE decided_at END")


def pending_forgets(conn: Connection, status: str | None, agent: str | None,
                    limit: int, expired_before: float = float("-inf"), ttl: float = 0.0
                    ) -> list[PendingForget]:
    sql = f"SELECT {_expiring_cols()} FROM pending_forget WHERE 1 = 1"
    args: list[object] = [expired_before, expired_before, ttl]
    if status is not None:
        sql += (" AND CASE WHEN status = 'pending' AND created_at < ? THEN 'expired' "
                "ELSE status END = ?")
        args += [expired_before, status]
    if agent is not None:
        sql += " AND agent = ?"
        args.append(agent)
    sql += " ORDER BY id DESC LIMIT ?"
    args.append(limit)
    return [_pending(tuple(r)) for r in conn.execute(sql, args)]


def decide_pending_forget(conn: Connection, pid: int, status: str, now: float) -> bool:
    """Close a request. Once done, its query and reason go: they may quote what was forgotten."""
    if status == "done":
        sql = ("UPDATE pending_forget SET status = ?, decided_at = ?, query = NULL, "
               "reason = '', memory_ids = '[]' WHERE id = ? AND status = 'pending'")
    else:
        sql = ("UPDATE pending_forget SET status = ?, decided_at = ? "
               "WHERE id = ? AND status = 'pending'")
    cur = conn.execute(sql, (status, now, pid))
    return cur.rowcount > 0


READS_KEPT = 20  # newest reads kept per memory


def add_reads(conn: Connection, agent: str, ids: Sequence[int], via: str, now: float) -> None:
    """``agent`` read ``ids`` (ids that no longer exist are skipped: a forget may have run)."""
    for mid in dict.fromkeys(int(i) for i in ids):
        conn.execute("INSERT INTO memory_read (memory_id, agent, via, at) SELECT id, ?, ?, ? "
                     "FROM memory WHERE id = ?", (agent, via, now, mid))
        conn.execute("DELETE FROM memory_read WHERE memory_id = ? AND id NOT IN (SELECT id FROM "
                     "memory_read WHERE memory_id = ? ORDER BY at DESC, id DESC LIMIT ?)",
                     (mid, mid, READS_KEPT))


def memory_reads(conn: Connection, mid: int) -> list[MemoryRead]:
    return [MemoryRead(agent=str(r[0]), via=str(r[1]), at=float(r[2]))  # type: ignore[arg-type]
            for r in conn.execute("SELECT agent, via, at FROM memory_read WHERE memory_id = ? "
                                  "ORDER BY at DESC, id DESC", (mid,))]


def reads_by(conn: Connection, agent: str, limit: int) -> list[AgentRead]:
    """What ``agent`` read, newest first (memories forgotten since are gone with their reads)."""
    rows = conn.execute(
        "SELECT r.memory_id, m.store, substr(m.text, 1, 300), r.via, r.at FROM memory_read r "
        "JOIN memory m ON m.id = r.memory_id WHERE r.agent = ? ORDER BY r.at DESC, r.id DESC "
        "LIMIT ?", (agent, limit))
    return [AgentRead(MemoryId(r[0]), Store(r[1]), str(r[2]), r[3], float(r[4])) for r in rows]


def agents_of(conn: Connection, ids: Sequence[int]) -> dict[int, str]:
    """Each memory's agent (its scope), for checking what an assistant may see."""
    out: dict[int, str] = {}
    for part in chunks(list(ids)):
        out.update((int(r[0]), str(r[1])) for r in conn.execute(
            f"SELECT id, agent FROM memory WHERE id IN ({marks(len(part))})", part))
    return out
