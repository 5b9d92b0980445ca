"""search, read and summaries: scoped SQL over the index, then verified re-reads of the journal.

Every text that leaves this module was re-read from the journal at (offset, length), parsed
with the same format code as the indexer, checked to carry the entry id the index promised,
and redacted again. A line that fails the check makes its file reindex once; if it still
fails, the entry is answered as unavailable, never with another line's text.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from typing import Any

import apsw

from journal_index.config import CANDIDATES, now_ms
from journal_index.entry_text import entry_parts, entry_text, strip_our_answers
from journal_index.excerpt import Excerpt, make_excerpt
from journal_index.extract import find_call
from journal_index.formats import FORMATS, KINDS, SUMMARY_KINDS, Entry, Root, ToolCall, get_format
from journal_index.indexer import index_file, open_journal
from journal_index.redact import redact_region
from journal_index.scope import Scope
from journal_index.store import Store
from journal_index.text_forms import (
    INDEX_HEAD_CHARS,
    INDEX_TAIL_CHARS,
    content_groups,
    indexed_part,
    match_all,
    match_any,
    query_groups,
)

PAGE_CHARS = 16_000
DAY_MS = 86_400_000
UNAVAILABLE = "[journal line unavailable]"
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
TIME_EXAMPLE = "2026-09-01 (a local day) or 2026-09-01T14:30:00Z (an ISO-8601 time)"


class QueryError(ValueError):
    """Bad query input; the message names the accepted form."""


def parse_time_bound(value: str, *, end: bool) -> int:
    """``YYYY-MM-DD`` is a local day (its first or last millisecond); else an ISO-8601 time."""
    value = value.strip()
    try:
        if _DAY.match(value):
            day = date.fromisoformat(value)
            moment = datetime.combine(day, time(23, 59, 59, 999000) if end else time(0, 0))
            return int(moment.astimezone().timestamp() * 1000)
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise QueryError(f"cannot read the time {value!r}; use {TIME_EXAMPLE}") from None
    if moment.tzinfo is None:
        moment = moment.astimezone()
    return int(moment.timestamp() * 1000)


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
    session_id: str | None = None
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

    def sql(self) -> tuple[str, list[Any]]:
        clause, params = self.scope.sql("f")
        parts: list[str] = [clause]
        values: list[Any] = list(params)
        if self.since is not None:
            parts.append("e.ts >= ?")
            values.append(self.since)
        if self.until is not None:
            parts.append("e.ts <= ?")
            values.append(self.until)
        if self.kinds:
            parts.append(f"e.kind IN ({','.join('?' * len(self.kinds))})")
            values.extend(self.kinds)
        if self.session_id:
            parts.append("f.session_id = ?")
            values.append(self.session_id)
        if self.agents:
            parts.append(f"f.format IN ({','.join('?' * len(self.agents))})")
            values.extend(self.agents)
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
    score: float = 0.0
    complete: bool = True  # holds every meaningful word of the query
    excerpt: str = ""
    spans: list[tuple[int, int]] = field(default_factory=list)
    also_in: list[str] = field(default_factory=list)  # other sessions holding the same text (copies)

    def as_json(self) -> dict[str, Any]:
        return {
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


@dataclass
class SearchResult:
    match: str  # "all" | "any" | "none" (summaries and browsing use "all")
    hint: str | None
    scope: Scope
    hits: list[Hit]

    def as_json(self, with_match: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if with_match:
            out["match"] = self.match
            out["hint"] = self.hint
        out["scope"] = self.scope.as_json()
        out["results"] = [hit.as_json() for hit in self.hits]
        return out


_HIT_COLUMNS = ("e.rowid, e.entry_id, e.ts, e.kind, e.role, e.tool, e.offset, e.length, "
                "f.path, f.session_id, f.cwd, f.format, e.link_offset, e.link_length")


def _hits(rows: list[tuple[Any, ...]]) -> list[Hit]:
    """Rows of _HIT_COLUMNS (optionally followed by a bm25 score) as Hits."""
    return [Hit(*row) for row in rows]


class Reader:
    """Re-reads and verifies journal lines, and tokenizes for excerpts, over one store."""

    def __init__(self, store: Store, roots: Sequence[Root | str | os.PathLike[str]] | None = None) -> None:
        self.store = store
        # Journals are only opened where they resolve inside these folders (None: anywhere,
        # for in-process callers and tests); a tampered path or a symlink out reads as unavailable.
        self.roots = None if roots is None else [os.path.realpath(os.fspath(r.path if isinstance(r, Root) else r))
                                                 for r in roots]
        self._tokenizer = store.conn.fts5_tokenizer("porter", ["unicode61", "remove_diacritics", "2"])

    def tokenize(self, text: str) -> list[str]:
        tokens = self._tokenizer(text.encode("utf-8"), apsw.FTS5_TOKENIZE_QUERY, None,
                                 include_offsets=False)
        return [str(t[0]) for t in tokens]

    def query_terms(self, groups: list[list[str]]) -> set[str]:
        return {token for group in groups for token in self.tokenize(" ".join(group))}

    def resolve(self, path: str) -> str | None:
        """The path to open (symlinks and ``..`` resolved), or None when it lies outside the roots."""
        if self.roots is None:
            return path
        real = os.path.realpath(path)
        if any(real.startswith(root.rstrip(os.sep) + os.sep) for root in self.roots):
            return real
        return None

    def verified_text(self, hit: Hit, searchable_only: bool = False) -> str | None:
        """The redacted text of the entry at the hit's place, or None if the line is not it.

        ``searchable_only``: of a giant entry, only the head and tail that hold its terms
        (what an excerpt can show), so a 1 MB tool result is not redacted whole per search.
        """
        path = self.resolve(hit.path)
        if path is None:
            return None
        fmt = get_format(hit.format)
        try:
            with open_journal(path) as handle:
                line = os.pread(handle.fileno(), hit.length, hit.offset)
                if len(line) != hit.length:
                    return None
                parsed = fmt.parse_line(line, hit.offset)
                if not isinstance(parsed, Entry) or parsed.entry_id != hit.entry_id:
                    return None
                call: ToolCall | None = None
                if hit.link_offset is not None and hit.link_length is not None and parsed.answers:
                    call_line = os.pread(handle.fileno(), hit.link_length, hit.link_offset)
                    site = find_call(fmt, parsed.answers, call_line, hit.link_offset)
                    if site is None:
                        return None  # the call's line moved: the journal was rewritten
                    call = site.call
        except OSError:
            return None
        if searchable_only and len(parsed.text) > INDEX_HEAD_CHARS + INDEX_TAIL_CHARS:
            # A giant entry: only its head and tail hold terms, so only they are redacted.
            text = "\n".join(strip_our_answers(p) for p in entry_parts(parsed, call))
            size = len(text)
            return (redact_region(text, 0, INDEX_HEAD_CHARS) + "\n"
                    + redact_region(text, size - INDEX_TAIL_CHARS, size))
        return entry_text(parsed, call)


def _rank(hits: list[Hit], now: int) -> list[Hit]:
    """bm25 (negative: lower is better) damped by age: -score / (1 + age_days / 30)."""
    for hit in hits:
        age_days = max(0.0, (now - (hit.ts or now)) / DAY_MS)
        hit.score = -hit.score / (1 + age_days / 30)
    return sorted(hits, key=lambda h: (-h.score, -(h.ts or 0)))


def _distinct(hits: list[Hit]) -> list[Hit]:
    """One hit per entry id: session copies (branch, fork) repeat entries under the same id."""
    seen: set[str] = set()
    out = []
    for hit in hits:
        if hit.entry_id not in seen:
            seen.add(hit.entry_id)
            out.append(hit)
    return out


def _fts_candidates(store: Store, expression: str, filters: Filters) -> list[Hit]:
    where, params = filters.sql()
    sql = (f"SELECT {_HIT_COLUMNS}, bm25(entries_fts) FROM entries_fts "
           "JOIN entries e ON e.rowid = entries_fts.rowid JOIN files f ON f.id = e.file_id "
           f"WHERE entries_fts MATCH ? AND {where} ORDER BY rank LIMIT {CANDIDATES}")
    return _hits(store.rows(sql, [expression, *params]))


def _newest(store: Store, filters: Filters, limit: int) -> list[Hit]:
    where, params = filters.sql()
    sql = (f"SELECT {_HIT_COLUMNS} FROM entries e JOIN files f ON f.id = e.file_id "
           f"WHERE {where} ORDER BY e.ts DESC, e.rowid DESC LIMIT ?")
    return _hits(store.rows(sql, [*params, limit]))


def _page(store: Store, reader: Reader, ranked: list[Hit], terms: set[str], limit: int,
          retry: bool) -> list[Hit] | None:
    """The first ``limit`` hits with verified excerpts, copies collapsed into the first of them
    (a /fork or branch copy repeats text under new ids: one slot, the others noted). None when
    a journal turned out rewritten and was reindexed: rank again."""
    out: list[Hit] = []
    by_text: dict[tuple[str, int], Hit] = {}
    stale: dict[str, list[Hit]] = {}
    for hit in ranked:
        if len(out) >= limit:
            break
        text = reader.verified_text(hit, searchable_only=True)
        if text is None:
            stale.setdefault(hit.path, []).append(hit)
            hit.excerpt, hit.spans = UNAVAILABLE, []
            out.append(hit)
            continue
        # Only the indexed part can hold the matched terms; a giant entry is not collapsed whole.
        excerpt: Excerpt = make_excerpt(indexed_part(text), terms, reader.tokenize)
        hit.excerpt, hit.spans = excerpt.text, excerpt.spans
        first = by_text.setdefault((hit.kind, hash(text)), hit)
        if first is not hit:
            if hit.session_id and hit.session_id != first.session_id and hit.session_id not in first.also_in:
                first.also_in.append(hit.session_id)
            continue
        out.append(hit)
    if stale and retry:
        changed = False
        for path in stale:
            if reader.resolve(path) is None:
                continue  # never reindex (read) a journal outside the roots
            result = index_file(store, path, rebuild=True)
            changed = changed or result.reset or result.removed or result.entries > 0
        if changed:
            return None
    return out


# A question of this many meaningful words that few entries answer in full gets the entries
# answering most of it appended; a short, precise query (an identifier) does not get padded.
FILL_MIN_GROUPS = 3
HINT_SOME = ("only the first {n} result(s) hold every term; the rest hold most of them. "
             "Add, drop or change words to narrow it down.")
HINT_ANY = "no entry holds every term; these hold some of them. Add, drop or change words to narrow it down."
HINT_NONE = "nothing matched; try fewer or other words, a wider scope or a longer time range"


def _coverage(store: Store, groups: list[list[str]], hits: list[Hit]) -> dict[int, int]:
    """How many of the query's groups each candidate holds (coordination level)."""
    counts = dict.fromkeys((h.rowid for h in hits), 0)
    if not hits:
        return counts
    placeholders = ",".join("?" * len(counts))
    for group in groups:
        for (rowid,) in store.conn.execute(
                f"SELECT rowid FROM entries_fts WHERE entries_fts MATCH ? AND rowid IN ({placeholders})",
                [match_all([group]), *counts]):
            counts[rowid] += 1
    return counts


