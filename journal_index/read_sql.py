"""Every statement the query side runs against the index: entries by id, by place, newest
first; the sessions of a scope; the journals behind a scope; what the index holds.

One of the three modules that hold SQL (with :mod:`journal_index.store` and
:mod:`journal_index.index_sql`). Conditions arrive as a ``(clause, params)`` pair built by
:class:`journal_index.hits.Filters` or :meth:`journal_index.scope.Scope.sql`, over the aliases
``e`` (entries) and ``f`` (files); rows leave as named types. Nothing here writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from journal_index.hits import HIT_COLUMNS, Hit, hits_of
from journal_index.store import Store

Clause = tuple[str, Sequence[Any]]
_HITS = f"SELECT {HIT_COLUMNS} FROM entries e JOIN files f ON f.id = e.file_id WHERE "
_EVERYWHERE: Clause = ("1", ())


# -- entries --------------------------------------------------------------------------------


def newest_hits(store: Store, where: Clause, limit: int) -> list[Hit]:
    clause, params = where
    return hits_of(store.rows(f"{_HITS}{clause} ORDER BY e.ts DESC, e.rowid DESC LIMIT ?", [*params, limit]))


def hits_with_id(store: Store, entry_id: str, within: Clause) -> list[Hit]:
    clause, params = within
    return hits_of(store.rows(f"{_HITS}e.entry_id = ? AND {clause} ORDER BY e.ts DESC", [entry_id, *params]))


def hits_with_id_prefix(store: Store, prefix: str, within: Clause, limit: int) -> list[Hit]:
    """Entries whose id starts with ``prefix`` (a range over the id index: LIKE would fold case
    and skip the index)."""
    clause, params = within
    return hits_of(store.rows(f"{_HITS}e.entry_id >= ? AND e.entry_id < ? AND {clause} ORDER BY e.ts DESC LIMIT ?",
                              [prefix, prefix + "\U0010ffff", *params, limit]))


def hits_with_crc_prefix(store: Store, prefix: str, within: Clause, limit: int) -> list[Hit]:
    """Entries with a synthetic id ("v1.<offset>.<crc>") whose CRC starts with ``prefix``."""
    clause, params = within
    return hits_of(store.rows(f"{_HITS}e.entry_id GLOB ? AND {clause} ORDER BY e.ts DESC LIMIT ?",
                              [f"v1.*.{prefix}*", *params, limit]))


def neighbours(store: Store, file_id: int, offset: int, count: int) -> tuple[list[Hit], list[Hit]]:
    """Up to ``count`` entries of the journal before ``offset`` (nearest first) and after it."""
    base = f"{_HITS}e.file_id = ? "
    before = hits_of(store.rows(base + "AND e.offset < ? ORDER BY e.offset DESC LIMIT ?", (file_id, offset, count)))
    after = hits_of(store.rows(base + "AND e.offset > ? ORDER BY e.offset LIMIT ?", (file_id, offset, count)))
    return before, after


def entry_count(store: Store, file_id: int) -> int:
    return int(store.value("SELECT count(*) FROM entries WHERE file_id = ?", (file_id,), default=0) or 0)


def journal_hits(store: Store, file_id: int, skip: int, limit: int) -> list[Hit]:
    """The journal's entries in file order, from the ``skip``-th on."""
    return hits_of(store.rows(f"{_HITS}e.file_id = ? ORDER BY e.offset LIMIT ? OFFSET ?", (file_id, limit, skip)))


def first_user_hit(store: Store, file_id: int) -> Hit | None:
    found = hits_of(store.rows(f"{_HITS}e.file_id = ? AND e.kind = 'user' ORDER BY e.offset LIMIT 1", (file_id,)))
    return found[0] if found else None


# -- sessions (journals) -------------------------------------------------------------------


class SessionFile(NamedTuple):
    """A journal as the sessions list shows it."""

    id: int
    format: str
    session_id: str | None
    path: str
    cwd: str | None
    name: str | None
    started: int | None  # its header's time, else its first entry's
    last_ts: int | None
    entries: int


