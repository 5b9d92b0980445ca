"""The command line: each command parses arguments, opens the store, calls one library function.

Errors the user can fix are one line on stderr and a non-zero exit: ``click.UsageError``
(exit 2) for malformed arguments, ``click.ClickException`` (exit 1) for everything else.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import apsw
import click
import orjson

from journal_index import __version__, conversation, indexer, output, query, render
from journal_index.config import (
    CANDIDATES,
    QUERY_SECONDS,
    SCOPES,
    ConfigError,
    db_path,
    existing,
    max_scope_from_env,
    session_roots,
)
from journal_index.conversation import MAX_CONTEXT
from journal_index.counts import count
from journal_index.db_identity import identify
from journal_index.formats import FORMATS, KINDS, Root
from journal_index.index_errors import classify
from journal_index.redact import redact, redact_with_hits
from journal_index.scope import ScopeError, has_sessions, resolve_scope, resolve_session
from journal_index.store import BROKEN_INDEX, Store, StoreError, open_store, recover, remove_db_files
from journal_index.time_bounds import TimeBoundError, parse_time_bound

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

    def ensure_indexed(self) -> None:
        """A brand-new (or rebuilt) index is filled from the session roots before a query."""
        store = self.store()
        if store.value("SELECT count(*) FROM files", default=0) == 0:
            roots = existing(self.roots)
            if roots:
                indexer.index_files(store, indexer.discover(roots), roots=roots)


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


@dataclass
class FilterArgs:
    cwd: str | None
    scope: str | None
    session_id: str | None
    agents: tuple[str, ...]
    since: int | None  # epoch ms (time_bound_option)
    until: int | None
    kinds: tuple[str, ...]


def build_filters(app: App, given: FilterArgs) -> tuple[query.Filters, str | None]:
    """The filters, and a note to print when the scope was widened for the person asking."""
    store = app.store()
    cwd = given.cwd or os.getcwd()
    session = resolve_session(store, given.session_id, agents=given.agents) if given.session_id else None
    kind = given.scope or ("session" if session else "project")
    note = None
    scope = resolve_scope(store, kind, cwd, session)
    if given.scope is None and kind == "project" and not has_sessions(store, scope):
        # A person in a folder with no sessions of its own most likely wants everything.
        scope = resolve_scope(store, "global")
        note = (f"(no sessions were recorded in {redact(cwd)} or below; showing all projects — "
                "--scope project keeps to this folder)")
    filters = query.Filters(
        scope=scope,
        since=given.since,
        until=given.until,
        kinds=tuple(given.kinds),
        session_file=session.file_id if session is not None and kind != "session" else None,
        agents=tuple(given.agents),
    )
    return filters, note


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


# Commands that only read the index: given a path where no index is, they say so and create nothing.
READ_ONLY_COMMANDS = frozenset({"status", "search", "read", "summaries", "sessions", "export"})


@click.group(context_settings=CONTEXT_SETTINGS)
@click.option("--db", type=click.Path(), default=None,
              help="Index file (env JOURNAL_INDEX_DB; default: a file in the user cache folder).")
@click.option("--sessions", multiple=True, type=click.Path(),
              help="A folder of journals, any agent's (repeatable; env JOURNAL_INDEX_SESSIONS; "
                   "default: the folders of pi, Claude Code and Codex CLI).")
@click.version_option(version=__version__, prog_name="journal-index")
@click.pass_context
def cli(ctx: click.Context, db: str | None, sessions: tuple[str, ...]) -> None:
    """Search a coding agent's past sessions and read them back verbatim."""
    app = App(db, sessions)
    app.must_exist = ctx.invoked_subcommand in READ_ONLY_COMMANDS
    ctx.obj = app
    ctx.call_on_close(app.close)


def _progress_printer(total: int) -> Callable[[indexer.FileResult], None] | None:
    if not sys.stderr.isatty():
        return None
    bar = click.progressbar(length=total, label="indexing", file=sys.stderr)
    bar.__enter__()

    def step(result: indexer.FileResult) -> None:
        bar.update(1)
        if bar.pos >= total:
            bar.__exit__(None, None, None)

    return step


