"""The forms of text that reach the FTS tokenizer, for documents and for queries alike.

The FTS5 tokenizer (porter over unicode61) already folds case, diacritics and English
inflection. Two things it cannot do are done here, identically for stored terms and for
query terms, so both sides always agree:

* camelCase is split at lower→upper boundaries (``maxRetryCount`` → ``max Retry Count``);
  snake_case, kebab-case and paths are split by unicode61 itself;
* runs of CJK characters (which unicode61 keeps as one long token) become overlapping
  bigrams, so a two- or three-character query finds text inside a longer sentence.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from functools import cache

# The capital comes first so the regex engine can skip ahead to capitals (rare) instead of
# trying a two-character match at every lowercase letter: about twice as fast.
_CAMEL = re.compile(r"[A-Z](?<=[a-z0-9][A-Z])")
_SPACELESS_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # Han and kana
_CJK_CHARS = _SPACELESS_CHARS + "\uac00-\ud7af"  # and Hangul


@cache
def _cjk() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """Any CJK character, and a run of two or more. Compiled on first use: these classes take
    ~7 ms to compile, which an ASCII-only command (most searches) should not pay at start-up."""
    return re.compile(f"[{_CJK_CHARS}]"), re.compile(f"[{_CJK_CHARS}]{{2,}}")

# What unicode61 treats as a token character, near enough: letters and digits.
_TERM_RUN = re.compile(r"[^\W_]+")
INDEX_HEAD_CHARS = 48 * 1024
INDEX_TAIL_CHARS = 16 * 1024


def _bigrams(match: re.Match[str]) -> str:
    run = match.group(0)
    return " " + " ".join(run[i : i + 2] for i in range(len(run) - 1)) + " "


def _space_before(match: re.Match[str]) -> str:
    # A function is faster than the template r" \g<0>", which Python expands per match.
    return " " + match.group(0)


def index_form(text: str) -> str:
    """The text handed to the FTS tokenizer for a document (already redacted)."""
    text = _CAMEL.sub(_space_before, text)
    if not text.isascii():
        cjk_any, cjk_run = _cjk()
        if cjk_any.search(text):
            text = cjk_run.sub(_bigrams, text)
    return text


def indexed_part(text: str) -> str:
    """The part of a long text that gets terms: its head and its tail.

    Pi's own tools cap their output near 50 KB, so nearly every entry is indexed whole; the
    rare giant (a fetched web page, a dumped log) would otherwise double the index. Errors
    and conclusions sit at the end of long outputs, hence the tail. ``read`` still returns
    the whole text.
    """
    if len(text) <= INDEX_HEAD_CHARS + INDEX_TAIL_CHARS:
        return text
    return text[:INDEX_HEAD_CHARS] + "\n" + text[-INDEX_TAIL_CHARS:]


# A query is cut to this many distinct words that are not stopwords: a pasted log or a runaway
# prompt must still answer in milliseconds (each is one more term for FTS5 to intersect and
# score). Stopwords are dropped before the index is asked, so they do not use the 16 up (a
# question typed as a sentence keeps its last words); all words together stop at the second cap.
MAX_QUERY_GROUPS = 16
MAX_QUERY_WORDS = 64
MAX_GROUP_TERMS = 12


def query_groups(query: str) -> list[list[str]]:
    """Split a user query into groups of literal terms.

    Each whitespace-separated word of the query is one group; a word that the tokenizer
    would split (``session-manager.ts``, ``maxRetryCount``) becomes a group of several terms,
    matched as a phrase. Each Han or kana bigram is a group of its own (:func:`word_groups`).
    Repeated groups count once; distinct ones are kept in the order typed until
    MAX_QUERY_GROUPS of them are not stopwords (or MAX_QUERY_WORDS in all).
    """
    return [group for _, group in typed_groups(query)]


def typed_groups(query: str) -> Iterator[tuple[str, list[str]]]:
    """:func:`query_groups`, each group with the word it was typed in."""
    cap = QueryCap()
    for word in query.split():
        for terms in word_groups(word):
            if cap.admits(terms):
                yield word, terms
        if cap.full:
            return


def word_groups(word: str) -> list[list[str]]:
    """The groups of one typed word. Chinese and Japanese are written without spaces, so a
    "word" may be a whole sentence: as one phrase of bigrams it would be found only where the
    whole sentence is. Its Han and kana bigrams are looked for one by one instead (each a group,
    weighed and counted like a word); the word's other terms, Hangul included, stay together, a
    phrase, in the order typed."""
    form = index_form(word)
    terms = _TERM_RUN.findall(form)
    if form.isascii() or not any(map(_is_spaceless_bigram, terms)):
        return [terms[:MAX_GROUP_TERMS]]
    groups: list[list[str]] = []
    rest: list[str] = []
    for term in terms:
        if _is_spaceless_bigram(term):
            if rest:
                groups.append(rest[:MAX_GROUP_TERMS])
                rest = []
            groups.append([term])
        else:
            rest.append(term)
    if rest:
        groups.append(rest[:MAX_GROUP_TERMS])
    return groups


def _is_spaceless_bigram(term: str) -> bool:
    return len(term) == 2 and _spaceless().fullmatch(term) is not None


@cache
def _spaceless() -> re.Pattern[str]:
    """Two characters of the scripts written without spaces between words: Han and kana (Korean
    puts spaces between its words, so a Hangul word stays one phrase)."""
    return re.compile(f"[{_SPACELESS_CHARS}]{{2}}")


class QueryCap:
    """Which of a query's words, in the order typed, it keeps: each distinct word once, until
    MAX_QUERY_GROUPS of them carry meaning or MAX_QUERY_WORDS are kept in all."""

    def __init__(self) -> None:
        self.seen: set[tuple[str, ...]] = set()
        self.meaningful = 0

    @property
    def full(self) -> bool:
        return self.meaningful >= MAX_QUERY_GROUPS or len(self.seen) >= MAX_QUERY_WORDS

    def admits(self, terms: list[str]) -> bool:
        """Whether a word's terms are kept (counted as kept when they are)."""
        key = tuple(t.lower() for t in terms)
        if not terms or key in self.seen or self.full:
            return False
        self.seen.add(key)
        if not (len(terms) == 1 and is_stopword(terms[0])):
            self.meaningful += 1
        return True


