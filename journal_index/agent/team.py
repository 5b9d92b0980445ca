"""The tool's scope ``team``: searches, summaries and reads answered from the team hub
(:mod:`journal_index.hub.team`), rendered for the model as the other scopes' answers are, each
hit naming the host it came from. A hub that is unset, down or refusing is one tool error
(``hub_unavailable``); the local index is not touched by it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from journal_index.agent.tool_args import Args, ToolError
from journal_index.config import TEAM_SCOPE
from journal_index.hub.team import TeamPage
from journal_index.redact import redact
from journal_index.text import render

UNAVAILABLE_HINT = ("the local scopes still answer (scope 'project' or 'global'); the operator sets the hub "
                    "with JOURNAL_INDEX_HUB")


@contextmanager
def _hub() -> Iterator[Any]:
    from journal_index.hub.connection import HubError
    from journal_index.hub.reach import hub_connection

    try:
        with hub_connection(None) as (conn, _url):
            yield conn
    except HubError as exc:
        raise ToolError("hub_unavailable", str(exc), UNAVAILABLE_HINT) from None


def search(args: Args, cwd: str, limit: int) -> TeamPage:
    from journal_index.hub.team import team_page

    with _hub() as conn:
        return team_page(conn, args.query or "", cwd, args.session_id, args.since, args.until,
                         (args.kind,) if args.kind else (), limit, args.offset, summaries=args.action == "summaries")


def read(args: Args, cwd: str, page_chars: int) -> dict[str, Any]:
    from journal_index.hub.team import team_read

    assert args.entry_id is not None
    with _hub() as conn:
        return team_read(conn, args.entry_id, cwd, args.session_id, args.offset, page_chars)


def read_text(answer: dict[str, Any]) -> str:
    from journal_index.hub.team import shown_read

    return render.read_text(shown_read(answer), render.MODEL)


def search_text(page: TeamPage, what: str) -> str:
    """The page's hits for the model: a header line, each hit (its folder as ``host:cwd``) and
    its excerpt, and how to read one or go on."""
    from journal_index.hub.search import shown

    result, first = page.result, page.offset + 1
    where = "the team hub" if result.scope.kind == "global" else result.scope.words()
    if not result.hits:
        lines = [redact(f"{what}: nothing in {where}.")]
        if result.hint:
            lines.append(f"hint: {result.hint}")
        return "\n".join(lines)
    lines = [redact(f"{what}: results {first}–{first + len(result.hits) - 1} in {where} (folders as host:cwd)")]
    if result.hint:
        lines.append(f"note: {result.hint}")
    for n, hit in enumerate(result.hits, start=first):
        lines.append(f"[{n}] {render.hit_header(shown(hit), render.MODEL)}")
        lines.append("    " + hit.excerpt)
        if hit.also_on:
            more = f" and {len(hit.also_on) - 4} more" if len(hit.also_on) > 4 else ""
            lines.append(redact(f"    (the same entry is also on {', '.join(hit.also_on[:4])}{more})"))
    best = result.hits[0]
    call = {"action": "read", "entryId": best.entry_id, "sessionId": f"{best.format}:{best.session_id}",
            "scope": TEAM_SCOPE}
    lines.append(redact(f"read more: {render.as_json_line(call)}"))
    if page.next_offset is not None:
        lines.append(f'next page: the same call with "offset": {page.next_offset}')
    return "\n".join(lines)
