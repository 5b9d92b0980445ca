"""Every statement the query side runs against the index: the ranking's candidates from both
FTS tables, which of them hold which phrases, the statistics bm25 needs and the reply that
ends a question's turn; entries by id, by place, newest first; the sessions of a scope; the
journals behind a scope (and what ``hub push`` sends of them); what the index holds.

``entries_fts`` holds what was said, each call's name and key arguments and each result's call
(with positions: phrases match, FTS5 computes bm25); ``entries_bulk`` the whole text of entries
with tool output or call arguments (no positions: a phrase is its terms, all required; bm25 is
computed by the ranking from the lengths given here).

One of the three modules that hold SQL (with :mod:`journal_index.data.store` and
:mod:`journal_index.data.index_sql`). Conditions arrive as a ``(clause, params)`` pair built by
:class:`journal_index.query.hits.Filters` or :meth:`journal_index.query.scope.Scope.sql`, over the aliases
``e`` (entries) and ``f`` (files); rows leave as named types. Nothing here writes.
"""

from __future__ import annotations

import json
import math
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from journal_index.data.store import Store
from journal_index.query.hits import HIT_COLUMNS, Filters, Hit, hits_of

Clause = tuple[str, Sequence[Any]]
_HITS = f"SELECT {HIT_COLUMNS} FROM entries e JOIN files f ON f.id = e.file_id WHERE "
_EVERYWHERE: Clause = ("1", ())


# -- the ranking's candidates ------------------------------------------------------------

Tokenize = Callable[[str], list[str]]

LIGHT_LIMIT = 200  # candidates from what was said, by bm25
BULK_LIMIT = 100  # candidates from tool output per expression, newest first
SCORE_WINDOW = 2000  # an expression matching more entries than this has only its newest scored
STATS_STALE_ROWS = 1000  # the average length is measured again after this many new entries


@dataclass
class Stats:
    """What bm25 over the bulk table needs and FTS5 does not give without positions."""

    docs: int
    average_chars: float


# store -> (newest rowid, average chars) when last measured
_AVERAGES: weakref.WeakKeyDictionary[Store, tuple[int, float]] = weakref.WeakKeyDictionary()


def stats(store: Store) -> Stats:
    """Estimated without scanning the table (a scan of every row would cost more than the
    search): rows are rarely deleted, so the newest rowid counts them, and the newest
    thousands give the average length, measured again once a thousand more have come."""
    newest = int(store.value("SELECT max(rowid) FROM entries", default=0))
    known = _AVERAGES.get(store)
    if known is None or abs(newest - known[0]) >= STATS_STALE_ROWS:
        average = store.value("SELECT avg(chars) FROM (SELECT chars FROM entries ORDER BY rowid DESC LIMIT 4000)")
        known = _AVERAGES[store] = (newest, float(average or 1.0))
    return Stats(max(newest, 1), known[1])


def idf(docs: int, containing: int) -> float:
    return math.log((docs - containing + 0.5) / (containing + 0.5) + 1.0)


def doc_count(store: Store, phrase: list[str], tokenize: Tokenize) -> int:
    """About how many entries hold the rarest term of a phrase: the larger of its document
    counts in the two tables (an entry with bulk holds its light words in both)."""
    for table in ("entries_fts", "entries_bulk"):
        store.conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab_{table} USING fts5vocab(main, {table}, row)")
    terms = tokenize(" ".join(phrase)) or [t.lower() for t in phrase]
    return min(max(int(store.value(f"SELECT doc FROM temp.vocab_{table} WHERE term = ?", (term,), default=0))
                   for table in ("entries_fts", "entries_bulk")) for term in terms)


