"""Rows for applying other devices' sync operations (migration 0033, issue 29). Layer: storage.
Runs on: the db-writer thread for writes, any reader thread for reads; every function takes the
connection it is lent.

Plain rows only: what an op means is ``app/sync``'s business. ``app/sync/apply.py`` and
``app/sync/engine.py`` reach these through ``app.bootstrap.sync_apply_rows``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from storage import sync_keys
from storage.batching import chunks, marks
from storage.sqlcipher import Connection


class SyncApplyRows:
    """Stateless; one instance serves every connection."""

    # --- the version each gid shows here ----------------------------------------------------
    def heads(self, conn: Connection, gids: Sequence[str] | None = None) -> dict[str, str]:
        if gids is None:
            return {str(g): str(v) for g, v in conn.execute("SELECT gid, version FROM sync_heads")}
        out: dict[str, str] = {}
        for part in chunks(list(gids)):
            out.update((str(g), str(v)) for g, v in conn.execute(
                f"SELECT gid, version FROM sync_heads WHERE gid IN ({marks(len(part))})", part))
        return out

    def set_head(self, conn: Connection, gid: str, version: str) -> None:
        conn.execute("INSERT INTO sync_heads (gid, version) VALUES (?, ?) ON CONFLICT(gid) "
                     "DO UPDATE SET version = excluded.version", (gid, version))

    def move_gid(self, conn: Connection, gid: str, memory_id: int) -> None:
        """The local row that shows ``gid`` is now ``memory_id`` (a new version replaced it)."""
        conn.execute("DELETE FROM sync_gids WHERE gid = ?", (gid,))
        conn.execute("INSERT INTO sync_gids (memory_id, gid) VALUES (?, ?)", (memory_id, gid))

    # --- the ops merged here ----------------------------------------------------------------
    def keep_ops(self, conn: Connection, ops: Sequence[dict[str, Any]],
                 targets: Sequence[Iterable[str]]) -> None:
        conn.executemany(
            "INSERT OR IGNORE INTO sync_received (id, targets, op) VALUES (?, ?, ?)",
            [(str(op["id"]), ",".join(sorted(t)),
              json.dumps(op, sort_keys=True, separators=(",", ":"), ensure_ascii=False))
             for op, t in zip(ops, targets, strict=True)])

    def kept_ops(self, conn: Connection) -> list[dict[str, Any]]:
        return [json.loads(r[0]) for r in conn.execute("SELECT op FROM sync_received ORDER BY id")]

    def drop_ops_about(self, conn: Connection, gids: Iterable[str]) -> int:
        """Delete every merged op about one of ``gids`` (a forget keeps no content), and the
        decisions on a question about one of them (their text may quote what went)."""
        gone = set(gids)
        total = 0
        while gone:
            doomed: list[str] = []
            items: set[str] = set()
            for i, t, op in conn.execute("SELECT id, targets, op FROM sync_received"):
                if gone & set(str(t).split(",")):
                    doomed.append(str(i))
                    if '"inbox.propose"' in str(op):
                        items.add(str(json.loads(op)["body"]["item"]))
            for part in chunks(doomed):
                conn.execute(f"DELETE FROM sync_received WHERE id IN ({marks(len(part))})", part)
            total += len(doomed)
            for part in chunks(sorted(gone)):
                conn.execute(f"DELETE FROM sync_heads WHERE gid IN ({marks(len(part))})", part)
            gone = items
        return total

    def sources_of(self, conn: Connection, ids: Sequence[int]) -> dict[int, list[int]]:
        """The memories each of ``ids`` was derived from (its DERIVED_FROM links)."""
        out: dict[int, list[int]] = {}
        for part in chunks(list(ids)):
            for src, dst in conn.execute(
                    f"SELECT src, dst FROM link WHERE kind = 'DERIVED_FROM' AND src IN "
                    f"({marks(len(part))}) ORDER BY src, dst", part):
                out.setdefault(int(src), []).append(int(dst))
        return out

    # --- Inbox questions ----------------------------------------------------------------------
    def question(self, conn: Connection, item: str) -> int | None:
        row = conn.execute("SELECT contradiction_id FROM sync_questions WHERE item = ?",
                           (item,)).fetchone()
        return None if row is None else int(row[0])

    def name_question(self, conn: Connection, item: str, cid: int) -> None:
        conn.execute("INSERT OR IGNORE INTO sync_questions (item, contradiction_id) VALUES (?, ?)",
                     (item, cid))

    def question_of(self, conn: Connection, cid: int) -> str | None:
        row = conn.execute("SELECT item FROM sync_questions WHERE contradiction_id = ?",
                           (cid,)).fetchone()
        return None if row is None else str(row[0])

    def contradiction_of(self, conn: Connection, a: int, b: int) -> int | None:
        row = conn.execute("SELECT id FROM contradiction WHERE a = ? AND b = ?", (a, b)).fetchone()
        return None if row is None else int(row[0])

    # --- this device and its cursors (migration 0029's rows) ----------------------------------
    def adopt_device(self, conn: Connection, device: str) -> None:
        """The journal's clock takes this device's id, unless it already wrote ops."""
        conn.execute("INSERT OR IGNORE INTO sync_clock (one, device, next_seq, last_hlc) "
                     "VALUES (1, ?, 1, NULL)", (device,))

    def identity(self, conn: Connection) -> tuple[str, str, bytes, str, bytes] | None:
        return sync_keys.get_self(conn)

    def certificates(self, conn: Connection) -> list[bytes]:
        return [c for _d, c, _s in sync_keys.devices(conn)]

    def revocations(self, conn: Connection) -> bytes | None:
        return sync_keys.revocations(conn)

    def epoch_keys(self, conn: Connection) -> dict[int, bytes]:
        return sync_keys.epoch_keys(conn)

    def cursors(self, conn: Connection) -> dict[str, tuple[int, bytes]]:
        return sync_keys.cursors(conn)

    def put_cursor(self, conn: Connection, device: str, last_seq: int, last_hash: bytes,
                   now: float) -> None:
        sync_keys.put_cursor(conn, device, last_seq, last_hash, now)


def drop_device_identity(conn: Connection) -> None:
    """A restored copy of a vault is a new device: it must never write as the device the backup
    was made on (two computers with one device id write two different logs under one name,
    which every other device reports as equivocation). Drops this device's identity, its
    journal clock and which of its segments carried forgets; the ops and cursors stay (what
    the old device wrote is another device's log now, and its read cursor is right). Pairing
    gives the copy a new identity."""
    tables = {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "sync_self" in tables:
        conn.execute("DELETE FROM sync_self")
    if "sync_clock" in tables:
        conn.execute("DELETE FROM sync_clock")
    if "sync_forget_sent" in tables:  # the old device's segments, not the copy's (0038)
        conn.execute("DELETE FROM sync_forget_sent")
