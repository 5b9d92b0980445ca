-- 0004: a tool result now knows the line of the call it answers (its text is indexed led by
-- the call's name and key arguments), and a journal knows where the agent's current context
-- starts (after its latest compaction). The indexed text changed with this (call context, our
-- own answers cut out wherever a host wrapped them), so every journal is indexed again.

ALTER TABLE entries ADD COLUMN link_offset INTEGER;  -- byte offset of the call's line, if linked
ALTER TABLE entries ADD COLUMN link_length INTEGER;
ALTER TABLE files ADD COLUMN context_from INTEGER;   -- byte offset where the live context starts

INSERT INTO entries_fts(entries_fts) VALUES('delete-all');
DELETE FROM entries;
UPDATE files SET cursor = 0, size = NULL, mtime_ns = NULL, entries = 0, skipped = 0, last_ts = NULL,
                 anchor_hash = 'b8e1dda3ac0aa3820ad2990b', context_from = NULL;  -- the hash of no bytes
