-- Kept schema 0040: a successor founder (issue 29, app/sync/keys.py, docs/sync.md#a-successor-founder).
-- sync_takeover: the founders' chain after the root's founder, one verified takeover record
-- per generation (signed records as they are in the folder; no content).
CREATE TABLE sync_takeover (
    generation INTEGER PRIMARY KEY CHECK (generation > 0),
    record     BLOB NOT NULL,
    added_at   REAL NOT NULL
);
-- sync_successor: the newest successor the current founder named (one row; replaced only by
-- a later generation or a higher version).
CREATE TABLE sync_successor (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    generation INTEGER NOT NULL,
    version    INTEGER NOT NULL,
    record     BLOB NOT NULL
);
