"""The ``memory_context`` tool: one JSON-arguments contract, whatever carries it (MCP, CLI).

An agent calls it with a JSON object (``INPUT_SCHEMA``) and gets an :class:`Answer`: a compact
text rendering for the model plus the query layer's JSON (the shapes of the CLI's ``--json``).
The tool never raises (DESIGN invariant 8): bad arguments, a missing or broken index and an
unreadable journal all become ``{"error": {"code", "message", "hint"}}`` answers.

Before every call the journal of the current session is indexed, so what the agent wrote a
moment ago is searchable. Scope is a boundary (invariant 9): the operator's ``max_scope`` is
never widened, and an entry outside it reads exactly like one that does not exist.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apsw
import orjson

from journal_index import query
from journal_index.agent_session import Host, current_journal, detect_host
from journal_index.config import SCOPES, ConfigError, max_scope_from_env
from journal_index.formats import KINDS, Root
from journal_index.indexer import as_roots, discover, index_file
from journal_index.redact import redact
from journal_index.scope import Scope, ScopeError, resolve_scope, wider_than
from journal_index.status import backfill_progress
from journal_index.store import BROKEN_INDEX, Store, StoreError, open_store, recover

TOOL_NAME = "memory_context"
DESCRIPTION = ("Search and read this project's past agent sessions (redacted). "
               "action: search (query), read (entryId from a hit), summaries.")
ACTIONS = ("search", "read", "summaries")

SEARCH_LIMIT = 8  # hits per answer: with capped excerpts, well under ~2,000 tokens
EXCERPT_CHARS = 480
READ_PAGE_CHARS = 8_000  # one read page stays near 2,000 tokens too
MAX_RESULT_OFFSET = query.CANDIDATES - SEARCH_LIMIT  # ranking looks at 400 candidates at most
MAX_TEXT_OFFSET = 1 << 31
MAX_QUERY_CHARS = 2_000
MAX_ID_CHARS = 200
QUERY_SECONDS = 5.0  # a query still running after this is interrupted and answered as an error
FIRST_FILL_SECONDS = 2.0  # time one call may spend indexing journals no backfill has seen
REWALK_SECONDS = 60.0
_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": list(ACTIONS),
                   "description": "search: find entries by words; read: one entry's full text; "
                                  "summaries: compaction and branch summaries, newest first."},
        "query": {"type": "string", "maxLength": MAX_QUERY_CHARS,
                  "description": "search: words to find (all words, else any). Omit to list the newest."},
        "entryId": {"type": "string", "maxLength": MAX_ID_CHARS,
                    "description": "read: the entry id of a search hit."},
        "sessionId": {"type": "string", "maxLength": 128,
                      "description": "A session id: your current one (indexed first, needed for scope "
                                     "'session'), or a hit's session to read."},
        "since": {"type": "string", "description": "From: 2026-09-01 (local day) or an ISO-8601 time."},
        "until": {"type": "string",
                  "description": "Up to: 2026-09-30 (whole local day) or an ISO-8601 time."},
        "scope": {"type": "string", "enum": list(SCOPES),
                  "description": "Which sessions: this session, this project (default) or all; "
                                 "the operator may forbid wider ones."},
        "kind": {"type": "string", "enum": list(KINDS), "description": "Only entries of this kind."},
        "offset": {"type": "integer", "minimum": 0,
                   "description": "read: character offset of the page; search, summaries: results to skip."},
    },
    "required": ["action"],
    "additionalProperties": False,
}


class ToolError(Exception):
    """An answer-worthy failure: a code for programs, a message and a hint for the model."""

    def __init__(self, code: str, message: str, hint: str) -> None:
        super().__init__(message)
        self.code, self.message, self.hint = code, message, hint

    def as_json(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message, "hint": self.hint}


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


@dataclass
class Args:
    action: str
    query: str | None = None
    entry_id: str | None = None
    session_id: str | None = None
    since: str | None = None
    until: str | None = None
    scope: str | None = None
    kind: str | None = None
    offset: int = 0


def _bad(message: str, hint: str) -> ToolError:
    return ToolError("bad_argument", message, hint)


def _string(raw: dict[str, Any], key: str, max_chars: int) -> str | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _bad(f"{key} must be a string, not {type(value).__name__}", f'e.g. "{key}": "…"')
    if len(value) > max_chars:
        raise _bad(f"{key} is longer than {max_chars} characters", f"shorten {key}")
    return value


def parse_args(raw: Any) -> Args:
    """Check the arguments against INPUT_SCHEMA by hand, with a hint for each mistake."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise _bad("the arguments must be a JSON object", '{"action": "search", "query": "…"}')
    unknown = sorted(set(raw) - set(INPUT_SCHEMA["properties"]))
    if unknown:
        raise _bad(f"unknown argument(s): {', '.join(map(str, unknown))}",
                   f"use only {', '.join(INPUT_SCHEMA['properties'])}")
    action = raw.get("action")
    if action is None:
        raise ToolError("missing_argument", "action is required", 'e.g. {"action": "search", "query": "…"}')
    if action not in ACTIONS:
        raise _bad(f"unknown action {action!r}", f"use one of {', '.join(ACTIONS)}")
    args = Args(action=action)
    args.query = _string(raw, "query", MAX_QUERY_CHARS)
    args.entry_id = _string(raw, "entryId", MAX_ID_CHARS)
    args.session_id = _string(raw, "sessionId", 128)
    if args.session_id is not None and not _SESSION_ID.match(args.session_id):
        raise _bad("sessionId is not a session id", "pass the id from a hit's header, or omit it")
    args.since = _string(raw, "since", 64)
    args.until = _string(raw, "until", 64)
    args.scope = _string(raw, "scope", 16)
    if args.scope is not None and args.scope not in SCOPES:
        raise _bad(f"unknown scope {args.scope!r}", f"use one of {', '.join(SCOPES)}")
    args.kind = _string(raw, "kind", 32)
    if args.kind is not None and args.kind not in KINDS:
        raise _bad(f"unknown kind {args.kind!r}", f"use one of {', '.join(KINDS)}")
    offset = raw.get("offset", 0)
    if offset is None:
        offset = 0
    if isinstance(offset, float) and offset.is_integer():
        offset = int(offset)
    if not isinstance(offset, int) or isinstance(offset, bool):
        raise _bad(f"offset must be an integer, not {type(offset).__name__}", '"offset": 8')
    limit = MAX_TEXT_OFFSET if action == "read" else MAX_RESULT_OFFSET
    if not 0 <= offset <= limit:
        raise _bad(f"offset {offset} is out of range (0–{limit})",
                   "use the offset a previous answer suggested" if offset > 0 else "offset starts at 0")
    args.offset = offset
    if action == "read" and not args.entry_id:
        raise ToolError("missing_argument", "read needs an entryId",
                        'take one from a search hit: {"action": "read", "entryId": "…"}')
    return args