def session_files(store: Store, where: Clause, kinds: Sequence[str], limit: int) -> list[SessionFile]:
    """Journals meeting ``where`` (over ``f``) and, given ``kinds``, holding an entry of one of them;
    newest activity first."""
    clause, params = where
    values = list(params)
    if kinds:
        clause += (f" AND EXISTS (SELECT 1 FROM entries e WHERE e.file_id = f.id "
                   f"AND e.kind IN ({','.join('?' * len(kinds))}))")
        values.extend(kinds)
    rows = store.rows(
        "SELECT f.id, f.format, f.session_id, f.path, f.cwd, f.name, "
        "coalesce(f.started, (SELECT min(e.ts) FROM entries e WHERE e.file_id = f.id)), f.last_ts, f.entries "
        f"FROM files f WHERE {clause} "
        "ORDER BY coalesce(f.last_ts, f.started) DESC, f.id DESC LIMIT ?", [*values, limit])
    return [SessionFile(*row) for row in rows]


class JournalRef(NamedTuple):
    """What a session reference resolves to (the fields of :class:`journal_index.scope.SessionRef`)."""

    format: str
    session_id: str | None
    id: int
    path: str
    cwd: str | None


def journal_refs(store: Store, where: Clause, within: Clause = _EVERYWHERE, limit: int = 50) -> list[JournalRef]:
    clause, params = where
    scope_clause, scope_params = within
    rows = store.rows(f"SELECT f.format, f.session_id, f.id, f.path, f.cwd FROM files f "
                      f"WHERE {clause} AND {scope_clause} ORDER BY f.session_id, f.format, f.path LIMIT ?",
                      [*params, *scope_params, limit])
    return [JournalRef(*row) for row in rows]


def journal_ref(store: Store, file_id: int) -> JournalRef | None:
    found = journal_refs(store, ("f.id = ?", [file_id]), limit=1)
    return found[0] if found else None


class CurrentJournal(NamedTuple):
    """The journal an agent is writing, as the index holds it."""

    id: int
    session_id: str | None
    context_from: int  # where the agent's live context starts


def current_journal(store: Store, path: str) -> CurrentJournal | None:
    row = store.one("SELECT id, session_id, coalesce(context_from, 0) FROM files WHERE path = ?", (path,))
    return None if row is None else CurrentJournal(*row)


def cwds_with_sessions(store: Store, candidates: Sequence[str]) -> set[str]:
    """Those of ``candidates`` that are some journal's cwd."""
    placeholders = ",".join("?" * len(candidates))
    return {row[0] for row in store.rows(f"SELECT DISTINCT cwd FROM files WHERE cwd IN ({placeholders})",
                                         list(candidates))}


def any_journal(store: Store, where: Clause) -> bool:
    clause, params = where
    return store.value(f"SELECT 1 FROM files f WHERE {clause} LIMIT 1", list(params)) is not None


def journal_count(store: Store) -> int:
    return int(store.value("SELECT count(*) FROM files", default=0) or 0)


# -- what the index holds ------------------------------------------------------------------


class AgentTotals(NamedTuple):
    sessions: int
    entries: int
    bytes: int


class IndexTotals(NamedTuple):
    sessions: int
    indexed_bytes: int
    last_indexed: int | None  # epoch ms
    skipped_lines: int
    by_kind: dict[str, int]
    by_agent: dict[str, AgentTotals]


def index_totals(store: Store) -> IndexTotals:
    sessions, indexed_bytes, last_indexed, skipped = store.one(
        "SELECT count(*), coalesce(sum(cursor), 0), max(indexed_at), coalesce(sum(skipped), 0) FROM files"
    ) or (0, 0, None, 0)
    by_kind = {kind: int(n) for kind, n in store.rows("SELECT kind, count(*) FROM entries GROUP BY kind ORDER BY kind")}
    by_agent = {agent: AgentTotals(int(n), int(entries), int(size)) for agent, n, entries, size in store.rows(
        "SELECT format, count(*), coalesce(sum(entries), 0), coalesce(sum(cursor), 0) FROM files "
        "GROUP BY format ORDER BY format")}
    return IndexTotals(int(sessions), int(indexed_bytes), last_indexed, int(skipped), by_kind, by_agent)
