"""Journal formats. Each format is one module exposing the :class:`JournalFormat` interface.

A later agent format (Claude Code, Codex CLI) is one new module added to ``FORMATS``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Protocol


@dataclass(slots=True)
class Header:
    session_id: str | None
    cwd: str | None
    started: int | None  # epoch ms
    version: int
    parent_session: str | None = None


@dataclass(slots=True)
class Entry:
    """One indexable journal line. ``text`` is raw: the indexer redacts it before any term exists."""

    entry_id: str
    parent_id: str | None
    ts: int | None  # epoch ms
    kind: str
    role: str | None
    tool: str | None
    text: str
    tokens_before: int | None = None


class Skip(Enum):
    NOT_INDEXED = "not_indexed"  # a known line type that carries nothing to search
    UNKNOWN = "unknown"  # an entry type or role this version does not know
    MALFORMED = "malformed"  # not JSON, not UTF-8, not an object, or wrong field types


@dataclass(slots=True)
class SessionName:
    """A line that names the session (kept as metadata, not indexed)."""

    name: str


Parsed = Entry | Skip | SessionName


class JournalFormat(Protocol):
    NAME: str

    def parse_header(self, line: bytes) -> Header | None: ...

    def parse_line(self, line: bytes, offset: int) -> Parsed: ...


def get_format(name: str) -> JournalFormat:
    from journal_index.formats import pi

    formats: dict[str, JournalFormat] = {pi.NAME: pi}
    try:
        return formats[name]
    except KeyError:
        raise ValueError(f"unknown journal format {name!r}; known: {', '.join(formats)}") from None
