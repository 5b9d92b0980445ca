"""A naive full-text baseline over the same index, shown beside the ranking in every eval report.

It is what one gets from FTS5 alone, with none of journal_index's ranking: the query's words,
each quoted as an FTS5 string, all required (AND); if that matches nothing, any of them (OR).
Candidates are ordered by BM25 and the question's scope is applied as the ranking applies it (a
filter on the journal's cwd, not a ranking choice). The index has two FTS5 tables with the
index's own tokenizer (porter over unicode61, diacritics removed):

* ``entries_fts``: what was said, call names and key arguments, with positions. FTS5's own
  ``bm25()`` scores it.
* ``entries_bulk``: tool output and call arguments, without positions (``detail=none``), where
  ``bm25()`` gives 0. A row matched only there gets BM25 with the same constants (k1 1.2, b 0.75,
  FTS5's idf) and every term frequency taken as 1 (frequencies are not stored), with the row's
  indexed length in characters for the document length.

An entry is scored by the better of its two tables. A hit answers when its own line (or entry id)
is expected; unlike the ranking's hits, a tool result does not stand for its call here.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from journal_index.data.store import Store
from journal_index.query.scope import Scope

K1, B = 1.2, 0.75
WORD_EDGE = re.compile(r"^\W+|\W+$")


@dataclass(frozen=True)
class NaiveHit:
    entry_id: str
    path: str
    offset: int
    score: float  # higher is better


def fts_terms(query: str) -> list[str]:
    """The query's words, stripped of leading and trailing punctuation, each quoted for FTS5."""
    words = [WORD_EDGE.sub("", w) for w in query.split()]
    seen: list[str] = []
    for word in words:
        if re.search(r"\w", word) and word.casefold() not in (s.casefold() for s in seen):
            seen.append(word)
    return ['"' + w.replace('"', '""') + '"' for w in seen]


def _idf(total: int, matched: int) -> float:
    return max(math.log((total - matched + 0.5) / (matched + 0.5)), 1e-6)  # FTS5's idf, floored as FTS5 does


class NaiveSearch:
    """BM25 over the index's FTS5 tables, AND then OR, within a scope."""

    def __init__(self, store: Store) -> None:
        self.conn = store.conn
        self.bulk_rows = int(self._value("SELECT count(*) FROM entries_bulk") or 0)
        avg = self._value("SELECT avg(chars) FROM entries WHERE rowid IN (SELECT rowid FROM entries_bulk)")
        self.bulk_avg_chars = float(avg or 1.0)
        self._bulk_term_rows: dict[str, set[int]] = {}
        self._scope_rows: dict[Scope, set[int]] = {}
        self._chars_of: dict[int, int] | None = None

    def _bulk_rows_of(self, term: str) -> set[int]:
        if term not in self._bulk_term_rows:
            # without positions a quoted word of several tokens ("foo.bar") cannot be a phrase
            # there: its tokens are required together instead
            parts = " AND ".join(f'"{p}"' for p in re.findall(r"[^\W_]+", term)) or term
            self._bulk_term_rows[term] = {int(r[0]) for r in self.conn.execute(
                "SELECT rowid FROM entries_bulk WHERE entries_bulk MATCH ?", (parts,))}
        return self._bulk_term_rows[term]

    def _chars(self) -> dict[int, int]:
        """Every entry's indexed length in characters (read once: OR over common words matches most rows)."""
        if self._chars_of is None:
            self._chars_of = {int(r): int(c) for r, c in self.conn.execute("SELECT rowid, chars FROM entries")}
        return self._chars_of

    def _scores(self, terms: list[str], joiner: str) -> dict[int, float]:
        scores: dict[int, float] = {}
        expr = f" {joiner} ".join(terms)
        for rowid, bm25 in self.conn.execute(
                "SELECT rowid, bm25(entries_fts) FROM entries_fts WHERE entries_fts MATCH ?", (expr,)):
            scores[int(rowid)] = -float(bm25)  # FTS5's bm25() is negative, smaller is better
        per_term = {t: self._bulk_rows_of(t) for t in terms}
        rows = set.intersection(*per_term.values()) if joiner == "AND" else set.union(*per_term.values())
        if not rows:
            return scores
        chars = self._chars()
        idf = {t: _idf(self.bulk_rows, len(r)) for t, r in per_term.items()}
        for rowid in rows:
            norm = K1 * (1 - B + B * float(chars.get(rowid, 0)) / self.bulk_avg_chars)
            score = sum(idf[t] * (K1 + 1) / (1 + norm) for t in terms if rowid in per_term[t])
            scores[rowid] = max(scores.get(rowid, 0.0), score)
        return scores

    def _value(self, sql: str) -> Any:
        row = self.conn.execute(sql).fetchone()
        return None if row is None else row[0]

    def _in_scope(self, scope: Scope) -> set[int]:
        if scope not in self._scope_rows:
            where, params = scope.sql("f")
            self._scope_rows[scope] = {int(r[0]) for r in self.conn.execute(
                f"SELECT e.rowid FROM entries e JOIN files f ON f.id = e.file_id WHERE {where}", params)}
        return self._scope_rows[scope]

    def search(self, query: str, scope: Scope, limit: int = 10) -> list[NaiveHit]:
        terms = fts_terms(query)
        if not terms:
            return []
        allowed = self._in_scope(scope)
        for joiner in ("AND", "OR"):
            scores = {row: s for row, s in self._scores(terms, joiner).items() if row in allowed}
            if not scores:
                continue
            hits = []
            for rowid in sorted(scores, key=lambda r: (-scores[r], r))[:limit]:
                row = self.conn.execute(
                    "SELECT e.entry_id, f.path, e.offset FROM entries e JOIN files f ON f.id = e.file_id "
                    "WHERE e.rowid = ?", (rowid,)).fetchone()
                if row is None:
                    continue
                entry_id, path, offset = row
                hits.append(NaiveHit(str(entry_id), str(path), int(offset), scores[rowid]))
            return hits
        return []
