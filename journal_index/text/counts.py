"""Counts in words for people: "1 journal", "2 journals", "1 entry", "0 entries"."""

from __future__ import annotations


def count(n: int, singular: str, plural: str | None = None) -> str:
    """``n`` and the noun that agrees with it (``plural`` defaults to ``singular + "s"``)."""
    return f"{n} {singular if n == 1 else plural or singular + 's'}"