def run_index(app: App, paths: tuple[str, ...], as_json: bool) -> None:
    if paths:
        for p in paths:
            if not os.path.isfile(p):
                raise click.ClickException(f"{p} is not a readable file")
        files = list(paths)
        roots = app.roots
    else:
        roots = app.existing_roots()
        files = indexer.discover(roots)
    report = indexer.index_files(app.store(), files, progress=_progress_printer(len(files)), roots=roots)
    if not paths:
        from journal_index.backfill import record_progress

        record_progress(app.store(), report.files, len(files), finished=True)
    if as_json:
        emit_json(report.as_json())
    else:
        mb = report.bytes / 1e6
        rate = mb / report.seconds if report.seconds > 0 else 0.0
        click.echo(f"indexed {count(report.files, 'journal')}: {count(report.entries, 'new entry', 'new entries')}, "
                   f"{mb:.1f} MB in {report.seconds:.2f} s ({rate:.1f} MB/s); "
                   f"{count(report.skipped_lines, 'line')} skipped, "
                   f"{count(report.reset_files, 'journal')} reindexed after a rewrite"
                   + (f", {count(report.ignored_files, 'file')} not recognized as journals"
                      if report.ignored_files else ""))
    for error in report.errors:
        click.echo(f"journal-index: warning: {error}", err=True)


@cli.command(name="index")
@click.argument("paths", nargs=-1, type=click.Path())
@json_option
@with_app
def index_cmd(app: App, paths: tuple[str, ...], as_json: bool) -> None:
    """Index every journal under the session roots (or just PATHS), from where it was left."""
    run_index(app, paths, as_json)


@cli.command(name="status")
@json_option
@with_app
def status_cmd(app: App, as_json: bool) -> None:
    """What the index holds: sessions, entries, summaries, sizes, schema."""
    from journal_index.status import status  # here: its lease code is not needed by other commands

    info = render.redact_json(status(app.store(), app.roots))
    emit_json(info) if as_json else click.echo(render.status_text(info))


@cli.command(name="rebuild")
@json_option
@with_app
def rebuild_cmd(app: App, as_json: bool) -> None:
    """Delete the index (with its -wal/-shm) and index every journal again."""
    roots = app.existing_roots()
    app.close()
    remove_db_files(app.db_path)
    app.roots = roots
    run_index(app, (), as_json)


@cli.command(name="search")
@click.argument("words", nargs=-1)
@filter_options
@click.option("--limit", type=click.IntRange(1, CANDIDATES), default=10, show_default=True,
              help=f"How many results (at most {CANDIDATES}: the ranking looks at that many candidates).")
@click.option("--explain", is_flag=True, help="Show each ranking factor's part of every hit's score.")
@json_option
@with_app
def search_cmd(app: App, words: tuple[str, ...], cwd: str | None, scope: str | None, session_id: str | None,
               agents: tuple[str, ...], since: int | None, until: int | None, kinds: tuple[str, ...], limit: int,
               explain: bool, as_json: bool) -> None:
    """Find entries by words (all words first, then most of them); no words lists the newest."""
    app.ensure_indexed()
    filters, note = build_filters(app, FilterArgs(cwd, scope, session_id, agents, since, until, kinds))
    with app.store().time_limit(QUERY_SECONDS):
        result = query.search(app.store(), " ".join(words), filters, limit=limit, roots=app.roots)
    if as_json:
        emit_json(render.redact_json(result.as_json(explain=explain)))
        return
    if note:
        click.echo(note)
    if not result.hits:
        result = dataclasses.replace(result, hint=nothing_found_hint(filters, bool(words)))
    style = render.Style(color=render.use_color())
    click.echo(render.search_text(result, style, what="search" if words else "newest entries", explain=explain))


@cli.command(name="read")
@click.argument("entry_id", required=False)
@click.option("--session", "session_id", default=None,
              help="The session whose copy to read (an id or a unique prefix, AGENT:ID, or the journal's "
                   "path; forks keep entry ids); with no ENTRY_ID, the whole session, a page at a time.")
@click.option("--context", "context", type=click.IntRange(0, MAX_CONTEXT), default=None, metavar="N",
              help="Show the entry with the N entries before and after it, as a conversation.")
@click.option("--offset", type=click.IntRange(0), default=0,
              help="Where the page starts: a character of the entry, or with no ENTRY_ID an entry of the session.")
@click.option("--cwd", type=click.Path(file_okay=False), default=None,
              help="Folder whose project's copy is meant when the entry is in several sessions "
                   "(default: the current folder).")
@click.option("--scope", type=click.Choice(SCOPES), default="global", show_default=True,
              help="Where to look for the entry.")
