-- 0006: FTS5 no longer merges segments inside the commit that makes a merge due (automerge),
-- which made the odd commit several times longer than the rest; the writer merges in short
-- steps of their own right after its commits instead (store.merge_fts). crisismerge (16
-- segments on one level) stays as the backstop should a writer never get to its merges.
INSERT INTO entries_fts(entries_fts, rank) VALUES('automerge', 0);
INSERT INTO entries_bulk(entries_bulk, rank) VALUES('automerge', 0);
