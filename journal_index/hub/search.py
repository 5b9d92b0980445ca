"""Search, read and list sessions on the hub, answered with the local shapes plus the host.

The hub holds each entry's redacted text, so answers need no journal; the text is redacted
once more on the way out (render.redact_json, as every answer). Row-level security decides
what a member sees: no query here names a team.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from dataclasses import dataclass, field
from typing import Any

import apsw

from journal_index.config import now_ms
from journal_index.hub.forms import TS_CONFIG, query_words, tsquery
from journal_index.hub.identity import project_identity, related
from journal_index.query import PAGE_CHARS
from journal_index.query.excerpt import make_excerpt
from journal_index.query.hits import Hit, QueryError, iso
from journal_index.query.ranking import match_quality
from journal_index.query.sessions import FIRST_WORDS_CHARS, SessionRow
from journal_index.text.text_forms import indexed_part

AGE_DAYS = 30.0  # score / (1 + age / AGE_DAYS), as locally
# Tool output and commands weigh less than what people, agents and summaries said, as locally.
_KIND_WEIGHT = "CASE e.kind WHEN 'tool_result' THEN 0.6 WHEN 'bash' THEN 0.6 ELSE 1.0 END"
CANDIDATES = 400
MIN_PREFIX_CHARS = 4


@dataclass
class HubHit(Hit):
    host: str = ""
    project: str = ""
    text: str = ""
    journal: str = ""
    digest: str = ""  # a hash of the whole text: copies are told apart by it
    also_on: list[str] = field(default_factory=list)  # other hosts holding the same entry

    def as_json(self, explain: bool = False) -> dict[str, Any]:
        out = super().as_json(explain)
        out.update({"host": self.host, "project": self.project, "alsoOn": self.also_on})
        del out["alsoIn"]
        return out


@dataclass(frozen=True)
class HubScope:
    kind: str  # "project" | "global" | "session"
    identity: str | None = None  # the project asked for (of --cwd)
    projects: tuple[str, ...] = ()  # the hub's projects inside it
    session: tuple[str, str] | None = None  # (host, journal)
    session_id: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "root": self.identity if self.kind == "project" else None, "hub": True}

    def words(self) -> str:
        if self.kind == "project":
            return f"project {self.identity} on the hub"
        return f"session {self.session_id} on the hub" if self.kind == "session" else "the hub's shared projects"


@dataclass
class HubFilters:
    scope: HubScope
    since: int | None = None
    until: int | None = None
    kinds: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()

    def sql(self, entries: bool = True) -> tuple[str, list[Any]]:
        alias = "e" if entries else "j"
        parts, values = ["TRUE"], []  # type: tuple[list[str], list[Any]]
        if self.scope.kind == "project":
            parts.append(f"{alias}.project = ANY(%s)")
            values.append(list(self.scope.projects))
        elif self.scope.kind == "session" and self.scope.session is not None:
            parts.append(f"{alias}.host = %s AND {alias}.journal = %s")
            values.extend(self.scope.session)
        if self.agents:
            parts.append("j.agent = ANY(%s)")
            values.append(list(self.agents))
        if entries:
            if self.since is not None:
                parts.append("e.ts >= %s")
                values.append(self.since)
            if self.until is not None:
                parts.append("e.ts <= %s")
                values.append(self.until)
            if self.kinds:
                parts.append("e.kind = ANY(%s)")
                values.append(list(self.kinds))
        return " AND ".join(parts), values


def fetch_rows(conn: Any, sql: str, params: list[Any], match: str | None = None) -> list[tuple[Any, ...]]:
    """The rows of one read, in a transaction of its own; ``match`` is the tsquery the view
    hub_matches applies (migrations/hub/0002)."""
    with conn.cursor() as cur:
        # A large hub's plans cost past jit_above_cost: compiling them took longer than running them.
        cur.execute("SELECT set_config('jit', 'off', true), set_config('journal_index.match', %s, true)",
                    [match or ""])
        cur.execute(sql, params)
        rows = [tuple(r) for r in cur.fetchall()]
    conn.rollback()
    return rows


def find_sessions(conn: Any, given: str) -> list[tuple[str, str, str, str]]:
    """(host, journal, agent, session id) of the hub sessions ``given`` names: ``[HOST:]ID`` or a prefix."""
    host, _, wanted = given.rpartition(":") if given.count(":") else ("", "", given)
    agent = ""
    if host and ":" in host:  # HOST:AGENT:ID
        host, _, agent = host.rpartition(":")
    rows = fetch_rows(conn, "SELECT host, journal, agent, session_id FROM hub_journals WHERE session_id LIKE %s "
                            "ORDER BY session_id, host LIMIT 50",
                      [wanted.replace("%", r"\%").replace("_", r"\_") + "%"])
    exact = [r for r in rows if r[3] == wanted]
    found = exact or rows
    if host:
        found = [r for r in found if r[0] == host or (not agent and r[2] == host)]
    if agent:
        found = [r for r in found if r[2] == agent]
    return [(str(a), str(b), str(c), str(d)) for a, b, c, d in found]


def resolve_scope(conn: Any, kind: str | None, cwd: str | None, session: str | None) -> tuple[HubScope, str | None]:
    """The scope on the hub, and a note when a project the hub does not hold was widened to all."""
    if session:
        found = find_sessions(conn, session)
        if not found:
            raise QueryError(f"no session {session!r} is on the hub; take a session id from `search --hub`")
        if len(found) > 1:
            names = ", ".join(f"{h}:{a}:{s}" for h, _, a, s in found[:5])
            raise QueryError(f"session {session!r} is on the hub more than once ({names}); give HOST:AGENT:ID")
        host, journal, _, session_id = found[0]
        return HubScope("session", session=(host, journal), session_id=session_id), None
    if kind == "global":
        return HubScope("global"), None
    if kind == "session":
        raise QueryError("scope 'session' needs a session id (--session ID)")
    identity = project_identity(cwd or os.getcwd())
    known = [str(r[0]) for r in fetch_rows(conn, "SELECT DISTINCT project FROM hub_journals", [])]
    inside = tuple(sorted(p for p in known if related(identity, p)))
    if not inside and kind is None:
        return HubScope("global"), (f"(the hub holds no shared project {identity}; showing all the hub's "
                                    "projects — --scope project keeps to it)")
    return HubScope("project", identity=identity, projects=inside), None


HIT_COLUMNS = ("SELECT e.entry_id, e.ts, e.kind, e.role, e.tool, e.\"offset\", j.path, j.session_id, j.cwd, "
               "j.agent, e.host, e.project, e.text, e.journal")


_KEYS_ONLY = HIT_COLUMNS.replace("e.text,", "''::text,")  # the text is read for the hits shown only


def hit_from_row(row: tuple[Any, ...], score: float = 0.0, complete: bool = True) -> HubHit:
    entry_id, ts, kind, role, tool, offset, path, session_id, cwd, agent, host, project, text, journal = row[:14]
    return HubHit(0, entry_id, ts, kind, role, tool, offset, 0, path or "", session_id, cwd, agent,
                  score=score, complete=complete, host=host, project=project, text=text, journal=journal)


@functools.cache
def _tokenizer() -> Any:
    # The excerpt finds the query's terms as the local index would tokenize them (one in-memory
    # SQLite connection per process: making it costs more than a small search).
    return apsw.Connection(":memory:").fts5_tokenizer("porter", ["unicode61", "remove_diacritics", "2"])


@dataclass
class HubResult:
    match: str
    hint: str | None
    scope: HubScope
    hits: list[HubHit] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"match": self.match, "hint": self.hint, "scope": self.scope.as_json(),
                "results": [h.as_json() for h in self.hits]}


# A common word matches a large share of the hub, and reading every match is what made such a
# search grow with the hub. The candidates are the word's matches among the newest RECENT_WINDOW
# entries of the scope, their terms read directly (a bounded cost, whatever the hub's size);
# only when those cannot fill the page does the terms index give the newest SCORED_CANDIDATES
# matches of the whole scope (a word that rare has few matches to read: under 1 in 200 entries).
RECENT_WINDOW = 2000
SCORED_CANDIDATES = 500
# The text of a giant entry that can hold terms (text_forms.indexed_part, on the server).
_SHOWN_TEXT = ("CASE WHEN e.chars > 65536 THEN substr(e.text, 1, 49152) || E'\\n' "
               "|| substr(e.text, e.chars - 16383) ELSE e.text END")
_JOURNAL = "JOIN hub_journals j ON j.host = e.host AND j.journal = e.journal"
# Each hit's journal by its key (a hash join read every journal the member may see).
_EACH_JOURNAL = ("CROSS JOIN LATERAL (SELECT j.path, j.session_id, j.cwd, j.agent FROM hub_journals j "
                 "WHERE j.host = e.host AND j.journal = e.journal LIMIT 1) j")
_KEY = "e.host = c.host AND e.journal = c.journal AND e.\"offset\" = c.\"offset\""


def _ranked(conn: Any, candidates: str, params: list[Any], match: str, now: int, fetch: int,
            complete: bool) -> list[HubHit]:
    # Rank the candidates on their terms alone; their texts (detoasted, maybe long) are read
    # for the hits shown only (_fill_texts).
    sql = (f"WITH c AS MATERIALIZED ({candidates}), "
           f"r AS (SELECT c.host, c.journal, c.\"offset\", c.ts, ts_rank_cd(c.terms, q, 1) * "
           f"{_KIND_WEIGHT.replace('e.kind', 'c.kind')} / (1 + greatest(0, %s - coalesce(c.ts, 0)) / 86400000.0 "
           f"/ {AGE_DAYS}) AS score FROM c CROSS JOIN to_tsquery('{TS_CONFIG}', %s) q "
           "ORDER BY score DESC, c.ts DESC LIMIT %s) "
           f"{_KEYS_ONLY}, c.score, e.digest FROM r AS c JOIN hub_entries e ON {_KEY} {_EACH_JOURNAL} "
           "ORDER BY c.score DESC, e.ts DESC")
    hits = []
    for row in fetch_rows(conn, sql, [*params, now, match, fetch], match):
        hit = hit_from_row(row, float(row[14]), complete)
        hit.digest = str(row[15])
        hits.append(hit)
    return hits


def _scored(conn: Any, q: str, filters: HubFilters, now: int, fetch: int, limit: int,
            complete: bool) -> list[HubHit]:
    where, params = filters.sql()
    columns = "e.host, e.journal, e.\"offset\", e.ts, e.kind, e.terms"
    journal = _JOURNAL if filters.agents else ""  # the only filter on the journal's columns
    recent = (f"SELECT * FROM (SELECT {columns} FROM hub_entries e {journal} WHERE {where} "
              f"ORDER BY e.ts DESC NULLS LAST LIMIT {RECENT_WINDOW}) e "
              f"WHERE e.terms @@ to_tsquery('{TS_CONFIG}', current_setting('journal_index.match')) "
              f"ORDER BY e.ts DESC NULLS LAST LIMIT {SCORED_CANDIDATES}")
    hits = _ranked(conn, recent, params, q, now, fetch, complete)
    if len({(h.entry_id, h.kind, h.digest) for h in hits}) >= limit:  # copies fill one slot (_collapse)
        return hits
    # The view applies the match through the terms index (row-level security alone cannot).
    matches = (f"SELECT {columns} FROM hub_matches e {journal} WHERE {where} "
               f"ORDER BY e.ts DESC NULLS LAST LIMIT {SCORED_CANDIDATES}")
    return _ranked(conn, matches, params, q, now, fetch, complete)


def _fill_texts(conn: Any, hits: list[HubHit]) -> None:
    """The text of each hit that can hold terms (a giant's head and tail), in one query."""
    if not hits:
        return
    rows = fetch_rows(conn, f"SELECT e.host, e.journal, e.\"offset\", {_SHOWN_TEXT} FROM hub_entries e "
                            "JOIN unnest(%s::text[], %s::text[], %s::bigint[]) AS k(host, journal, off) "
                            "ON e.host = k.host AND e.journal = k.journal AND e.\"offset\" = k.off",
                      [[h.host for h in hits], [h.journal for h in hits], [h.offset for h in hits]])
    texts = {(host, journal, offset): text for host, journal, offset, text in rows}
    for hit in hits:
        hit.text = texts.get((hit.host, hit.journal, hit.offset), "")


def _collapse(hits: list[HubHit], limit: int) -> list[HubHit]:
    """Copies of one entry (one journal pushed from several hosts, forks) take one slot; the
    other hosts are named on it."""
    out: list[HubHit] = []
    first: dict[tuple[str, str, str], HubHit] = {}
    for hit in hits:
        key = (hit.entry_id, hit.kind, hit.digest or hit.text)
        seen = first.get(key)
        if seen is not None:
            if hit.host != seen.host and hit.host not in seen.also_on:
                seen.also_on.append(hit.host)
            continue
        if len(out) < limit:
            first[key] = hit
            out.append(hit)
    return out


def search(conn: Any, query: str, filters: HubFilters, limit: int = 10, now: int | None = None) -> HubResult:
    """The best ``limit`` entries for ``query``: every word first (AND), then any (OR), by
    weighted rank × kind weight, damped by age; no words: the newest. Copies count once."""
    if limit < 1:
        raise QueryError("limit must be at least 1")
    where, params = filters.sql()
    now = now if now is not None else now_ms()
    fetch = min(CANDIDATES, limit * 20)
    all_q = tsquery(query, True)
    if all_q is None:
        base = f"{HIT_COLUMNS} FROM hub_entries e JOIN hub_journals j ON j.host = e.host AND j.journal = e.journal"
        rows = fetch_rows(conn, f"{base} WHERE {where} ORDER BY e.ts DESC NULLS LAST LIMIT %s", [*params, fetch])
        return HubResult("all", None, filters.scope, _collapse([hit_from_row(r) for r in rows], limit))
    hits = _collapse(_scored(conn, all_q, filters, now, fetch, limit, True), limit)
    any_q = tsquery(query, False)
    if len(hits) < limit and any_q != all_q and any_q is not None:
        more = _scored(conn, any_q, filters, now, fetch, limit, False)
        keys = {(h.host, h.path, h.offset) for h in hits}
        hits = _collapse(hits + [h for h in more if (h.host, h.path, h.offset) not in keys], limit)
    shown: list[Hit] = list(hits)
    match, hint = match_quality(shown)  # as locally: "all" when some hits hold every word
    _fill_texts(conn, hits)
    tokenizer = _tokenizer()

    def tokenize(text: str) -> list[str]:
        return [str(t[0]) for t in tokenizer(text.encode("utf-8"), apsw.FTS5_TOKENIZE_QUERY, None,
                                             include_offsets=False)]

    terms = {t for group in query_words(query) for t in tokenize(" ".join(group))}
    for hit in hits:
        excerpt = make_excerpt(indexed_part(hit.text), terms, tokenize)
        hit.excerpt, hit.spans = excerpt.text, excerpt.spans
    return HubResult(match, hint, filters.scope, hits)


def find_entry(conn: Any, entry_id: str, scope: HubScope, host: str) -> HubHit | dict[str, Any]:
    """The entry ``entry_id`` (or a unique prefix of it) names in ``scope``, whole; else the
    answer saying it is not found or ambiguous. Copies of an entry with the same text (one
    journal pushed from several hosts) are one entry: this host's copy, else the newest push's."""
    where, params = HubFilters(scope).sql()
    base = f"{HIT_COLUMNS} FROM hub_entries e JOIN hub_journals j ON j.host = e.host AND j.journal = e.journal"
    rows = fetch_rows(conn, f"{base} WHERE e.entry_id = %s AND {where} ORDER BY (e.host = %s) DESC, j.pushed_at DESC "
                            "LIMIT 50", [entry_id, *params, host])
    if not rows and len(entry_id) >= MIN_PREFIX_CHARS:
        pattern = entry_id.replace("\\", "\\\\").replace("%", r"\%").replace("_", r"\_") + "%"
        rows = fetch_rows(conn, f"{base} WHERE e.entry_id LIKE %s AND {where} ORDER BY (e.host = %s) DESC, "
                                "j.pushed_at DESC LIMIT 50", [pattern, *params, host])
    if not rows:
        return {"status": "not_found", "entryId": entry_id, "where": scope.words()}
    hits = [hit_from_row(r) for r in rows]
    if len({h.entry_id for h in hits}) > 1 or len({h.text for h in hits}) > 1:
        return {"status": "ambiguous", "entryId": entry_id,
                "what": "entryId" if len({h.entry_id for h in hits}) > 1 else "session",
                "candidates": [{"entryId": h.entry_id, "sessionId": h.session_id, "agent": h.format, "host": h.host,
                                "time": iso(h.ts), "kind": h.kind, "cwd": h.cwd} for h in hits]}
    return hits[0]


def read(conn: Any, entry_id: str, scope: HubScope, host: str, offset: int = 0,
         page_chars: int = PAGE_CHARS) -> dict[str, Any]:
    """One entry's text from the hub, a page at a time (the shape of ``query.read`` plus the host),
    the copy :func:`find_entry` chooses."""
    if offset < 0:
        raise QueryError("offset must be 0 or more")
    chosen = find_entry(conn, entry_id, scope, host)
    if isinstance(chosen, dict):
        return chosen
    total = len(chosen.text)
    if offset > total:
        raise QueryError(f"offset {offset} is past the end of the entry ({total} characters)")
    end = min(total, offset + page_chars)
    return {"status": "ok", "entryId": chosen.entry_id, "sessionId": chosen.session_id, "agent": chosen.format,
            "host": chosen.host, "project": chosen.project, "time": iso(chosen.ts), "kind": chosen.kind,
            "cwd": chosen.cwd, "text": chosen.text[offset:end], "offset": offset,
            "nextOffset": end if end < total else None, "totalChars": total}


@dataclass
class HubSessionRow(SessionRow):
    host: str = ""
    project: str = ""

    def as_json(self) -> dict[str, Any]:
        return {**super().as_json(), "host": self.host, "project": self.project}


def sessions(conn: Any, filters: HubFilters, limit: int = 20) -> list[HubSessionRow]:
    """The hub's sessions in the filters, newest activity first, with their first user words."""
    where, params = filters.sql(entries=False)
    if filters.since is not None:
        where += " AND coalesce(j.last_ts, j.started) >= %s"
        params.append(filters.since)
    if filters.until is not None:
        where += " AND coalesce(j.started, j.last_ts) <= %s"
        params.append(filters.until)
    if filters.kinds:
        where += (" AND EXISTS (SELECT 1 FROM hub_entries k WHERE k.host = j.host AND k.journal = j.journal "
                  "AND k.kind = ANY(%s))")
        params.append(list(filters.kinds))
    rows = fetch_rows(conn, "SELECT j.agent, j.session_id, j.path, j.cwd, j.name, j.started, j.last_ts, "
                            "j.pushed_entries, (SELECT left(u.text, 400) FROM hub_entries u "
                            "WHERE u.host = j.host AND u.journal = j.journal "
                            "AND u.kind = 'user' ORDER BY u.\"offset\" LIMIT 1), j.host, j.project "
                            f"FROM hub_journals j WHERE {where} "
                            "ORDER BY coalesce(j.last_ts, j.started) DESC NULLS LAST, j.host, j.journal LIMIT %s",
                      [*params, limit])
    out = []
    for agent, sid, path, cwd, name, started, last, entries, first, host, project in rows:
        words = " ".join((first or "").split())
        if len(words) > FIRST_WORDS_CHARS:
            words = words[: FIRST_WORDS_CHARS - 1].rstrip() + "…"
        out.append(HubSessionRow(agent, sid, path or "", cwd, name, started, last, int(entries), words or None,
                                 host=host, project=project))
    return out


def shown(hit_or_row: Any) -> Any:
    """A copy whose folder reads ``host:cwd``, for the local text renderers."""
    return dataclasses.replace(hit_or_row, cwd=f"{hit_or_row.host}:{hit_or_row.cwd or '?'}")
