-- The RAM lexicon saved inside the vault (issue 28, no slow first minute). Building the mirror of
-- memory_fts (storage/lexicon.py) takes seconds on a big vault, and until it is ready every
-- recall pays FTS5's scoring (100k memories: 50-300 ms instead of 2). So on lock the mirror is
-- written here, and the next unlock loads it in a fraction of the time instead of rebuilding it.
-- Encrypted like every other page; nothing is readable on disk.
--
-- lexicon_snapshot holds the arrays (one row); lexicon_snapshot_state says it is still valid:
-- the FTS5 records it was taken at (structure and averages: any write to memory_fts changes
-- them), and storage.lexicon.mark_fts deletes the state row in every transaction that writes
-- memory_fts, so a snapshot is never loaded over rows it does not hold. Forget deletes the
-- snapshot itself (its terms must not outlive the memory).
CREATE TABLE lexicon_snapshot (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    terms BLOB NOT NULL,      -- the terms, NUL-separated, in term-id order
    counts BLOB NOT NULL,     -- int64 postings per term (term-id order)
    slots BLOB NOT NULL,      -- int32 slot of every posting, term by term
    freqs BLOB NOT NULL,      -- float32 weighted frequency of every posting
    rowids BLOB NOT NULL,     -- int64 memory_fts rowid of every slot
    lens BLOB NOT NULL,       -- float64 tokens of every slot
    alive BLOB NOT NULL,      -- uint8 per slot
    n_alive INTEGER NOT NULL,
    tokens REAL NOT NULL
);

CREATE TABLE lexicon_snapshot_state (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    fts_state BLOB NOT NULL   -- memory_fts_data records 10 (structure) and 1 (averages)
);
