"""Pieces: texts over 1 MiB are scanned in line-aligned pieces, never cut inside a multi-line
secret."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

PIECE_SIZE: Final = 1 << 20
MARGIN: Final = 8192  # context read on either side of a piece (look-backs, `kind: Secret`)
_PEM_REACH: Final = 1 << 16  # how far past a cut we look for the END of a PEM block


def pieces(text: str, size: int = PIECE_SIZE) -> Iterator[tuple[int, int]]:
    """Line-aligned (start, end) pieces of about ``size`` characters.

    A cut never falls inside a PEM private-key block, nor before an indented line (the body of a
    YAML `data:` block or a netrc entry), so every multi-line secret is seen whole.
    """
    n = len(text)
    start = 0
    while n - start > size:
        cut = _cut_before(text, start, start + size)
        if cut <= start:
            nl = text.find("\n", start + size)
            if nl == -1:
                break
            cut = nl + 1
        begin = text.rfind("-----BEGIN", start, cut)
        if begin != -1 and "PRIVATE KEY" in text[begin : begin + 80] and text.find("-----END", begin, cut) == -1:
            end = text.find("-----END", cut, cut + _PEM_REACH)
            if end != -1:
                nl = text.find("\n", end)
                cut = n if nl == -1 else nl + 1
        yield start, cut
        start = cut
    if start < n:
        yield start, n


# The last newline in a span that a character other than a space or a tab follows: the greedy
# prefix runs to the span's end and gives back characters until one is found (in C, not line by
# line in Python: indented code has a line every few dozen characters).
_LAST_UNINDENTED = re.compile(r"(?s:.*)\n(?=[^ \t])")


def _cut_before(text: str, lo: int, hi: int) -> int:
    """The last line start in (lo, hi] that does not begin with whitespace (looked for in the
    last _PEM_REACH characters), else any line start."""
    first = text.rfind("\n", lo, hi)
    if first == -1:
        return lo
    if text[first + 1:first + 2] not in ("", " ", "\t"):
        return first + 1  # most often the last line start is not indented
    # a newline at nl in (floor, first), the character after it (text[nl + 1], at most text[first]) seen
    floor = max(lo, hi - _PEM_REACH)
    found = _LAST_UNINDENTED.match(text, floor + 1, first + 1)
    return found.end() if found is not None else first + 1

