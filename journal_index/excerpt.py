"""A window of text around the densest cluster of matched terms.

The index is contentless, so FTS5 cannot build snippets. Words of the re-read, redacted line
are run through the same tokenizer and text forms the index used, and a word matches when
one of its tokens is a query term; the ~300-character window holding the most distinct terms
wins.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from journal_index.text_forms import index_form

WINDOW_CHARS = 300
ELLIPSIS = "…"
_WORD = re.compile(r"[^\W_]+")
_SPACE = re.compile(r"\s+")

Tokenize = Callable[[str], list[str]]


@dataclass(frozen=True)
class Excerpt:
    text: str
    spans: list[tuple[int, int]]  # matched words, as offsets into ``text``


def collapse(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def find_matches(text: str, terms: set[str], tokenize: Tokenize) -> list[tuple[int, int, str]]:
    """(start, end, term) for each word of ``text`` whose tokens include a query term."""
    if not terms:
        return []
    cache: dict[str, str | None] = {}
    matches: list[tuple[int, int, str]] = []
    for word in _WORD.finditer(text):
        raw = word.group(0)
        hit = cache.get(raw, "")
        if hit == "":
            hit = next((t for t in tokenize(index_form(raw)) if t in terms), None)
            cache[raw] = hit
        if hit is not None:
            matches.append((word.start(), word.end(), hit))
    return matches


def _densest(matches: list[tuple[int, int, str]], width: int) -> tuple[int, int]:
    """The (start, end) of the run of matches within ``width`` with the most distinct terms."""
    best = (0, 0, 0)  # (distinct terms, matches, index)
    best_span = (matches[0][0], matches[0][1])
    right = 0
    for left in range(len(matches)):
        right = max(right, left)
        while right + 1 < len(matches) and matches[right + 1][1] - matches[left][0] <= width:
            right += 1
        window = matches[left : right + 1]
        score = (len({m[2] for m in window}), len(window), -left)
        if score > best:
            best = score
            best_span = (matches[left][0], matches[right][1])
    return best_span


def make_excerpt(text: str, terms: set[str], tokenize: Tokenize, width: int = WINDOW_CHARS) -> Excerpt:
    flat = collapse(text)
    matches = find_matches(flat, terms, tokenize)
    if not matches:
        start, end = 0, min(len(flat), width)
    else:
        first, last = _densest(matches, width)
        slack = max(0, width - (last - first))
        start = max(0, first - slack // 2)
        end = min(len(flat), start + max(width, last - first))
        start = max(0, end - max(width, last - first))
    # Do not cut words in half at either edge.
    if start > 0:
        space = flat.find(" ", start, min(len(flat), start + 20))
        if space >= 0:
            start = space + 1
    if end < len(flat):
        space = flat.rfind(" ", max(start, end - 20), end)
        if space > start:
            end = space
    prefix = ELLIPSIS if start > 0 else ""
    suffix = ELLIPSIS if end < len(flat) else ""
    shift = len(prefix) - start
    spans = [(s + shift, e + shift) for s, e, _ in matches if s >= start and e <= end]
    return Excerpt(prefix + flat[start:end] + suffix, spans)
