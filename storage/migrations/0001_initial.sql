-- Kept schema 0001: DESIGN.md section 4. Times are UTC epoch seconds (REAL).
-- Working memory lives in RAM only and has no table.

CREATE TABLE memory (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused, so a forgotten id never returns
    store            TEXT NOT NULL CHECK (store IN ('short_term','episodic','semantic','procedural','implicit')),
    text             TEXT NOT NULL,
    created_at       REAL NOT NULL,                      -- learned at
    occurred_at      REAL NOT NULL,                      -- when it happened
    agent            TEXT NOT NULL DEFAULT 'global',
    context          TEXT,
    importance       REAL NOT NULL DEFAULT 0.5,
    recency          REAL NOT NULL DEFAULT 1.0,
    frequency        REAL NOT NULL DEFAULT 0.0,
    emotional        REAL NOT NULL DEFAULT 0.0,
    social           REAL NOT NULL DEFAULT 0.0,
    composite        REAL NOT NULL DEFAULT 0.0,
    confidence       REAL NOT NULL DEFAULT 0.5,
    access_count     INTEGER NOT NULL DEFAULT 0,
    last_accessed_at REAL,
    reinforced_at    REAL,
    emotional_reinforced_at REAL,
    status           TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active','superseded','archived')),
    superseded_by    INTEGER REFERENCES memory(id) ON DELETE SET NULL,
    decay_class      TEXT NOT NULL CHECK (decay_class IN ('working','episodic','semantic','social','emotional')),
    valid_from       REAL,
    valid_until      REAL,
    user_validated   INTEGER NOT NULL DEFAULT 0,
    session          TEXT,
    speaker          TEXT,
    seq              INTEGER,
    ref              TEXT
);
CREATE INDEX memory_store_order ON memory(store, status, occurred_at, id);
CREATE INDEX memory_occurred ON memory(occurred_at, id);
CREATE INDEX memory_session_ref ON memory(session, ref);
CREATE INDEX memory_session_seq ON memory(session, store, seq);
CREATE INDEX memory_superseded_by ON memory(superseded_by);