@dataclass
class IndexState:
    """How fresh the index is, as this call found (and left) it."""

    sessions: int = 0
    current_path: str | None = None
    current_session: str | None = None
    host_session: str | None = None  # the session of --session-file
    new_entries: int = 0
    current_error: str | None = None
    backfill: dict[str, Any] | None = None
    filled: tuple[int, int] | None = None  # (indexed, total) journals, when this tool filled the index

    @property
    def complete(self) -> bool:
        if self.filled is not None:
            return self.filled[0] >= self.filled[1]
        return self.backfill is None or self.backfill.get("finishedAt") is not None

    def as_json(self) -> dict[str, Any]:
        return {
            "sessions": self.sessions,
            "currentJournal": None if self.current_path is None else {
                "path": self.current_path, "sessionId": self.current_session,
                "newEntries": self.new_entries, "error": self.current_error},
            "backfill": self.backfill,
            "filled": None if self.filled is None else {"done": self.filled[0], "total": self.filled[1]},
            "complete": self.complete,
        }

    def text(self) -> str:
        parts = [f"index: {self.sessions} sessions"]
        if self.current_path is None:
            parts.append("no current journal found")
        elif self.current_error:
            parts.append(f"current journal unreadable ({self.current_error})")
        else:
            added = f" (+{self.new_entries} new)" if self.new_entries else ""
            parts.append(f"current journal indexed just now{added}")
        line = ", ".join(parts)
        if self.filled is not None and self.filled[0] < self.filled[1]:
            line += (f"; first indexing {self.filled[0]}/{self.filled[1]} journals so far, "
                     "results may be incomplete")
        elif self.backfill and self.backfill.get("finishedAt") is None:
            line += (f"; backfill {self.backfill['done']}/{self.backfill['total']} "
                     f"{self.backfill.get('state', 'running')}, results may be incomplete")
        return line