@json_option
@with_app
def read_cmd(app: App, entry_id: str | None, session_id: str | None, context: int | None, offset: int,
             cwd: str | None, scope: str, as_json: bool) -> None:
    """Read one entry verbatim (redacted), 16,000 characters a page; with --context N, in its place
    in the conversation; with --session and no ENTRY_ID, a whole session."""
    if entry_id is None and not session_id:
        raise click.UsageError("read needs an ENTRY_ID, or --session ID to read a whole session")
    if context is not None and (entry_id is None or offset):
        raise click.UsageError("--context N shows an entry in its place: give an ENTRY_ID and no --offset")
    app.ensure_indexed()
    store = app.store()
    session = resolve_session(store, session_id) if session_id else None
    here = resolve_scope(store, "project", cwd or os.getcwd())
    resolved = resolve_scope(store, scope, cwd or os.getcwd(), session)
    if entry_id is None:
        assert session is not None
        if not resolved.contains(session.cwd, session.file_id):
            raise click.ClickException(f"session {redact(session_id or '')} is not in {render.scope_words(resolved)}; "
                                       "use --scope global")
        answer = conversation.read_session(store, session, offset=offset, roots=app.roots)
    elif context is not None:
        answer = conversation.read_context(store, entry_id, resolved, context, session=session, roots=app.roots,
                                           prefer=here)
    else:
        answer = query.read(store, entry_id, resolved, session=session, offset=offset, roots=app.roots, prefer=here)
    answer = render.redact_json(answer)
    if as_json:
        emit_json(answer)
    elif entry_id is None or context is not None:
        click.echo(render.conversation_text(answer, render.PEOPLE))
    else:
        click.echo(render.read_text(answer, render.PEOPLE))
    if answer["status"] != "ok":
        sys.exit(1 if answer["status"] != "ambiguous" else 3)


@cli.command(name="summaries")
@filter_options
@click.option("--limit", type=click.IntRange(1, CANDIDATES), default=10, show_default=True,
              help=f"How many summaries (at most {CANDIDATES}).")
@json_option
@with_app
def summaries_cmd(app: App, cwd: str | None, scope: str | None, session_id: str | None, agents: tuple[str, ...],
                  since: int | None, until: int | None, kinds: tuple[str, ...], limit: int, as_json: bool) -> None:
    """Compaction and branch summaries, newest first."""
    app.ensure_indexed()
    filters, note = build_filters(app, FilterArgs(cwd, scope, session_id, agents, since, until, kinds))
    result = query.summaries(app.store(), filters, limit=limit, roots=app.roots)
    if as_json:
        emit_json(render.redact_json(result.as_json(with_match=False)))
        return
    if note:
        click.echo(note)
    if not result.hits:
        result = dataclasses.replace(result, hint=nothing_found_hint(filters, False))
    click.echo(render.search_text(result, render.Style(color=render.use_color()), what="summaries"))


@cli.command(name="sessions")
@filter_options
@click.option("--limit", type=click.IntRange(1), default=20, show_default=True, help="How many sessions.")
@json_option
@with_app
def sessions_cmd(app: App, cwd: str | None, scope: str | None, session_id: str | None, agents: tuple[str, ...],
                 since: int | None, until: int | None, kinds: tuple[str, ...], limit: int, as_json: bool) -> None:
    """List sessions, newest activity first: agent, id, start, last activity, entries, first user words.

    A session is listed when its time span meets --since/--until and, with --kind, when it holds
    an entry of that kind.
    """
    from journal_index.sessions import list_sessions

    app.ensure_indexed()
    filters, note = build_filters(app, FilterArgs(cwd, scope, session_id, agents, since, until, kinds))
    found = list_sessions(app.store(), filters, limit=limit, roots=app.roots)
    if as_json:
        emit_json(render.redact_json({"scope": filters.scope.as_json(), "sessions": [s.as_json() for s in found]}))
        return
    if note:
        click.echo(note)
    click.echo(render.sessions_text(found, render.where(query.SearchResult("all", None, filters.scope, [])),
                                    render.Style(color=render.use_color())))
    if not found:
        click.echo(f"hint: {nothing_found_hint(filters, False)}")


@cli.command(name="redact")
@click.argument("file", type=click.File("r", encoding="utf-8", errors="replace"), default="-")
@json_option
def redact_cmd(file: Any, as_json: bool) -> None:
    """Print FILE (default: stdin) with secrets replaced by [REDACTED:kind]."""
    text, hits = redact_with_hits(file.read())
    if as_json:
        emit_json({"text": text, "hits": [{"kind": h.kind, "start": h.start, "end": h.end} for h in hits]})
    else:
        click.echo(text, nl=False)


EXPORT_TABLES = ("files", "entries", "meta")


