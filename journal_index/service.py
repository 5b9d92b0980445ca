"""The service layer: one request in, one result out, for every front end (the CLI, the agent
tool, the web view, the team hub).

What a front end must not decide for itself is decided here, once: which sessions a request
may see (the scope, the session it names, the operator's maximum scope), how a time bound is
read, what a page is (a slice of one ranked list), that a new index is filled before it is
asked, and that a journal found rewritten under the index is indexed again before the answer
is given (the query side reports it; only this layer asks the indexer). Front ends format
and print; they never build filters or open journals themselves.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from journal_index import query
from journal_index.config import AGENT_SCOPES, CANDIDATES, SCOPES, TEAM_SCOPE
from journal_index.data import read_sql
from journal_index.data.store import Store
from journal_index.formats import Root
from journal_index.indexing import indexer
from journal_index.query import conversation
from journal_index.query.hits import Filters, SearchResult
from journal_index.query.ranking import match_quality
from journal_index.query.scope import (
    Scope,
    ScopeError,
    SessionRef,
    find_sessions,
    has_sessions,
    resolve_scope,
    resolve_session,
    scope_words,
    wider_than,
)
from journal_index.query.sessions import SessionRow, list_sessions
from journal_index.query.time_bounds import parse_time_bound
from journal_index.redact import redact

TimeBound = int | str | None  # epoch ms, or a text form (2d, yesterday, ISO-8601)


class RequestError(ValueError):
    """A request this caller may not make, or that names nothing: a code for machines, a
    message and a hint saying what to do instead."""

    def __init__(self, code: str, message: str, hint: str) -> None:
        super().__init__(message)
        self.code, self.message, self.hint = code, message, hint


@dataclass(frozen=True)
class Caller:
    """Who asks, from where, and within which bound.

    A person (CLI, web view) may see everything; in a folder with no sessions of its own, an
    unscoped request widens to every project. An agent (the tool) stays within the operator's
    ``max_scope``, looks up named sessions only where it may look, and does not see what is
    still in its own context (``live``).
    """

    cwd: str
    person: bool = True
    max_scope: str = "global"
    current: SessionRef | None = None  # the agent's own session (its journal)
    live: tuple[int, int] | None = None  # (file id, byte offset) of what the agent still holds
    # How this front end's user asks to keep to the folder, named in the note of a widened request.
    project_option: str = "--scope project"


@dataclass(frozen=True)
class Request:
    """A search, a summaries list or a sessions list: which entries, and which page of them."""

    query: str = ""
    scope: str | None = None  # session | project | global; None: the caller's default
    session: str | None = None  # an id, a unique prefix, AGENT:ID or a journal's path
    agents: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    since: TimeBound = None
    until: TimeBound = None
    limit: int = 10
    offset: int = 0  # the page starts at this hit of the ranked list


@dataclass(frozen=True)
class ReadRequest:
    """One entry (a page of its text, or in its place with ``context`` neighbours each side),
    or with no ``entry_id`` a whole session, a page at a time."""

    entry_id: str | None = None
    session: str | None = None
    scope: str | None = None  # where to look; None: global for a person, project for an agent
    context: int | None = None
    offset: int = 0
    page_chars: int = query.PAGE_CHARS
    before: int | None = None  # of a whole session: the page ending just before this entry
    thinking_apart: bool = False  # of a session or an entry in its place: thinking under "thinking"


@dataclass
class Resolved:
    """A request turned into what the query side takes."""

    filters: Filters
    session: SessionRef | None  # the session the request named (or the agent's own)
    note: str | None = None  # said to a person whose request was widened


@dataclass
class Page:
    """One page of a ranked list, and where the next one starts."""

    result: SearchResult
    resolved: Resolved
    offset: int
    next_offset: int | None
    with_match: bool = True

    def as_json(self, explain: bool = False) -> dict[str, Any]:
        out = self.result.as_json(with_match=self.with_match, explain=explain)
        out["offset"], out["nextOffset"] = self.offset, self.next_offset
        return out


@dataclass
class Service:
    """The requests one index answers, over the journals under ``roots`` (journals are only
    ever opened inside them)."""

    store: Store
    # None: journals anywhere (in-process callers and tests); the front ends always give roots.
    roots: Sequence[Root] | None = None

    # -- freshness -------------------------------------------------------------
    def fill_if_new(self) -> None:
        """A brand-new (or rebuilt) index is filled from the session roots before a query."""
        if self.roots and read_sql.journal_count(self.store) == 0:
            roots = [r for r in self.roots if r.path.is_dir()]
            if roots:
                indexer.index_files(self.store, indexer.discover(roots), roots=roots)

    def reindex(self, path: str) -> bool:
        """A read found a line that is not its entry: the journal was rewritten; redo it."""
        return indexer.redo_journal(self.store, path)

    # -- who may see what ------------------------------------------------------
    def resolve(self, request: Request, caller: Caller) -> Resolved:
        kind, session, note = self._scope_kind(request.scope, request.session, request.agents, caller)
        scope = resolve_scope(self.store, kind, caller.cwd, session)
        if caller.person and request.scope is None and kind == "project" and not has_sessions(self.store, scope):
            # A person in a folder with no sessions of its own most likely wants everything.
            scope = resolve_scope(self.store, "global")
            note = (f"(no sessions were recorded in {redact(caller.cwd)} or below; showing all projects — "
                    f"{caller.project_option} keeps to this folder)")
        filters = Filters(
            scope=scope,
            since=_time(request.since, end=False),
            until=_time(request.until, end=True),
            kinds=tuple(request.kinds),
            # A person naming a session in a wider scope means that session's journal; an agent's
            # sessionId only chooses whose session scope 'session' searches.
            session_file=session.file_id if caller.person and request.session and session is not None
            and kind != "session" else None,
            agents=tuple(request.agents),
            live=caller.live,
        )
        return Resolved(filters, session, note)

    def _scope_kind(self, asked: str | None, named: str | None, agents: Sequence[str],
                    caller: Caller) -> tuple[str, SessionRef | None, str | None]:
        if asked is not None and asked not in SCOPES:
            raise RequestError("bad_argument", f"unknown scope {asked!r}", f"use one of {', '.join(SCOPES)}")
        if caller.person:
            session = self.named_session(named, caller, agents) if named else None
            return asked or ("session" if session else "project"), session, None
        kind = asked or ("session" if caller.max_scope == "session" else "project")
        if wider_than(kind, caller.max_scope):
            raise scope_not_allowed(kind, caller.max_scope)
        session = self.named_session(named, caller, agents) if named else caller.current
        if caller.max_scope == "session" and named and session != caller.current:
            raise RequestError("scope_not_allowed", "only the current session may be searched here",
                               "omit sessionId")
        if kind == "session" and session is None:
            raise RequestError("missing_argument", "the current session is not known (its journal was not found)",
                               "pass a sessionId from a hit, or use scope 'project'")
        return kind, session, None

    def named_session(self, given: str, caller: Caller, agents: Sequence[str] = ()) -> SessionRef:
        """The session a reference names, looked for only where the caller may look. A person may
        name any session; an agent its own, then (unless the operator allows everything) those of
        its project — an id of another project, or another agent's journal carrying the same id,
        is never matched there, and an unknown one reads exactly like "not in this project"."""
        if caller.person:
            try:
                return resolve_session(self.store, given, agents=agents)
            except ScopeError as exc:
                raise RequestError("session_not_found", str(exc), "list sessions with `journal-index sessions`") \
                    from None
        current = caller.current
        if current is not None and find_sessions(self.store, given, Scope("session", session=current)):
            return current
        wide = caller.max_scope in ("global", TEAM_SCOPE)
        within = None if wide else resolve_scope(self.store, "project", caller.cwd)
        if not find_sessions(self.store, given, within, agents):
            raise RequestError("session_not_found", f"no session {given} in this project",
                               "omit sessionId, or use scope 'project'")
        try:
            return resolve_session(self.store, given, within, agents)
        except ScopeError as exc:
            raise RequestError("ambiguous", str(exc), "pass sessionId as agent:id, as the error lists them") from None

    # -- answers ---------------------------------------------------------------
    def search(self, request: Request, caller: Caller) -> Page:
        """One page of the ranked hits: ranking does not depend on the page, so page 2 is the
        continuation of page 1."""
        resolved = self.resolve(request, caller)
        wanted = _wanted(request)
        found = query.search(self.store, request.query, resolved.filters, limit=wanted, roots=self.roots,
                             reindex=self.reindex)
        return self._page(found, resolved, request, with_match=True)

    def summaries(self, request: Request, caller: Caller) -> Page:
        resolved = self.resolve(request, caller)
        found = query.summaries(self.store, resolved.filters, limit=_wanted(request), roots=self.roots,
                                reindex=self.reindex)
        return self._page(found, resolved, request, with_match=False)

    def sessions(self, request: Request, caller: Caller) -> tuple[list[SessionRow], Resolved]:
        resolved = self.resolve(request, caller)
        return list_sessions(self.store, resolved.filters, limit=request.limit, roots=self.roots), resolved

    def read(self, request: ReadRequest, caller: Caller) -> dict[str, Any]:
        """An entry, an entry in its place, or a page of a whole session, as the query side
        answers them (``status`` says ok, not_found, ambiguous or unavailable)."""
        if request.entry_id is None and not request.session:
            raise RequestError("missing_argument", "read needs an entry id, or a session to read whole",
                               "give an entry id from a hit, or a session id")
        if request.context is not None and (request.entry_id is None or request.offset):
            raise RequestError("bad_argument", "context shows an entry in its place: give an entry id and no offset",
                               "drop the offset, or drop the context")
        default = "global" if caller.person else None
        kind, session, _ = self._scope_kind(request.scope or default, request.session, (), caller)
        scope = resolve_scope(self.store, kind, caller.cwd, session)
        here = resolve_scope(self.store, "project", caller.cwd) if caller.person else None
        if request.entry_id is None:
            assert session is not None
            if not scope.contains(session.cwd, session.file_id):
                raise RequestError("scope_not_allowed",
                                   f"session {redact(request.session or '')} is not in {scope_words(scope)}",
                                   "use --scope global" if caller.person else "use scope 'global'")
            return conversation.read_session(self.store, session, offset=request.offset, roots=self.roots,
                                             reindex=self.reindex, before=request.before,
                                             apart=request.thinking_apart)
        if request.context is not None:
            return conversation.read_context(self.store, request.entry_id, scope, request.context, session=session,
                                             roots=self.roots, prefer=here, reindex=self.reindex,
                                             apart=request.thinking_apart)
        return query.read(self.store, request.entry_id, scope, session=session, offset=request.offset,
                          page_chars=request.page_chars, roots=self.roots, prefer=here, reindex=self.reindex)

    @staticmethod
    def _page(found: SearchResult, resolved: Resolved, request: Request, with_match: bool) -> Page:
        end = request.offset + request.limit
        shown = found.hits[request.offset:end]
        more = len(found.hits) > end
        # How well the hits match is said of those shown (the one fetched past them is not shown).
        match, hint = match_quality(shown) if with_match and request.query.strip() else (found.match, found.hint)
        return Page(SearchResult(match, hint, found.scope, shown), resolved, request.offset,
                    end if more else None, with_match)


def scope_not_allowed(kind: str, max_scope: str) -> RequestError:
    """The refusal of a scope wider than the operator's limit, naming the scopes allowed."""
    allowed = " or ".join(repr(s) for s in reversed(AGENT_SCOPES[: AGENT_SCOPES.index(max_scope) + 1]))
    return RequestError("scope_not_allowed", f"scope {kind!r} is wider than the limit {max_scope!r} the operator set",
                        f"use scope {allowed}")


def _wanted(request: Request) -> int:
    if request.limit < 1:
        raise RequestError("bad_argument", "limit must be at least 1", "give a limit of 1 or more")
    if request.offset < 0:
        raise RequestError("bad_argument", "offset must be 0 or more", "give an offset of 0 or more")
    if request.offset + request.limit > CANDIDATES:
        raise RequestError("bad_argument", f"a page ends past the {CANDIDATES} candidates the ranking looks at",
                           f"keep offset + limit at {CANDIDATES} or less")
    return request.offset + request.limit + 1  # one more tells whether another page exists


def _time(value: TimeBound, end: bool) -> int | None:
    if value is None or isinstance(value, int):
        return value
    return parse_time_bound(value, end=end)


def roots_of(paths: Sequence[Root | str | os.PathLike[str]]) -> list[Root]:
    return indexer.as_roots(paths)
