-- `journal-index gc --confirm` may delete only what the last preview listed, and only while
-- unchanged: the preview keeps each candidate's size and mtime as the user saw them.
CREATE TABLE gc_preview (
    path         TEXT PRIMARY KEY,
    size         INTEGER NOT NULL,
    mtime_ns     INTEGER NOT NULL,
    reasons      TEXT NOT NULL,      -- comma-separated reason codes, as shown
    previewed_at INTEGER NOT NULL    -- epoch ms
);
