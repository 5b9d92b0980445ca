"""What the pages show, made from the service's answers: query parameters into a
:class:`~journal_index.service.Request`, a hit's excerpt into marked and unmarked pieces, a
session's entries into conversation turns. Plain functions over plain values (no HTTP here);
the answers come in already redacted (``render.redact_json``), and Jinja escapes on the way out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

from journal_index.config import CANDIDATES, SCOPES
from journal_index.formats import FORMATS, KINDS, SUMMARY_KINDS
from journal_index.service import Request, RequestError

SEARCH_LIMIT = 20
SESSIONS_LIMIT = 50
CONTEXT = 8  # turns either side of an entry opened from a hit
# The filters a search page keeps in its URL (and the API takes), as the CLI's options are named.
SEARCH_PARAMS = ("q", "scope", "agent", "kind", "since", "until", "session", "cwd", "limit", "offset")


class Params:
    """Query parameters, repeatable ones included (``agent=pi&agent=codex``)."""

    def __init__(self, items: Sequence[tuple[str, str]]) -> None:
        self.items = list(items)

    def one(self, name: str) -> str | None:
        values = [v for k, v in self.items if k == name and v.strip()]
        return values[-1].strip() if values else None

    def all(self, name: str) -> tuple[str, ...]:
        return tuple(dict.fromkeys(v for k, v in self.items if k == name and v.strip()))

    def number(self, name: str, default: int, low: int, high: int) -> int:
        given = self.one(name)
        if given is None:
            return default
        if not given.isdigit() or not low <= int(given) <= high:
            raise RequestError("bad_argument", f"{name} must be a whole number from {low} to {high}",
                               f"give {name}={low}…{high}")
        return int(given)


def _choices(name: str, given: tuple[str, ...], allowed: Sequence[str]) -> tuple[str, ...]:
    for value in given:
        if value not in allowed:
            raise RequestError("bad_argument", f"unknown {name} {value!r}", f"use one of {', '.join(allowed)}")
    return given


def search_request(params: Params, default_limit: int = 10) -> Request:
    """The CLI's search options, by the same names: q, scope, session, agent, kind, since,
    until, limit, offset (the API's default limit is the CLI's, 10)."""
    scope = params.one("scope")
    _choices("scope", (scope,) if scope else (), SCOPES)
    return Request(
        query=params.one("q") or "",
        scope=scope,
        session=params.one("session"),
        agents=_choices("agent", params.all("agent"), sorted(FORMATS)),
        kinds=_choices("kind", params.all("kind"), KINDS),
        since=params.one("since"),
        until=params.one("until"),
        limit=params.number("limit", default_limit, 1, CANDIDATES),
        offset=params.number("offset", 0, 0, CANDIDATES - 1),
    )


def sessions_request(params: Params, default_limit: int = 20) -> Request:
    """The CLI's sessions options (its default limit is 20; the page shows more)."""
    scope = params.one("scope")
    _choices("scope", (scope,) if scope else (), SCOPES)
    return Request(scope=scope, agents=_choices("agent", params.all("agent"), sorted(FORMATS)),
                   kinds=_choices("kind", params.all("kind"), KINDS), since=params.one("since"),
                   until=params.one("until"), limit=params.number("limit", default_limit, 1, 10_000))


def marked(text: str, spans: Sequence[tuple[int, int]]) -> list[tuple[str, bool]]:
    """``text`` cut into pieces, each marked when it lies in one of the matched ``spans``."""
    out: list[tuple[str, bool]] = []
    last = 0
    for start, end in sorted(spans):
        start, end = max(start, last), min(end, len(text))
        if start >= end:
            continue
        if start > last:
            out.append((text[last:start], False))
        out.append((text[start:end], True))
        last = end
    if last < len(text):
        out.append((text[last:], False))
    return out


def session_url(agent: str | None, session_id: str | None, entry_id: str | None = None) -> str | None:
    """``/session/<agent>/<sessionId>``, and for a hit ``?at=<entryId>#<entryId>``: the fragment
    names the entry, the query lets the server open the page that holds it."""
    if not agent or not session_id:
        return None
    url = f"/session/{quote(agent, safe='')}/{quote(session_id, safe='')}"
    if entry_id:
        url += f"?{urlencode({'at': entry_id})}#{quote(entry_id, safe='')}"
    return url


def search_hits(answer: Mapping[str, Any], spans: Sequence[Sequence[tuple[int, int]]]) -> list[dict[str, Any]]:
    """The redacted hits of a search page, each with its excerpt in pieces and its link."""
    out = []
    for hit, hit_spans in zip(answer["results"], spans, strict=True):
        out.append({**hit, "pieces": marked(hit["excerpt"], hit_spans),
                    "url": session_url(hit["agent"], hit["sessionId"], hit["entryId"]),
                    "when": _when(hit["time"])})
    return out


def _when(iso_time: str | None) -> str:
    return (iso_time or "?")[:16].replace("T", " ")


@dataclass
class Turn:
    """One entry of a conversation, with the tool results that answered it folded under it."""

    entry: dict[str, Any]
    results: list[dict[str, Any]] = field(default_factory=list)

    @property
    def css(self) -> str:
        kind = self.entry["kind"]
        return "summary" if kind in SUMMARY_KINDS else kind.replace("_", "-")

    @property
    def holds_target(self) -> bool:
        return any(r.get("target") for r in self.results)


def turns(entries: Sequence[dict[str, Any]]) -> list[Turn]:
    """Entries in journal order as turns: a tool result goes under the assistant turn (the tool
    call) before it; any other entry starts a turn of its own. Each entry gets its short label
    and time for display."""
    out: list[Turn] = []
    for entry in entries:
        shown = {**entry, "when": _when(entry.get("time"))[11:] or "?", "label": label(entry),
                 "title": first_line(entry["text"]) if entry["kind"] == "tool_result" else None}
        if entry["kind"] == "tool_result" and out and out[-1].entry["kind"] == "assistant":
            out[-1].results.append(shown)
        else:
            out.append(Turn(shown))
    return out


def label(entry: Mapping[str, Any]) -> str:
    kind = entry["kind"]
    names = {"user": "user", "assistant": "assistant", "tool_result": "tool result", "bash": "shell command",
             "custom": "extension message", "compaction": "compaction summary",
             "branch_summary": "branch summary", "context_edit": "context edit"}
    tool = entry.get("tool")
    return names.get(kind, kind) + (f" · {tool}" if tool else "")


def first_line(text: str, chars: int = 120) -> str:
    line = text.strip().split("\n", 1)[0]
    return line if len(line) <= chars else line[: chars - 1] + "…"