# Question words and glue that half-remembered questions are full of ("how did we fix the
# …", "how long does it take"): they carry no subject, so they are not required and do not
# count towards what an entry holds of the question.
# Particles of phrasal verbs ("wrap up", "give up", "ran out", "roll back"): alone they say
# nothing; after their verb they make the phrase (ranking keeps them there).
PARTICLES = frozenset("up down out off back over away".split())
STOPWORDS = frozenset("""
a about after all an and any are as at be been before but by can could did do does doing done
for from had has have how i if in into is it its many me much my of on or our so that the their them then
there these this those to us use used using was we were what when where which while who why will with
would you your
actually also ever exactly get gets got happen happened happens just kind really stuff take takes thing
things way
""".split()) | PARTICLES
# The same glue in the languages users most often write to agents in besides English (French,
# Spanish, Portuguese, German, Italian), diacritics folded. Left out: words that are also English
# or code words ("come", "son", "ton", "mit", "die", "es", "ca" for "ça", "ai", "os", "sa", "ha",
# "sin", "su", "di", "no", "dos", "lo", "uno", "ses", "mon"), and single letters, which in a
# question are more often flags ("wc -l", "-o") than articles.
OTHER_STOPWORDS = frozenset("""
le la les un une des du de au aux et ou mais donc ni que qui quoi quel quelle quels quelles dont ce cet
cette ces cela ceci celui celle ceux ma mes ta tes notre nos votre vos leur leurs je tu il
elle nous vous ils elles te se lui en ne pas dans sur avec pour par chez vers est sont etait etaient ete
etre avoir avons avez ont avait avaient fait faire deja pourquoi quand combien aussi tres tout tous toute
toutes jusqu lorsqu puisqu alors bien encore
el los las una unos unas del al pero quien cual cuales como donde cuando para sobre fue eran estar esta
esto este estos estas ese esa eso sus mi mis tus nuestro nuestra hay han hemos hizo hicimos
porque ya tambien muy mas
um uns umas da das na nas ao aos quem qual onde foi isso isto esse essa ele ela eles elas voce seu
sua seus suas meu minha ja muito mais pelo pela
der das den dem ein eine einen einem einer eines und oder aber dass wie wo wann warum wer welche welcher
welches ist sind war waren wird wurde wurden haben habe hatte ich er sie wir ihr ohne fur auf aus bei
nach von zu zum zur im ins nicht noch schon auch sehr nur
gli della dei delle dal dalla nel nella sul sulla tra fra ed che chi cosa dove perche non sono
stato stata ho hai abbiamo avete hanno questo questa quello quella mio mia tuo suo nostro anche molto gia
piu
""".split())