@dataclass
class Answer:
    text: str
    result: dict[str, Any] | None = None
    error: dict[str, str] | None = None
    index: dict[str, Any] | None = field(default=None)

    @property
    def is_error(self) -> bool:
        return self.error is not None

    def structured(self) -> dict[str, Any]:
        """The JSON without the text rendering (MCP's structuredContent)."""
        out: dict[str, Any] = {"error": self.error} if self.error is not None else {"result": self.result}
        out["index"] = self.index
        return out

    def as_json(self) -> dict[str, Any]:
        return {"text": self.text, **self.structured()}


class MemoryTool:
    """The tool over one store, opened once and kept (the MCP server makes many calls)."""

    def __init__(self, db_path: str, roots: Sequence[Root | Path | str], cwd: str | None = None,
                 session_file: str | None = None, max_scope: str | None = None, host: Host | None = None) -> None:
        self.max_scope = max_scope or max_scope_from_env()
        if self.max_scope not in SCOPES:
            raise ConfigError(f"max scope {self.max_scope!r} is not a scope; use one of {', '.join(SCOPES)}")
        self.db_path = db_path
        self.roots = as_roots(roots)
        self._host = host
        self.cwd = os.path.abspath(cwd or os.getcwd())
        self.session_file = os.path.abspath(session_file) if session_file else None
        self._store: Store | None = None
        self._walked_at = 0.0  # when a first fill last found every journal indexed

    @property
    def host(self) -> Host:
        if self._host is None:
            self._host = detect_host()
        return self._host

    @property
    def default_scope(self) -> str:
        return "session" if self.max_scope == "session" else "project"

    def close(self) -> None:
        if self._store is not None:
            with contextlib.suppress(apsw.Error):
                self._store.close()
            self._store = None

    # -- the one entry point --------------------------------------------------
    def call(self, arguments: Any) -> Answer:
        """Answer one call. Never raises."""
        state: IndexState | None = None
        try:
            try:
                args: Args | None = parse_args(arguments)
                problem: ToolError | None = None
            except ToolError as exc:
                args, problem = None, exc
            store = self._open()
            state = self._refresh(store, args.session_id if args else None)
            if problem is not None:
                raise problem
            assert args is not None
            with store.time_limit(QUERY_SECONDS):
                return self._dispatch(store, args, state)
        except ToolError as exc:
            return self._error(exc, state)
        except (query.QueryError, ScopeError, ConfigError) as exc:
            return self._error(_bad(str(exc), "fix that argument and call again"), state)
        except apsw.InterruptError:
            return self._error(ToolError("query_timeout", f"the query ran over {QUERY_SECONDS:g} s",
                                         "use fewer common words, a narrower scope or a time range"), state)
        except apsw.BusyError:
            return self._error(ToolError("index_busy", "the index is busy (another process is writing)",
                                         "retry in a moment"), state)
        except BROKEN_INDEX as exc:
            self._recover(type(exc).__name__)
            return self._error(ToolError("index_unavailable", "index unavailable, rebuilding; retry",
                                         "call again in a few seconds"), None)
        except apsw.Error as exc:
            return self._error(ToolError("index_error", f"the index failed ({type(exc).__name__})",
                                         "retry; if it persists, run `journal-index rebuild`"), state)
        except Exception as exc:  # the host must never see a crash
            return self._error(ToolError("internal_error", f"{type(exc).__name__}: {exc}",
                                         "retry; if it persists, report it"), state)

    # -- the store and its freshness -------------------------------------------
    def _open(self) -> Store:
        if self._store is None:
            try:
                self._store = open_store(self.db_path)
            except StoreError as exc:
                raise ToolError("index_unavailable", str(exc), "retry in a moment") from None
        return self._store

    def _recover(self, reason: str) -> None:
        self._walked_at = 0.0  # the new index is empty: the next call fills it again
        try:
            if self._store is not None:
                self._store = recover(self._store, reason)
        except Exception:  # a fresh open happens on the next call
            self._store = None

    def _refresh(self, store: Store, session_id: str | None) -> IndexState:
        state = IndexState()
        path = self.current_journal(store, session_id)
        if path is not None:
            result = index_file(store, path, self.roots)
            state.current_path, state.new_entries, state.current_error = path, result.entries, result.error
            state.current_session = store.value("SELECT session_id FROM files WHERE path = ?", (path,))
        if self.session_file:
            if self.session_file != path:
                index_file(store, self.session_file, self.roots)
            state.host_session = store.value("SELECT session_id FROM files WHERE path = ?",
                                             (self.session_file,))
        state.backfill = backfill_progress(store)
        if state.backfill is None:
            state.filled = self._first_fill(store)
        state.sessions = int(store.value("SELECT count(*) FROM files", default=0))
        return state

    def _first_fill(self, store: Store) -> tuple[int, int] | None:
        """No backfill has ever run: index journals the index has not seen, within a time budget."""
        if time.monotonic() - self._walked_at < REWALK_SECONDS:
            return None
        roots = [r for r in self.roots if r.path.is_dir()]
        if not roots:
            return None
        paths = discover(roots)
        known = {row[0] for row in store.rows("SELECT path FROM files")}
        missing = [p for p in paths if p not in known]
        deadline = time.monotonic() + FIRST_FILL_SECONDS
        done = len(paths) - len(missing)
        for path in missing:
            if time.monotonic() > deadline:
                break
            index_file(store, path, roots)
            done += 1
        if done >= len(paths):
            self._walked_at = time.monotonic()
        return done, len(paths)

    def current_journal(self, store: Store, session_id: str | None) -> str | None:
        """The journal to index first: the given session's, the host's, else the cwd's newest."""
        if session_id:
            known = store.value("SELECT path FROM files WHERE session_id = ? ORDER BY id DESC LIMIT 1",
                                (session_id,))
            if known and os.path.isfile(known):
                return str(known)
        if self.session_file:
            return self.session_file
        return current_journal(self.roots, self.cwd, self.host)

    # -- actions ----------------------------------------------------------------
    def _scope(self, store: Store, args: Args, state: IndexState) -> tuple[Scope, str | None]:
        kind = args.scope or self.default_scope
        if wider_than(kind, self.max_scope):
            allowed = " or ".join(repr(s) for s in reversed(SCOPES[: SCOPES.index(self.max_scope) + 1]))
            raise ToolError("scope_not_allowed",
                            f"scope {kind!r} is wider than the limit {self.max_scope!r} the operator set",
                            f"use scope {allowed}")
        if self.max_scope == "session" and state.host_session and args.session_id \
                and args.session_id != state.host_session:
            raise ToolError("scope_not_allowed", "only the current session may be searched here",
                            "omit sessionId")
        session_id = args.session_id or state.host_session
        if kind == "session" and not session_id:
            raise ToolError("missing_argument", "scope 'session' needs the current session id",
                            "pass sessionId, or use scope 'project'")
        scope = resolve_scope(store, kind, self.cwd, session_id)
        if kind == "session" and self.max_scope != "global":
            bound = resolve_scope(store, "project", self.cwd)
            cwds = [row[0] for row in store.rows("SELECT DISTINCT cwd FROM files WHERE session_id = ?",
                                                 (session_id,))]
            if not cwds or not all(bound.contains(cwd, session_id) for cwd in cwds):
                raise ToolError("session_not_found", f"no session {session_id} in this project",
                                "omit sessionId, or use scope 'project'")
        return scope, session_id

    def _filters(self, scope: Scope, args: Args) -> query.Filters:
        return query.Filters(
            scope=scope,
            since=query.parse_time_bound(args.since, end=False) if args.since else None,
            until=query.parse_time_bound(args.until, end=True) if args.until else None,
            kinds=(args.kind,) if args.kind else (),
        )

    def _dispatch(self, store: Store, args: Args, state: IndexState) -> Answer:
        scope, session_id = self._scope(store, args, state)
        # Journals are only opened inside the session roots (and the current journal's folder).
        roots: list[Root] = [*self.roots]
        if self.session_file:
            roots.append(Root(Path(os.path.dirname(self.session_file))))
        if args.action == "read":
            assert args.entry_id is not None
            answer = query.read(store, args.entry_id, scope, session_id=session_id, offset=args.offset,
                                page_chars=READ_PAGE_CHARS, roots=roots)
            _redact_fields(answer)
            return Answer(render_read(answer, args) + "\n" + state.text(), answer, None, state.as_json())
        filters = self._filters(scope, args)
        wanted = args.offset + SEARCH_LIMIT + 1  # one more tells whether another page exists
        if args.action == "search":
            found = query.search(store, args.query, filters, limit=wanted, roots=roots)
        else:
            found = query.summaries(store, filters, limit=wanted, roots=roots)
        more = len(found.hits) > args.offset + SEARCH_LIMIT
        page = query.SearchResult(found.match, found.hint, found.scope,
                                  found.hits[args.offset: args.offset + SEARCH_LIMIT])
        for hit in page.hits:
            if len(hit.excerpt) > EXCERPT_CHARS:
                hit.excerpt = hit.excerpt[: EXCERPT_CHARS - 1] + "…"
        result = page.as_json(with_match=args.action == "search")
        result["offset"] = args.offset
        result["nextOffset"] = args.offset + SEARCH_LIMIT if more else None
        _redact_fields(result)
        text = render_hits(page, args, result["nextOffset"])
        return Answer(text + "\n" + state.text(), result, None, state.as_json())

    def _error(self, exc: ToolError, state: IndexState | None) -> Answer:
        lines = [f"error ({exc.code}): {exc.message}", f"hint: {exc.hint}"]
        if state is not None:
            lines.append(state.text())
        return Answer("\n".join(lines), None, exc.as_json(), state.as_json() if state else None)


