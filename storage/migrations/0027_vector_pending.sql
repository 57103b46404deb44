-- Memories saved by `remember` whose vector is still to be made (issue 28, one-at-a-time
-- remember >= 200/s): the row is acknowledged once it is committed; its vector, derived from the
-- text, is made afterwards in batches (app/services/vector_follow.py). A row here is written in
-- the memory's own transaction and deleted in the vector's, so a kill -9 between the two leaves
-- it here and the next unlock makes the vector. Ids only, no text; a forgotten memory's row goes
-- with it (ON DELETE CASCADE).
CREATE TABLE vector_pending (
    memory_id INTEGER PRIMARY KEY REFERENCES memory(id) ON DELETE CASCADE
);
