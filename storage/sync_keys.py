"""This device's sync keys, known devices, epoch keys and read cursors (issue 29; migration
0029). Layer: storage. Runs on: the db-writer (writes) or a reader thread (reads); every
function takes the connection it is lent, and deals in bytes and numbers only (the crypto and
the checks are ``app/sync/keys.py``'s: this module stores what was verified there).

Everything here lives inside the SQLCipher vault: no sync key is ever in clear on disk.
"""

from __future__ import annotations

from storage.sqlcipher import Connection


def put_self(conn: Connection, vault_id: str, device_id: str, secret: bytes, name: str,
             founder_key: bytes, now: float) -> None:
    """Record this device's identity once; a second call raises ``IntegrityError`` (a device
    never silently gets a new identity)."""
    conn.execute("INSERT INTO sync_self (id, vault_id, device_id, secret, name, founder_key, "
                 "created_at) VALUES (1, ?, ?, ?, ?, ?, ?)",
                 (vault_id, device_id, secret, name, founder_key, now))


def get_self(conn: Connection) -> tuple[str, str, bytes, str, bytes] | None:
    """(vault id, device id, secret, name, founder key), or None when sync was never set up."""
    row = conn.execute("SELECT vault_id, device_id, secret, name, founder_key FROM sync_self "
                       "WHERE id = 1").fetchone()
    if row is None:
        return None
    return str(row[0]), str(row[1]), bytes(row[2]), str(row[3]), bytes(row[4])


def put_device(conn: Connection, device_id: str, certificate: bytes, now: float) -> None:
    conn.execute("INSERT INTO sync_device (device_id, certificate, added_at) VALUES (?, ?, ?) "
                 "ON CONFLICT(device_id) DO UPDATE SET certificate = excluded.certificate",
                 (device_id, certificate, now))


def devices(conn: Connection) -> list[tuple[str, bytes, float | None]]:
    """(device id, certificate bytes, last seen) in id order."""
    return [(str(d), bytes(c), None if s is None else float(s)) for d, c, s in conn.execute(
        "SELECT device_id, certificate, last_seen_at FROM sync_device ORDER BY device_id")]


def seen(conn: Connection, device_id: str, now: float) -> None:
    conn.execute("UPDATE sync_device SET last_seen_at = ? WHERE device_id = ?", (now, device_id))


def put_revocations(conn: Connection, version: int, body: bytes) -> bool:
    """Keep the list if it is newer than the one held; True if kept."""
    cur = conn.execute(
        "INSERT INTO sync_revocations (id, version, body) VALUES (1, ?, ?) ON CONFLICT(id) DO "
        "UPDATE SET version = excluded.version, body = excluded.body "
        "WHERE excluded.version > sync_revocations.version", (version, body))
    return cur.rowcount > 0


def revocations(conn: Connection) -> bytes | None:
    row = conn.execute("SELECT body FROM sync_revocations WHERE id = 1").fetchone()
    return None if row is None else bytes(row[0])


def put_epoch_key(conn: Connection, epoch: int, key: bytes, now: float) -> None:
    """Keep an epoch key. A key destroyed once is never taken back (``IntegrityError``
    is not raised: the row stays destroyed and the call does nothing)."""
    conn.execute("INSERT INTO sync_epoch_key (epoch, key, created_at) VALUES (?, ?, ?) "
                 "ON CONFLICT(epoch) DO NOTHING", (epoch, key, now))


def epoch_keys(conn: Connection) -> dict[int, bytes]:
    """The keys still held, by epoch."""
    return {int(e): bytes(k) for e, k in conn.execute(
        "SELECT epoch, key FROM sync_epoch_key WHERE key IS NOT NULL ORDER BY epoch")}


def destroy_epoch_keys(conn: Connection, below: int, now: float) -> int:
    """Destroy every key of an epoch lower than ``below`` (after every device acknowledged the
    newer one); the bytes are overwritten in place (``secure_delete``). Returns how many."""
    cur = conn.execute("UPDATE sync_epoch_key SET key = NULL, destroyed_at = ? "
                       "WHERE epoch < ? AND key IS NOT NULL", (now, below))
    return int(cur.rowcount)


def put_cursor(conn: Connection, device_id: str, last_seq: int, last_hash: bytes,
               now: float) -> None:
    """Move a device's cursor forward; a cursor never moves back (a lower sequence is ignored),
    so a late or repeated save after a crash cannot rewind what was applied."""
    conn.execute(
        "INSERT INTO sync_cursor (device_id, last_seq, last_hash, updated_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT(device_id) DO UPDATE SET last_seq = excluded.last_seq, "
        "last_hash = excluded.last_hash, updated_at = excluded.updated_at "
        "WHERE excluded.last_seq > sync_cursor.last_seq", (device_id, last_seq, last_hash, now))


def cursors(conn: Connection) -> dict[str, tuple[int, bytes]]:
    return {str(d): (int(s), bytes(h)) for d, s, h in conn.execute(
        "SELECT device_id, last_seq, last_hash FROM sync_cursor ORDER BY device_id")}


def put_takeover(conn: Connection, generation: int, record: bytes, now: float) -> None:
    """Keep a verified takeover record (migration 0040); one per generation, never replaced."""
    conn.execute("INSERT INTO sync_takeover (generation, record, added_at) VALUES (?, ?, ?) "
                 "ON CONFLICT(generation) DO NOTHING", (generation, record, now))


def takeovers(conn: Connection) -> list[bytes]:
    """The takeover records held, in generation order."""
    return [bytes(r) for (r,) in conn.execute(
        "SELECT record FROM sync_takeover ORDER BY generation")]


def put_successor(conn: Connection, generation: int, version: int, record: bytes) -> bool:
    """Keep the successor record if it is of a later generation, or of this one and a higher
    version, than the one held; True if kept."""
    cur = conn.execute(
        "INSERT INTO sync_successor (id, generation, version, record) VALUES (1, ?, ?, ?) "
        "ON CONFLICT(id) DO UPDATE SET generation = excluded.generation, "
        "version = excluded.version, record = excluded.record "
        "WHERE excluded.generation > sync_successor.generation OR (excluded.generation = "
        "sync_successor.generation AND excluded.version > sync_successor.version)",
        (generation, version, record))
    return cur.rowcount > 0


def successor(conn: Connection) -> bytes | None:
    row = conn.execute("SELECT record FROM sync_successor WHERE id = 1").fetchone()
    return None if row is None else bytes(row[0])
