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

from journal_index.text_forms import STOPWORDS, query_groups

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


class Lexicon:
    """The groups, keyed by the tokens of each member (as the index's tokenizer makes them);
    built once, it keeps no reference to the tokenizer it was built with."""

    def __init__(self, tokenize: Tokenize) -> None:
        self.by_tokens: dict[tuple[str, ...], list[int]] = {}
        # each group: (tokens, literal terms) of each member
        self.groups: list[list[tuple[tuple[str, ...], list[str]]]] = []
        for index, members in enumerate(_groups()):
            keyed = []
            for member in members:
                key = tuple(tokenize(member))
                if key:
                    self.by_tokens.setdefault(key, []).append(index)
                    keyed.append((key, [term for group in query_groups(member) for term in group]))
            self.groups.append(keyed)

    def alternatives(self, key: tuple[str, ...]) -> list[list[str]]:
        """The other members of every group the tokens belong to (as literal terms)."""
        seen = {key}
        out: list[list[str]] = []
        for index in self.by_tokens.get(key, []):
            for member_key, terms in self.groups[index]:
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
            if key in lexicon.by_tokens and (size > 1 or single_word) and not (
                    single_word and groups[i][0].lower() in STOPWORDS):  # "why", "how": no expansion
                out.append(Concept(groups[i:i + size], lexicon.alternatives(key)))
                i += size
                break
        else:
            out.append(Concept([groups[i]]))
            i += 1
    return out
