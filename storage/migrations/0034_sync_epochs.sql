-- Kept schema 0034: epochs of the sync key (issue 29 item 4, app/sync/epochs.py,
-- docs/sync.md#epochs). No content: numbers and times only; the keys themselves stay in
-- sync_epoch_key (0029).

-- One row per epoch this device knows of: when this device made it (its rotations; NULL for
-- an epoch another device made), when this device moved to it, from which of its own log
-- sequences it writes under it, and how far the epoch's snapshot it applied covered each
-- device's log (JSON {device: sequence}; NULL until it moved).
CREATE TABLE sync_epoch (
    epoch      INTEGER PRIMARY KEY,
    rotated_at REAL,
    moved_at   REAL,
    from_seq   INTEGER,
    covers     TEXT,
    CHECK ((moved_at IS NULL) = (from_seq IS NULL))
);

-- This device's acknowledgements as written (the number names the file v1/ack/<me>/<n>), so a
-- number is never used twice, and when the last one was written.
CREATE TABLE sync_ack_sent (
    n          INTEGER PRIMARY KEY,
    epoch      INTEGER NOT NULL,
    written_at REAL NOT NULL
);
