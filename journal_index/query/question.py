"""What a search asks, read once from the raw text: its words, the names in it, its intent and
how strongly it asks for the current state.

Every later step (retrieval, field weights, re-ranking) reads this object instead of looking at
the query's words again, so a rewording that means the same ("what's" / "what is", "how'd" /
"how did") gives the same Question.

Intents (one per question, first that applies):

* ``output`` — asks what a tool printed or a file holds ("what did `alembic heads` print",
  "what does deploy.toml say");
* ``explain`` — how or why ("how did we fix…", "so why did it hang"); not "how long / many /
  much / often", which ask for a quantity;
* ``now`` — the current state, said outright ("now", "latest", "at the moment");
* ``lookup`` — anything else: a statement, a name, words to find.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from journal_index.text.text_forms import query_groups, typed_groups

INTENTS = ("lookup", "explain", "output", "now")

# Contractions, normalized before anything else reads the words. "'s" after a word that takes
# "is" is "is"; after any other word it is a possessive and is dropped ("Ines's" is "Ines").
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "`": "`"})
_IS_BEFORE = ("what", "that", "it", "there", "here", "who", "where", "how", "when", "why", "he", "she",
              "which", "this", "everything", "nothing", "something", "let")
_FIXED = {"won't": "will not", "can't": "cannot", "shan't": "shall not", "let's": "let us", "ain't": "is not"}
_D_AFTER_WH = ("how", "what", "where", "why", "when", "who")  # "how'd we…": did
_CONTRACTION = re.compile(r"\b([A-Za-z]+)'(s|d|re|ve|ll|m|t)\b", re.I)
_SUFFIXES = {"re": "are", "ve": "have", "ll": "will", "m": "am"}


def _expand(match: re.Match[str]) -> str:
    word, suffix = match.group(1), match.group(2).lower()
    lowered = word.lower()
    whole = f"{lowered}'{suffix}"
    if whole in _FIXED:
        return _FIXED[whole]
    if suffix == "t" and lowered.endswith("n"):  # don't, isn't, wasn't
        return f"{word[:-1]} not"
    if suffix == "s":
        return f"{word} is" if lowered in _IS_BEFORE else word
    if suffix == "d":
        return f"{word} {'did' if lowered in _D_AFTER_WH else 'would'}"
    if suffix in _SUFFIXES:
        return f"{word} {_SUFFIXES[suffix]}"
    return match.group(0)


# French and Italian elide an article or pronoun into the next word ("l'équipe", "qu'on",
# "dell'indice"): the glue goes, so the word is looked for alone and not as a phrase with it.
# French inversion ("est-ce", "a-t-on", "avez-vous") is spelled apart into its words.
_ELISION = re.compile(r"\b(?:l|d|j|n|s|c|m|t|qu|jusqu|lorsqu|puisqu|quoiqu|dell|dall|nell|sull|all|un)'(?=[^\W\d_])",
                      re.I)
_INVERSION = re.compile(r"\b([^\W\d_]+)-(?:t-)?(je|tu|il|elle|on|nous|vous|ils|elles|ce)\b", re.I)


def _inverted(match: re.Match[str]) -> str:
    verb, pronoun = match.group(1), match.group(2)
    if pronoun.lower() == "on" and "-t-" not in match.group(0).lower():
        return match.group(0)  # "add-on", "follow-on": English words, not an inversion
    return f"{verb} {pronoun}"


def normalize(raw: str) -> str:
    """The query with contractions spelled out (curly apostrophes first made straight), elided
    articles dropped and French inversions spelled apart."""
    text = _CONTRACTION.sub(_expand, raw.translate(_APOSTROPHES))
    if "'" in text:
        text = _ELISION.sub("", text)
    return _INVERSION.sub(_inverted, text) if "-" in text else text


# A name is a word typed as code: a path or file name, snake_case, camelCase, a dotted or
# namespaced name, letters with digits inside, or three or more hyphenated parts. Two plain
# words joined by a hyphen ("follow-up", "roll-back") are words, not a name.
_CODE = re.compile(r"[_./\\:#@=$]|[a-z][A-Z]|[A-Za-z]\d|\d[A-Za-z]")
_EDGES = "?!,;:()[]{}\"'<>«»“”"


def is_name(word: str) -> bool:
    """Whether a typed word is an identifier, a file name or a path."""
    core = word.strip(_EDGES).rstrip(".")
    pieces = query_groups(core)
    if not pieces or len(pieces[0]) < 2:
        return False
    if _CODE.search(core):
        return True
    return core.count("-") >= 2


_WORDS = re.compile(r"[^\W_]+")
QUESTION_OPENERS = frozenset("what how why when where which who whom whose is are am was were do does did can "
                             "could should shall will would has have had may might must".split())
WH_WORDS = frozenset("what how why when where which who".split())
EXPLAIN_WORDS = frozenset({"how", "why"})
QUANTITY_AFTER_HOW = frozenset({"long", "many", "much", "often"})
OUTPUT_WORDS = frozenset("print printed prints output outputs return returned returns contain contains "
                         "contained show showed shows shown".split())
SAY_WORDS = frozenset({"say", "says", "said"})
FRESH_WORDS = frozenset({"current", "currently", "now", "latest", "newest", "today", "nowadays", "still",
                         "anymore", "lately"})
FRESH_PHRASES = ("at the moment", "these days", "end up", "ended up", "right now", "as of now", "so far")
PAST_WORDS = frozenset({"did", "was", "were", "had", "happened", "went", "before", "originally", "initially",
                        "earlier", "previous", "previously", "first", "back", "ago", "yesterday", "old", "older"})
PRESENT_WORDS = frozenset({"is", "are", "does", "do", "has", "have", "am"})
IMPLICIT_NOW = 0.3  # a question in the present tense asks this much for the current state


@dataclass(frozen=True)
class Question:
    raw: str
    text: str  # contractions spelled out
    words: tuple[str, ...]  # lowercased words, in order
    groups: list[list[str]]  # each typed word as its literal terms (text_forms.query_groups)
    names: tuple[int, ...]  # indexes of the groups that are names
    intent: str
    now: float  # 0 (past, or words to find), IMPLICIT_NOW (present tense) or 1 (said outright)
    asks: bool  # a question, as against words to look up

    @property
    def name_groups(self) -> list[list[str]]:
        return [self.groups[i] for i in self.names]

    @property
    def pairs(self) -> list[str]:
        """Each two words as typed ("roll back"): phrases looked for in a candidate's words."""
        return [f"{a} {b}" for a, b in zip(self.words, self.words[1:], strict=False)]