def _find(store: Store, groups: list[list[str]], filters: Filters, limit: int, now: int) -> list[Hit]:
    """Candidates in rank order: those holding every meaningful word first; for a question of
    several words with few complete answers, those holding most of its words after them."""
    core = content_groups(groups)
    complete = _distinct(_rank(_fts_candidates(store, match_all(core), filters), now))
    enough = len(complete) >= limit or (complete and len(core) < FILL_MIN_GROUPS)
    if enough or len(core) < 2:
        return complete
    partial = _rank(_fts_candidates(store, match_any(core), filters), now)
    covered = _coverage(store, core, partial)
    partial.sort(key=lambda h: -covered[h.rowid])  # stable: equal coverage keeps the rank order
    for hit in partial:
        hit.complete = False
    return _distinct(complete + partial)


def _match(hits: list[Hit]) -> tuple[str, str | None]:
    """How well the shown hits match: "all", "any" or "none", and a hint when not all do."""
    if not hits:
        return "none", HINT_NONE
    whole = sum(1 for h in hits if h.complete)
    if whole == len(hits):
        return "all", None
    if whole:
        return "all", HINT_SOME.format(n=whole)
    return "any", HINT_ANY


def search(store: Store, query: str | None, filters: Filters, limit: int = 10,
           now: int | None = None, roots: Sequence[Root | str | os.PathLike[str]] | None = None) -> SearchResult:
    if limit < 1:
        raise QueryError("limit must be at least 1")
    reader = Reader(store, roots)
    groups = query_groups(query or "")
    terms = reader.query_terms(groups)
    for attempt in (0, 1):
        if groups:
            ranked = _find(store, groups, filters, limit, now if now is not None else now_ms())
        else:
            ranked = _newest(store, filters, limit * 4)
        hits = _page(store, reader, ranked, terms, limit, retry=attempt == 0)
        if hits is not None:
            match, hint = _match(hits) if groups else ("all", None)
            return SearchResult(match, hint, filters.scope, hits)
    raise AssertionError("unreachable")  # pragma: no cover


