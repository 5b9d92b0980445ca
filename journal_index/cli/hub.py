"""``journal-index hub …`` and the ``--hub`` hand-offs of search, read and sessions.

Errors are one line and a non-zero exit, as everywhere: a hub that cannot be reached or that
fails mid-push says so (what was pushed is kept), and the local index is never touched by it.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

import click

from journal_index.cli.app import emit_json, json_option
from journal_index.hub import shares as registry
from journal_index.hub.connection import HubError, host_name, shown_url
from journal_index.hub.reach import hub_connection
from journal_index.redact import redact
from journal_index.text import render

F = TypeVar("F", bound=Callable[..., Any])


def _emit(data: Any) -> None:
    emit_json(render.redact_json(data))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def hub_errors(func: F) -> F:
    """HubError (and a query error of a --hub search) as a one-line error, exit 1."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from journal_index.query.hits import QueryError

        try:
            return func(*args, **kwargs)
        except (HubError, QueryError) as exc:
            raise click.ClickException(str(exc)) from None

    return wrapper  # type: ignore[return-value]


hub_url_option = click.option("--hub", "hub", default=None, metavar="URL",
                              help="The hub, a postgresql:// URL (env JOURNAL_INDEX_HUB; default: the last one used).")


@click.group(name="hub")
def hub() -> None:
    """Share chosen projects, redacted, with a team hub on PostgreSQL, and search them together."""


@hub.command(name="init")
@hub_url_option
@hub_errors
def init_cmd(hub: str | None) -> None:
    """Create or upgrade the hub's schema (run by the hub's owner)."""
    from journal_index.hub.schema import migrate

    with hub_connection(hub, check=False) as (conn, url):
        before, after = migrate(conn)
    click.echo(f"hub {shown_url(url)}: schema version {after}" + (f" (was {before})" if before != after else ""))


@hub.command(name="share")
@click.argument("project_dir", type=click.Path(file_okay=False))
@click.option("--team", default=None, help="The hub team that may read it (default: your only team).")
@hub_errors
def share_cmd(project_dir: str, team: str | None) -> None:
    """Share PROJECT_DIR's sessions (and those of folders below it) with the hub from now on."""
    found, new = registry.share(project_dir, team, _now())
    what = "shared" if new else "already shared"
    click.echo(redact(f"{what}: {found.folder} as project {found.identity}"
                      + (f" (team {found.team})" if found.team else "")
                      + "; `journal-index hub push` sends its entries, redacted"))


@hub.command(name="unshare")
@click.argument("project_dir", type=click.Path(file_okay=False))
@hub_errors
def unshare_cmd(project_dir: str) -> None:
    """Stop sharing PROJECT_DIR (what was pushed stays until `hub forget PROJECT`)."""
    gone = registry.unshare(project_dir)
    if gone is None:
        raise click.ClickException(redact(f"{project_dir} is not shared; `journal-index hub status` lists the shares"))
    click.echo(redact(f"unshared: {gone.folder}; nothing more is pushed from it "
                      f"(`journal-index hub forget {gone.identity}` removes what was)"))


def _refresh_local(app: Any) -> None:
    """Bring the local index up to date with the journals before pushing from it."""
    from journal_index.indexing import indexer

    roots = app.existing_roots()
    indexer.index_files(app.store(), indexer.discover(roots), roots=roots)


@hub.command(name="push")
@hub_url_option
@json_option
@click.pass_obj
@hub_errors
def push_cmd(app: Any, hub: str | None, as_json: bool) -> None:
    """Send the shared projects' new entries (redacted) to the hub."""
    from journal_index.hub.push import push

    saved = registry.load()
    if not saved.shares:
        raise click.ClickException("nothing is shared; share a project first: journal-index hub share PROJECT_DIR")
    with hub_connection(hub) as (conn, url):
        _refresh_local(app)
        report = push(conn, app.store(), saved.shares, host_name(), roots=app.roots)
    latest = registry.load()
    latest.hub = url
    latest.last_push = {"at": _now(), **report.as_json()}
    registry.save(latest)
    if as_json:
        _emit(report.as_json())
        return
    mb = report.bytes / 1e6
    click.echo(redact(f"pushed {report.entries} entries from {report.journals} journals as host {report.host} "
                      f"to {shown_url(url)} ({mb:.2f} MB of journal in {report.seconds:.2f} s)"
                      + (f"; {report.replaced} rewritten journals replaced" if report.replaced else "")
                      + (f"; {report.unavailable} entries left for the next push" if report.unavailable else "")))


