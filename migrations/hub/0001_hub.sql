-- hub 0001: the team hub's first schema (PostgreSQL 13 or later).
-- A host pushes the redacted text of the entries of the projects it shares; members read the
-- rows of their teams. Access is Postgres's own: each member logs in with a role of their own,
-- granted journal_hub_member; row-level security limits reads to the member's teams and writes
-- to the member's own hosts.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'journal_hub_member') THEN
        CREATE ROLE journal_hub_member NOLOGIN;
    END IF;
END
$$;

-- Who is in which team: written by the hub's owner (see the README, "Team hub").
CREATE TABLE hub_team_members (
    team   text NOT NULL,
    member name NOT NULL,
    PRIMARY KEY (team, member)
);

-- A host belongs to the member who pushed from it first; nobody else may write its rows.
CREATE TABLE hub_hosts (
    host  text PRIMARY KEY,
    owner name NOT NULL DEFAULT current_user
);

-- One row per journal a host pushed: its session, and the push cursor (the entries below
-- pushed_offset are on the hub; digest chains their offsets and ids, so a rewritten journal
-- is noticed even when its size grew past the cursor).
CREATE TABLE hub_journals (
    host           text NOT NULL REFERENCES hub_hosts (host) ON DELETE CASCADE,
    journal        text NOT NULL,      -- sha256 of the journal's path on its host
    team           text NOT NULL,
    project        text NOT NULL,      -- normalized git remote + path inside the repository, or the folder
    agent          text NOT NULL,
    session_id     text,
    path           text,               -- redacted
    cwd            text,               -- redacted
    name           text,               -- redacted
    started        bigint,             -- epoch ms
    last_ts        bigint,
    head_hash      text,
    pushed_offset  bigint NOT NULL DEFAULT -1,
    pushed_entries integer NOT NULL DEFAULT 0,
    digest         text NOT NULL DEFAULT '',
    pushed_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (host, journal)
);
CREATE INDEX hub_journals_project ON hub_journals (team, project, last_ts DESC);

-- The entries: redacted text (the hub answers without the journal) and weighted terms:
-- A call and tool names, B the session's name, D the text (the local query forms applied).
CREATE TABLE hub_entries (
    host      text NOT NULL,
    journal   text NOT NULL,
    "offset"  bigint NOT NULL,         -- byte offset of the entry's line in its journal
    team      text NOT NULL,
    project   text NOT NULL,
    entry_id  text NOT NULL,
    ts        bigint,
    kind      text NOT NULL,
    role      text,
    tool      text,
    call_name text,                    -- the call a tool result answers
    text      text NOT NULL,           -- redacted
    chars     integer NOT NULL,        -- length of the text: a giant's head and tail are cut without reading it whole
    digest    text NOT NULL,           -- a hash of the text: copies pushed from several hosts are told by it
    terms     tsvector NOT NULL,
    PRIMARY KEY (host, journal, "offset"),
    FOREIGN KEY (host, journal) REFERENCES hub_journals (host, journal) ON DELETE CASCADE
);
CREATE INDEX hub_entries_terms ON hub_entries USING gin (terms);
CREATE INDEX hub_entries_recent ON hub_entries (team, project, ts DESC);
CREATE INDEX hub_entries_id ON hub_entries (entry_id text_pattern_ops);

ALTER TABLE hub_team_members ENABLE ROW LEVEL SECURITY;
ALTER TABLE hub_hosts ENABLE ROW LEVEL SECURITY;
ALTER TABLE hub_journals ENABLE ROW LEVEL SECURITY;
ALTER TABLE hub_entries ENABLE ROW LEVEL SECURITY;

CREATE POLICY own_memberships ON hub_team_members FOR SELECT USING (member = current_user);
CREATE POLICY own_hosts ON hub_hosts USING (owner = current_user) WITH CHECK (owner = current_user);

CREATE POLICY team_reads ON hub_journals FOR SELECT
    USING (team IN (SELECT m.team FROM hub_team_members m WHERE m.member = current_user));
CREATE POLICY own_host_inserts ON hub_journals FOR INSERT
    WITH CHECK (host IN (SELECT h.host FROM hub_hosts h WHERE h.owner = current_user)
                AND team IN (SELECT m.team FROM hub_team_members m WHERE m.member = current_user));
CREATE POLICY own_host_updates ON hub_journals FOR UPDATE
    USING (host IN (SELECT h.host FROM hub_hosts h WHERE h.owner = current_user))
    WITH CHECK (host IN (SELECT h.host FROM hub_hosts h WHERE h.owner = current_user)
                AND team IN (SELECT m.team FROM hub_team_members m WHERE m.member = current_user));
CREATE POLICY own_host_deletes ON hub_journals FOR DELETE
    USING (host IN (SELECT h.host FROM hub_hosts h WHERE h.owner = current_user));

CREATE POLICY team_reads ON hub_entries FOR SELECT
    USING (team IN (SELECT m.team FROM hub_team_members m WHERE m.member = current_user));
CREATE POLICY own_host_inserts ON hub_entries FOR INSERT
    WITH CHECK (host IN (SELECT h.host FROM hub_hosts h WHERE h.owner = current_user)
                AND team IN (SELECT m.team FROM hub_team_members m WHERE m.member = current_user));
CREATE POLICY own_host_updates ON hub_entries FOR UPDATE
    USING (host IN (SELECT h.host FROM hub_hosts h WHERE h.owner = current_user))
    WITH CHECK (host IN (SELECT h.host FROM hub_hosts h WHERE h.owner = current_user)
                AND team IN (SELECT m.team FROM hub_team_members m WHERE m.member = current_user));
CREATE POLICY own_host_deletes ON hub_entries FOR DELETE
    USING (host IN (SELECT h.host FROM hub_hosts h WHERE h.owner = current_user));

GRANT SELECT ON hub_team_members TO journal_hub_member;
GRANT SELECT, INSERT, DELETE ON hub_hosts TO journal_hub_member;
GRANT SELECT, INSERT, UPDATE, DELETE ON hub_journals, hub_entries TO journal_hub_member;
