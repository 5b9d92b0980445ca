-- hub 0002: search that does not read every match of a common word (issue 24, a hub of a
-- million entries).
--
-- Under row-level security PostgreSQL never uses an index for `terms @@ query` when a member
-- searches: the operator is not leakproof, so it may only run after the team policy, row by
-- row; every member's search read the whole table. The view below applies the match inside
-- itself, as its owner (who is not subject to the policies), so the GIN index serves it; it
-- gives back only the rows of the caller's own teams (current_user is the caller's role inside
-- a view), as the policy does, and security_barrier keeps the caller's own conditions from
-- seeing other teams' rows first. The query is passed in a setting of the transaction
-- (set_config('journal_index.match', …, true)): a view takes no arguments.
CREATE VIEW hub_matches WITH (security_barrier) AS
SELECT e.host, e.journal, e."offset", e.ts, e.project, e.kind, e.terms
FROM hub_entries e
WHERE e.terms @@ to_tsquery('english', current_setting('journal_index.match', true))
  AND (e.team IN (SELECT m.team FROM hub_team_members m WHERE m.member = current_user)
       OR NOT row_security_active('hub_entries'));  -- the hub's owner sees every row, as in the tables

GRANT SELECT ON hub_matches TO journal_hub_member;

-- Newest first: the recent entries whose terms a common word's search reads directly, and
-- the listing without a query. (team, project, ts) served neither: no query names a team.
CREATE INDEX hub_entries_newest ON hub_entries (ts DESC NULLS LAST);
DROP INDEX hub_entries_recent;
CREATE INDEX hub_entries_project_newest ON hub_entries (project, ts DESC NULLS LAST);
