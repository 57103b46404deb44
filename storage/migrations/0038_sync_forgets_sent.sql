-- Kept schema 0038: the forgets this device wrote to the sync folder (issue 29 item 4,
-- app/sync/engine.py, docs/sync.md#epochs), so the window can say "Forgotten on 2 of 3
-- devices" for each. Numbers and times only: which of this device's log segments held forget
-- ops, when it was written, and how many memories they named (no gid, no text).
CREATE TABLE sync_forget_sent (
    seq        INTEGER PRIMARY KEY,
    written_at REAL NOT NULL,
    memories   INTEGER NOT NULL CHECK (memories > 0)
);
