"""One ordered list of rules, compiled: the capture-free finder, the anchored Set that names the
winning rule, and each rule alone in Python's re for the groups the checks read."""

from __future__ import annotations

import re
from collections.abc import Sequence

from journal_index.redaction import re2_adapter
from journal_index.redaction.groups import Match
from journal_index.redaction.rules import KV_TAIL, TOK_HEAD, Rule

# A scan finds candidates, then judges each. The finder is the table as one capture-free RE2
# program: a DFA, linear in the text, that says where the next match starts and ends. Which rule
# won there (the first in table order that matches at that start) is asked of an RE2 Set
# anchored at the start; that rule alone, in Python's re, then gives the groups the checks read.
# RE2 could extract the groups itself, but over a 75-rule program that costs ~15 µs a match.

_GROUP_NAME = re.compile(r"\(\?P<\w+>")


def plain(regex: str) -> str:
    return _GROUP_NAME.sub("(?:", regex)


def finder_pattern(rules: Sequence[Rule]) -> str:
    """The table as one capture-free alternation, runs of rules with a common head or tail
    factored: ``H(?:a|b)`` for ``Ha|Hb`` and ``(?:a|b)T`` for ``aT|bT``.

    Factoring keeps leftmost-first priority (the first rule in table order still wins) and
    shrinks the DFA that RE2 builds lazily; its states, not the scan itself, dominate the cost
    of a first pass over new text (benchmarks/redact_bench.py).
    """
    parts: list[str] = []
    i = 0
    while i < len(rules):
        j = i + 1
        if rules[i].regex.startswith(TOK_HEAD):
            while j < len(rules) and rules[j].regex.startswith(TOK_HEAD):
                j += 1
            bodies = "|".join(plain(r.regex[len(TOK_HEAD) : -1]) for r in rules[i:j])
            parts.append(r"(?:\\[nrt]|\b)(?:" + bodies + ")")
        elif rules[i].regex.endswith(KV_TAIL):
            while j < len(rules) and rules[j].regex.endswith(KV_TAIL):
                j += 1
            keys = "|".join(plain(r.regex[: -len(KV_TAIL)]) for r in rules[i:j])
            parts.append("(?:" + keys + ")" + plain(KV_TAIL))
        else:
            parts.append(f"(?:{plain(rules[i].regex)})")
        i = j
    return "|".join(parts)


class Table:
    """One ordered list of rules, compiled: a finder, an anchored Set, and each rule alone."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = list(rules)
        # Leftmost-first, as the table reads: a match ends where the winner's does. (Leftmost-
        # longest would go on to the longest match, to the end of the line for `mysql -pa -pa…`,
        # once per candidate.)
        # find(buf, pos, end): the next match at or after ``pos``, where it starts and where the
        # winner's ends; the finder's own method, so a scan pays no extra call per candidate.
        self.find = re2_adapter.Finder(finder_pattern(self.rules)).search
        # Built on the first match found (text without candidates never needs it).
        self._set: re2_adapter.AnchoredSet | None = None
        # Python-side patterns compile on first use: a short-lived CLI process redacting a few
        # excerpts should not pay for the ~75 patterns a long indexing pass ends up using.
        self._single: list[re.Pattern[bytes] | None] = [None] * len(self.rules)
        # Verdicts by context (see engine.Engine._matches); bounded, cleared when full.
        self.verdicts: dict[tuple[int, bytes], tuple[int, int, int, list[tuple[str, list[tuple[int, int]]]]]] = {}

    def single(self, i: int) -> re.Pattern[bytes]:
        """Rule ``i`` alone, in Python's re."""
        rx = self._single[i]
        if rx is None:
            rx = self._single[i] = re.compile(self.rules[i].regex.encode("ascii"))
        return rx

    def resolve(self, buf: bytes, s: int, e: int, end: int) -> tuple[int, Match] | None:
        """The winning rule at ``s`` (the first in table order that matches) and its match.

        The Set sees buf[s:e + 2]: rules before the winner match nowhere at s, and the winner
        fits, with the byte after for a closing \\b; the cut may only add rules, which their own
        match then turns away.
        """
        if self._set is None:
            self._set = re2_adapter.AnchoredSet([plain(rule.regex) for rule in self.rules])
        for i in sorted(self._set.matching(buf[s : e + 2])):
            one = self.single(i).match(buf, s, end)
            if one is not None:
                return i, one
        return None