def _quoted(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def light_expression(phrases: list[list[str]]) -> str:
    return " OR ".join(_quoted(" ".join(p)) for p in phrases)


def bulk_expression(phrases: list[list[str]]) -> str:
    """Without positions (entries_bulk) a phrase is its terms, all required."""
    return " OR ".join("(" + " AND ".join(_quoted(t) for t in p) + ")" for p in phrases)


def _window(store: Store, table: str, expression: str) -> int:
    """The lowest rowid worth scoring: for an expression that matches more than SCORE_WINDOW
    entries (common words), only the newest SCORE_WINDOW are scored; else every match."""
    row = store.one(f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?",
                    (expression, SCORE_WINDOW))
    return int(row[0]) if row else 0


def light(store: Store, expression: str, filters: Filters) -> list[Hit]:
    """Entries whose light text matches, by bm25 (in ``Hit.score``); of very many, the newest
    SCORE_WINDOW (bm25 is computed for each match scored)."""
    where, params = filters.sql()
    low = _window(store, "entries_fts", expression)
    # ORDER BY rank makes FTS5 score every match before the scope is applied; a project's or a
    # session's few matches are cheaper scored after it (then SQLite sorts). Same rows either
    # way: FTS5 orders equal ranks by rowid, as the second key here does.
    order = "rank" if filters.scope.kind == "global" else "light_score DESC, entries_fts.rowid"
    sql = (f"SELECT {HIT_COLUMNS}, -bm25(entries_fts) AS light_score FROM entries_fts "
           "JOIN entries e ON e.rowid = entries_fts.rowid JOIN files f ON f.id = e.file_id "
           f"WHERE entries_fts MATCH ? AND entries_fts.rowid >= ? AND {where} ORDER BY {order} LIMIT {LIGHT_LIMIT}")
    return hits_of(store.rows(sql, [expression, low, *params]))


def bulk(store: Store, expression: str, filters: Filters) -> list[tuple[Hit, int]]:
    """The newest bulk matches of an expression, with their length in characters."""
    where, params = filters.sql()
    sql = (f"SELECT {HIT_COLUMNS}, 0.0, e.chars FROM entries_bulk "
           "JOIN entries e ON e.rowid = entries_bulk.rowid JOIN files f ON f.id = e.file_id "
           f"WHERE entries_bulk MATCH ? AND {where} ORDER BY entries_bulk.rowid DESC LIMIT {BULK_LIMIT}")
    return [(Hit(*row[:-1]), int(row[-1])) for row in store.rows(sql, [expression, *params])]


def held(store: Store, phrases: list[list[str]], rowids: set[int]) -> set[int]:
    """Which of the candidates hold any of the phrases (in either table). The matches between the
    lowest and the highest candidate are read whole: FTS5 reads a doclist in about a millisecond,
    while asking it about each candidate (rowid IN …) costs a seek per candidate."""
    if not rowids:
        return set()
    # The intersection is made by SQLite (each doclist read once into an index of its own, the
    # candidates looked up in it), so only the candidates held come back to Python, not every match.
    sql = ("SELECT value FROM json_each(?1) WHERE "
           "value IN (SELECT rowid FROM entries_fts WHERE entries_fts MATCH ?2 AND rowid BETWEEN ?4 AND ?5) OR "
           "value IN (SELECT rowid FROM entries_bulk WHERE entries_bulk MATCH ?3 AND rowid BETWEEN ?4 AND ?5)")
    candidates = json.dumps(list(rowids))
    return {int(r[0]) for r in store.conn.execute(
        sql, (candidates, light_expression(phrases), bulk_expression(phrases), min(rowids), max(rowids)))}


def user_between(store: Store, file_id: int, after: int, before: int) -> bool:
    """Whether the user speaks in the journal between byte offsets ``after`` and ``before``
    (a new turn starts there)."""
    return bool(store.value("SELECT EXISTS (SELECT 1 FROM entries WHERE file_id = ? AND offset > ? AND offset < ? "
                            "AND kind = 'user')", (file_id, after, before)))


def entries_left_in_turns(store: Store, places: list[tuple[int, int]]) -> list[int]:
    """For each (journal, byte offset), how many entries follow it in the journal before the user
    speaks again (or the journal ends): how far the entry there is from its turn's end. One
    statement for all (a statement each cost three times as much)."""
    if not places:
        return []
    sql = ("SELECT (SELECT count(*) FROM entries e WHERE e.file_id = p.file_id AND e.offset > p.offset "
           "AND e.offset < coalesce((SELECT min(u.offset) FROM entries u WHERE u.file_id = p.file_id "
           "AND u.offset > p.offset AND u.kind = 'user'), 9e18)) "
           "FROM (SELECT key, value ->> 0 AS file_id, value ->> 1 AS offset FROM json_each(?)) p ORDER BY p.key")
    return [int(row[0]) for row in store.conn.execute(sql, (json.dumps(places),))]


def reply_to(store: Store, question: Hit) -> Hit | None:
    """The reply that ends the turn ``question`` opened (the last assistant entry before the user
    speaks again, not a call: it says what was found), as the indexer linked it (entries.reply,
    migration 0012)."""
    found = hits_of(store.rows(f"{_HITS}e.rowid = (SELECT reply FROM entries WHERE rowid = ?)", (question.rowid,)))
    return found[0] if found else None


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


def entries_before(store: Store, file_id: int, offset: int) -> int:
    """How many entries of the journal lie before byte ``offset``: an entry's place in its session."""
    return int(store.value("SELECT count(*) FROM entries WHERE file_id = ? AND offset < ?", (file_id, offset),
                           default=0) or 0)


def journal_hits(store: Store, file_id: int, skip: int, limit: int) -> list[Hit]:
    """The journal's entries in file order, from the ``skip``-th on."""
    return hits_of(store.rows(f"{_HITS}e.file_id = ? ORDER BY e.offset LIMIT ? OFFSET ?", (file_id, limit, skip)))


def journal_entries(store: Store, file_id: int) -> list[Hit]:
    """Every entry of the journal in file order (the rowid orders the objects salvaged from one line)."""
    return hits_of(store.rows(f"{_HITS}e.file_id = ? ORDER BY e.offset, e.rowid", (file_id,)))


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
    """What a session reference resolves to (the fields of :class:`journal_index.query.scope.SessionRef`)."""

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


class JournalMeta(NamedTuple):
    """A journal's session and identity, as ``hub push`` sends them."""

    id: int
    path: str
    format: str
    session_id: str | None
    cwd: str | None
    name: str | None
    started: int | None
    last_ts: int | None
    head_hash: str | None  # a hash of its header line: a rewritten journal is told by it


def journal_metas(store: Store, where: Clause) -> list[JournalMeta]:
    """The journals meeting ``where`` (over ``f``), by path."""
    clause, params = where
    rows = store.rows("SELECT f.id, f.path, f.format, f.session_id, f.cwd, f.name, f.started, f.last_ts, "
                      f"f.head_hash FROM files f WHERE {clause} ORDER BY f.path", list(params))
    return [JournalMeta(*row) for row in rows]


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


# -- the semantic layer's vectors (migration 0011; journal_index/semantic/vectors.py, semantic.py) ---------

def _kinds_clause(kinds: Sequence[str]) -> Clause:
    return f"e.kind IN ({','.join('?' * len(kinds))})", tuple(kinds)


def unembedded_count(store: Store, kinds: Sequence[str]) -> int:
    """How many entries of these kinds have no vector row yet."""
    clause, params = _kinds_clause(kinds)
    return int(store.value(f"SELECT count(*) FROM entries e LEFT JOIN entry_vectors v ON v.entry = e.rowid "
                           f"WHERE v.entry IS NULL AND {clause}", params, default=0))


def unembedded_hits(store: Store, kinds: Sequence[str], below: int | None, limit: int) -> list[Hit]:
    """Entries of these kinds without a vector row, newest first (under rowid ``below``, if given)."""
    clause, params = _kinds_clause(kinds)
    under = "" if below is None else "AND e.rowid < ?"
    rows = store.rows(f"SELECT {HIT_COLUMNS} FROM entries e JOIN files f ON f.id = e.file_id "
                      f"LEFT JOIN entry_vectors v ON v.entry = e.rowid WHERE v.entry IS NULL AND {clause} {under} "
                      "ORDER BY e.rowid DESC LIMIT ?", [*params, *([] if below is None else [below]), limit])
    return hits_of(rows)


def vectors_since(store: Store, seq: int) -> list[tuple[int, int, int, bytes | None]]:
    """(seq, entry rowid, file id, vector) of the vector rows written after ``seq``, in order."""
    rows = store.rows("SELECT v.seq, v.entry, e.file_id, v.vector FROM entry_vectors v "
                      "JOIN entries e ON e.rowid = v.entry WHERE v.seq > ? ORDER BY v.seq", (seq,))
    return [(int(s), int(entry), int(file_id), blob) for s, entry, file_id, blob in rows]


def vector_count(store: Store) -> int:
    """How many entries have a vector (an entry that said nothing has a row without one)."""
    return int(store.value("SELECT count(*) FROM entry_vectors WHERE vector IS NOT NULL", default=0))


def has_vectors(store: Store) -> bool:
    return store.one("SELECT 1 FROM entry_vectors WHERE vector IS NOT NULL LIMIT 1") is not None


def file_ids(store: Store, where: Clause) -> list[int]:
    """The journals (files.id) meeting conditions over ``f``."""
    clause, params = where
    return [int(r[0]) for r in store.rows(f"SELECT f.id FROM files f WHERE {clause}", list(params))]


def hits_among(store: Store, rowids: Sequence[int], where: Clause) -> list[Hit]:
    """Those of the entries ``rowids`` that still exist and meet ``where``."""
    if not rowids:
        return []
    clause, params = where
    return hits_of(store.rows(f"{_HITS}e.rowid IN ({','.join('?' * len(rowids))}) AND {clause}",
                              [*rowids, *params]))
