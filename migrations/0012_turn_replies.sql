-- 0012: each question knows its turn's reply, written at index time: the ranking reads one
-- row instead of looking through the entries after every question candidate for the end of
-- its turn. A turn starts at a user entry and lasts until the next one; its reply is the last
-- assistant entry of the turn that is not a call (an assistant entry is a call when an entry's
-- link_offset is its offset). The indexer keeps the link up to date as a journal grows
-- (journal_index/indexing/turns.py); files.open_turn is its journal's last user entry, whose
-- turn the next lines may still extend.
--
-- Derived from what the rows already hold (kind, offset, link_offset), so the rows indexed
-- before are linked here, in place, as a pass from byte 0 would link them; nothing is indexed
-- again.

ALTER TABLE entries ADD COLUMN reply INTEGER;     -- on a user entry: its turn's reply (entries.rowid)
ALTER TABLE files ADD COLUMN open_turn INTEGER;   -- the journal's last user entry (entries.rowid)

-- The offsets some result links to: the calls.
CREATE TEMP TABLE called (file_id INTEGER, offset INTEGER, PRIMARY KEY (file_id, offset)) WITHOUT ROWID;
INSERT OR IGNORE INTO temp.called SELECT file_id, link_offset FROM entries WHERE link_offset IS NOT NULL;

-- Each turn (by the offset of its question) and the offset of its last assistant entry that is no call.
CREATE TEMP TABLE turn_replies AS
SELECT t.file_id, t.question, max(t.offset) AS reply_offset
  FROM (SELECT file_id, offset, kind,
               max(CASE WHEN kind = 'user' THEN offset END) OVER (PARTITION BY file_id ORDER BY offset) AS question
          FROM entries) t
 WHERE t.kind = 'assistant' AND t.question IS NOT NULL
   AND NOT EXISTS (SELECT 1 FROM temp.called c WHERE c.file_id = t.file_id AND c.offset = t.offset)
 GROUP BY t.file_id, t.question;

UPDATE entries SET reply = (SELECT a.rowid FROM entries a WHERE a.file_id = r.file_id AND a.offset = r.reply_offset)
  FROM temp.turn_replies r
 WHERE entries.file_id = r.file_id AND entries.offset = r.question AND entries.kind = 'user';

UPDATE files SET open_turn = (SELECT e.rowid FROM entries e WHERE e.file_id = files.id AND e.kind = 'user'
                               ORDER BY e.offset DESC LIMIT 1);

DROP TABLE temp.called;
DROP TABLE temp.turn_replies;