@cli.command(name="export")
@click.argument("table", type=click.Choice(EXPORT_TABLES))
@click.option("--format", "fmt", type=click.Choice(["json", "nl", "csv", "tsv"]), default="json",
              show_default=True, help="JSON array, JSON lines, CSV or TSV.")
@with_app
def export_cmd(app: App, table: str, fmt: str) -> None:
    """Dump one of the plain tables (no journal text is stored in any of them).

    Runs sqlite-utils in a separate process: it uses Python's own sqlite3, and two SQLite
    libraries must never open one database file in the same process. Its output is redacted
    line by line on the way out: paths, cwds and ids come from journals.
    """
    app.store()  # says so when there is no index; refuses a file that is not ours; migrates ours, so the table exists
    app.close()
    import subprocess

    flags = {"json": [], "nl": ["--nl"], "csv": ["--csv"], "tsv": ["--tsv"]}[fmt]
    with subprocess.Popen([sys.executable, "-m", "sqlite_utils", "rows", app.db_path, table, *flags],
                          stdout=subprocess.PIPE) as proc:
        assert proc.stdout is not None
        out = sys.stdout.buffer
        for line in proc.stdout:
            out.write(redact(line.decode("utf-8", "replace")).encode())
        out.flush()
    sys.exit(proc.returncode)  # sqlite-utils has said what went wrong, if anything


def bundled_sessions() -> Path:
    """The demo journals: inside the installed package, or fixtures/ in a source checkout."""
    packaged = Path(__file__).resolve().parent / "demo_sessions"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent / "fixtures" / "sessions"


DEMO_CWD = "/home/dev/Apps/prjct/prjct-be"
DEMO_QUERY = "rate limit per token"


@cli.command(name="demo")
@click.pass_context
def demo_cmd(ctx: click.Context) -> None:
    """Index the bundled sample journals into a temporary index and show what a user sees."""
    import shutil
    import tempfile

    sessions = bundled_sessions()
    if not sessions.is_dir():
        raise click.ClickException(f"the bundled sample journals are missing ({sessions})")
    with tempfile.TemporaryDirectory(prefix="journal-index-demo-") as tmp:
        copy = Path(tmp) / "sessions"
        shutil.copytree(sessions, copy)
        db = str(Path(tmp) / "index.db")
        base = ["--db", db, "--sessions", str(copy)]

        def step(title: str, args: list[str]) -> None:
            click.secho(f"\n$ journal-index {' '.join(args)}", bold=True)
            click.secho(f"# {title}", dim=True)
            try:
                cli.main(base + args, standalone_mode=False)
            except SystemExit:
                pass

        step("index the sample journals", ["index"])
        step("what the index holds", ["status"])
        step("the project's sessions, newest activity first", ["sessions", "--cwd", DEMO_CWD, "--limit", "3"])
        step("search a project tree", ["search", DEMO_QUERY, "--cwd", DEMO_CWD, "--limit", "3"])
        store = open_store(db)
        try:
            filters = query.Filters(resolve_scope(store, "project", DEMO_CWD))
            hits = query.search(store, DEMO_QUERY, filters, limit=1).hits
        finally:
            store.close()
        if hits:
            step("read the best hit verbatim (secrets redacted)",
                 ["read", query.short_entry_id(hits[0].entry_id), "--cwd", DEMO_CWD,
                  "--session", f"{hits[0].format}:{hits[0].session_id or ''}"])
        step("summaries written when the sessions compacted", ["summaries", "--cwd", DEMO_CWD, "--limit", "3"])


