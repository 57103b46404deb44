-- Kept schema 0018 (issue 16): the backups this vault made (`kept backup create`), so that a
-- forget can say which of them still hold what goes and offer to make them again without it
-- (SECURITY.md requirement 15). Paths, times and counts only, never content. One row per path.
-- max_memory_id: memory ids are never reused (AUTOINCREMENT), so a backup holds memory m only
-- if m.id <= max_memory_id. dek_id: a one-way name of the data key the backup's wrap opens;
-- own_password: the backup has a password of its own (else the vault's, when it was made).
CREATE TABLE backup (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    path          TEXT NOT NULL,
    file_id       TEXT NOT NULL,
    created_at    REAL NOT NULL,
    bytes         INTEGER NOT NULL,
    memories      INTEGER NOT NULL,
    links         INTEGER NOT NULL,
    history       INTEGER NOT NULL,
    vectors       INTEGER NOT NULL,
    max_memory_id INTEGER NOT NULL,
    own_password  INTEGER NOT NULL DEFAULT 0,
    dek_id        TEXT NOT NULL
);
CREATE INDEX backup_path ON backup(path);
