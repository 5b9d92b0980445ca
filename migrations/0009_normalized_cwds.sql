-- 0009: a journal's cwd is stored normalized ("." and ".." folded, slashes single): a header
-- cwd of /home/dev/code/projB/../projA lies in projA, not in projB. Journals indexed before
-- with such a cwd have it cleared and their skip check reset, so that the next pass reads
-- their header again and stores the normalized folder; until then they are in no project
-- (never in the wrong one).
UPDATE files SET cwd = NULL, size = NULL, mtime_ns = NULL
 WHERE cwd LIKE '%/../%' OR cwd LIKE '%/..' OR cwd LIKE '%/./%' OR cwd LIKE '%/.'
    OR cwd LIKE '%//%' OR (cwd LIKE '%/' AND cwd != '/') OR cwd = '.' OR cwd = '..';
