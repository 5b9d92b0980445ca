"""The web view's routes: each page or API asks the service layer one request and renders its
answer, redacted by ``render.redact_json`` as the CLI's ``--json`` is (no second query path).

Every service call runs on one worker thread: the index's connection is used by one thread at
a time, in order, and the event loop stays free to answer while a query runs.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

import apsw
import orjson
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request as HttpRequest
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from journal_index.config import CANDIDATES, QUERY_SECONDS, SCOPES, ConfigError
from journal_index.data.store import StoreError
from journal_index.formats import FORMATS, KINDS
from journal_index.query.conversation import MAX_CONTEXT
from journal_index.query.hits import QueryError
from journal_index.query.scope import ScopeError
from journal_index.query.time_bounds import TimeBoundError
from journal_index.redact import redact
from journal_index.service import Caller, ReadRequest, RequestError, Service
from journal_index.text import render
from journal_index.text.output import scrub
from journal_index.web import views
from journal_index.web.security import Guard

HERE = Path(__file__).resolve().parent
T = TypeVar("T")
_FIXABLE = (RequestError, QueryError, ScopeError, ConfigError, TimeBoundError, StoreError)


class WebError(Exception):
    """What went wrong, said once for a page and for the API."""

    def __init__(self, status: int, code: str, message: str, hint: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.hint = status, code, redact(message), redact(hint)

    def as_json(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, "hint": self.hint}}


def json_response(value: Any, status: int = 200) -> Response:
    """JSON as the CLI prints it: redacted values, then the whole text scrubbed once more on the
    way out (what ``output`` does to the CLI's stdout)."""
    return Response(scrub(orjson.dumps(value).decode()), status_code=status, media_type="application/json")


class WebView:
    """The routes over one service; ``cwd`` is the folder `serve` was started in (a search's
    default project, as for the CLI there)."""

    def __init__(self, service: Service, cwd: str | None = None) -> None:
        self.service = service
        self.cwd = cwd or os.getcwd()
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="journal-index-web")
        self.templates = Environment(loader=FileSystemLoader(HERE / "templates"),
                                     autoescape=select_autoescape(["html"]), trim_blocks=True, lstrip_blocks=True)

    # -- running service calls ----------------------------------------------------
    async def ask(self, call: Callable[[], T]) -> T:
        def guarded() -> T:
            self.service.fill_if_new()  # a brand-new index is filled before it is asked, as by the CLI
            with self.service.store.time_limit(QUERY_SECONDS):
                return call()

        try:
            return await asyncio.get_running_loop().run_in_executor(self._worker, guarded)
        except RequestError as exc:
            raise WebError(404 if exc.code == "session_not_found" else 400, exc.code, exc.message, exc.hint) from None
        except _FIXABLE as exc:
            raise WebError(400, "bad_argument", str(exc), "change the request") from None
        except apsw.BusyError:
            raise WebError(503, "busy", "the index is busy (another process holds a write lock)",
                           "retry in a moment") from None
        except apsw.InterruptError:
            raise WebError(503, "timeout", f"the query ran over {QUERY_SECONDS:g} s",
                           "use fewer common words, a narrower scope or a time range") from None

    def caller(self, params: views.Params) -> Caller:
        return Caller(cwd=params.one("cwd") or self.cwd, project_option="the scope “project”")

    def close(self) -> None:
        self._worker.shutdown(wait=False, cancel_futures=True)

    # -- pages and APIs ------------------------------------------------------------
    def page(self, name: str, status: int = 200, **values: Any) -> HTMLResponse:
        values.setdefault("scopes", SCOPES)
        values.setdefault("agents", sorted(FORMATS))
        values.setdefault("kinds", KINDS)
        return HTMLResponse(scrub(self.templates.get_template(name).render(**values)), status_code=status)

    async def _search(self, params: views.Params, default_limit: int) -> tuple[dict[str, Any], list[Any], Any]:
        request = parsed(lambda: views.search_request(params, default_limit))
        page = await self.ask(lambda: self.service.search(request, self.caller(params)))
        return render.redact_json(page.as_json()), [hit.spans for hit in page.result.hits], page

    async def api_search(self, http: HttpRequest) -> Response:
        """Exactly the CLI's ``search --json`` for the same options."""
        try:
            answer, _, _ = await self._search(views.Params(http.query_params.multi_items()), 10)
        except WebError as exc:
            return json_response(exc.as_json(), exc.status)
        return json_response(answer)

    async def api_sessions(self, http: HttpRequest) -> Response:
        """Exactly the CLI's ``sessions --json`` for the same options."""
        params = views.Params(http.query_params.multi_items())
        try:
            request = parsed(lambda: views.sessions_request(params))
            found, resolved = await self.ask(lambda: self.service.sessions(request, self.caller(params)))
        except WebError as exc:
            return json_response(exc.as_json(), exc.status)
        return json_response(render.redact_json({"scope": resolved.filters.scope.as_json(),
                                                "sessions": [s.as_json() for s in found]}))

    async def search_page(self, http: HttpRequest) -> Response:
        items = http.query_params.multi_items()
        params = views.Params(items)
        form = {name: params.one(name) or "" for name in views.SEARCH_PARAMS}
        chosen = {"agent": params.all("agent"), "kind": params.all("kind")}
        values: dict[str, Any] = {"form": form, "chosen": chosen, "hits": [], "answer": None, "error": None}
        try:
            answer, spans, page = await self._search(params, views.SEARCH_LIMIT)
            page_limit = params.number("limit", views.SEARCH_LIMIT, 1, CANDIDATES)  # read by _search already
            values.update(answer=answer, hits=views.search_hits(answer, spans), note=page.resolved.note,
                          scope_words=render.where(page.result), first=page.offset + 1,
                          next_url=_with(items, offset=page.next_offset) if page.next_offset else None,
                          prev_url=_with(items, offset=max(0, page.offset - page_limit)) if page.offset else None)
        except WebError as exc:
            values["error"] = exc
        name = "results.html" if params.one("partial") else "search.html"
        return self.page(name, status=values["error"].status if values["error"] else 200, **values)

    async def sessions_page(self, http: HttpRequest) -> Response:
        params = views.Params(http.query_params.multi_items())
        form = {name: params.one(name) or "" for name in ("scope", "since", "until", "cwd")}
        values: dict[str, Any] = {"form": form, "chosen": {"agent": params.all("agent"), "kind": ()},
                                  "sessions": [], "error": None}
        try:
            request = parsed(lambda: views.sessions_request(params, views.SESSIONS_LIMIT))
            found, resolved = await self.ask(lambda: self.service.sessions(request, self.caller(params)))
            rows = render.redact_json([s.as_json() for s in found])
            for row in rows:
                row["url"] = views.session_url(row["agent"], row["sessionId"])
                row["projectUrl"] = f"/sessions?{_query(scope='project', cwd=row['cwd'])}" if row["cwd"] else None
            more = [(k, v) for k, v in http.query_params.multi_items() if k != "limit"]
            values.update(sessions=rows, note=resolved.note, scope_words=render.scope_words(resolved.filters.scope),
                          more_url=f"/sessions?{urlencode([*more, ('limit', str(request.limit * 2))])}"
                          if len(rows) == request.limit else None)
        except WebError as exc:
            values["error"] = exc
        return self.page("sessions.html", status=values["error"].status if values["error"] else 200, **values)

    async def session_page(self, http: HttpRequest) -> Response:
        """A session as a conversation: a page of it, or (``?at=ENTRY``) the entry opened from a
        hit, highlighted, with the turns around it."""
        agent, session_id = http.path_params["agent"], http.path_params["session_id"]
        params = views.Params(http.query_params.multi_items())
        at = params.one("at")
        session = f"{agent}:{session_id}"
        try:
            if agent not in FORMATS:
                raise WebError(404, "session_not_found", f"no agent {agent!r}", f"use one of {', '.join(FORMATS)}")
            offset = parsed(lambda: params.number("offset", 0, 0, 10**9))
            before = parsed(lambda: params.number("before", 0, 0, 10**9)) or None
            context = parsed(lambda: params.number("context", views.CONTEXT, 0, MAX_CONTEXT))
            if at:
                read = ReadRequest(at, session=session, scope="global", context=context, thinking_apart=True)
            else:
                read = ReadRequest(None, session=session, scope="global", offset=offset, before=before,
                                   thinking_apart=True)
            answer = render.redact_json(await self.ask(lambda: self.service.read(read, self.caller(params))))
        except WebError as exc:
            return self.page("error.html", exc.status, error=exc)
        if answer["status"] != "ok":
            what = f"entry {at}" if at else f"session {session_id}"
            error = WebError(404 if answer["status"] == "not_found" else 409, answer["status"],
                             f"{what} is {answer['status'].replace('_', ' ')}"
                             + (f": {answer['reason']}" if answer.get("reason") else ""),
                             "open the session from its start, or search again")
            return self.page("error.html", error.status, error=error, session_url=views.session_url(agent, session_id))
        base = views.session_url(agent, session_id) or "/"
        start, end = answer["offset"], answer["offset"] + len(answer["entries"])
        return self.page("session.html", answer=answer, turns=views.turns(answer["entries"]), at=at,
                         base_url=base, more_url=f"{base}?{_query(at=at, context=MAX_CONTEXT)}#{at}" if at else None,
                         earlier_url=f"{base}?{_query(before=start)}" if start > 0 else None,
                         next_url=f"{base}?{_query(offset=end)}" if end < answer["totalEntries"] else None)

    async def entry_page(self, http: HttpRequest) -> Response:
        """One entry whole, 16,000 characters a page (a session page cuts long entries)."""
        agent, session_id, entry_id = (http.path_params[k] for k in ("agent", "session_id", "entry_id"))
        params = views.Params(http.query_params.multi_items())
        base = views.session_url(agent, session_id) or "/"
        try:
            offset = parsed(lambda: params.number("offset", 0, 0, 10**12))
            read = ReadRequest(entry_id, session=f"{agent}:{session_id}", scope="global", offset=offset)
            answer = render.redact_json(await self.ask(lambda: self.service.read(read, self.caller(params))))
        except WebError as exc:
            return self.page("error.html", exc.status, error=exc, session_url=base)
        if answer["status"] != "ok":
            error = WebError(404 if answer["status"] == "not_found" else 409, answer["status"],
                             f"entry {entry_id} is {answer['status'].replace('_', ' ')}", "search again")
            return self.page("error.html", error.status, error=error, session_url=base)
        here = f"{base}/entry/{quote(entry_id, safe='')}"
        in_place = f"{base}?{_query(at=answer['entryId'])}#{answer['entryId']}"
        return self.page("entry.html", answer=answer, in_place=in_place,
                         next_url=f"{here}?{_query(offset=answer['nextOffset'])}" if answer["nextOffset"] else None)

    async def home(self, http: HttpRequest) -> Response:
        return RedirectResponse("/search" + (f"?{http.url.query}" if http.url.query else ""), status_code=303)


