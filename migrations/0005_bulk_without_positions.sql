-- 0005: tool output and tool-call arguments, most of a journal's bytes, are indexed in a table
-- of their own without positions (detail=none: about a fifth of the size of detail=full on
-- this text). entries_fts keeps what people and agents said, each call's name and key
-- arguments, and each result's call, with positions for phrases and bm25. An entry with bulk
-- has its whole text in entries_bulk, so all of its words can be required together there.
CREATE VIRTUAL TABLE entries_bulk USING fts5(
    body,
    content = '',
    contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2',
    detail = none
);

-- The parent of an entry is read from the journal when it is wanted; a copy in every row was
-- a sixth of the table.
ALTER TABLE entries DROP COLUMN parent_id;

-- The indexed text changed: every journal is indexed again.
INSERT INTO entries_fts(entries_fts) VALUES('delete-all');
DELETE FROM entries;
UPDATE files SET cursor = 0, size = NULL, mtime_ns = NULL, entries = 0, skipped = 0, last_ts = NULL,
                 anchor_hash = 'b8e1dda3ac0aa3820ad2990b', context_from = NULL;  -- the hash of no bytes
