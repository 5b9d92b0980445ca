"""Pieces: texts over 1 MiB are scanned in line-aligned pieces, never cut inside a multi-line
secret."""

from __future__ import annotations

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


def _cut_before(text: str, lo: int, hi: int) -> int:
    """The last line start in (lo, hi] that does not begin with whitespace, else any line start."""
    nl = text.rfind("\n", lo, hi)
    first = nl
    floor = max(lo, hi - _PEM_REACH)
    while nl > floor:
        if nl + 1 < len(text) and text[nl + 1] not in " \t":
            return nl + 1
        nl = text.rfind("\n", lo, nl)
    return first + 1 if first != -1 else lo

