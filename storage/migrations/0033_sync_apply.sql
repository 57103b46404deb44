-- Kept schema 0033: applying other devices' sync operations to this vault (issue 29,
-- docs/sync_ops.md#applying). Empty and unused until a SyncEngine runs.

-- Which version of a memory (its gid, or the op id of an edit) this vault shows: the other
-- half of the gid <-> local memory map of sync_gids (0030). Ids only, no content.
CREATE TABLE sync_heads (
    gid     TEXT PRIMARY KEY,
    version TEXT NOT NULL
) WITHOUT ROWID;

-- Every op this vault has merged (its own once sent, and other devices'), so the merge state
-- is rebuilt after a restart. Inside the SQLCipher vault; a forget deletes every op about what
-- went (``targets``: the gids an op is about, and an Inbox op's question), as the journal does.
CREATE TABLE sync_received (
    id      TEXT PRIMARY KEY,
    targets TEXT NOT NULL,
    op      TEXT NOT NULL
) WITHOUT ROWID;

-- An Inbox question's global id <-> the local Inbox item that shows it. Ids only.
CREATE TABLE sync_questions (
    item             TEXT PRIMARY KEY,
    contradiction_id INTEGER NOT NULL UNIQUE REFERENCES contradiction(id) ON DELETE CASCADE
) WITHOUT ROWID;