def agent_options(func: F) -> F:
    """--cwd, --session-file, --max-scope: what the host tells the agent tool about itself."""
    options = [
        click.option("--cwd", type=click.Path(file_okay=False), default=None,
                     help="The agent's folder: project scope derives from it (default: the current folder)."),
        click.option("--session-file", type=click.Path(dir_okay=False), default=None,
                     help="The agent's current journal (indexed before every call; its session is "
                          "scope 'session')."),
        click.option("--max-scope", type=click.Choice(["session", "project", "global"]), default=None,
                     help="Widest scope the agent may use (env JOURNAL_INDEX_MAX_SCOPE; default project)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def make_tool(app: App, cwd: str | None, session_file: str | None, max_scope: str | None) -> Any:
    from journal_index.tool import MemoryTool

    try:
        return MemoryTool(app.db_path, app.roots, cwd=cwd, session_file=session_file, max_scope=max_scope)
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None


@cli.command(name="tool")
@click.argument("arguments", required=False)
@agent_options
@click.pass_obj
def tool_cmd(app: App, arguments: str | None, cwd: str | None, session_file: str | None,
             max_scope: str | None) -> None:
    """Answer one memory_context call: JSON arguments (or stdin) in, one JSON answer out.

    Error answers exit 0 (they are answers); unreadable JSON exits 2.

    \b
    Example:
        journal-index tool '{"action": "search", "query": "rate limit"}'
    """
    raw = arguments if arguments is not None else sys.stdin.read()
    try:
        parsed = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        click.echo(f"journal-index: error: the arguments are not JSON ({exc.args[0]})", err=True)
        sys.exit(2)
    if not isinstance(parsed, dict):
        click.echo('journal-index: error: the arguments must be one JSON object, e.g. {"action": "search"}',
                   err=True)
        sys.exit(2)
    tool = make_tool(app, cwd, session_file, max_scope)
    try:
        answer = tool.call(parsed)
    finally:
        tool.close()
    click.echo(orjson.dumps(answer.as_json()).decode())


@cli.command(name="mcp")
@agent_options
@click.pass_obj
def mcp_cmd(app: App, cwd: str | None, session_file: str | None, max_scope: str | None) -> None:
    """Serve the memory_context tool to an agent over MCP stdio (until stdin closes)."""
    from journal_index.mcp_server import run

    try:
        max_scope_from_env()  # a bad setting fails now, not at the first call
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None
    sys.exit(run(lambda: make_tool(app, cwd, session_file, max_scope)))


@cli.command(name="watch")
@click.option("--rescan", type=click.FloatRange(min=1), default=30, show_default=True, metavar="SECONDS",
              help="Seconds between full rescans (the fallback for missed file events).")
@click.option("--no-events", is_flag=True, help="Rescan only; no OS file events (e.g. network file systems).")
@click.option("--quiet", "-q", is_flag=True, help="Log errors only.")
@click.option("--verbose", "-v", is_flag=True, help="Log every pass.")
@with_app
def watch_cmd(app: App, rescan: float, no_events: bool, quiet: bool, verbose: bool) -> None:
    """Keep the index up to date in the background: backfill, then follow the session roots.

    Stops cleanly on SIGINT/SIGTERM. Run it as a service with `journal-index service --print`.
    """
    from journal_index import watch

    verbosity = watch.QUIET if quiet else watch.VERBOSE if verbose else watch.NORMAL
    options = watch.WatchOptions(rescan=rescan, events=not no_events, verbosity=verbosity)
    sys.exit(watch.run(app.store(), app.roots, options))


@cli.command(name="gc")
@click.option("--confirm", is_flag=True, help="Delete the journals the last preview listed (if unchanged).")
@click.option("--current", type=click.Path(dir_okay=False), default=None,
              help="The journal in use now; never a candidate.")
@json_option
@with_app
def gc_cmd(app: App, confirm: bool, current: str | None, as_json: bool) -> None:
    """Preview junk journals (never compacted and temporary, empty or ≤ 2 replies); --confirm deletes them."""
    from journal_index import gc

    roots = app.existing_roots()
    if confirm:
        result = gc.confirm(app.store(), roots, current)
        emit_json(result.as_json()) if as_json else click.echo(gc.confirm_text(result))
    else:
        candidates = gc.preview(app.store(), roots, current)
        if as_json:
            emit_json({"candidates": [c.as_json() for c in candidates]})
        else:
            click.echo(gc.preview_text(candidates))


@cli.command(name="service")
@click.option("--print", "kind", metavar="systemd|launchd", default=None,
              help="Print a systemd user unit or a launchd agent that runs `journal-index watch`.")
@click.pass_context
def service_cmd(ctx: click.Context, kind: str | None) -> None:
    """Print a service file that keeps `journal-index watch` running (install: see the README)."""
    from journal_index import service

    top = ctx.find_root().params
    try:
        click.echo(service.service_file(kind, top.get("db"), tuple(top.get("sessions") or ())), nl=False)
    except service.ServiceError as exc:
        click.echo(f"journal-index: error: {exc}", err=True)
        sys.exit(2)


def main() -> None:
    output.install()  # every line printed from here on is redacted, whoever prints it
    try:
        cli.main(prog_name="journal-index")
    except apsw.Error as exc:  # still failing after one recovery: say so in one line
        click.echo(f"journal-index: error: the index failed ({type(exc).__name__}: {exc}); "
                   "run `journal-index rebuild`", err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
