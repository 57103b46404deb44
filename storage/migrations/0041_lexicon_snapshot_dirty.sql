-- The saved RAM lexicon survives a crash (issue 28, no slow first minute). Until now every write
-- to memory_fts deleted lexicon_snapshot_state, so after the first write of a session the saved
-- mirror was invalid until the next lock wrote it again: an unlock after a crash (or after any
-- session that did not end in a lock) rebuilt the mirror from all of memory_fts, and for its
-- first ~10 s at 100k memories each recall paid 40-50 ms instead of 15.
--
-- Now storage.lexicon.mark_fts records, in the same transaction as the write, which memory_fts
-- rows it wrote; the next unlock loads the saved mirror and re-reads only those rows. A lock
-- that saves the mirror empties the table in its transaction. Forget and a rewritten text still
-- delete the snapshot and this table (the old words must not outlive the memory). Rowids only:
-- no text; encrypted like every other page.
CREATE TABLE lexicon_snapshot_dirty (
    fts_rowid INTEGER PRIMARY KEY  -- a memory_fts rowid written since the snapshot was taken
);
