-- Sync across devices (issue 29, app/sync/keys.py): this device's keys and what it trusts, inside
-- the SQLCipher vault so no key is ever in clear on disk (docs/sync.md#the-keys).
-- sync_self: this device (one row): its vault id, its secret (Ed25519 seed + X25519 key, 64
-- bytes), its name, and the founding device's public key, the root of trust from pairing.
CREATE TABLE sync_self (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    vault_id TEXT NOT NULL,
    device_id TEXT NOT NULL,
    secret BLOB NOT NULL,
    name TEXT NOT NULL,
    founder_key BLOB NOT NULL,
    created_at REAL NOT NULL
);
-- Known devices: the founder's certificate of each (verified before it is stored).
CREATE TABLE sync_device (
    device_id TEXT PRIMARY KEY,
    certificate BLOB NOT NULL,
    added_at REAL NOT NULL,
    last_seen_at REAL
);
-- The newest verified revocation list (its version only grows).
CREATE TABLE sync_revocations (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL,
    body BLOB NOT NULL
);
-- Epoch keys this device holds; a destroyed key keeps its number and loses its bytes
-- (secure_delete is on, so the old bytes are overwritten in the page).
CREATE TABLE sync_epoch_key (
    epoch INTEGER PRIMARY KEY,
    key BLOB,
    created_at REAL NOT NULL,
    destroyed_at REAL,
    CHECK ((key IS NULL) = (destroyed_at IS NOT NULL))
);
-- Read cursors: per device, the last sequence applied and that segment's SHA-256 (this
-- device's own row is its write cursor).
CREATE TABLE sync_cursor (
    device_id TEXT PRIMARY KEY,
    last_seq INTEGER NOT NULL,
    last_hash BLOB NOT NULL,
    updated_at REAL NOT NULL
);
