"""What every command of the command line shares: the App (index path, session roots, the
open store, the service layer), the error handling that turns library errors into one line
and an exit code, and the options several commands take (--json, filters, time bounds).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any, TypeVar

import apsw
import click
import orjson

from journal_index import query
from journal_index.config import (
    QUERY_SECONDS,
    SCOPES,
    ConfigError,
    db_path,
    existing,
    session_roots,
)
from journal_index.data.index_errors import classify
from journal_index.data.store import BROKEN_INDEX, Store, StoreError, identify, open_store, recover
from journal_index.formats import FORMATS, KINDS, Root
from journal_index.query.scope import ScopeError
from journal_index.query.time_bounds import TimeBoundError, parse_time_bound
from journal_index.redact import redact
from journal_index.service import Caller, RequestError, Service

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"]}
F = TypeVar("F", bound=Callable[..., Any])


def emit_json(data: Any) -> None:
    click.echo(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode())


class App:
    """What every command needs: the index path, the session roots, an open store."""

    def __init__(self, db: str | None, sessions: tuple[str, ...]) -> None:
        self.db_path = db_path(db)
        self.roots = session_roots(sessions)
        # Folders the user named must exist; of the agents' default folders, those that do.
        self.explicit_roots = bool(sessions) or bool(os.environ.get("JOURNAL_INDEX_SESSIONS"))
        self._store: Store | None = None
        # Set for commands that only read: they never create an index (a mistyped --db must not
        # become a new file, nor start indexing every journal into it).
        self.must_exist = False

    def store(self) -> Store:
        if self._store is None:
            if self.must_exist and identify(self.db_path).state == "new":
                raise click.ClickException(f"there is no index at {redact(self.db_path)}; make one with "
                                           "`journal-index index` (or give --db the index's path)")
            try:
                self._store = open_store(self.db_path)
            except StoreError as exc:
                raise click.ClickException(str(exc)) from None
        return self._store

    def recover(self, reason: str) -> Store:
        self._store = recover(self.store(), reason)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    def existing_roots(self) -> list[Root]:
        found = existing(self.roots)
        missing = [r for r in self.roots if r not in found]
        if self.explicit_roots and missing:
            raise click.ClickException(
                f"session folder {missing[0]} does not exist; pass --sessions DIR, or set JOURNAL_INDEX_SESSIONS"
            )
        if not found:
            looked = ", ".join(str(r) for r in self.roots)
            raise click.ClickException(
                f"no agent journals found (looked in {looked}); pass --sessions DIR or set JOURNAL_INDEX_SESSIONS"
            )
        return found

    def service(self) -> Service:
        """The service layer over this index; a brand-new (or rebuilt) index is filled first."""
        service = Service(self.store(), self.roots)
        service.fill_if_new()
        return service

    @staticmethod
    def caller(cwd: str | None) -> Caller:
        """The person at this terminal, in ``cwd`` (default: the current folder)."""
        return Caller(cwd=cwd or os.getcwd())


def with_app(func: F) -> F:
    """Pass the App, and turn library errors into one-line CLI errors."""

    @click.pass_obj
    @functools.wraps(func)
    def wrapper(app: App, *args: Any, **kwargs: Any) -> Any:
        try:
            try:
                return func(app, *args, **kwargs)
            except BROKEN_INDEX as exc:
                # The index is disposable: set the broken file aside, start a fresh one (the
                # command refills it from the journals) and answer the same request once more.
                app.recover(type(exc).__name__)
                return func(app, *args, **kwargs)
        except RequestError as exc:
            raise click.ClickException(f"{exc.message}; {exc.hint}") from None
        except (query.QueryError, ScopeError, ConfigError, StoreError) as exc:
            raise click.ClickException(str(exc)) from None
        except apsw.BusyError:
            raise click.ClickException("the index is busy (another process holds a write lock); "
                                       "retry in a moment") from None
        except apsw.InterruptError:
            raise click.ClickException(f"the query ran over {QUERY_SECONDS:g} s; use fewer common words, "
                                       "a narrower scope or a time range") from None
        except apsw.Error as exc:
            failure = classify(exc, app.db_path)  # a full disk or a read-only index is no reason to rebuild
            if failure is None:
                raise
            raise click.ClickException(failure.line()) from None

    return wrapper  # type: ignore[return-value]


def json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")(func)


class TimeOptionError(click.ClickException):
    """A --since/--until the parser cannot read: one line listing the accepted forms, exit 2
    (a malformed argument, as click's own usage errors)."""

    exit_code = 2


def time_bound_option(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    """--since/--until as epoch ms, read by the one time parser (the agent tool uses it too)."""
    if value is None:
        return None
    try:
        return parse_time_bound(value, end=param.name == "until")
    except (TimeBoundError, ConfigError) as exc:
        raise TimeOptionError(f"--{param.name}: {exc}") from None


def filter_options(func: F) -> F:
    """--cwd, --scope, --session, --agent, --since, --until, --kind: the same everywhere."""
    options = [
        click.option("--cwd", type=click.Path(file_okay=False), default=None,
                     help="Folder the project root is derived from (default: the current folder)."),
        click.option("--scope", type=click.Choice(SCOPES), default=None,
                     help="Which sessions: session, project (the default; all projects when this folder "
                          "has no sessions of its own) or global."),
        click.option("--session", "session_id", default=None,
                     help="One session: its id or a unique prefix, AGENT:ID when two agents' sessions share "
                          "the id, or its journal's path (implies --scope session)."),
        click.option("--agent", "agents", multiple=True, type=click.Choice(sorted(FORMATS)),
                     help="Only journals of this agent (repeatable)."),
        click.option("--since", default=None, callback=time_bound_option, metavar="WHEN",
                     help="From this time: 2d, 3h, 30m, 1w, today, yesterday, 2026-09-01 (local day) or ISO-8601."),
        click.option("--until", default=None, callback=time_bound_option, metavar="WHEN",
                     help="Up to this time: the same forms (2026-09-30: the whole local day; today: its midnight)."),
        click.option("--kind", "kinds", multiple=True, type=click.Choice(KINDS),
                     help="Only these entry kinds (repeatable)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def nothing_found_hint(filters: query.Filters, words: bool) -> str:
    """The one hint under an empty answer, naming only what would widen this very search."""
    ways = ["fewer or other words"] if words else []
    if filters.scope.kind != "global":
        ways.append("--scope global")
    if filters.since is not None or filters.until is not None:
        ways.append("a longer --since/--until range")
    if filters.kinds or filters.agents:
        ways.append("fewer --kind/--agent filters")
    if not ways:
        return "nothing is indexed here yet; run `journal-index index`"
    return "nothing matched; try " + (", ".join(ways[:-1]) + " or " + ways[-1] if len(ways) > 1 else ways[0])
