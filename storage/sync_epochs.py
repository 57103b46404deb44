"""Epochs of the sync key and this device's acknowledgements (issue 29 item 4; migration 0034),
and the forgets it wrote (migration 0038).
Layer: storage. Runs on: the db-writer (writes) or a reader thread (reads); every method takes
the connection it is lent and deals in numbers only. The keys are ``storage/sync_keys.py``'s
(migration 0029); this class hands them on so ``app/sync/epochs.py`` needs one rows object.
"""

from __future__ import annotations

from storage import sync_keys
from storage.sqlcipher import Connection


class SyncEpochRows:
    """Stateless; one instance serves every connection."""

    def epoch_keys(self, conn: Connection) -> dict[int, bytes]:
        return sync_keys.epoch_keys(conn)

    def put_epoch_key(self, conn: Connection, epoch: int, key: bytes, now: float) -> None:
        sync_keys.put_epoch_key(conn, epoch, key, now)

    def destroy_epoch_keys(self, conn: Connection, below: int, now: float) -> int:
        return sync_keys.destroy_epoch_keys(conn, below, now)

    def destroyed(self, conn: Connection) -> list[int]:
        """Epochs whose key this device held and destroyed, ascending."""
        return [int(e) for (e,) in conn.execute(
            "SELECT epoch FROM sync_epoch_key WHERE key IS NULL ORDER BY epoch")]

    def known_epoch(self, conn: Connection) -> int:
        """The highest epoch number this device ever used or made (0 before the first), so a
        number is never given twice even after its key was destroyed."""
        row = conn.execute("SELECT max(e) FROM (SELECT max(epoch) AS e FROM sync_epoch_key "
                           "UNION ALL SELECT max(epoch) FROM sync_epoch)").fetchone()
        return 0 if row is None or row[0] is None else int(row[0])

    def put_rotated(self, conn: Connection, epoch: int, now: float) -> None:
        conn.execute("INSERT INTO sync_epoch (epoch, rotated_at) VALUES (?, ?) "
                     "ON CONFLICT(epoch) DO UPDATE SET rotated_at = excluded.rotated_at",
                     (epoch, now))

    def last_rotation(self, conn: Connection) -> float | None:
        """When the newest key came: made here, or first stored here (the founding key, a key
        another device made); None before any key."""
        row = conn.execute("SELECT max(t) FROM (SELECT max(rotated_at) AS t FROM sync_epoch "
                           "UNION ALL SELECT max(created_at) FROM sync_epoch_key)").fetchone()
        return None if row is None or row[0] is None else float(row[0])

    def rotated_epoch(self, conn: Connection) -> int | None:
        """The newest epoch this device made, or None."""
        row = conn.execute("SELECT max(epoch) FROM sync_epoch WHERE rotated_at IS NOT NULL"
                           ).fetchone()
        return None if row is None or row[0] is None else int(row[0])

    def put_moved(self, conn: Connection, epoch: int, from_seq: int, now: float,
                  covers: str) -> None:
        """This device writes under ``epoch`` from its sequence ``from_seq`` on, having applied
        a snapshot that covered ``covers`` (JSON); kept once."""
        conn.execute("INSERT INTO sync_epoch (epoch, moved_at, from_seq, covers) "
                     "VALUES (?, ?, ?, ?) ON CONFLICT(epoch) DO UPDATE SET "
                     "moved_at = excluded.moved_at, from_seq = excluded.from_seq, "
                     "covers = excluded.covers WHERE sync_epoch.moved_at IS NULL",
                     (epoch, now, from_seq, covers))

    def moved(self, conn: Connection) -> tuple[int, int] | None:
        """(epoch, from_seq) of the newest epoch this device moved to, or None."""
        row = conn.execute("SELECT epoch, from_seq FROM sync_epoch WHERE moved_at IS NOT NULL "
                           "ORDER BY epoch DESC LIMIT 1").fetchone()
        return None if row is None else (int(row[0]), int(row[1]))

    def moved_covers(self, conn: Connection) -> dict[int, str]:
        """Per epoch this device moved to: the JSON of what its snapshot covered."""
        return {int(e): str(c) for e, c in conn.execute(
            "SELECT epoch, covers FROM sync_epoch WHERE moved_at IS NOT NULL "
            "AND covers IS NOT NULL ORDER BY epoch")}

    def put_revocations(self, conn: Connection, version: int, body: bytes) -> bool:
        return sync_keys.put_revocations(conn, version, body)

    def put_ack(self, conn: Connection, n: int, epoch: int, now: float) -> None:
        """Record acknowledgement ``n``; ``IntegrityError`` if the number was used."""
        conn.execute("INSERT INTO sync_ack_sent (n, epoch, written_at) VALUES (?, ?, ?)",
                     (n, epoch, now))

    def last_ack(self, conn: Connection) -> tuple[int, int, float] | None:
        """(number, epoch, written at) of the last acknowledgement written, or None."""
        row = conn.execute("SELECT n, epoch, written_at FROM sync_ack_sent ORDER BY n DESC "
                           "LIMIT 1").fetchone()
        return None if row is None else (int(row[0]), int(row[1]), float(row[2]))

    # --- the engine's side (migration 0038; app/sync/engine.py) -------------------------------
    def put_forget_sent(self, conn: Connection, seq: int, now: float, memories: int) -> None:
        """This device's log segment ``seq`` holds forget ops naming ``memories`` memories."""
        conn.execute("INSERT OR IGNORE INTO sync_forget_sent (seq, written_at, memories) "
                     "VALUES (?, ?, ?)", (seq, now, memories))

    def forgets_sent(self, conn: Connection, since: float, limit: int
                     ) -> list[tuple[int, float, int]]:
        """(segment, written at, memories) of the forgets this device wrote since ``since``,
        newest first, at most ``limit``."""
        return [(int(s), float(t), int(n)) for s, t, n in conn.execute(
            "SELECT seq, written_at, memories FROM sync_forget_sent WHERE written_at >= ? "
            "ORDER BY seq DESC LIMIT ?", (since, limit))]

    def unsynced_memories(self, conn: Connection, after: int, limit: int) -> list[int]:
        """Ids above ``after`` of active memories no gid names (saved before this vault's
        sync journal was on), ascending, at most ``limit``. Conversation turns (short-term)
        are not synced."""
        return [int(i) for (i,) in conn.execute(
            "SELECT m.id FROM memory m LEFT JOIN sync_gids g ON g.memory_id = m.id "
            "WHERE m.id > ? AND m.status = 'active' AND m.store != 'short_term' "
            "AND g.memory_id IS NULL ORDER BY m.id LIMIT ?", (after, limit))]
