-- Kept schema 0030: the sync journal (issue 29, docs/sync_ops.md). Empty and unused while the
-- setting sync.journal is off.

-- A memory's global id: the name every device knows it by (local ids differ per device). The
-- row goes with the memory (a forget deletes it); the forget op keeps the gid.
CREATE TABLE sync_gids (
    memory_id INTEGER PRIMARY KEY REFERENCES memory(id) ON DELETE CASCADE,
    gid       TEXT NOT NULL UNIQUE
);

-- This device's ops not yet sent (the op's JSON as app/sync/ops.py writes it). ``targets``:
-- the gids it is about, comma-separated, so a forget can drop the unsent ops that carry what
-- it forgets.
CREATE TABLE sync_ops (
    id      TEXT PRIMARY KEY,
    seq     INTEGER NOT NULL,
    idx     INTEGER NOT NULL,
    hlc     TEXT NOT NULL,
    kind    TEXT NOT NULL,
    targets TEXT NOT NULL,
    op      TEXT NOT NULL
);
CREATE INDEX sync_ops_order ON sync_ops(seq, idx);

-- Gids forgotten on any device: ids only, kept for good, so a late op about one is never
-- written or applied (Syncthing's deletion records expire and files come back; these do not).
CREATE TABLE sync_forgotten (
    gid TEXT PRIMARY KEY
) WITHOUT ROWID;

-- This device's clock: its id, the next batch sequence and the last stamp it wrote, so the
-- clock never goes back across restarts.
CREATE TABLE sync_clock (
    one      INTEGER PRIMARY KEY CHECK (one = 1),
    device   TEXT NOT NULL,
    next_seq INTEGER NOT NULL,
    last_hlc TEXT
);
