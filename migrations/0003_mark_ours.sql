-- 0003: mark the file as a journal-index index, so that only our own file is ever moved aside
-- or rebuilt (an index made before this migration was recognized by its tables).
PRAGMA application_id = 1246315608;  -- 0x4A494458, "JIDX"
INSERT INTO meta(key, value) VALUES('application', 'journal-index')
    ON CONFLICT(key) DO UPDATE SET value = excluded.value;
