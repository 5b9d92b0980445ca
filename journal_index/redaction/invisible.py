"""Invisible characters (zero-width, bidi controls, soft hyphens, their JSON escapes): the text
without them, and the way back to positions in the original."""

from __future__ import annotations

import bisect
import re

# Characters that show nothing, or only reorder what is shown: inside a token they hide it from
# every pattern while a terminal or an editor shows it whole. Soft hyphen, combining grapheme
# joiner, Arabic letter mark, Hangul fillers, Khmer and Mongolian invisibles, zero-width space,
# (non-)joiners and marks, bidi embeddings, overrides and isolates, word joiner and invisible
# operators, deprecated format controls, variation selectors, the byte-order mark. In JSON
# text (tool arguments, a journal line) they may be escapes: `\u200b` hides a key as well.
_INVISIBLE_CHARS = (
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0]"
)
_INVISIBLE_ESCAPE = (
    r"\\{1,4}u(?i:00ad|034f|061c|115f|1160|17b[45]|180[b-f]|200[b-f]|202[a-e]|206[0-46-9a-f]|3164|fe0[0-9a-f]|feff|ffa0)"
)
_INVISIBLE_CHAR = re.compile(_INVISIBLE_CHARS)  # one class alone: a fast test for the usual "none"
_INVISIBLE_ESCAPED = re.compile(_INVISIBLE_ESCAPE)
_INVISIBLE_RUN = re.compile(f"{_INVISIBLE_CHARS}+|(?:{_INVISIBLE_ESCAPE})+")


def without_invisible(text: str) -> tuple[str, tuple[list[int], list[int]]]:
    """``text`` without its invisible characters, and where they were: for each run of them,
    the position in the visible text where it stood (how many visible characters precede it)
    and how many characters all runs so far removed."""
    at: list[int] = []
    total: list[int] = []
    if not _INVISIBLE_CHAR.search(text) and ("\\u" not in text or not _INVISIBLE_ESCAPED.search(text)):
        return text, (at, total)
    pieces: list[str] = []
    last = gone = 0
    for m in _INVISIBLE_RUN.finditer(text):
        pieces.append(text[last : m.start()])
        at.append(m.start() - gone)
        gone += m.end() - m.start()
        total.append(gone)
        last = m.end()
    if not at:
        return text, (at, total)
    pieces.append(text[last:])
    return "".join(pieces), (at, total)


def original(i: int, runs: tuple[list[int], list[int]]) -> int:
    """Where visible character ``i`` sits in the original text."""
    at, total = runs
    k = bisect.bisect_right(at, i)
    return i + (total[k - 1] if k else 0)