def _redact_fields(data: dict[str, Any]) -> None:
    """cwds come from journal headers: journal text, so it is redacted like the rest."""
    for row in [data, *data.get("results", []), *data.get("candidates", [])]:
        if isinstance(row.get("cwd"), str):
            row["cwd"] = redact(row["cwd"])
    scope = data.get("scope")
    if isinstance(scope, dict) and isinstance(scope.get("root"), str):
        scope["root"] = redact(scope["root"])


def _where(scope: dict[str, Any]) -> str:
    if scope["kind"] == "project":
        return f"project {scope['root']}"
    return "this session" if scope["kind"] == "session" else "all projects"


def render_hits(page: query.SearchResult, args: Args, next_offset: int | None) -> str:
    """Per hit one header line (time, kind, entry id, session, cwd) and its excerpt."""
    scope = page.scope.as_json()
    root = scope.get("root")
    # The query is not echoed: the model knows it, and a bare secret in it would pass redaction.
    what = ("search" if args.query else "newest entries") if args.action == "search" else "summaries"
    lines = []
    if not page.hits:
        lines.append(f"{what}: nothing in {_where(scope)}.")
        if page.hint:
            lines.append(f"hint: {page.hint}")
        return "\n".join(lines)
    first = args.offset + 1
    lines.append(f"{what}: results {first}–{args.offset + len(page.hits)} in {_where(scope)}"
                 + (" (no entry has every word; these have some)" if page.match == "any" else ""))
    for n, hit in enumerate(page.hits, start=first):
        when = (query.iso(hit.ts) or "?")[:16].replace("T", " ")
        where = "" if hit.cwd == root else f" · {redact(hit.cwd or '?')}"
        lines.append(f"[{n}] {when} · {hit.kind} · entry {hit.entry_id} · session {hit.session_id}{where}")
        lines.append("    " + hit.excerpt)
    best = page.hits[0]
    more = {"action": "read", "entryId": best.entry_id}
    if best.session_id:
        more["sessionId"] = best.session_id
    lines.append(f"read more: {_json(more)}")
    if next_offset is not None:
        lines.append(f'next page: the same call with "offset": {next_offset}')
    return "\n".join(lines)


def render_read(answer: dict[str, Any], args: Args) -> str:
    status = answer["status"]
    if status == "ok":
        when = (answer["time"] or "?")[:19].replace("T", " ")
        head = (f"{when} · {answer['kind']} · entry {answer['entryId']} · session {answer['sessionId']} · "
                f"{answer['cwd']}")
        end = answer["offset"] + len(answer["text"])
        lines = [head, f"(characters {answer['offset']}–{end} of {answer['totalChars']})", "", answer["text"]]
        if answer["nextOffset"] is not None:
            more = {"action": "read", "entryId": answer["entryId"], "offset": answer["nextOffset"]}
            if args.session_id:
                more["sessionId"] = args.session_id
            lines.append(f"read more: {_json(more)}")
        return "\n".join(lines)
    if status == "ambiguous":
        rows = [f"entry {answer['entryId']} is in several sessions; call read again with one sessionId:"]
        for c in answer["candidates"]:
            rows.append(f"  session {c['sessionId']} · {c['time']} · {c['kind']} · {c['cwd']}")
        return "\n".join(rows)
    if status == "not_found":
        return f"no entry {answer['entryId']} in this scope."
    return f"entry {answer['entryId']} is unavailable: {answer.get('reason')}"
