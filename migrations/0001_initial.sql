-- 0001: the first schema. Journals are the source of truth; these tables hold only
-- where each entry lives (file, byte offset, length) and what kind it is, plus the
-- FTS terms of its redacted text. No journal text is stored anywhere.

CREATE TABLE files (
    id          INTEGER PRIMARY KEY,
    path        TEXT NOT NULL UNIQUE,
    format      TEXT NOT NULL,
    version     INTEGER,              -- the journal's format version (pi: 1, 2, 3)
    session_id  TEXT,
    cwd         TEXT,
    started     INTEGER,              -- epoch ms of the header
    name        TEXT,                 -- session name (redacted), from session_info
    parent_session TEXT,
    cursor      INTEGER NOT NULL DEFAULT 0,   -- byte offset after the last indexed complete line
    size        INTEGER,              -- file size when last looked at (skip check)
    mtime_ns    INTEGER,
    head_hash   TEXT,                 -- hash of the header line (rewrite detection)
    anchor_hash TEXT,                 -- hash of the bytes just before the cursor
    entries     INTEGER NOT NULL DEFAULT 0,
    skipped     INTEGER NOT NULL DEFAULT 0,   -- malformed or unknown lines seen
    last_ts     INTEGER,              -- epoch ms of the newest indexed entry
    indexed_at  INTEGER
);
CREATE INDEX files_cwd ON files(cwd);
CREATE INDEX files_session ON files(session_id);

CREATE TABLE entries (
    rowid         INTEGER PRIMARY KEY,  -- also the rowid of entries_fts
    file_id       INTEGER NOT NULL,
    entry_id      TEXT NOT NULL,
    parent_id     TEXT,
    ts            INTEGER,              -- epoch ms
    kind          TEXT NOT NULL,
    role          TEXT,
    tool          TEXT,
    chars         INTEGER NOT NULL,     -- length of the indexed text, in characters
    offset        INTEGER NOT NULL,     -- byte offset of the line in the journal
    length        INTEGER NOT NULL,     -- byte length of the line, without its newline
    tokens_before INTEGER
);
CREATE INDEX entries_entry_id ON entries(entry_id);
CREATE INDEX entries_file ON entries(file_id, offset);
CREATE INDEX entries_ts ON entries(ts);
-- Summaries are few; a partial index makes "newest summaries" cheap without indexing every row.
CREATE INDEX entries_summaries ON entries(ts) WHERE kind IN ('compaction', 'branch_summary');

-- Contentless: terms only. porter over unicode61 folds case, diacritics and English
-- inflection; identifiers and CJK are split into tokens before insertion (see text_forms.py).
-- detail=full is kept because bm25 needs positions (it scores 0 under detail=column/none
-- on a contentless table) and because split identifiers are matched as phrases.
CREATE VIRTUAL TABLE entries_fts USING fts5(
    body,
    content = '',
    contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2',
    detail = full
);

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT
);
