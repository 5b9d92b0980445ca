"""The command line: each command parses arguments, opens the store, calls one library function.

Errors the user can fix are one line on stderr and a non-zero exit: ``click.UsageError``
(exit 2) for malformed arguments, ``click.ClickException`` (exit 1) for everything else.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import click

from journal_index import __version__, query
from journal_index.cli import agent as cli_agent
from journal_index.cli import hub
from journal_index.cli.app import (
    CONTEXT_SETTINGS,
    App,
    emit_json,
    filter_options,
    json_option,
    nothing_found_hint,
    with_app,
)
from journal_index.config import (
    CANDIDATES,
    QUERY_SECONDS,
    SCOPES,
)
from journal_index.data.store import open_store, remove_db_files
from journal_index.indexing import indexer
from journal_index.query.conversation import MAX_CONTEXT
from journal_index.query.scope import resolve_scope
from journal_index.redact import redact_with_hits
from journal_index.service import ReadRequest, Request, Service
from journal_index.text import output, render
from journal_index.text.counts import count

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
        from journal_index.indexing.backfill import record_progress

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
    from journal_index.indexing.status import status  # here: its lease code is not needed by other commands

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
@click.option("--offset", type=click.IntRange(0, CANDIDATES - 1), default=0, show_default=True,
              help="Skip this many results: the next page of the same ranked list.")
@click.option("--explain", is_flag=True, help="Show each ranking factor's part of every hit's score.")
@json_option
@hub.hub_flag
@with_app
def search_cmd(app: App, words: tuple[str, ...], cwd: str | None, scope: str | None, session_id: str | None,
               agents: tuple[str, ...], since: int | None, until: int | None, kinds: tuple[str, ...], limit: int,
               offset: int, explain: bool, as_json: bool, on_hub: bool) -> None:
    """Find entries by words (all words first, then most of them); no words lists the newest."""
    if on_hub:
        return hub.search_on_hub(words, cwd, scope, session_id, agents, since, until, kinds, limit, as_json)
    service = app.service()
    request = Request(" ".join(words), scope, session_id, agents, kinds, since, until, limit, offset)
    with app.store().time_limit(QUERY_SECONDS):
        page = service.search(request, app.caller(cwd))
    if as_json:
        emit_json(render.redact_json(page.as_json(explain=explain)))
        return
    result, filters = page.result, page.resolved.filters
    if page.resolved.note:
        click.echo(page.resolved.note)
    if not result.hits:
        result = dataclasses.replace(result, hint=nothing_found_hint(filters, bool(words)))
    style = render.Style(color=render.use_color())
    click.echo(render.search_text(result, style, what="search" if words else "newest entries", first=offset + 1,
                                  next_offset=page.next_offset, explain=explain))


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
@hub.hub_flag
@with_app
def read_cmd(app: App, entry_id: str | None, session_id: str | None, context: int | None, offset: int,
             cwd: str | None, scope: str, as_json: bool, on_hub: bool) -> None:
    """Read one entry verbatim (redacted), 16,000 characters a page; with --context N, in its place
    in the conversation; with --session and no ENTRY_ID, a whole session."""
    if on_hub:
        return hub.read_on_hub(entry_id, session_id, context, offset, cwd, scope, as_json)
    if entry_id is None and not session_id:
        raise click.UsageError("read needs an ENTRY_ID, or --session ID to read a whole session")
    if context is not None and (entry_id is None or offset):
        raise click.UsageError("--context N shows an entry in its place: give an ENTRY_ID and no --offset")
    answer = app.service().read(ReadRequest(entry_id, session_id, scope, context, offset), app.caller(cwd))
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
    request = Request("", scope, session_id, agents, kinds, since, until, limit)
    page = app.service().summaries(request, app.caller(cwd))
    result, filters, note = page.result, page.resolved.filters, page.resolved.note
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
@hub.hub_flag
@with_app
def sessions_cmd(app: App, cwd: str | None, scope: str | None, session_id: str | None, agents: tuple[str, ...],
                 since: int | None, until: int | None, kinds: tuple[str, ...], limit: int, as_json: bool,
                 on_hub: bool) -> None:
    """List sessions, newest activity first: agent, id, start, last activity, entries, first user words.

    A session is listed when its time span meets --since/--until and, with --kind, when it holds
    an entry of that kind.
    """
    if on_hub:
        return hub.sessions_on_hub(cwd, scope, session_id, agents, since, until, kinds, limit, as_json)
    request = Request("", scope, session_id, agents, kinds, since, until, limit)
    found, resolved = app.service().sessions(request, app.caller(cwd))
    filters, note = resolved.filters, resolved.note
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

    Read through sqlite-utils once the index is closed here (see journal_index/data/export.py), and
    redacted line by line on the way out: paths, cwds and ids come from journals.
    """
    import sqlite3

    from journal_index.data import export  # (sqlite-utils loads only for this command)

    app.store()  # says so when there is no index; refuses a file that is not ours; migrates ours, so the table exists
    app.close()
    try:
        export.export_table(app.db_path, table, fmt, sys.stdout.buffer)
    except sqlite3.Error as exc:
        raise click.ClickException(f"export of {table} failed: {exc}") from None


def bundled_sessions() -> Path:
    """The demo journals: inside the installed package, or fixtures/ in a source checkout."""
    package = Path(__file__).resolve().parent.parent  # journal_index/
    packaged = package / "demo_sessions"
    if packaged.is_dir():
        return packaged
    return package.parent / "fixtures" / "sessions"


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


@cli.command(name="serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (not loopback: warns).")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True, help="Port; 0: a free one.")
@click.option("--no-open", is_flag=True, help="Print the URL only; do not open a browser.")
@with_app
def serve_cmd(app: App, host: str, port: int, no_open: bool) -> None:
    """A local, read-only web view: search, sessions, a session as a conversation (the `web` extra).

    Prints the URL with its token as the first line, then serves until SIGINT/SIGTERM."""
    try:
        from journal_index.web.server import serve
    except ImportError as exc:
        raise click.ClickException(f"the web view needs its extra: pip install 'journal-index[web]' ({exc})") from None
    sys.exit(serve(Service(app.store(), app.roots), host, port, open_browser=not no_open))


for _command in (cli_agent.tool_cmd, cli_agent.mcp_cmd, cli_agent.watch_cmd, cli_agent.gc_cmd, cli_agent.service_cmd,
                 hub.hub):
    cli.add_command(_command)


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
