-- Kept schema 0016 (issue 12): decay used to count retention from when a memory happened, so
-- one consolidation of an imported history archived nearly all of it (100,224 of 102,906).
-- Give back to the active list what a consolidation run archived; never what the person
-- archived (an "archive" in the history not followed by a "restore"). The next decay run
-- decides again, counting from when Kept learned each memory. Undo logs stay valid: undoing
-- such a run sets these memories active, which they already are.
UPDATE memory SET status = 'active'
WHERE status = 'archived'
  AND id IN (SELECT rc.memory_id FROM run_change rc
             WHERE rc.kind = 'status' AND rc.memory_id IS NOT NULL
               AND json_extract(rc.payload, '$.status') = 'active')
  AND NOT EXISTS (SELECT 1 FROM history h
                  WHERE h.memory_id = memory.id AND h.action = 'archive'
                    AND NOT EXISTS (SELECT 1 FROM history r
                                    WHERE r.memory_id = h.memory_id AND r.action = 'restore'
                                      AND r.id > h.id));
