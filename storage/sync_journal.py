"""The sync journal's rows (migration 0030, issue 29). Layer: storage. Runs on: the db-writer
thread for writes, any reader thread for reads; every function takes the connection it is lent.

Plain rows only: what an op means is ``app/sync``'s business. ``app/sync/journal.py`` reaches
these through ``app.bootstrap.sync_journal_rows``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from storage.batching import chunks, marks
from storage.sqlcipher import Connection


class SyncJournalRows:
    """Stateless; one instance serves every connection."""

    def clock(self, conn: Connection) -> tuple[str, int, str | None] | None:
        row = conn.execute("SELECT device, next_seq, last_hlc FROM sync_clock WHERE one = 1"
                           ).fetchone()
        return None if row is None else (str(row[0]), int(row[1]), row[2])

    def save_clock(self, conn: Connection, device: str, next_seq: int, last_hlc: str) -> None:
        conn.execute("INSERT INTO sync_clock (one, device, next_seq, last_hlc) VALUES (1,?,?,?) "
                     "ON CONFLICT(one) DO UPDATE SET device = excluded.device, "
                     "next_seq = excluded.next_seq, last_hlc = excluded.last_hlc",
                     (device, next_seq, last_hlc))

    def gids(self, conn: Connection, memory_ids: Sequence[int]) -> dict[int, str]:
        out: dict[int, str] = {}
        for part in chunks(list(memory_ids)):
            qs = marks(len(part))
            out.update((int(m), str(g)) for m, g in conn.execute(
                f"SELECT memory_id, gid FROM sync_gids WHERE memory_id IN ({qs})", part))
        return out

    def memory_ids(self, conn: Connection, gids: Sequence[str]) -> dict[str, int]:
        out: dict[str, int] = {}
        for part in chunks(list(gids)):
            qs = marks(len(part))
            out.update((str(g), int(m)) for g, m in conn.execute(
                f"SELECT gid, memory_id FROM sync_gids WHERE gid IN ({qs})", part))
        return out

    def name(self, conn: Connection, memory_id: int, gid: str) -> None:
        conn.execute("INSERT INTO sync_gids (memory_id, gid) VALUES (?, ?)", (memory_id, gid))

    def append(self, conn: Connection, ops: Sequence[dict[str, Any]],
               targets: Sequence[Sequence[str]]) -> None:
        """Ops as ``Op.to_dict`` gives them, with the gids each is about."""
        for op, about in zip(ops, targets, strict=True):
            _dev, seq, idx = str(op["id"]).split(":")
            conn.execute(
                "INSERT INTO sync_ops (id, seq, idx, hlc, kind, targets, op) "
                "VALUES (?,?,?,?,?,?,?)",
                (op["id"], int(seq), int(idx), op["hlc"], op["kind"], ",".join(sorted(about)),
                 json.dumps(op, sort_keys=True, separators=(",", ":"), ensure_ascii=False)))

    def unsent(self, conn: Connection, limit: int) -> list[dict[str, Any]]:
        rows = conn.execute("SELECT op FROM sync_ops ORDER BY seq, idx LIMIT ?", (limit,))
        return [json.loads(r[0]) for r in rows]

    def count_unsent(self, conn: Connection) -> int:
        return int(conn.execute("SELECT count(*) FROM sync_ops").fetchone()[0])

    def sent(self, conn: Connection, op_ids: Sequence[str]) -> None:
        for part in chunks(list(op_ids)):
            qs = marks(len(part))
            conn.execute(f"DELETE FROM sync_ops WHERE id IN ({qs})", part)

    def forget(self, conn: Connection, gids: Sequence[str], keep: str | None) -> int:
        """Record ``gids`` as forgotten for good and delete every unsent op about one of them
        (but ``keep``, the forget op itself); the number deleted."""
        conn.executemany("INSERT OR IGNORE INTO sync_forgotten (gid) VALUES (?)",
                         [(g,) for g in gids])
        gone = set(gids)
        doomed = [str(i) for i, t in conn.execute("SELECT id, targets FROM sync_ops")
                  if i != keep and gone & set(str(t).split(","))]
        self.sent(conn, doomed)
        return len(doomed)

    def forgotten(self, conn: Connection, gids: Sequence[str] | None = None) -> set[str]:
        """Which of ``gids`` (None: all) were forgotten."""
        if gids is None:
            return {str(r[0]) for r in conn.execute("SELECT gid FROM sync_forgotten")}
        out: set[str] = set()
        for part in chunks(list(gids)):
            qs = marks(len(part))
            out.update(str(r[0]) for r in conn.execute(
                f"SELECT gid FROM sync_forgotten WHERE gid IN ({qs})", part))
        return out
