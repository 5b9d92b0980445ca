"""Which entries answer a query, best first.

Candidates come from both FTS tables: ``entries_fts`` (what was said, each call's name and key
arguments, each result's call; positions, so phrases match and bm25 scores) and
``entries_bulk`` (whole texts of entries with tool output or call arguments; no positions, so
a group's terms are required together rather than as a phrase, and bm25 is computed here
with every term counted once). Entries holding every meaningful word come first; a question
of several words with few complete answers is padded with the entries holding the
heaviest part of it (coordination level, words weighted by rarity).

The score of an entry is its best lexical score, weighted by what kind of text matched (words
said by a person or an agent, or a summary, count more than words found in raw tool output),
and damped by age — strongly when the question asks for the current state of something
("now", "current", "latest"): facts change, and the newest statement is the answer.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from journal_index.config import CANDIDATES
from journal_index.hits import HIT_COLUMNS, Filters, Hit, hits_of
from journal_index.store import Store
from journal_index.text_forms import content_groups, match_all, match_any

DAY_MS = 86_400_000
K1, B = 1.2, 0.75  # bm25's, as FTS5 uses them
# A question of this many meaningful words that few entries answer in full gets the entries
# answering most of it appended; a short, precise query (an identifier) does not get padded.
FILL_MIN_GROUPS = 3
# How much a match counts by where it was found: said (or summarised) vs raw tool output.
KIND_WEIGHT = {"user": 1.0, "assistant": 1.0, "compaction": 1.1, "branch_summary": 1.1, "custom": 1.0,
               "context_edit": 1.0, "bash": 0.9, "tool_result": 0.9}
BULK_WEIGHT = 0.8  # words found only in tool output or call arguments
AGE_DAYS = 30.0  # score / (1 + age / AGE_DAYS)
FRESH_AGE_DAYS = 3.0  # the same when the question asks for the current state
FRESH_WORDS = frozenset({"current", "currently", "now", "latest", "newest", "today", "nowadays", "still",
                         "anymore", "lately", "recent", "recently"})

HINT_SOME = ("only the first {n} result(s) hold every term; the rest hold most of them. "
             "Add, drop or change words to narrow it down.")
HINT_ANY = "no entry holds every term; these hold some of them. Add, drop or change words to narrow it down."
HINT_NONE = "nothing matched; try fewer or other words, a wider scope or a longer time range"

Tokenize = Callable[[str], list[str]]


@dataclass
class _Stats:
    """What bm25 over the bulk table needs and FTS5 does not give without positions."""

    docs: int
    average_chars: float


def _stats(store: Store) -> _Stats:
    row = store.one("SELECT count(*), avg(chars) FROM entries")
    docs, average = (row or (0, None))
    return _Stats(max(int(docs or 0), 1), float(average or 1.0))


def _idf(docs: int, containing: int) -> float:
    return math.log((docs - containing + 0.5) / (containing + 0.5) + 1.0)


def _bulk_doc_counts(store: Store, groups: list[list[str]], tokenize: Tokenize) -> list[int]:
    """For each group, how many bulk documents hold its rarest term (fts5vocab)."""
    store.conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.bulk_vocab USING fts5vocab(main, entries_bulk, row)")
    counts = []
    for group in groups:
        terms = tokenize(" ".join(group)) or [t.lower() for t in group]
        found = [int(store.value("SELECT doc FROM temp.bulk_vocab WHERE term = ?", (t,), default=0)) for t in terms]
        counts.append(min(found) if found else 0)
    return counts


def _light(store: Store, expression: str, filters: Filters) -> list[Hit]:
    where, params = filters.sql()
    sql = (f"SELECT {HIT_COLUMNS}, -bm25(entries_fts) FROM entries_fts "
           "JOIN entries e ON e.rowid = entries_fts.rowid JOIN files f ON f.id = e.file_id "
           f"WHERE entries_fts MATCH ? AND {where} ORDER BY rank LIMIT {CANDIDATES}")
    return hits_of(store.rows(sql, [expression, *params]))


def _bulk(store: Store, expression: str, filters: Filters) -> list[tuple[Hit, int]]:
    """The newest bulk matches (no scoring in SQLite: it has no positions to score with)."""
    where, params = filters.sql()
    sql = (f"SELECT {HIT_COLUMNS}, 0.0, e.chars FROM entries_bulk "
           "JOIN entries e ON e.rowid = entries_bulk.rowid JOIN files f ON f.id = e.file_id "
           f"WHERE entries_bulk MATCH ? AND {where} ORDER BY entries_bulk.rowid DESC LIMIT {CANDIDATES}")
    out = []
    for row in store.rows(sql, [expression, *params]):
        out.append((Hit(*row[:-1]), int(row[-1])))
    return out


def _bulk_score(idfs: list[float], chars: int, stats: _Stats) -> float:
    """bm25 with every matched term counted once, length in characters."""
    norm = K1 * (1 - B + B * chars / stats.average_chars)
    return sum(idf * (K1 + 1) / (1 + norm) for idf in idfs)


def _match_terms(groups: list[list[str]]) -> str:
    """The bulk table's expression: without positions a group is its terms, all required."""
    return " AND ".join(match_any([[term]]) for group in groups for term in group)


