-- Kept schema 0019 (issue 23 item 4): entities are typed. People, pets, places,
-- organisations (kind 'company'), projects, areas, resources, works (a book, a film, a song)
-- and archives. Before, cities, gyms, books and dogs were all 'person'. The table is rebuilt
-- (SQLite cannot change a CHECK); ids, scopes, summaries and mentions are kept.

CREATE TABLE entity_typed (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    kind       TEXT NOT NULL CHECK (kind IN ('person','pet','place','company','project','area',
                                             'resource','work','archive')),
    name       TEXT NOT NULL,
    name_key   TEXT NOT NULL,
    agent      TEXT NOT NULL DEFAULT 'global',
    context    TEXT,
    summary    TEXT,
    status     TEXT NOT NULL DEFAULT 'active',
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE entity_mention_typed (
    entity_id INTEGER NOT NULL REFERENCES entity_typed(id) ON DELETE CASCADE,
    memory_id INTEGER NOT NULL REFERENCES memory(id) ON DELETE CASCADE,
    PRIMARY KEY (entity_id, memory_id)
) WITHOUT ROWID;
INSERT INTO entity_typed (id, kind, name, name_key, agent, context, summary, status,
                          created_at, updated_at)
SELECT id, kind, name, name_key, agent, context, summary, status, created_at, updated_at
FROM entity;
INSERT INTO entity_mention_typed (entity_id, memory_id)
SELECT entity_id, memory_id FROM entity_mention;
-- Ids are never reused: carry the old counter over.
INSERT INTO sqlite_sequence (name, seq)
SELECT 'entity_typed', seq FROM sqlite_sequence WHERE name = 'entity'
  AND NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'entity_typed');
UPDATE sqlite_sequence SET seq = max(seq, (SELECT coalesce(max(seq), 0) FROM sqlite_sequence
                                           WHERE name = 'entity'))
WHERE name = 'entity_typed';
DROP TABLE entity_mention;
DROP TABLE entity;
ALTER TABLE entity_typed RENAME TO entity;
ALTER TABLE entity_mention_typed RENAME TO entity_mention;
CREATE UNIQUE INDEX entity_scoped_name ON entity(kind, name_key, agent, ifnull(context, ''));
CREATE INDEX entity_mention_memory ON entity_mention(memory_id);
