"""Every SQL statement the ranking runs, in one place: candidates from both FTS tables, which
candidates hold which phrases, the statistics bm25 needs, and the reply that ends a question's turn.

``entries_fts`` holds what was said, each call's name and key arguments and each result's call
(with positions: phrases match, FTS5 computes bm25); ``entries_bulk`` the whole text of entries
with tool output or call arguments (no positions: a phrase is its terms, all required; bm25 is
computed by the ranking from the lengths given here).
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from dataclasses import dataclass

from journal_index.hits import HIT_COLUMNS, Filters, Hit, hits_of
from journal_index.store import Store

Tokenize = Callable[[str], list[str]]

LIGHT_LIMIT = 200  # candidates from what was said, by bm25
BULK_LIMIT = 100  # candidates from tool output per expression, newest first
SCORE_WINDOW = 2000  # an expression matching more entries than this has only its newest scored
ANSWER_LOOKAHEAD = 60  # entries looked at after a question for the end of its turn
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
    sql = (f"SELECT {HIT_COLUMNS}, -bm25(entries_fts) FROM entries_fts "
           "JOIN entries e ON e.rowid = entries_fts.rowid JOIN files f ON f.id = e.file_id "
           f"WHERE entries_fts MATCH ? AND entries_fts.rowid >= ? AND {where} ORDER BY rank LIMIT {LIGHT_LIMIT}")
    return hits_of(store.rows(sql, [expression, low, *params]))


def bulk(store: Store, expression: str, filters: Filters) -> list[tuple[Hit, int]]:
    """The newest bulk matches of an expression, with their length in characters."""
    where, params = filters.sql()
    sql = (f"SELECT {HIT_COLUMNS}, 0.0, e.chars FROM entries_bulk "
           "JOIN entries e ON e.rowid = entries_bulk.rowid JOIN files f ON f.id = e.file_id "
           f"WHERE entries_bulk MATCH ? AND {where} ORDER BY entries_bulk.rowid DESC LIMIT {BULK_LIMIT}")
    return [(Hit(*row[:-1]), int(row[-1])) for row in store.rows(sql, [expression, *params])]


def held(store: Store, phrases: list[list[str]], rowids: set[int]) -> set[int]:
    """Which of the candidates hold any of the phrases (in either table). The matches from the
    lowest candidate on are read and intersected here: FTS5 reads a doclist in about a
    millisecond, while asking it about each candidate (rowid IN …) costs a seek per candidate."""
    if not rowids:
        return set()
    low = min(rowids)
    rows: set[int] = set()
    for table, expression in (("entries_fts", light_expression(phrases)),
                              ("entries_bulk", bulk_expression(phrases))):
        rows |= {r[0] for r in store.conn.execute(
            f"SELECT rowid FROM {table} WHERE {table} MATCH ? AND rowid >= ?", (expression, low))}
    return rows & rowids


def following(store: Store, question: Hit) -> list[Hit]:
    """The entries after ``question`` in its journal (at most ANSWER_LOOKAHEAD), in order."""
    rows = store.rows(f"SELECT {HIT_COLUMNS} FROM entries e JOIN files f ON f.id = e.file_id "
                      "WHERE e.file_id = (SELECT file_id FROM entries WHERE rowid = ?) AND e.offset > ? "
                      f"ORDER BY e.offset LIMIT {ANSWER_LOOKAHEAD}", (question.rowid, question.offset))
    return hits_of(rows)


def newest(store: Store, filters: Filters, limit: int) -> list[Hit]:
    """The newest entries (a search without words, and summaries)."""
    where, params = filters.sql()
    sql = (f"SELECT {HIT_COLUMNS} FROM entries e JOIN files f ON f.id = e.file_id "
           f"WHERE {where} ORDER BY e.ts DESC, e.rowid DESC LIMIT ?")
    return hits_of(store.rows(sql, [*params, limit]))
