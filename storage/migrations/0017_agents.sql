-- Kept schema 0017 (issue 14): assistants connect through `kept mcp --agent NAME`.
-- agent: the assistants the person paired. Only a SHA-256 of each key is kept (the key is 32
-- random bytes, shown once: a slow KDF adds nothing against guessing). A revoked agent keeps
-- its row (its memories still name it) and can be paired again with a new key.
CREATE TABLE agent (
    name         TEXT PRIMARY KEY,
    key_hash     TEXT NOT NULL,
    created_at   REAL NOT NULL,
    revoked_at   REAL,
    last_seen_at REAL
);
-- pending_forget: an assistant's request to forget (request_forget). Nothing is forgotten
-- until the person confirms it in the window or with `kept forget --pending`; it holds ids
-- only (the memories' text stays in the memory table), and goes with them when forgotten.
CREATE TABLE pending_forget (
    id          INTEGER PRIMARY KEY,
    agent       TEXT NOT NULL,
    memory_ids  TEXT NOT NULL,          -- JSON list of ints
    query       TEXT,
    reason      TEXT NOT NULL DEFAULT '',
    created_at  REAL NOT NULL,
    status      TEXT NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'done', 'declined')),
    decided_at  REAL
);
CREATE INDEX pending_forget_status ON pending_forget(status, id);
-- memory_read: when an assistant read a memory (recall, context, explain): ids and times only,
-- shown in the window's detail pane. It goes with the memory (cascade on forget); the newest
-- READS_KEPT per memory are kept.
CREATE TABLE memory_read (
    id        INTEGER PRIMARY KEY,
    memory_id INTEGER NOT NULL REFERENCES memory(id) ON DELETE CASCADE,
    agent     TEXT NOT NULL,
    via       TEXT NOT NULL CHECK (via IN ('recall', 'context', 'explain')),
    at        REAL NOT NULL
);
CREATE INDEX memory_read_memory ON memory_read(memory_id, at);