def summaries(store: Store, filters: Filters, limit: int = 10,
              roots: Sequence[Root | str | os.PathLike[str]] | None = None) -> SearchResult:
    kinds = tuple(k for k in filters.kinds if k in SUMMARY_KINDS) or SUMMARY_KINDS
    narrowed = Filters(filters.scope, filters.since, filters.until, kinds, filters.session_id, filters.agents,
                       filters.live)
    reader = Reader(store, roots)
    for attempt in (0, 1):
        hits = _page(store, reader, _newest(store, narrowed, limit * 4), set(), limit, retry=attempt == 0)
        if hits is not None:
            return SearchResult("all", None, filters.scope, hits)
    raise AssertionError("unreachable")  # pragma: no cover


def _scope_words(scope: Scope) -> str:
    if scope.kind == "project":
        return f"project {scope.root}"
    return f"session {scope.session_id}" if scope.kind == "session" else "any indexed session"


def _candidates(store: Store, entry_id: str, scope: Scope) -> list[Hit]:
    where, params = scope.sql("f")
    sql = (f"SELECT {_HIT_COLUMNS} FROM entries e JOIN files f ON f.id = e.file_id "
           f"WHERE e.entry_id = ? AND {where} ORDER BY e.ts DESC")
    return _hits(store.rows(sql, [entry_id, *params]))


