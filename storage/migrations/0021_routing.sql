-- Salience routing (issue 27 item 1, reference 004): per incoming turn, its salience, the
-- stores it went to and why in plain words (never the turn's text), by the rules or the LLM.
-- `explain` shows it. Deleted with its turn.
CREATE TABLE routing (
    memory_id  INTEGER PRIMARY KEY REFERENCES memory(id) ON DELETE CASCADE,
    salience   REAL NOT NULL,
    stores     TEXT NOT NULL,        -- JSON list of store values
    reason     TEXT NOT NULL,
    by         TEXT NOT NULL DEFAULT 'rules'
);
