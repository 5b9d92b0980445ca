"""The public calls: one engine per process, compiled on first use."""

from __future__ import annotations

from journal_index.redaction.engine import Engine, Hit
from journal_index.redaction.pieces import pieces

_ENGINE: Engine | None = None  # compiled on first use, so importing the package stays cheap


def engine() -> Engine:
    global _ENGINE
    if _ENGINE is None:
        _ENGINE = Engine()
    return _ENGINE


def redact_with_hits(text: str) -> tuple[str, list[Hit]]:
    """Redacted text and the hits, as spans of the ``[REDACTED:kind]`` markers in it."""
    return engine().redact(text, want_hits=True)


def redact_region(text: str, start: int, end: int) -> str:
    """``text[start:end]`` redacted, grown outward to safe cut points.

    For showing part of a long text (an excerpt) without redacting all of it: the region
    widens to line starts where :func:`pieces` would cut, so no multi-line secret (a PEM
    block, a YAML ``data:`` block) is cut in two and half of it missed.
    """
    if start <= 0 and end >= len(text):
        return redact(text)
    lo, hi = 0, len(text)
    for a, b in pieces(text, 4096):
        if b <= start:
            lo = b
        elif a >= end:
            hi = a
            break
    return redact(text[lo:hi])


def secret_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) of every secret in ``text``: the characters :func:`redact` replaces.

    Sorted and disjoint; ``text[start:end]`` becomes ``[REDACTED:kind]``.
    """
    return engine().spans(text)


def redact(text: str) -> str:
    """The text with every secret replaced by ``[REDACTED:<kind>]``."""
    return engine().redact(text)[0]