@cache
def _accents() -> dict[int, int]:
    """Accented Latin letters to their base letter, one character for one (positions keep).
    Built on first use, as the CJK classes are."""
    table: dict[int, int] = {}
    for code in range(0xC0, 0x250):
        base = unicodedata.normalize("NFD", chr(code))[0]
        if base != chr(code) and base.isascii():
            table[code] = ord(base)
    return table


# str.translate runs at ~10 MB/s; most non-ASCII text (box drawing, emoji, CJK) has nothing to fold.
_FOLDABLE = re.compile("[\u00c0-\u024f]")


def fold_accents(text: str) -> str:
    """``text`` with accented Latin letters as their base letter ("déjà" → "deja"), as unicode61's
    remove_diacritics folds them; the same length, so positions in it are positions in ``text``."""
    if text.isascii() or not _FOLDABLE.search(text):
        return text
    return text.translate(_accents())


# Glue of Chinese, Japanese and Korean as a question cut into characters and bigrams shows it:
# particles, pronouns, auxiliaries and question words (why, how, what, which, when, whether).
CJK_STOPWORDS = frozenset("""
的 了 吗 呢 吧 啊 是 在 把 被 和 与 或 也 都 就 还 很 对 从 到 给 让
这 那 哪 谁 我 你 他 她 它 么 个 些 着 过 有 要 会 能
什么 我们 你们 他们 怎么 为什 为何 如何 时候 这个 那个 这些 那些 哪个 哪些 一下 当时 是否 还是 就是 之前 以前 的是 了吗
の は が を に で と も へ や か ね よ な た だ て し
です ます まし した って ので から まで この その あの どの どう なぜ なに 何を ですか
은 는 이 가 을 를 의 에 도 와 과 로 뭐 왜
했지 었지 였지 뭐였 어떻 떻게 했었 었었 어땠 땠지 나요 까요 있었 었어 했어
""".split())


def is_stopword(word: str) -> bool:
    """Whether a typed word is glue (in English or in another common language), not a subject."""
    lowered = word.lower()
    return lowered in STOPWORDS or fold_accents(lowered) in OTHER_STOPWORDS or lowered in CJK_STOPWORDS


def content_groups(groups: list[list[str]]) -> list[list[str]]:
    """The groups that carry meaning: single stopwords dropped, unless nothing else is left."""
    kept = [g for g in groups if not (len(g) == 1 and is_stopword(g[0]))]
    return kept or groups


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def match_all(groups: list[list[str]]) -> str:
    """An FTS5 expression requiring every group (each group a phrase)."""
    return " AND ".join(_quote(" ".join(group)) for group in groups)


def match_any(groups: list[list[str]]) -> str:
    """An FTS5 expression accepting any one group (each a phrase: an identifier typed whole,
    ``AKIATRXHZA6E`` or ``session-manager.ts``, is matched whole, never by a piece of it)."""
    return " OR ".join(_quote(" ".join(group)) for group in groups)
