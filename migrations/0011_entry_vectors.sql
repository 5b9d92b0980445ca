-- 0011: vectors of what was said, for the optional semantic layer (journal_index/semantic.py).
-- Derived data like the FTS terms: each is the embedding of an entry's redacted words (what a
-- person or an agent said, and summaries; never tool output), 384 int8 components. Rows are
-- written in the background by `watch` and the MCP server when the `semantic` extra is
-- installed and the layer turned on (JOURNAL_INDEX_SEMANTIC, fusion.py), and stay empty otherwise. `seq` grows with each write, so a process's copy of
-- the vectors reads only the rows written since it last looked. A NULL vector marks an entry
-- that says nothing to embed (calls only), so that it is not read again. IF NOT EXISTS: an index
-- told it is older than it is (a test sets user_version back) takes this again unharmed.
CREATE TABLE IF NOT EXISTS entry_vectors (
    seq     INTEGER PRIMARY KEY AUTOINCREMENT,
    entry   INTEGER NOT NULL UNIQUE,  -- entries.rowid
    vector  BLOB
);

-- An entry forgotten (its journal rewritten, removed, reindexed) takes its vector with it: a
-- rowid used again by another entry never inherits it.
CREATE TRIGGER IF NOT EXISTS entry_vectors_forget AFTER DELETE ON entries BEGIN
    DELETE FROM entry_vectors WHERE entry = old.rowid;
END;