@hub.command(name="status")
@hub_url_option
@json_option
@click.pass_obj
@hub_errors
def status_cmd(app: Any, hub: str | None, as_json: bool) -> None:
    """What is shared, what is pending, and the last push."""
    from journal_index.data.store import open_store
    from journal_index.hub.push import local_entries, pushed_by_project, shared_journals

    saved = registry.load()
    local: dict[str, dict[str, int]] = {s.folder: {"journals": 0, "entries": 0} for s in saved.shares}
    journals = []
    if os.path.exists(app.db_path) and saved.shares:
        store = open_store(app.db_path)
        try:
            journals = [(j, local_entries(store, j.file_id))
                        for j in shared_journals(store, saved.shares)]
        finally:
            store.close()
    for journal, entries in journals:
        local[journal.share.folder]["journals"] += 1
        local[journal.share.folder]["entries"] += int(entries)
    hub_state: dict[str, Any] = {"url": None, "reachable": False, "error": None}
    pushed: dict[str, int] = {}
    try:
        with hub_connection(hub) as (conn, url):
            hub_state.update(url=shown_url(url), reachable=True)
            pushed = pushed_by_project(conn, host_name())
    except HubError as exc:
        hub_state["error"] = str(exc)
    listed: list[dict[str, Any]] = [
        {"folder": s.folder, "project": s.identity, "team": s.team, "sharedAt": s.shared_at,
         "journals": local[s.folder]["journals"], "entries": local[s.folder]["entries"],
         "pending": (max(0, local[s.folder]["entries"] - pushed.get(s.identity, 0))
                     if hub_state["reachable"] else None)} for s in saved.shares]
    info = {"host": host_name(), "hub": hub_state, "lastPush": saved.last_push, "shares": listed}
    if as_json:
        _emit(info)
        return
    lines = [f"host {info['host']}; hub " + (hub_state["url"] if hub_state["reachable"]
                                            else f"not reachable: {hub_state['error']}")]
    if not saved.shares:
        lines.append("nothing is shared (journal-index hub share PROJECT_DIR)")
    for s in listed:
        pending = "?" if s["pending"] is None else s["pending"]
        lines.append(f"shared {s['folder']} as {s['project']}" + (f" (team {s['team']})" if s["team"] else "")
                     + f": {s['journals']} journals, {s['entries']} entries, {pending} pending")
    last = saved.last_push
    lines.append(f"last push: {last['at']}, {last['entries']} entries" if last else "last push: never")
    click.echo(redact("\n".join(lines)))


@hub.command(name="forget")
@click.argument("what", metavar="HOST|PROJECT")
@hub_url_option
@hub_errors
def forget_cmd(what: str, hub: str | None) -> None:
    """Remove from the hub what a host of yours, or a project, sent (only rows your role may delete)."""
    from journal_index.hub.push import forget

    with hub_connection(hub) as (conn, _url):
        journals, entries = forget(conn, what)
    if not journals:
        raise click.ClickException(redact(f"the hub holds nothing of yours from host or project {what!r}"))
    click.echo(redact(f"forgot {what}: {journals} journals, {entries} entries removed from the hub"))


# -- the --hub hand-offs of search, read and sessions ----------------------------------------

hub_flag = click.option("--hub", "on_hub", is_flag=True,
                        help="Answer from the team hub (env JOURNAL_INDEX_HUB; see `journal-index hub`).")


