"""What a query asks and what it finds: filters, hits, results (plain objects, no SQL run here
but the WHERE fragments the filters make)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from journal_index.formats import FORMATS, KINDS
from journal_index.query.time_bounds import TIME_EXAMPLE, parse_time_bound

if TYPE_CHECKING:  # a type only: scope reads the index through read_sql, which builds Hits
    from journal_index.query.scope import Scope

__all__ = ["HIT_COLUMNS", "TIME_EXAMPLE", "Filters", "Hit", "QueryError", "SearchResult", "hits_of", "iso",
           "parse_time_bound", "short_entry_id"]  # the time parser lives in time_bounds; query re-exports it from here

# Ids given to lines that have none (formats.synthetic_id): "v1.<offset hex>.<crc32 hex>".
_SYNTHETIC_ID = re.compile(r"^v1\.[0-9a-f]+\.([0-9a-f]{8})$")
SHORT_ID_CHARS = 8


class QueryError(ValueError):
    """Bad query input; the message names the accepted form."""


def short_entry_id(entry_id: str) -> str:
    """How an entry id is shown to people, the same way for every agent: its first 8
    characters (pi's ids are 8, Claude Code's 36), or for a line's synthetic id (pi version 1,
    Codex) the 8 hex digits of its CRC, which tell lines apart where the offset prefix does not.
    ``read`` takes either back (query.entry_candidates)."""
    synthetic = _SYNTHETIC_ID.match(entry_id)
    return synthetic.group(1) if synthetic else entry_id[:SHORT_ID_CHARS]


def iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class Filters:
    scope: Scope
    since: int | None = None
    until: int | None = None
    kinds: tuple[str, ...] = ()
    session_file: int | None = None  # one session's journal (files.id): never a bare session id
    agents: tuple[str, ...] = ()  # journal formats ("pi", "claude", "codex"); empty: all
    # (file id, byte offset): the entries of that journal from there on are left out — what is
    # still in the asking agent's context (DESIGN invariant 12)
    live: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        for kind in self.kinds:
            if kind not in KINDS:
                raise QueryError(f"unknown kind {kind!r}; use one of {', '.join(KINDS)}")
        for agent in self.agents:
            if agent not in FORMATS:
                raise QueryError(f"unknown agent {agent!r}; use one of {', '.join(FORMATS)}")
        if self.since is not None and self.until is not None and self.since > self.until:
            raise QueryError("since is after until; swap them")

    def file_sql(self) -> tuple[list[str], list[Any]]:
        """The conditions on the journal (``f``): scope, one session's file, agents."""
        clause, params = self.scope.sql("f")
        parts: list[str] = [clause]
        values: list[Any] = list(params)
        if self.session_file is not None:
            parts.append("f.id = ?")
            values.append(self.session_file)
        if self.agents:
            parts.append(f"f.format IN ({','.join('?' * len(self.agents))})")
            values.extend(self.agents)
        return parts, values

    def sql(self) -> tuple[str, list[Any]]:
        parts, values = self.file_sql()
        if self.since is not None:
            parts.append("e.ts >= ?")
            values.append(self.since)
        if self.until is not None:
            parts.append("e.ts <= ?")
            values.append(self.until)
        if self.kinds:
            parts.append(f"e.kind IN ({','.join('?' * len(self.kinds))})")
            values.extend(self.kinds)
        if self.live is not None:
            parts.append("NOT (e.file_id = ? AND e.offset >= ?)")
            values.extend(self.live)
        return " AND ".join(parts), values


@dataclass
class Hit:
    rowid: int
    entry_id: str
    ts: int | None
    kind: str
    role: str | None
    tool: str | None
    offset: int
    length: int
    path: str
    session_id: str | None
    cwd: str | None
    format: str
    link_offset: int | None = None
    link_length: int | None = None
    file_id: int = 0  # the journal's row: with the agent, what a session is
    score: float = 0.0
    complete: bool = True  # holds every meaningful word of the query
    excerpt: str = ""
    spans: list[tuple[int, int]] = field(default_factory=list)
    also_in: list[str] = field(default_factory=list)  # other sessions holding the same text (copies)
    # Each factor's part of the score (ranking.py; they sum to it) and the field that matched.
    explain: dict[str, float] = field(default_factory=dict)
    matched_field: str = ""
    # With the semantic layer fusing: the hit's ranks by words and by meaning, and its cosine.
    fused: dict[str, float] = field(default_factory=dict)

    def as_json(self, explain: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "entryId": self.entry_id,
            "sessionId": self.session_id,
            "agent": self.format,
            "path": self.path,
            "time": iso(self.ts),
            "kind": self.kind,
            "role": self.role,
            "tool": self.tool,
            "cwd": self.cwd,
            "score": round(self.score, 4),
            "excerpt": self.excerpt,
            "alsoIn": self.also_in,
        }
        if explain:
            out["explain"] = {"field": self.matched_field, "factors": {k: round(v, 4) for k, v in self.explain.items()}}
            if self.fused:
                out["explain"]["fused"] = self.fused
        return out


@dataclass
class SearchResult:
    match: str  # "all" | "any" | "none" (summaries and browsing use "all")
    hint: str | None
    scope: Scope
    hits: list[Hit]

    def as_json(self, with_match: bool = True, explain: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if with_match:
            out["match"] = self.match
            out["hint"] = self.hint
        out["scope"] = self.scope.as_json()
        out["results"] = [hit.as_json(explain) for hit in self.hits]
        return out


# Where each of a Hit's first fields comes from (entries ``e`` joined to files ``f``), by name:
# the SELECT list is made from it, and a test holds it to Hit's own field order, so a row can
# be passed to Hit positionally (thousands per search) and still mean what its columns say.
HIT_SOURCES: tuple[tuple[str, str], ...] = (
    ("rowid", "e.rowid"), ("entry_id", "e.entry_id"), ("ts", "e.ts"), ("kind", "e.kind"), ("role", "e.role"),
    ("tool", "e.tool"), ("offset", "e.offset"), ("length", "e.length"), ("path", "f.path"),
    ("session_id", "f.session_id"), ("cwd", "f.cwd"), ("format", "f.format"), ("link_offset", "e.link_offset"),
    ("link_length", "e.link_length"), ("file_id", "e.file_id"),
)
HIT_COLUMNS = ", ".join(sql for _, sql in HIT_SOURCES)


def hits_of(rows: list[tuple[Any, ...]]) -> list[Hit]:
    """Rows of HIT_COLUMNS (optionally followed by a score: Hit's next field) as Hits."""
    return [Hit(*row) for row in rows]
