"""`journal-index sessions`: the sessions a scope holds, newest activity first.

A session is one journal (an agent and a file), never a bare id: two agents' journals that
carry the same id are two rows. Everything but the first words comes from the ``files`` table
(start, last activity, entry count: kept by the indexer). The first words are re-read from the
journal through the verified, redacted read path of :mod:`journal_index.query` — the index
stores no text, and a line that is no longer the entry the index promised shows nothing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from journal_index.data import read_sql
from journal_index.data.store import Store
from journal_index.formats import Root
from journal_index.query.find import Reader
from journal_index.query.hits import Filters, iso

FIRST_WORDS_CHARS = 80
_SPACE = re.compile(r"\s+")


@dataclass
class SessionRow:
    agent: str  # the journal's format: "pi", "claude", "codex"
    session_id: str | None
    path: str
    cwd: str | None
    name: str | None  # the session's name, when its agent gives one (stored redacted)
    started: int | None  # epoch ms
    last_activity: int | None
    entries: int
    first_words: str | None = None  # the first user entry, redacted and cut; None when there is none

    def as_json(self) -> dict[str, Any]:
        return {"agent": self.agent, "sessionId": self.session_id, "path": self.path, "cwd": self.cwd,
                "name": self.name, "started": iso(self.started), "lastActivity": iso(self.last_activity),
                "entries": self.entries, "firstWords": self.first_words}


def _where(filters: Filters) -> tuple[str, list[Any]]:
    """The filters of a search, read for whole sessions: a session is listed when its time span
    meets --since/--until (and, with --kind, when it holds an entry of that kind: read_sql)."""
    parts, values = filters.file_sql()
    if filters.since is not None:
        parts.append("coalesce(f.last_ts, f.started) >= ?")
        values.append(filters.since)
    if filters.until is not None:
        parts.append("coalesce(f.started, f.last_ts) <= ?")
        values.append(filters.until)
    return " AND ".join(parts), values


def _first_words(text: str) -> str:
    words = _SPACE.sub(" ", text).strip()
    return words if len(words) <= FIRST_WORDS_CHARS else words[: FIRST_WORDS_CHARS - 1].rstrip() + "…"


def list_sessions(store: Store, filters: Filters, limit: int = 20,
                  roots: Sequence[Root | str | os.PathLike[str]] | None = None) -> list[SessionRow]:
    """The newest ``limit`` sessions in the filters, each with its first user words."""
    reader = Reader(store, roots)
    out = []
    for row in read_sql.session_files(store, _where(filters), filters.kinds, limit):
        session = SessionRow(row.format, row.session_id, row.path, row.cwd, row.name, row.started, row.last_ts,
                             row.entries)
        first = read_sql.first_user_hit(store, row.id)
        if first is not None:
            text = reader.verified_text(first, searchable_only=True)
            session.first_words = _first_words(text) if text is not None else None
        out.append(session)
    return out