@hub_errors
def search_on_hub(words: tuple[str, ...], cwd: str | None, scope: str | None, session_id: str | None,
                  agents: tuple[str, ...], since: int | None, until: int | None, kinds: tuple[str, ...],
                  limit: int, as_json: bool) -> None:
    from journal_index.hub.search import HubFilters, resolve_scope, search, shown

    with hub_connection(None) as (conn, _url):
        hub_scope, note = resolve_scope(conn, scope, cwd, session_id)
        result = search(conn, " ".join(words), HubFilters(hub_scope, since, until, kinds, agents), limit=limit)
    if as_json:
        _emit(result.as_json())
        return
    if note:
        click.echo(redact(note))
    what = "search" if words else "newest entries"
    if not result.hits:
        click.echo(redact(f"{what}: nothing in {hub_scope.words()}."))
        return
    click.echo(redact(f"{what}: results 1–{len(result.hits)} in {hub_scope.words()}"))
    if result.hint:
        click.echo(f"note: {result.hint}")
    color = render.use_color()
    for hit in result.hits:
        header = render.hit_header(shown(hit), render.PEOPLE)
        click.echo(render.DIM + header + render.RESET if color else header)
        click.echo("  " + render.highlight(hit.excerpt, hit.spans, color))
        if hit.also_on:
            more = f" and {len(hit.also_on) - 4} more" if len(hit.also_on) > 4 else ""
            click.echo(redact(f"  (the same entry is also on {', '.join(hit.also_on[:4])}{more})"))
    click.echo("")
    best = result.hits[0]
    click.echo(redact(f"read one whole: journal-index read {render.short_entry_id(best.entry_id)} --hub"))


class OneLineUsageError(click.ClickException):
    """A request the hub cannot answer as given: one line saying what to change, exit 2 (as
    click's own usage errors)."""

    exit_code = 2


@hub_errors
def read_on_hub(entry_id: str | None, session_id: str | None, context: int | None, offset: int, cwd: str | None,
                scope: str, as_json: bool) -> None:
    """An entry, an entry in its place (--context N) or a page of a whole session, from the hub."""
    from journal_index.hub.read import read_context, read_session
    from journal_index.hub.search import read, resolve_scope
    from journal_index.hub.team import shown_read

    if entry_id is None and not session_id:
        raise OneLineUsageError("read --hub needs an ENTRY_ID, or --session ID to read a whole session")
    if context is not None and (entry_id is None or offset):
        raise OneLineUsageError("--context N shows an entry in its place: give an ENTRY_ID and no --offset")
    with hub_connection(None) as (conn, _url):
        hub_scope, _ = resolve_scope(conn, scope, cwd, session_id)
        if entry_id is None:
            answer = read_session(conn, hub_scope, offset=offset)
        elif context is not None:
            answer = read_context(conn, entry_id, hub_scope, host_name(), context)
        else:
            answer = read(conn, entry_id, hub_scope, host_name(), offset=offset)
    answer = render.redact_json(answer)
    if as_json:
        _emit(answer)
    elif entry_id is None or context is not None:
        click.echo(render.conversation_text(shown_read(answer), render.PEOPLE))
    else:
        click.echo(render.read_text(shown_read(answer), render.PEOPLE))
    if answer["status"] != "ok":
        sys.exit(1 if answer["status"] != "ambiguous" else 3)


@hub_errors
def sessions_on_hub(cwd: str | None, scope: str | None, session_id: str | None, agents: tuple[str, ...],
                    since: int | None, until: int | None, kinds: tuple[str, ...], limit: int, as_json: bool) -> None:
    from journal_index.hub.search import HubFilters, resolve_scope, sessions, shown

    with hub_connection(None) as (conn, _url):
        hub_scope, note = resolve_scope(conn, scope, cwd, session_id)
        found = sessions(conn, HubFilters(hub_scope, since, until, kinds, agents), limit=limit)
    if as_json:
        _emit({"scope": hub_scope.as_json(), "sessions": [s.as_json() for s in found]})
        return
    if note:
        click.echo(redact(note))
    click.echo(render.sessions_text([shown(s) for s in found], hub_scope.words(),
                                    render.Style(color=render.use_color())))
