"""A small vocabulary of developer-conversation synonyms, and the concepts of a question.

People ask weeks later in other words than they wrote: "switch off analytics" for "disable
telemetry", "printed bills" for "rendered invoices". Each line of ``synonyms.txt`` is a group
of words or phrases that name the same thing; a question's word (or phrase) also finds the
other members of its group, weighted a little lower than the word itself. Words are compared
after the index's own tokenizer (case, accents and English inflection folded), so "printed"
meets "print" and "rendered".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from journal_index.text.text_forms import is_stopword, query_groups

Tokenize = Callable[[str], list[str]]
LEXICON = Path(__file__).with_name("synonyms.txt")
MAX_PHRASE = 4  # words in the longest phrase of the lexicon that is looked for
MAX_ALTERNATIVES = 12  # alternatives one word may bring (a group is cut beyond this)


@dataclass
class Concept:
    """What one word (or phrase) of a question asks for: the words as typed, and others that say
    the same. ``words`` are the query's groups (each a list of literal terms)."""

    words: list[list[str]]
    alternatives: list[list[str]] = field(default_factory=list)  # each a phrase of literal words


@cache
def _groups() -> tuple[tuple[str, ...], ...]:
    """The lexicon's groups, as written (phrases kept whole)."""
    out = []
    for raw in LEXICON.read_text("utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            members = tuple(dict.fromkeys(m.strip().lower() for m in line.split(",") if m.strip()))
            if len(members) > 1:
                out.append(members)
    return tuple(out)


PREFIX = 3  # a word and its stem share their first characters ("printed", "print")


class Lexicon:
    """The groups, keyed by the tokens of each member (as the index's tokenizer makes them).

    Members are tokenized only when a question touches their group (found by the first
    characters of their first word): a short-lived CLI process must not tokenize the whole
    vocabulary for one search.
    """

    def __init__(self) -> None:
        self.raw = _groups()
        self.by_prefix: dict[str, set[int]] = {}
        for index, members in enumerate(self.raw):
            for member in members:
                self.by_prefix.setdefault(member[:PREFIX], set()).add(index)
        self.keyed: dict[int, list[tuple[tuple[str, ...], list[str]]]] = {}

    def _group(self, index: int, tokenize: Tokenize) -> list[tuple[tuple[str, ...], list[str]]]:
        """A group's members as (tokens, literal terms), tokenized on first use."""
        if index not in self.keyed:
            members = [(tuple(tokenize(m)), [t for g in query_groups(m) for t in g]) for m in self.raw[index]]
            self.keyed[index] = [(key, terms) for key, terms in members if key]
        return self.keyed[index]

    def groups_of(self, key: tuple[str, ...], first_word: str, tokenize: Tokenize) -> list[int]:
        """The groups holding a member whose tokens are ``key``."""
        candidates = self.by_prefix.get(first_word.lower()[:PREFIX], set()) | self.by_prefix.get(key[0][:PREFIX], set())
        return sorted(i for i in candidates if any(k == key for k, _ in self._group(i, tokenize)))

    def alternatives(self, key: tuple[str, ...], groups: list[int], tokenize: Tokenize) -> list[list[str]]:
        """The other members of the groups (as literal terms)."""
        seen = {key}
        out: list[list[str]] = []
        for index in groups:
            for member_key, terms in self._group(index, tokenize):
                if member_key not in seen:
                    seen.add(member_key)
                    out.append(terms)
        return out[:MAX_ALTERNATIVES]


def concepts(groups: list[list[str]], lexicon: Lexicon | None, tokenize: Tokenize) -> list[Concept]:
    """The question's concepts: runs of its words that the lexicon knows (longest first), each
    with its alternatives; every other word a concept of its own."""
    if lexicon is None:
        return [Concept([g]) for g in groups]
    keys = [tuple(tokenize(" ".join(g))) for g in groups]
    out: list[Concept] = []
    i = 0
    while i < len(groups):
        for size in range(min(MAX_PHRASE, len(groups) - i), 0, -1):
            key = tuple(t for k in keys[i:i + size] for t in k)
            single_word = size == 1 and len(keys[i]) == 1
            if not key or not (size > 1 or single_word) or (single_word and is_stopword(groups[i][0])):
                continue  # "why", "how": no expansion
            found = lexicon.groups_of(key, groups[i][0], tokenize)
            if found:
                out.append(Concept(groups[i:i + size], lexicon.alternatives(key, found, tokenize)))
                i += size
                break
        else:
            out.append(Concept([groups[i]]))
            i += 1
    return out