def _candidates(store: Store, groups: list[list[str]], filters: Filters, tokenize: Tokenize,
                partial: bool) -> dict[int, Hit]:
    """Hits from both tables, each scored by its better table (complete matches, or any group)."""
    light_expr = match_any(groups) if partial else match_all(groups)
    bulk_expr = " OR ".join(f"({_match_terms([g])})" for g in groups) if partial else _match_terms(groups)
    found: dict[int, Hit] = {}
    for hit in _light(store, light_expr, filters):
        found[hit.rowid] = hit
    stats = _stats(store)
    idfs = [_idf(stats.docs, n) for n in _bulk_doc_counts(store, groups, tokenize)]
    for hit, chars in _bulk(store, bulk_expr, filters):
        score = BULK_WEIGHT * _bulk_score(idfs, chars, stats)
        known = found.get(hit.rowid)
        if known is None:
            hit.score = score
            found[hit.rowid] = hit
        else:
            known.score = max(known.score, score)
    return found


def _coverage(store: Store, groups: list[list[str]], hits: dict[int, Hit], weights: list[float]) -> dict[int, float]:
    """The share of the query's weight (rare words weigh more) each candidate holds."""
    held = dict.fromkeys(hits, 0.0)
    if not hits:
        return held
    placeholders = ",".join("?" * len(held))
    total = sum(weights) or 1.0
    for group, weight in zip(groups, weights, strict=True):
        rows: set[int] = set()
        for table, expression in (("entries_fts", match_all([group])), ("entries_bulk", _match_terms([group]))):
            rows |= {r[0] for r in store.conn.execute(
                f"SELECT rowid FROM {table} WHERE {table} MATCH ? AND rowid IN ({placeholders})",
                [expression, *held])}
        for rowid in rows:
            held[rowid] += weight / total
    return held


def _fresh(groups: list[list[str]]) -> bool:
    return any(len(g) == 1 and g[0].lower() in FRESH_WORDS for g in groups)


def _weigh(hits: list[Hit], now: int, fresh: bool) -> None:
    age_scale = FRESH_AGE_DAYS if fresh else AGE_DAYS
    for hit in hits:
        age_days = max(0.0, (now - (hit.ts or now)) / DAY_MS)
        hit.score = hit.score * KIND_WEIGHT.get(hit.kind, 1.0) / (1 + age_days / age_scale)


def _one_per_entry(hits: list[Hit]) -> list[Hit]:
    """One hit per entry id (/fork and branch copies repeat entries under the same id: the
    others are noted on the first), and a call counts once with its result: the result holds
    the call, so it takes the call's place."""
    answered = {(h.path, h.link_offset) for h in hits if h.link_offset is not None}
    first: dict[str, Hit] = {}
    out = []
    for hit in hits:
        if hit.kind == "assistant" and (hit.path, hit.offset) in answered:
            continue
        kept = first.setdefault(hit.entry_id, hit)
        if kept is hit:
            out.append(hit)
        elif hit.session_id and hit.session_id != kept.session_id and hit.session_id not in kept.also_in:
            kept.also_in.append(hit.session_id)
    return out


def rank(store: Store, groups: list[list[str]], filters: Filters, limit: int, now: int,
         tokenize: Tokenize) -> list[Hit]:
    """Candidates in rank order: those holding every meaningful word first; for a question of
    several words with few complete answers, those holding most of its words after them."""
    core = content_groups(groups)
    fresh = _fresh(groups)
    if fresh:
        trimmed = [g for g in core if not (len(g) == 1 and g[0].lower() in FRESH_WORDS)]
        core = trimmed or core
    complete = list(_candidates(store, core, filters, tokenize, partial=False).values())
    _weigh(complete, now, fresh)
    complete = _one_per_entry(sorted(complete, key=lambda h: (-h.score, -(h.ts or 0))))
    enough = len(complete) >= limit or (complete and len(core) < FILL_MIN_GROUPS)
    if enough or len(core) < 2:
        return complete
    found = _candidates(store, core, filters, tokenize, partial=True)
    for rowid in [h.rowid for h in complete]:
        found.pop(rowid, None)
    stats = _stats(store)
    weights = [_idf(stats.docs, n) for n in _bulk_doc_counts(store, core, tokenize)]
    covered = _coverage(store, core, found, weights)
    partial = list(found.values())
    _weigh(partial, now, fresh)
    for hit in partial:
        hit.complete = False
    # Most of the question first; among equals, the better score.
    partial.sort(key=lambda h: (-round(covered[h.rowid], 2), -h.score, -(h.ts or 0)))
    return _one_per_entry(complete + partial)


def match_quality(hits: list[Hit]) -> tuple[str, str | None]:
    """How well the shown hits match: "all", "any" or "none", and a hint when not all do."""
    if not hits:
        return "none", HINT_NONE
    whole = sum(1 for h in hits if h.complete)
    if whole == len(hits):
        return "all", None
    if whole:
        return "all", HINT_SOME.format(n=whole)
    return "any", HINT_ANY
