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

from journal_index.text.text_forms import fold_accents, index_form

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
    """(start, end, term) for each word of ``text`` whose tokens include a query term.

    Tokenizing every word of a 64K-character entry costs tens of milliseconds, so only words
    holding the first characters of some term (case and accents folded; stems keep their
    word's first characters) are tokenized.
    """
    if not terms:
        return []
    folded = fold_accents(text.lower())
    if len(folded) == len(text):
        heads = sorted({t[:3] for t in terms}, key=len, reverse=True)
        candidates = re.compile("|".join(re.escape(h) for h in heads)).finditer(folded)
    else:  # a few characters change length when lowercased: positions would not line up
        candidates = _WORD.finditer(text)
    cache: dict[str, str | None] = {}
    matches: list[tuple[int, int, str]] = []
    last_end = -1
    for found in candidates:
        if found.start() < last_end:
            continue  # inside the word just looked at
        word = _word_at(text, found.start())
        if word is None:
            continue
        start, end = word
        last_end = end
        raw = text[start:end]
        hit = cache.get(raw, "")
        if hit == "":
            hit = next((t for t in tokenize(index_form(raw)) if t in terms), None)
            cache[raw] = hit
        if hit is not None:
            matches.append((start, end, hit))
    return matches


def _word_at(text: str, position: int) -> tuple[int, int] | None:
    """The (start, end) of the run of letters and digits around ``position``."""
    if not (text[position].isalnum()):
        return None
    start = position
    while start > 0 and text[start - 1].isalnum():
        start -= 1
    end = _WORD.match(text, position)
    return (start, end.end()) if end else None


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
    cut_before = cut_after = False
    if len(text) > 8 * width:
        # Collapsing a 64K-character entry for a 300-character window was most of the cost of
        # a search: find the cluster on the raw text, then work on a slice around it.
        raw = find_matches(text, terms, tokenize)
        first, last = _densest(raw, 2 * width) if raw else (0, 0)
        lo, hi = max(0, first - 2 * width), min(len(text), last + 2 * width)
        cut_before, cut_after = lo > 0, hi < len(text)
        text = text[lo:hi]
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
    prefix = ELLIPSIS if start > 0 or cut_before else ""
    suffix = ELLIPSIS if end < len(flat) or cut_after else ""
    shift = len(prefix) - start
    spans = [(s + shift, e + shift) for s, e, _ in matches if s >= start and e <= end]
    return Excerpt(prefix + flat[start:end] + suffix, spans)
