-- Kept schema 0003 (issue 12): an LLM's request to forget a memory becomes a review request of
-- that one memory (kind 'review', a = b), no longer a "contradiction" of the memory with itself,
-- whose Keep A marked the memory superseded by itself and hid it from recall.
ALTER TABLE contradiction ADD COLUMN kind TEXT NOT NULL DEFAULT 'contradiction'
    CHECK (kind IN ('contradiction', 'review'));

-- The inbox reads one list's ids at a time (open oldest first, settled newest first).
CREATE INDEX contradiction_status ON contradiction(status, id);

-- Rows written the old way: the request's reason was prefixed with "review: ".
UPDATE contradiction SET kind = 'review',
       reason = CASE WHEN reason LIKE 'review: %' THEN substr(reason, 9) ELSE reason END
WHERE a = b;

-- Repair: a memory superseded by itself goes back to what it was before (active, or archived
-- when it was archived), with a history entry saying why.
INSERT INTO history (memory_id, at, action, text, detail)
SELECT id, (julianday('now') - 2440587.5) * 86400.0, 'restored', NULL,
       'had been marked superseded by itself by a review request; restored (issue 12)'
FROM memory WHERE superseded_by = id;

UPDATE memory SET
    status = CASE WHEN (SELECT json_extract(c.resolution, '$.prior."' || memory.id || '".status')
                        FROM contradiction c WHERE c.a = memory.id AND c.b = memory.id)
                       = 'archived' THEN 'archived' ELSE 'active' END,
    superseded_by = NULL
WHERE superseded_by = id;

DELETE FROM link WHERE src = dst AND kind = 'SUPERSEDES';

-- "Both true at different times" on one memory ended it at its own date: undo that, and ask
-- again (the old answer did not mean anything).
UPDATE memory SET valid_until = (
    SELECT json_extract(c.resolution, '$.prior."' || memory.id || '".valid_until')
    FROM contradiction c WHERE c.a = memory.id AND c.b = memory.id)
WHERE id IN (SELECT a FROM contradiction WHERE kind = 'review' AND status = 'resolved'
             AND json_extract(resolution, '$.keep') = 'both')
  AND valid_until = occurred_at;

UPDATE contradiction SET status = 'open', resolution = NULL, resolved_at = NULL
WHERE kind = 'review' AND status = 'resolved' AND json_extract(resolution, '$.keep') = 'both';

-- Keep A / Keep B on one memory said "this is right": that is the review's "still true" (the
-- memory stays confirmed, as Keep did; undo restores what it was before).
UPDATE contradiction SET resolution = json_set(resolution, '$.keep', 'still_true',
                                               '$.was', json_extract(resolution, '$.keep'))
WHERE kind = 'review' AND status = 'resolved' AND json_extract(resolution, '$.keep') IN ('a', 'b');
