"""The forms of text the hub's full-text search sees: the local query forms (camelCase split,
CJK bigrams, head and tail of a giant entry) applied before insert and before query, then cut
to letter-and-digit runs, so PostgreSQL's parser sees the same words unicode61 does locally."""

from __future__ import annotations

import re

from journal_index.text.text_forms import content_groups, index_form, indexed_part, query_groups

# PostgreSQL's stemmer and stop words, as porter locally.
TS_CONFIG = "english"
_RUN = re.compile(r"[^\W_]+")


def document_form(text: str | None) -> str:
    """What goes into to_tsvector for a text."""
    if not text:
        return ""
    return " ".join(_RUN.findall(index_form(indexed_part(text))))


def tsquery(query: str, require_all: bool) -> str | None:
    """A to_tsquery expression for a query: each word a group, a split word a phrase (``<->``);
    all groups (AND) or any (OR). None when the query holds no word."""
    groups = content_groups(query_groups(query))
    if not groups:
        return None
    phrases = ["(" + " <-> ".join(t.lower() for t in group) + ")" for group in groups]
    return (" & " if require_all else " | ").join(phrases)


def query_words(query: str) -> list[list[str]]:
    return query_groups(query)


def clean(text: str | None) -> str | None:
    """PostgreSQL text holds no NUL character, and UTF-8 no lone surrogate."""
    if text is None:
        return None
    if not text.isascii():
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text.replace("\x00", "\ufffd")
