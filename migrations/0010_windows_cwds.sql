-- 0010: a cwd written on Windows ("D:\work\app") is stored with "/" between its parts
-- ("D:/work/app"), so that its subfolders lie inside it and a search from it is not taken
-- for a folder relative to wherever journal-index runs. Journals indexed before with such a
-- cwd have it cleared and their skip check reset: the next pass reads their header again.
UPDATE files SET cwd = NULL, size = NULL, mtime_ns = NULL
 WHERE cwd GLOB '[A-Za-z]:\*' OR cwd GLOB '[A-Za-z]:*\*';
