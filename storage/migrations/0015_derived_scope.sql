-- Kept schema 0015 (issue 12): what consolidation derives keeps the scope (agent, context) of
-- its sources, and nothing is compared, merged or summarised across two scopes (DESIGN 4).
-- Entities get a scope, so one name can be a person in two agents' scopes; a statistic's scope
-- is its memory's, so one metric can exist once per scope.

CREATE TABLE entity_scoped (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    kind       TEXT NOT NULL CHECK (kind IN ('person','company','project','area','resource','archive')),
    name       TEXT NOT NULL,
    name_key   TEXT NOT NULL,
    agent      TEXT NOT NULL DEFAULT 'global',
    context    TEXT,
    summary    TEXT,
    status     TEXT NOT NULL DEFAULT 'active',
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE UNIQUE INDEX entity_scoped_name ON entity_scoped(kind, name_key, agent, ifnull(context, ''));
CREATE TABLE entity_mention_scoped (
    entity_id INTEGER NOT NULL REFERENCES entity_scoped(id) ON DELETE CASCADE,
    memory_id INTEGER NOT NULL REFERENCES memory(id) ON DELETE CASCADE,
    PRIMARY KEY (entity_id, memory_id)
) WITHOUT ROWID;

INSERT INTO entity_scoped (id, kind, name, name_key, summary, status, created_at, updated_at)
SELECT id, kind, name, name_key, summary, status, created_at, updated_at FROM entity;
-- Ids are never reused: carry the old counter over.
INSERT INTO sqlite_sequence (name, seq)
SELECT 'entity_scoped', seq FROM sqlite_sequence WHERE name = 'entity'
  AND NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'entity_scoped');
UPDATE sqlite_sequence SET seq = max(seq, (SELECT coalesce(max(seq), 0) FROM sqlite_sequence
                                           WHERE name = 'entity'))
WHERE name = 'entity_scoped';

-- Every entity so far is global: a global entity's summary written from another scope's facts
-- is dropped (the next synthesis writes it again from its own scope), and so are its mentions
-- by scoped memories (the next run links them to entities of their own scope).
UPDATE entity_scoped SET summary = NULL WHERE id IN (
    SELECT em.entity_id FROM entity_mention em JOIN memory m ON m.id = em.memory_id
    WHERE m.agent != 'global' OR m.context IS NOT NULL);
INSERT INTO entity_mention_scoped (entity_id, memory_id)
SELECT em.entity_id, em.memory_id FROM entity_mention em JOIN memory m ON m.id = em.memory_id
WHERE m.agent = 'global' AND m.context IS NULL;

DROP TABLE entity_mention;
DROP TABLE entity;
ALTER TABLE entity_scoped RENAME TO entity;
ALTER TABLE entity_mention_scoped RENAME TO entity_mention;
CREATE INDEX entity_mention_memory ON entity_mention(memory_id);

CREATE TABLE statistic_scoped (
    memory_id   INTEGER PRIMARY KEY REFERENCES memory(id) ON DELETE CASCADE,
    metric      TEXT NOT NULL,
    value       REAL NOT NULL,
    sample_size INTEGER NOT NULL,
    computed_at REAL NOT NULL
);
INSERT INTO statistic_scoped SELECT memory_id, metric, value, sample_size, computed_at
FROM statistic;
DROP TABLE statistic;
ALTER TABLE statistic_scoped RENAME TO statistic;
CREATE INDEX statistic_metric ON statistic(metric);

-- Repair: facts and habits learned from a scoped memory were written as global. They take the
-- scope of their scoped source (the narrowest; where sources came from two agents, the first).
UPDATE memory SET agent = (
    SELECT s.agent FROM link l JOIN memory s ON s.id = l.dst
    WHERE l.src = memory.id AND l.kind = 'DERIVED_FROM' AND s.agent != 'global'
    ORDER BY s.id LIMIT 1)
WHERE store IN ('semantic', 'procedural') AND agent = 'global' AND EXISTS (
    SELECT 1 FROM link l JOIN memory s ON s.id = l.dst
    WHERE l.src = memory.id AND l.kind = 'DERIVED_FROM' AND s.agent != 'global');
UPDATE memory SET context = (
    SELECT s.context FROM link l JOIN memory s ON s.id = l.dst
    WHERE l.src = memory.id AND l.kind = 'DERIVED_FROM' AND s.context IS NOT NULL
    ORDER BY s.id LIMIT 1)
WHERE store IN ('semantic', 'procedural') AND context IS NULL AND EXISTS (
    SELECT 1 FROM link l JOIN memory s ON s.id = l.dst
    WHERE l.src = memory.id AND l.kind = 'DERIVED_FROM' AND s.context IS NOT NULL);

-- Near-duplicate links between two scopes are dropped (never merged across scopes).
DELETE FROM link WHERE kind = 'SIMILAR_TO' AND EXISTS (
    SELECT 1 FROM memory a, memory b WHERE a.id = link.src AND b.id = link.dst
    AND (a.agent != b.agent OR a.context IS NOT b.context));
