-- 0008: what identifies a journal file besides its path (device and inode, and the time its
-- inode last changed), kept where size and mtime are.
-- * files: a journal replaced (renamed over, a new inode) by one of the same size and mtime was
--   taken for unchanged and never read again. dev and ino are those of the file the indexed
--   rows came from (written with every cursor move); ctime_ns is recorded with size and mtime.
-- * gc_preview: `gc --confirm` deletes a listed journal only while it is the very file shown:
--   same device, inode, size, mtime, ctime and hash of its first bytes (head_hash).
-- Rows from before have NULLs: a journal is checked once more and its identity recorded; a
-- preview without one is refused (run `gc` again).
ALTER TABLE files ADD COLUMN dev INTEGER;
ALTER TABLE files ADD COLUMN ino INTEGER;
ALTER TABLE files ADD COLUMN ctime_ns INTEGER;
ALTER TABLE gc_preview ADD COLUMN dev INTEGER;
ALTER TABLE gc_preview ADD COLUMN ino INTEGER;
ALTER TABLE gc_preview ADD COLUMN ctime_ns INTEGER;
ALTER TABLE gc_preview ADD COLUMN head_hash TEXT;