-- Store-specific columns.
CREATE TABLE episode (
    memory_id  INTEGER PRIMARY KEY REFERENCES memory(id) ON DELETE CASCADE,
    event_type TEXT NOT NULL DEFAULT 'conversation',
    actors     TEXT,             -- JSON list of names
    outcome    TEXT,
    details    TEXT
);
CREATE TABLE fact (
    memory_id  INTEGER PRIMARY KEY REFERENCES memory(id) ON DELETE CASCADE,
    subject    TEXT,
    predicate  TEXT,
    object     TEXT,
    category   TEXT
);
CREATE INDEX fact_sp ON fact(subject, predicate);
CREATE TABLE procedure (
    memory_id     INTEGER PRIMARY KEY REFERENCES memory(id) ON DELETE CASCADE,
    kind          TEXT NOT NULL DEFAULT 'procedure' CHECK (kind IN ('procedure','preference')),
    trigger       TEXT,
    actions       TEXT,          -- JSON list
    success_count INTEGER NOT NULL DEFAULT 0,
    failure_count INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE statistic (
    memory_id   INTEGER PRIMARY KEY REFERENCES memory(id) ON DELETE CASCADE,
    metric      TEXT NOT NULL UNIQUE,
    value       REAL NOT NULL,
    sample_size INTEGER NOT NULL,
    computed_at REAL NOT NULL
);

-- Links (DESIGN 4): RELATES_TO, PRECEDED_BY, SIMILAR_TO, MENTIONS, REINFORCES, PROMOTED_FROM,
-- DERIVED_FROM (src derived from dst), SUPERSEDES (src supersedes dst), CONTRADICTS.
CREATE TABLE link (
    src        INTEGER NOT NULL REFERENCES memory(id) ON DELETE CASCADE,
    dst        INTEGER NOT NULL REFERENCES memory(id) ON DELETE CASCADE,
    kind       TEXT NOT NULL,
    weight     REAL NOT NULL DEFAULT 1.0,
    created_at REAL NOT NULL,
    PRIMARY KEY (src, dst, kind)
) WITHOUT ROWID;
CREATE INDEX link_dst ON link(dst, kind);

-- PARA entities (000/001).
CREATE TABLE entity (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    kind       TEXT NOT NULL CHECK (kind IN ('person','company','project','area','resource','archive')),
    name       TEXT NOT NULL,
    name_key   TEXT NOT NULL,
    summary    TEXT,
    status     TEXT NOT NULL DEFAULT 'active',
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    UNIQUE (kind, name_key)
);
CREATE TABLE entity_mention (
    entity_id INTEGER NOT NULL REFERENCES entity(id) ON DELETE CASCADE,
    memory_id INTEGER NOT NULL REFERENCES memory(id) ON DELETE CASCADE,
    PRIMARY KEY (entity_id, memory_id)
) WITHOUT ROWID;
CREATE INDEX entity_mention_memory ON entity_mention(memory_id);

CREATE TABLE contradiction (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    a           INTEGER NOT NULL REFERENCES memory(id) ON DELETE CASCADE,
    b           INTEGER NOT NULL REFERENCES memory(id) ON DELETE CASCADE,
    reason      TEXT NOT NULL,
    status      TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open','auto','resolved')),
    resolution  TEXT,
    run_id      INTEGER REFERENCES run(id) ON DELETE SET NULL,
    created_at  REAL NOT NULL,
    resolved_at REAL,
    UNIQUE (a, b)
);

-- Edits and supersessions; forget purges a memory's entries through the cascade.
CREATE TABLE history (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    memory_id INTEGER NOT NULL REFERENCES memory(id) ON DELETE CASCADE,
    at        REAL NOT NULL,
    action    TEXT NOT NULL,
    text      TEXT,
    detail    TEXT
);
CREATE INDEX history_memory ON history(memory_id, at);

-- Vectors as float32 blobs; the in-RAM index is rebuilt from these at unlock.
CREATE TABLE vector (
    memory_id INTEGER PRIMARY KEY REFERENCES memory(id) ON DELETE CASCADE,
    model     TEXT NOT NULL,
    dim       INTEGER NOT NULL,
    vec       BLOB NOT NULL
);

-- Full text; rowid = memory.id. ``keys``: who said it and when, written out; ``ctx``: the
-- same-session turns within 2 of it (a question's words are often in the turn before the
-- answer: +.09 R@10 on LoCoMo dev).
CREATE VIRTUAL TABLE memory_fts USING fts5(text, keys, ctx, tokenize = 'porter unicode61 remove_diacritics 2');
INSERT INTO memory_fts(memory_fts, rank) VALUES ('secure-delete', 1);

-- Consolidation runs and their undo log.
CREATE TABLE run (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    kind        TEXT NOT NULL,
    started_at  REAL NOT NULL,
    finished_at REAL,
    status      TEXT NOT NULL DEFAULT 'running',
    report      TEXT,
    undone_at   REAL
);
CREATE TABLE run_change (
    run_id    INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
    seq       INTEGER NOT NULL,
    kind      TEXT NOT NULL,
    memory_id INTEGER REFERENCES memory(id) ON DELETE CASCADE,
    payload   TEXT,
    PRIMARY KEY (run_id, seq)
);
CREATE INDEX run_change_memory ON run_change(memory_id);

-- Raw LLM replies, kept (encrypted, like everything here) when parsing fails.
CREATE TABLE llm_reply (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id     INTEGER REFERENCES run(id) ON DELETE SET NULL,
    at         REAL NOT NULL,
    raw        TEXT NOT NULL,
    error      TEXT,
    status     TEXT NOT NULL DEFAULT 'failed'
);
CREATE TABLE llm_reply_source (
    reply_id  INTEGER NOT NULL REFERENCES llm_reply(id) ON DELETE CASCADE,
    memory_id INTEGER NOT NULL REFERENCES memory(id) ON DELETE CASCADE,
    PRIMARY KEY (reply_id, memory_id)
) WITHOUT ROWID;

CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
