"""The agent tool's ``team`` scope, answered from the hub: a page of a search (or of the
summaries) over what the member's teams share, and one entry read, in the tool's shapes plus
the host. Row-level security decides what is seen, as for ``search --hub``; the local index is
never touched here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from journal_index.formats import SUMMARY_KINDS
from journal_index.hub.connection import host_name
from journal_index.hub.search import HubFilters, HubResult, read, resolve_scope, search
from journal_index.query.hits import Hit
from journal_index.query.ranking import match_quality
from journal_index.query.time_bounds import parse_time_bound


@dataclass
class TeamPage:
    """One page of the hub's ranked hits, and where the next one starts."""

    result: HubResult
    offset: int
    next_offset: int | None

    def as_json(self) -> dict[str, Any]:
        out = self.result.as_json()
        if self.result.scope.kind == "global":
            out["scope"]["kind"] = "team"
        out["offset"], out["nextOffset"] = self.offset, self.next_offset
        return out


def team_page(conn: Any, query: str, cwd: str, session: str | None, since: str | None, until: str | None,
              kinds: tuple[str, ...], limit: int, offset: int, summaries: bool = False) -> TeamPage:
    """Hits ``offset`` to ``offset + limit`` of a hub search over every shared project the
    member may read (or of one hub session, ``session`` being ``[HOST:][AGENT:]ID``)."""
    scope, _ = resolve_scope(conn, "global", cwd, session)
    if summaries:
        query, kinds = "", tuple(k for k in kinds if k in SUMMARY_KINDS) or tuple(sorted(SUMMARY_KINDS))
    filters = HubFilters(scope, parse_time_bound(since, end=False) if since else None,
                         parse_time_bound(until, end=True) if until else None, kinds)
    end = offset + limit
    found = search(conn, query, filters, limit=end + 1)  # one more tells whether another page exists
    shown = found.hits[offset:end]
    hits: list[Hit] = list(shown)
    match, hint = match_quality(hits) if query.strip() else (found.match, found.hint)
    return TeamPage(HubResult(match, hint, scope, shown), offset, end if len(found.hits) > end else None)


def team_read(conn: Any, entry_id: str, cwd: str, session: str | None, offset: int, page_chars: int) -> dict[str, Any]:
    """One entry of the hub (a page of its text), this host's copy first; the shape of a local read plus the host."""
    scope, _ = resolve_scope(conn, "global", cwd, session)
    return read(conn, entry_id, scope, host_name(), offset=offset, page_chars=page_chars)


def shown_read(answer: dict[str, Any]) -> dict[str, Any]:
    """A hub read's answer whose folders read ``host:cwd``, for the local text renderer."""
    shown = dict(answer)
    if answer["status"] == "ok":
        shown["cwd"] = f"{answer['host']}:{answer['cwd'] or '?'}"
    if "candidates" in answer:
        shown["candidates"] = [{**c, "cwd": f"{c['host']}:{c['cwd'] or '?'}"} for c in answer["candidates"]]
    return shown