def _asks(text: str, words: list[str]) -> bool:
    return "?" in text or bool(words) and (words[0] in QUESTION_OPENERS or any(w in WH_WORDS for w in words[1:2]))


def _now(words: list[str]) -> float:
    spaced = " " + " ".join(words) + " "
    if any(w in FRESH_WORDS for w in words) or any(f" {p} " in spaced for p in FRESH_PHRASES):
        return 1.0
    if any(w in PAST_WORDS for w in words):
        return 0.0
    return IMPLICIT_NOW if any(w in PRESENT_WORDS for w in words) else 0.0


def _explains(words: list[str]) -> bool:
    for i, word in enumerate(words[:2]):
        if word in EXPLAIN_WORDS:
            return not (word == "how" and words[i + 1:i + 2] and words[i + 1] in QUANTITY_AFTER_HOW)
    return False


def _intent(words: list[str], has_names: bool, now: float) -> str:
    present = set(words)
    if present & OUTPUT_WORDS or (present & SAY_WORDS and has_names):
        return "output"
    if _explains(words):
        return "explain"
    return "now" if now >= 1.0 else "lookup"


def parse(raw: str) -> Question:
    """The Question a search text asks."""
    text = normalize(raw)
    kept = list(typed_groups(text))
    groups = [group for _, group in kept]
    typed = [word for word, _ in kept]
    names = tuple(i for i, word in enumerate(typed) if len(groups[i]) > 1 and is_name(word))
    words = _WORDS.findall(text.lower())
    now = _now(words)
    return Question(raw, text, tuple(words), groups, names, _intent(words, bool(names), now), now,
                    _asks(text, words))
