"""Reading a rule's match on the UTF-8 bytes of a text: its text, its named groups, which
spelling of the value matched."""

from __future__ import annotations

import re
from typing import Final

Match = re.Match[bytes]  # on the UTF-8 bytes of the text


def text_of(x: str | bytes | None) -> str:
    if x is None:
        return ""
    if isinstance(x, str):
        return x
    try:
        return x.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return x.decode("utf-8", "replace")  # a context window cut inside a character


def slice_of(m: Match, s: int, e: int) -> str:
    return text_of(m.string[max(0, s) : e])


_VALUE_NAMES: Final = frozenset({"pem", "v", "v2", "v3", "v4"})


def value_span(m: Match) -> tuple[str, int, int] | None:
    """Which value spelling matched, and its span.

    The value group closes last in every rule, so ``lastgroup`` names it, except in sentry_dsn
    where an optional second key (v2) follows the first (v).
    """
    name = m.lastgroup
    if name not in _VALUE_NAMES:
        return None
    if name == "v2" and "v" in m.re.groupindex and m.start("v") >= 0:
        name = "v"
    s, e = m.span(name)
    return name, s, e


def group_text(m: Match, name: str) -> str | None:
    if name not in m.re.groupindex:
        return None
    x = m.group(name)
    return None if x is None else text_of(x)



def byte_len(s: str) -> int:
    return len(s.encode("utf-8", "surrogatepass"))
