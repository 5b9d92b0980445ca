"""The query side: verified re-reads, search and read (``find.py``), an entry in its place and
whole sessions, the sessions list, the ranking (the question, the weights, synonyms, copies of
our answers), excerpts, result rows, scopes and time bounds. The names callers use most are
taken from the package itself (``from journal_index.query import search, Filters``)."""

from journal_index.query.find import (
    PAGE_CHARS,
    TIME_EXAMPLE,
    UNAVAILABLE,
    Filters,
    Hit,
    QueryError,
    Reader,
    Reindex,
    Roots,
    SearchResult,
    entry_candidates,
    iso,
    locate_entry,
    parse_time_bound,
    read,
    reindex_stale,
    search,
    short_entry_id,
    summaries,
)

__all__ = [
    "PAGE_CHARS",
    "TIME_EXAMPLE",
    "UNAVAILABLE",
    "Filters",
    "Hit",
    "QueryError",
    "Reader",
    "Reindex",
    "Roots",
    "SearchResult",
    "entry_candidates",
    "iso",
    "locate_entry",
    "parse_time_bound",
    "read",
    "reindex_stale",
    "search",
    "short_entry_id",
    "summaries",
]
