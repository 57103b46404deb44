-- Kept schema 0022 (issue 27 item 3): the PARA lifecycle and one entity per thing.
-- A project that finished (or went idle) becomes kind 'archive': ``was_kind`` keeps what it
-- was and ``ended_at`` when it ended, so the window can say "project, finished 3 May 2026".
-- A near-duplicate entity merged into another keeps its row with status 'merged' and
-- ``merged_into`` the one kept (its mentions are copied there), so undoing the merge restores
-- both exactly. ``entity_distinct`` holds the pairs the person said are different things:
-- consolidation never merges them again.
ALTER TABLE entity ADD COLUMN was_kind TEXT;
ALTER TABLE entity ADD COLUMN ended_at REAL;
ALTER TABLE entity ADD COLUMN ended_how TEXT;   -- 'finished' (said so) or 'idle'
ALTER TABLE entity ADD COLUMN merged_into INTEGER REFERENCES entity(id) ON DELETE SET NULL;
CREATE TABLE entity_merge (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    kept       INTEGER NOT NULL REFERENCES entity(id) ON DELETE CASCADE,
    merged     INTEGER NOT NULL REFERENCES entity(id) ON DELETE CASCADE,
    added      TEXT NOT NULL,           -- JSON list of memory ids copied to ``kept``
    reason     TEXT NOT NULL,           -- 'name', 'embedding' or 'kind'
    merged_at  REAL NOT NULL
);
CREATE INDEX entity_merge_kept ON entity_merge(kept);
CREATE INDEX entity_merge_merged ON entity_merge(merged);
CREATE TABLE entity_distinct (
    a INTEGER NOT NULL REFERENCES entity(id) ON DELETE CASCADE,
    b INTEGER NOT NULL REFERENCES entity(id) ON DELETE CASCADE,
    PRIMARY KEY (a, b)
) WITHOUT ROWID;
