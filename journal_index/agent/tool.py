"""The ``memory_context`` tool: answers calls, whatever carries them (MCP, the JSON command).

An agent calls it with a JSON object (:mod:`journal_index.agent.tool_args`) and gets an
:class:`Answer`: a signed text rendering for the model plus the query layer's JSON (the shapes
of the CLI's ``--json``). The tool never raises (DESIGN invariant 8): bad arguments, a missing
or broken index, an unreadable journal and an entry that is not there all become
``{"error": {"code", "message", "hint"}}`` answers, marked as errors.

Before every call the agent's current journal is indexed (:mod:`journal_index.agent.host`
finds it), so what it wrote a moment ago is searchable; and what of that journal is still in
the agent's context is left out of searches (invariant 12). Scope is a boundary (invariant 9):
the operator's ``max_scope`` is never widened, and an entry outside it reads exactly like one
that does not exist.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw

from journal_index import query
from journal_index.agent.freshness import Freshener, Pending, Scans, pending
from journal_index.agent.host import Host, current_journal, detect_host
from journal_index.agent.tool_args import SEARCH_LIMIT, Args, ToolError, bad_argument, parse_args
from journal_index.config import AGENT_SCOPES, QUERY_SECONDS, TEAM_SCOPE, ConfigError, max_scope_from_env
from journal_index.data import read_sql
from journal_index.data.index_errors import classify
from journal_index.data.store import BROKEN_INDEX, Store, StoreError, UnwritableIndexError, open_store, recover
from journal_index.formats import Root
from journal_index.indexing.indexer import as_roots, index_file
from journal_index.indexing.status import backfill_progress
from journal_index.query.scope import (
    ScopeError,
    SessionRef,
    wider_than,
)
from journal_index.query.time_bounds import TimeBoundError
from journal_index.service import Caller, ReadRequest, Request, RequestError, Service, scope_not_allowed
from journal_index.text import render
from journal_index.text.counts import count

EXCERPT_CHARS = 480  # of a hit, at most (the JSON's excerpts too)
ANSWER_CHARS = 3_500  # a search answer's text, at most, as long as excerpts can shrink to...
MIN_EXCERPT_CHARS = 160  # ...this
READ_PAGE_CHARS = 8_000  # one read page stays near 2,000 tokens too
# Time one call may spend indexing the journals the index lacks, when no background thread of
# this process does it (`journal-index tool`; `journal-index mcp` runs a Freshener)...
FILL_SECONDS = 2.0
# ...and the time the first call to a brand-new index waits for the Freshener's first pass
# (once: from then on no answer waits for indexing).
FIRST_PASS_SECONDS = 10.0
# A call refused "busy" sooner than this (SQLite did not wait) is tried once more after a pause.
QUICK_BUSY_SECONDS = 2.0
BUSY_RETRY_PAUSE = 0.25



def _filled(backfill: Mapping[str, Any] | None) -> bool:
    """Whether a pass over the roots has ever finished in this index."""
    return backfill is not None and backfill.get("finishedAt") is not None

@dataclass
class IndexState:
    """How fresh the index is, as this call found (and left) it."""

    sessions: int = 0
    current_path: str | None = None
    current_session: str | None = None
    current_file: int | None = None
    context_from: int = 0  # where the agent's live context starts in the current journal
    new_entries: int = 0
    current_error: str | None = None
    backfill: dict[str, Any] | None = None
    pending: Pending | None = None  # what the index lacked when the call was answered
    freshening: bool = False  # a background thread is indexing it

    @property
    def complete(self) -> bool:
        """Every journal under the roots is indexed as it is now (the current one just before)."""
        return self.pending is None or self.pending.journals == 0

    def as_json(self) -> dict[str, Any]:
        return {
            "sessions": self.sessions,
            "currentJournal": None if self.current_path is None else {
                "path": self.current_path, "sessionId": self.current_session,
                "newEntries": self.new_entries, "error": self.current_error,
                "liveFrom": self.context_from},
            "backfill": self.backfill,
            "pending": None if self.pending is None else self.pending.as_json(),
            "complete": self.complete,
        }

    def text(self) -> str:
        parts = [f"index: {count(self.sessions, 'session')}"]
        if self.current_path is None:
            parts.append("current session not found (its entries may show up)")
        elif self.current_error:
            parts.append(f"current journal unreadable ({self.current_error})")
        else:
            added = f" (+{self.new_entries} new)" if self.new_entries else ""
            parts.append(f"this session indexed just now{added}; what is still in your context is left out")
        line = ", ".join(parts)
        if self.pending is not None and self.pending.journals:
            line += f"; {self.pending.text()}" + (" (being indexed now)" if self.freshening else "")
            line += ": results may be incomplete"
        return line


class Answer:
    """What a call answers: the signed text for the model, and the JSON (``result`` or ``error``,
    and ``index``). A search's ``result`` may be handed in as ``later``, redacted only when it is
    first asked for: the MCP server sends the text alone, and redacting every string of the JSON
    costs about as much as the rest of the answer."""

    def __init__(self, text: str, result: dict[str, Any] | None = None, error: dict[str, Any] | None = None,
                 index: dict[str, Any] | None = None, *, later: Callable[[], dict[str, Any]] | None = None) -> None:
        self.text, self.error, self.index = text, error, index
        self._result, self._later = result, later

    @property
    def result(self) -> dict[str, Any] | None:
        if self._later is not None:
            self._result, self._later = self._later(), None
        return self._result

    @property
    def is_error(self) -> bool:
        return self.error is not None

    def structured(self) -> dict[str, Any]:
        """The JSON without the text rendering."""
        out: dict[str, Any] = {"error": self.error} if self.error is not None else {"result": self.result}
        out["index"] = self.index
        return out

    def as_json(self) -> dict[str, Any]:
        return {"text": self.text, **self.structured()}


def _shorten_excerpts(hits: Sequence[query.Hit], chars: int) -> None:
    for hit in hits:
        if len(hit.excerpt) > chars:
            hit.excerpt = hit.excerpt[: chars - 1].rstrip("…") + "…"


def _what(args: Args) -> str:
    return ("search" if args.query else "newest entries") if args.action == "search" else "summaries"


def _fitted(answer_text: Callable[[], str], hits: Sequence[query.Hit], state: IndexState) -> str:
    """The signed answer; the model reads all of it, so past ANSWER_CHARS the excerpts give way, all alike.

    Each excerpt is shown once, as it is, on a line of its own: so the text's length after each
    shortening is counted rather than rendered, and the text rendered once more at the end. Should
    it not come out as long as counted (a rendering that shows an excerpt otherwise), the
    excerpts are put back and shortened the long way (:func:`_fitted_by_rendering`)."""
    def signed() -> str:
        return render.signed(answer_text() + "\n" + state.text())

    excerpts = [h.excerpt for h in hits]
    text = signed()
    size, cap = len(text), EXCERPT_CHARS
    while size > ANSWER_CHARS and hits and cap > MIN_EXCERPT_CHARS:
        cap = max(MIN_EXCERPT_CHARS, cap - -(-(size - ANSWER_CHARS) // len(hits)))
        before = sum(len(h.excerpt) for h in hits)
        _shorten_excerpts(hits, cap)
        size += sum(len(h.excerpt) for h in hits) - before
    if cap == EXCERPT_CHARS:
        return text  # short enough as it was
    text = signed()
    if len(text) == size:
        return text
    for hit, excerpt in zip(hits, excerpts, strict=True):
        hit.excerpt = excerpt
    return _fitted_by_rendering(signed, hits)


def _fitted_by_rendering(signed: Callable[[], str], hits: Sequence[query.Hit]) -> str:
    """:func:`_fitted`, rendering the whole text after each shortening."""
    text, cap = signed(), EXCERPT_CHARS
    while len(text) > ANSWER_CHARS and hits and cap > MIN_EXCERPT_CHARS:
        cap = max(MIN_EXCERPT_CHARS, cap - -(-(len(text) - ANSWER_CHARS) // len(hits)))
        _shorten_excerpts(hits, cap)
        text = signed()
    return text


def _inside(path: str, folder: Path) -> bool:
    real = os.path.realpath(path)
    return real.startswith(os.path.realpath(folder).rstrip(os.sep) + os.sep)


class MemoryTool:
    """The tool over one store, opened once and kept (the MCP server makes many calls)."""

    def __init__(self, db_path: str, roots: Sequence[Root | Path | str], cwd: str | None = None,
                 session_file: str | None = None, max_scope: str | None = None, host: Host | None = None) -> None:
        self.max_scope = max_scope or max_scope_from_env()
        if self.max_scope not in AGENT_SCOPES:
            raise ConfigError(f"max scope {self.max_scope!r} is not a scope; use one of {', '.join(AGENT_SCOPES)}")
        self.db_path = db_path
        self.roots = as_roots(roots)
        self._host = host
        self.cwd = os.path.abspath(cwd or os.getcwd())
        self.session_file = os.path.abspath(session_file) if session_file else None
        self._store: Store | None = None
        self._freshener: Freshener | None = None
        self._waited_first_pass = False
        self._scans = Scans()  # what the last call's look at the roots keeps for the next

    @property
    def host(self) -> Host:
        if self._host is None:
            self._host = detect_host()
        return self._host

    def keep_fresh(self) -> None:
        """Index new and grown journals in a background thread from now on (a long-lived
        process: the MCP server), instead of within each call's time."""
        if self._freshener is None:
            try:
                self._open()  # first: two connections creating a new index at once would collide
            except ToolError:
                pass  # the calls will say why
            self._freshener = Freshener(self.db_path, self.roots)
            self._freshener.start()

    def freshen_soon(self) -> None:
        """A call was answered: the background thread looks for new journals in a moment."""
        if self._freshener is not None:
            self._freshener.poke()

    def interrupt(self) -> None:
        """Make the statements running now fail (called from another thread), so that a stop
        does not wait for a long search or indexing pass."""
        if self._freshener is not None:
            self._freshener.stop(wait_seconds=0)
        store = self._store
        if store is not None:
            with contextlib.suppress(apsw.Error):
                store.conn.interrupt()

    def close(self) -> None:
        if self._freshener is not None:
            self._freshener.stop(wait_seconds=0.5)
            self._freshener = None
        if self._store is not None:
            with contextlib.suppress(apsw.Error):
                self._store.close()
            self._store = None

    # -- the one entry point --------------------------------------------------
    def call(self, arguments: Any, meta: Mapping[str, Any] | None = None) -> Answer:
        """Answer one call (``meta``: the host's ``_meta`` of the call). Never raises."""
        started = time.monotonic()
        answer = self._answer(arguments, meta)
        if (answer.error or {}).get("code") == "index_busy" and time.monotonic() - started < QUICK_BUSY_SECONDS:
            # SQLite refuses some lock changes at once, without its busy wait (another process
            # opening or creating the same index at that moment): one more try, as the hint
            # would tell the model to do. A lock held for the whole busy wait is not retried.
            time.sleep(BUSY_RETRY_PAUSE)
            answer = self._answer(arguments, meta)
        return answer

    def _answer(self, arguments: Any, meta: Mapping[str, Any] | None) -> Answer:
        state: IndexState | None = None
        try:
            try:
                args: Args | None = parse_args(arguments)
                problem: ToolError | None = None
            except ToolError as exc:
                args, problem = None, exc
            store = self._open()
            state = self._refresh(store, meta or {})
            if problem is not None:
                raise problem
            assert args is not None
            with store.time_limit(QUERY_SECONDS):
                return self._dispatch(store, args, state)
        except ToolError as exc:
            return self._error(exc, state)
        except RequestError as exc:
            return self._error(ToolError(exc.code, exc.message, exc.hint), state)
        except (query.QueryError, TimeBoundError, ScopeError, ConfigError) as exc:
            return self._error(bad_argument(str(exc), "fix that argument and call again"), state)
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
            failure = classify(exc, self.db_path)  # a full disk or a read-only index: rebuilding cannot help
            if failure is not None:
                return self._error(ToolError(failure.code, failure.message, failure.hint), state)
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
            except UnwritableIndexError as exc:
                raise ToolError(exc.failure.code, exc.failure.message, exc.failure.hint) from None
            except StoreError as exc:
                raise ToolError("index_unavailable", str(exc), "retry in a moment") from None
        return self._store

    def _recover(self, reason: str) -> None:
        try:
            if self._store is not None:
                self._store = recover(self._store, reason)
        except Exception:  # a fresh open happens on the next call
            self._store = None

    def _refresh(self, store: Store, meta: Mapping[str, Any]) -> IndexState:
        state = IndexState()
        path = self.session_file or current_journal(self.roots, self.cwd, self.host, call_meta=meta)
        self._index_current(store, path, state)
        skip = [path] if path is not None else []
        state.backfill = backfill_progress(store)
        if self._freshener is not None and not _filled(state.backfill) and not self._waited_first_pass:
            # No pass over the roots ever finished: the first answer of this process waits (a
            # little) for one to end — ours, or that of whoever holds the backfill lease — or it
            # would find next to nothing. Once: later calls answer at once, with what is pending.
            self._waited_first_pass = True
            self._freshener.wait_until(lambda: _filled(backfill_progress(store)), FIRST_PASS_SECONDS)
            state.backfill = backfill_progress(store)
        if self._freshener is None or not (_filled(state.backfill) or self._freshener.stopped):
            # No background thread, or no pass ended in time (a lease held by a process that
            # died keeps passes off until it expires): this call indexes what it can itself.
            state.pending = self._fill(store, self.roots, skip)
        else:
            state.pending, state.freshening = pending(store, self.roots, skip, self._scans), True
        state.sessions = read_sql.journal_count(store)
        return state

    def _index_current(self, store: Store, path: str | None, state: IndexState) -> None:
        """Index the agent's current journal (and, the first time, its folder when no root reaches it)."""
        if path is not None and not any(_inside(path, r.path) for r in self.roots):
            # The agent keeps this session where no root reaches (a folder set in the project's
            # own settings): its neighbours are the same agent's earlier sessions, so they count.
            # Found now, they are indexed now (once: the folder is a root from then on).
            folder = Root(Path(os.path.dirname(os.path.abspath(path))))
            self.roots.append(folder)
            self._fill(store, [folder], skip=[path])
        if path is not None:
            result = index_file(store, path, self.roots)
            state.current_path, state.new_entries, state.current_error = path, result.entries, result.error
            row = read_sql.current_journal(store, os.path.abspath(path))
            if row is not None:
                state.current_file, state.current_session, state.context_from = row

    def _fill(self, store: Store, roots: list[Root], skip: list[str]) -> Pending:
        """Index what the index lacks under ``roots``, newest first, for FILL_SECONDS at most;
        what it still lacks then."""
        lacking = pending(store, roots, skip, self._scans)
        if not lacking.journals:
            return lacking
        deadline = time.monotonic() + FILL_SECONDS
        for path in lacking.paths:
            if time.monotonic() > deadline:
                break
            index_file(store, path, self.roots)
        return pending(store, roots, skip, self._scans)

    # -- actions ----------------------------------------------------------------
    def _current_session(self, store: Store, state: IndexState) -> SessionRef | None:
        """The agent's own session: the journal it is writing now (its file, not its bare id)."""
        if state.current_file is None:
            return None
        row = read_sql.journal_ref(store, state.current_file)
        return None if row is None else SessionRef(row.format, row.session_id or "", row.id, row.path, row.cwd)

    def _dispatch(self, store: Store, args: Args, state: IndexState) -> Answer:
        if args.scope == TEAM_SCOPE:
            return self._team(args, state)
        # Journals are only opened inside the session roots (and the current journal's folder).
        roots: list[Root] = [*self.roots]
        if self.session_file:
            roots.append(Root(Path(os.path.dirname(self.session_file))))
        service = Service(store, roots)
        live = (state.current_file, state.context_from) if state.current_file is not None else None
        caller = Caller(cwd=self.cwd, person=False, max_scope=self.max_scope,
                        current=self._current_session(store, state), live=live)
        if args.action == "read":
            return self._read(service, caller, args, state)
        request = Request(args.query or "", args.scope, args.session_id, kinds=(args.kind,) if args.kind else (),
                          since=args.since, until=args.until, limit=SEARCH_LIMIT, offset=args.offset)
        found = service.search(request, caller) if args.action == "search" else service.summaries(request, caller)
        page = found.result
        _shorten_excerpts(page.hits, EXCERPT_CHARS)
        # The JSON as it is now (excerpts of EXCERPT_CHARS: _fitted shortens the text's alone).
        shown = found.as_json()
        session = self._session_json(found.resolved.session) if page.scope.kind == "session" else None

        def result() -> dict[str, Any]:
            out: dict[str, Any] = render.redact_json(shown)
            if session is not None:
                out["scope"].update(render.redact_json(session))
            return out

        def answer_text() -> str:
            # The query is not echoed: the model knows it, and a bare secret in it would pass redaction.
            return render.search_text(page, render.MODEL, what=_what(args), first=args.offset + 1,
                                      next_offset=found.next_offset)

        return Answer(_fitted(answer_text, page.hits, state), None, None, state.as_json(), later=result)

    def _team(self, args: Args, state: IndexState) -> Answer:
        """Scope team: the hub answers (only when the operator's max scope allows it; the hub
        is not contacted otherwise)."""
        if wider_than(TEAM_SCOPE, self.max_scope):
            raise scope_not_allowed(TEAM_SCOPE, self.max_scope)
        from journal_index.agent import team

        if args.action == "read":
            return self._read_answer(render.redact_json(team.read(args, self.cwd, READ_PAGE_CHARS)),
                                     team.read_text, state)
        page = team.search(args, self.cwd, SEARCH_LIMIT)
        _shorten_excerpts(page.result.hits, EXCERPT_CHARS)
        result = render.redact_json(page.as_json())
        return Answer(_fitted(lambda: team.search_text(page, _what(args)), page.result.hits, state),
                      result, None, state.as_json())

    @staticmethod
    def _session_json(session: SessionRef | None) -> dict[str, Any]:
        """Which session a session-scoped answer searched: its id, agent, journal and folder."""
        if session is None:
            return {"sessionId": None, "agent": None, "file": None, "cwd": None}
        return {"sessionId": session.session_id, "agent": session.agent, "file": session.path, "cwd": session.cwd}

    def _read(self, service: Service, caller: Caller, args: Args, state: IndexState) -> Answer:
        assert args.entry_id is not None
        request = ReadRequest(args.entry_id, args.session_id, args.scope, offset=args.offset,
                              page_chars=READ_PAGE_CHARS)
        answer = render.redact_json(service.read(request, caller))
        return self._read_answer(answer, lambda a: render.read_text(a, render.MODEL), state)

    def _read_answer(self, answer: dict[str, Any], as_text: Callable[[dict[str, Any]], str],
                     state: IndexState) -> Answer:
        body = as_text(answer)
        if answer["status"] == "ok":
            return Answer(render.signed(body + "\n" + state.text()), answer, None, state.as_json())
        hints = {
            "not_found": "take the entryId (and sessionId) from a search hit of this project",
            "ambiguous": ("call read again with one of these entryIds" if answer.get("what") == "entryId"
                          else "call read again with one of these sessionIds"),
            "unavailable": "search again: the journal changed",
        }
        error = {"code": answer["status"], "message": body, "hint": hints[answer["status"]]}
        if answer["status"] == "ambiguous":
            error["candidates"] = answer["candidates"]
        text = render.error_text(error["code"], body, error["hint"])
        return Answer(render.signed(text + "\n" + state.text()), None, error, state.as_json())

    def _error(self, exc: ToolError, state: IndexState | None) -> Answer:
        lines = [render.error_text(exc.code, exc.message, exc.hint)]
        if state is not None:
            lines.append(state.text())
        return Answer(render.signed("\n".join(lines)), None, exc.as_json(), state.as_json() if state else None)
