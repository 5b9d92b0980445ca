"""The commands for agents and the background: the agent tool (`tool`, `mcp`), the indexer
that follows the journals (`watch`), junk journals (`gc`) and service files (`service`).
Registered on the command group by :mod:`journal_index.cli`.
"""

from __future__ import annotations

import sys
from typing import Any

import click
import orjson

from journal_index.cli.app import App, F, emit_json, json_option, with_app
from journal_index.config import (
    AGENT_SCOPES,
    ConfigError,
    max_scope_from_env,
)


def agent_options(func: F) -> F:
    """--cwd, --session-file, --max-scope: what the host tells the agent tool about itself."""
    options = [
        click.option("--cwd", type=click.Path(file_okay=False), default=None,
                     help="The agent's folder: project scope derives from it (default: the current folder)."),
        click.option("--session-file", type=click.Path(dir_okay=False), default=None,
                     help="The agent's current journal (indexed before every call; its session is "
                          "scope 'session')."),
        click.option("--max-scope", type=click.Choice(AGENT_SCOPES), default=None,
                     help="Widest scope the agent may use; team: the team hub too "
                          "(env JOURNAL_INDEX_MAX_SCOPE; default project)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def make_tool(app: App, cwd: str | None, session_file: str | None, max_scope: str | None) -> Any:
    from journal_index.agent.tool import MemoryTool

    try:
        return MemoryTool(app.db_path, app.roots, cwd=cwd, session_file=session_file, max_scope=max_scope)
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None


@click.command(name="tool")
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


@click.command(name="mcp")
@agent_options
@click.pass_obj
def mcp_cmd(app: App, cwd: str | None, session_file: str | None, max_scope: str | None) -> None:
    """Serve the memory_context tool to an agent over MCP stdio (until stdin closes)."""
    from journal_index.agent.mcp_server import run
    from journal_index.semantic import fusion

    try:
        max_scope_from_env()  # a bad setting fails now, not at the first call
        semantic = fusion.setting()
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None
    warning = semantic.warning()
    if warning:  # stderr: the host's log of the server
        click.echo(f"journal-index mcp: warning: {warning}", err=True)
    sys.exit(run(lambda: make_tool(app, cwd, session_file, max_scope)))


@click.command(name="watch")
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
    from journal_index.indexing import watch

    verbosity = watch.QUIET if quiet else watch.VERBOSE if verbose else watch.NORMAL
    options = watch.WatchOptions(rescan=rescan, events=not no_events, verbosity=verbosity)
    sys.exit(watch.run(app.store(), app.roots, options))


@click.command(name="gc")
@click.option("--confirm", is_flag=True, help="Delete the journals the last preview listed (if unchanged).")
@click.option("--current", type=click.Path(dir_okay=False), default=None,
              help="The journal in use now; never a candidate.")
@json_option
@with_app
def gc_cmd(app: App, confirm: bool, current: str | None, as_json: bool) -> None:
    """Preview junk journals (never compacted and temporary, empty or ≤ 2 replies); --confirm deletes them."""
    from journal_index.indexing import gc

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


@click.command(name="service")
@click.option("--print", "kind", metavar="systemd|launchd", default=None,
              help="Print a systemd user unit or a launchd agent that runs `journal-index watch`.")
@click.pass_context
def service_cmd(ctx: click.Context, kind: str | None) -> None:
    """Print a service file that keeps `journal-index watch` running (install: see the README)."""
    from journal_index.cli import service_files

    top = ctx.find_root().params
    try:
        click.echo(service_files.service_file(kind, top.get("db"), tuple(top.get("sessions") or ())), nl=False)
    except service_files.ServiceFileError as exc:
        click.echo(f"journal-index: error: {exc}", err=True)
        sys.exit(2)
