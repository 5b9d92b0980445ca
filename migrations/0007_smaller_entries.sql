-- 0007: a smaller entries table (it had become the index's largest part after the FTS tables).
--
-- * kind and role, a handful of names repeated in every row, are stored as one small number
--   (kind_role: 0 and 1, the most common pairs, take no bytes at all); a pair this version does
--   not know is kept as text in `names` (kind, char(31), role).
-- * the entry id is stored in the shape it has: eight hex digits as their number (id_num ≥ 0);
--   a synthetic "v1.<offset>.<crc>" id (pi version 1, Codex) as its CRC (id_num < 0, the
--   offset is the row's own); a UUID as its 16 bytes (id_text BLOB); anything else as text.
-- * entry_id, kind and role are read back through virtual generated columns of the same names,
--   so every query, index and tool reads them as before (PRAGMA table_info lists only stored
--   columns; table_xinfo lists these too).
-- * entries_ts goes: the planner used it only for a since/until range without a query (an
--   unfiltered newest-first listing already scans the journals in scope and sorts), which now
--   scans and sorts the same way.
-- Rows indexed before keep their ids as text; nothing is indexed again.

DROP INDEX entries_ts;
DROP INDEX entries_entry_id;
DROP INDEX entries_summaries;

ALTER TABLE entries ADD COLUMN kind_role INTEGER;
ALTER TABLE entries ADD COLUMN names TEXT;
ALTER TABLE entries ADD COLUMN id_num INTEGER;
ALTER TABLE entries ADD COLUMN id_text BLOB;  -- no affinity: a text id stays text, a UUID is its bytes

UPDATE entries SET
    id_text = entry_id,
    kind_role = CASE
        WHEN kind = 'assistant' AND role IS 'assistant' THEN 0
        WHEN kind = 'tool_result' AND role IS 'toolResult' THEN 1
        WHEN kind = 'user' AND role IS 'user' THEN 2
        WHEN kind = 'tool_result' AND role IS 'user' THEN 3
        WHEN kind = 'tool_result' AND role IS 'tool' THEN 4
        WHEN kind = 'bash' AND role IS 'bashExecution' THEN 5
        WHEN kind = 'custom' AND role IS 'custom' THEN 6
        WHEN kind = 'custom' AND role IS 'hookMessage' THEN 7
        WHEN kind = 'compaction' AND role IS NULL THEN 8
        WHEN kind = 'branch_summary' AND role IS NULL THEN 9
        WHEN kind = 'context_edit' AND role IS NULL THEN 10
    END;
UPDATE entries SET names = kind || char(31) || coalesce(role, '') WHERE kind_role IS NULL;

ALTER TABLE entries DROP COLUMN entry_id;
ALTER TABLE entries DROP COLUMN kind;
ALTER TABLE entries DROP COLUMN role;

ALTER TABLE entries ADD COLUMN entry_id TEXT GENERATED ALWAYS AS (CASE
    WHEN id_num IS NULL THEN CASE WHEN typeof(id_text) = 'blob' THEN lower(
        substr(hex(id_text), 1, 8) || '-' || substr(hex(id_text), 9, 4) || '-' || substr(hex(id_text), 13, 4)
        || '-' || substr(hex(id_text), 17, 4) || '-' || substr(hex(id_text), 21)) ELSE id_text END
    WHEN id_num >= 0 THEN printf('%08x', id_num)
    ELSE printf('v1.%x.%08x', "offset", -1 - id_num)
END) VIRTUAL;
ALTER TABLE entries ADD COLUMN kind TEXT GENERATED ALWAYS AS (CASE kind_role
    WHEN 0 THEN 'assistant' WHEN 1 THEN 'tool_result' WHEN 2 THEN 'user' WHEN 3 THEN 'tool_result'
    WHEN 4 THEN 'tool_result' WHEN 5 THEN 'bash' WHEN 6 THEN 'custom' WHEN 7 THEN 'custom'
    WHEN 8 THEN 'compaction' WHEN 9 THEN 'branch_summary' WHEN 10 THEN 'context_edit'
    ELSE substr(names, 1, instr(names, char(31)) - 1)
END) VIRTUAL;
ALTER TABLE entries ADD COLUMN role TEXT GENERATED ALWAYS AS (CASE kind_role
    WHEN 0 THEN 'assistant' WHEN 1 THEN 'toolResult' WHEN 2 THEN 'user' WHEN 3 THEN 'user'
    WHEN 4 THEN 'tool' WHEN 5 THEN 'bashExecution' WHEN 6 THEN 'custom' WHEN 7 THEN 'hookMessage'
    WHEN 8 THEN NULL WHEN 9 THEN NULL WHEN 10 THEN NULL
    ELSE nullif(substr(names, instr(names, char(31)) + 1), '')
END) VIRTUAL;

CREATE INDEX entries_entry_id ON entries(entry_id);
-- Summaries are few; a partial index makes "newest summaries" cheap without indexing every row.
CREATE INDEX entries_summaries ON entries(ts) WHERE kind IN ('compaction', 'branch_summary');
