"""Every call into google-re2, in one place.

The redaction engine drives RE2 below its public ``re``-like API: ``re2._re2.RE2`` (a compiled
program matched on a byte range, giving byte offsets without re-encoding a ``str`` per call),
``re2._re2.Set`` (which of many patterns match, anchored at a start) and ``re2._Anchor``. Those
names are private to the wrapper, so they are used here alone; ``tests/test_re2_adapter.py``
fails if a release renames or reshapes them, and pyproject.toml bounds the version.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import re2


def _options() -> Any:
    opts = re2.Options()
    opts.encoding = re2.Options.Encoding.LATIN1  # bytes in, byte offsets out; patterns are ASCII
    opts.max_mem = 64 << 20  # room for the DFA so it never falls back to the slow NFA
    opts.log_errors = False
    return opts


class Finder:
    """One RE2 program, leftmost-first, searched unanchored over a range of bytes."""

    __slots__ = ("_match", "_unanchored")

    def __init__(self, pattern: str) -> None:
        rx = re2._re2.RE2(pattern.encode(), _options())
        if not rx.ok():
            raise ValueError("redaction rules do not compile in RE2")
        self._match = rx.Match
        self._unanchored = re2._Anchor.UNANCHORED

    def search(self, buf: bytes, pos: int, end: int) -> tuple[int, int]:
        """Start and end of the first match in ``buf[pos:end]``, or (-1, -1)."""
        found: tuple[int, int] = self._match(self._unanchored, buf, pos, end)[0]
        return found


class AnchoredSet:
    """Many RE2 patterns at once: which of them match at the start of a text."""

    __slots__ = ("matching",)

    def __init__(self, patterns: Sequence[str]) -> None:
        found = re2._re2.Set(re2._Anchor.ANCHOR_START, _options())
        for pattern in patterns:
            found.Add(pattern.encode())
        if not found.Compile():
            raise ValueError("redaction rules do not compile in an RE2 Set")
        # matching(buf): the indices (in the order added, unsorted) of the patterns that match at
        # buf's start. The Set's own method: asked once per candidate, so no Python frame between.
        self.matching: Callable[[bytes], list[int]] = found.Match
