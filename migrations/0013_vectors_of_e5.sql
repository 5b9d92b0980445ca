-- 0013: the semantic layer's model changed (all-MiniLM-L6-v2 -> multilingual-e5-small, stop 42):
-- a vector of the first model means nothing to the second, so every vector is forgotten and the
-- background embedding writes them again (they are derived data, like the FTS terms; nothing is
-- lost). Entries marked as saying nothing are forgotten with them and looked at again.
DELETE FROM entry_vectors;