def parsed(read: Callable[[], T]) -> T:
    """Query parameters read into a request; one that cannot be read is a 400."""
    try:
        return read()
    except RequestError as exc:
        raise WebError(400, exc.code, exc.message, exc.hint) from None


def _query(**values: Any) -> str:
    return urlencode({k: v for k, v in values.items() if v is not None})


def _with(items: list[tuple[str, str]], **changes: Any) -> str:
    """This search's URL with some parameters changed (the next page)."""
    kept = [(k, v) for k, v in items if k not in changes and k != "partial"]
    kept += [(k, str(v)) for k, v in changes.items() if v is not None]
    return "/search?" + urlencode(kept)


def create_app(service: Service, token: str, allowed_host: str, cwd: str | None = None) -> Guard:
    """The whole web view behind its guard (token, cookie, Host, read-only)."""
    view = WebView(service, cwd)
    routes = [
        Route("/", view.home, methods=["GET", "HEAD"]),
        Route("/search", view.search_page, methods=["GET", "HEAD"]),
        Route("/sessions", view.sessions_page, methods=["GET", "HEAD"]),
        Route("/session/{agent}/{session_id}", view.session_page, methods=["GET", "HEAD"]),
        Route("/session/{agent}/{session_id}/entry/{entry_id}", view.entry_page, methods=["GET", "HEAD"]),
        Route("/api/search", view.api_search, methods=["GET", "HEAD"]),
        Route("/api/sessions", view.api_sessions, methods=["GET", "HEAD"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        yield
        view.close()

    app = Starlette(routes=routes, lifespan=lifespan)
    return Guard(app, token, allowed_host)