def _choose(candidates: list[Hit], session_id: str | None, prefer: Scope | None) -> Hit | list[Hit] | None:
    """The entry to read: the given session's copy; else the only one; else the only one inside
    ``prefer`` (the project a person reads from); else all of them (ambiguous)."""
    if session_id:
        mine = [c for c in candidates if c.session_id == session_id]
        if len(mine) == 1:
            return mine[0]
    if len(candidates) == 1:
        return candidates[0]
    if prefer is not None:
        near = [c for c in candidates if prefer.contains(c.cwd, c.session_id)]
        if len(near) == 1:
            return near[0]
    return candidates or None


def read(store: Store, entry_id: str, scope: Scope, session_id: str | None = None,
         offset: int = 0, page_chars: int = PAGE_CHARS,
         roots: Sequence[Root | str | os.PathLike[str]] | None = None, prefer: Scope | None = None) -> dict[str, Any]:
    """One entry's verified, redacted text, a page at a time (journals opened only inside ``roots``).

    ``session_id`` picks among copies of an entry (forks keep ids); ``prefer`` is the scope whose
    copy is meant when there are several and no session is given.
    """
    if offset < 0:
        raise QueryError("offset must be 0 or more")
    reader = Reader(store, roots)
    for attempt in (0, 1):
        chosen = _choose(_candidates(store, entry_id, scope), session_id, prefer)
        if chosen is None:
            if attempt == 1:  # it was there until its journal turned out to be rewritten
                return {"status": "unavailable", "entryId": entry_id,
                        "reason": "the journal was rewritten and no longer holds this entry"}
            return {"status": "not_found", "entryId": entry_id, "where": _scope_words(scope)}
        if isinstance(chosen, list):
            return {
                "status": "ambiguous",
                "entryId": entry_id,
                "candidates": [
                    {"entryId": c.entry_id, "sessionId": c.session_id, "time": iso(c.ts),
                     "kind": c.kind, "cwd": c.cwd}
                    for c in chosen
                ],
            }
        text = reader.verified_text(chosen)
        if text is None:
            if attempt == 0 and reader.resolve(chosen.path) is not None:
                index_file(store, chosen.path, rebuild=True)
                continue
            return {"status": "unavailable", "entryId": entry_id,
                    "reason": "the journal line no longer holds this entry"}
        total = len(text)
        if offset > total:
            raise QueryError(f"offset {offset} is past the end of the entry ({total} characters)")
        end = min(total, offset + page_chars)
        return {
            "status": "ok",
            "entryId": chosen.entry_id,
            "sessionId": chosen.session_id,
            "agent": chosen.format,
            "time": iso(chosen.ts),
            "kind": chosen.kind,
            "cwd": chosen.cwd,
            "text": text[offset:end],
            "offset": offset,
            "nextOffset": end if end < total else None,
            "totalChars": total,
        }
    return {"status": "unavailable", "entryId": entry_id, "reason": "the journal changed while reading"}
