"""The Question a search text asks: contractions first, real names, one intent, freshness."""

from __future__ import annotations

import pytest

from journal_index.query.question import IMPLICIT_NOW, is_name, normalize, parse
from journal_index.text.text_forms import (
    MAX_QUERY_GROUPS,
    MAX_QUERY_WORDS,
    STOPWORDS,
    content_groups,
    is_stopword,
    query_groups,
)


@pytest.mark.parametrize("raw, text", [
    ("what's the staging url", "what is the staging url"),
    ("what\u2019s the staging url", "what is the staging url"),
    ("how'd we deploy", "how did we deploy"),
    ("why don't the tests run", "why do not the tests run"),
    ("we can't log in", "we cannot log in"),
    ("Ines's pool size", "Ines pool size"),  # a possessive, not "is"
    ("where're the logs", "where are the logs"),
    ("I'd rather not", "I would rather not"),
    ("session-manager.ts", "session-manager.ts"),
    # French and Italian elision: the article goes; inversion is spelled apart
    ("c'était quoi l'erreur d'import", "était quoi erreur import"),
    ("qu'est-ce qu'on a décidé", "est ce on a décidé"),
    ("a-t-on gardé l\u2019index dell'utente", "a on gardé index utente"),
    ("avez-vous vu le add-on", "avez vous vu le add-on"),  # "add-on" is an English word
    ("sed 's/a/b/' file", "sed 's/a/b/' file"),
    ("follow-on work", "follow-on work"),
])
def test_contractions_are_spelled_out(raw: str, text: str) -> None:
    assert normalize(raw) == text


@pytest.mark.parametrize("word, name", [
    ("maxRetryCount", True), ("session-manager.ts", True), ("test_revoke_twice", True),
    ("pi-coding-agent", True), ("src/app/main.py", True), ("v1.2", True), ("Foo::bar", True),
    ("what's", False), ("what\u2019s", False), ("follow-up", False), ("roll-back", False),
    ("Close()", False), ("HTTP", False), ("日本語", False), ("url?", False),
])
def test_a_name_is_a_word_typed_as_code(word: str, name: bool) -> None:
    assert is_name(word) is name


# raw -> (names, intent, now, asks)
CASES = [
    ("what's the staging url", (), "lookup", IMPLICIT_NOW, True),
    ("what is the staging url", (), "lookup", IMPLICIT_NOW, True),
    ("what is the staging url now", (), "now", 1.0, True),
    ("latest stripe api version", (), "now", 1.0, False),
    ("how did we fix the alembic heads", (), "explain", 0.0, True),
    ("how'd we deploy", (), "explain", 0.0, True),
    ("so why did it hang", (), "explain", 0.0, True),
    ("how long did Close() take in the debug run", (), "lookup", 0.0, True),
    ("how many times does a failed webhook get retried", (), "lookup", IMPLICIT_NOW, True),
    ("what did alembic heads print", (), "output", 0.0, True),
    ("what does eval-file.schema.ts say it is for", ("eval-file.schema.ts",), "output", IMPLICIT_NOW, True),
    ("what did marek say about the schema", (), "lookup", 0.0, True),
    ("test_revoke_twice assert 204 == 409", ("test_revoke_twice",), "lookup", 0.0, False),
    ("numbersToMarks pinyin", ("numbersToMarks",), "lookup", 0.0, False),
    ("日本語", (), "lookup", 0.0, False),
    ("staging is down", (), "lookup", IMPLICIT_NOW, False),
    ("does it retry?", (), "lookup", IMPLICIT_NOW, True),
    ("why did the deploy fail", (), "explain", 0.0, True),
    ("what was the rate limit", (), "lookup", 0.0, True),
    ("migration rolled back on staging", (), "lookup", 0.0, False),
    ("which day do we deploy", (), "lookup", IMPLICIT_NOW, True),
]


@pytest.mark.parametrize("raw, names, intent, now, asks", CASES)
def test_a_question_is_read_once_from_its_text(raw: str, names: tuple[str, ...], intent: str, now: float,
                                               asks: bool) -> None:
    q = parse(raw)
    assert q.name_groups == [parse(n).groups[0] for n in names]
    assert (q.intent, q.now, q.asks) == (intent, now, asks)


def test_a_contraction_gives_the_same_question_as_its_spelling() -> None:
    for short, long in (("what's the staging url", "what is the staging url"),
                        ("how'd we deploy", "how did we deploy")):
        a, b = parse(short), parse(long)
        assert (a.groups, a.names, a.intent, a.now, a.asks) == (b.groups, b.names, b.intent, b.now, b.asks)
        assert not a.names  # "what's" is no identifier


def test_pairs_and_repeated_words() -> None:
    q = parse("roll back the roll")
    assert q.groups == [["roll"], ["back"], ["the"]]
    assert q.pairs[:2] == ["roll back", "back the"]


@pytest.mark.parametrize("word, glue", [
    ("the", True), ("The", True), ("les", True), ("était", True), ("Déjà", True), ("für", True),
    ("porque", True), ("nicht", True), ("perché", True), ("você", True),
    # English and code words that other languages also use as glue stay subjects
    ("come", False), ("mit", False), ("ai", False), ("os", False), ("sa", False), ("die", False),
    ("dos", False), ("lo", False), ("uno", False), ("SES", False),
    ("l", False), ("o", False), ("équipe", False), ("comment", False), ("deploy", False),
])
def test_glue_words_of_common_languages_are_stopwords(word: str, glue: bool) -> None:
    assert is_stopword(word) is glue


def test_a_long_question_keeps_its_last_words() -> None:
    """The 16-word cap counts words that carry meaning: a question typed as a sentence is not
    cut before its subject, while a pasted wall of words still is."""
    asked = ("after we stopped matching every symbol body against every short name in the repo, "
             "how long did a full snapshot of the cli repo take?")
    words = {g[0].lower() for g in parse(asked).groups if len(g) == 1}
    assert {"snapshot", "cli", "full"} <= words
    meaningful = [f"w{n}x" for n in range(40)]
    glued = " ".join(f"the {w} of" for w in meaningful)  # glue repeats: counted once, as typed
    kept = [g[0] for g in parse(glued).groups]
    assert [w for w in kept if w.startswith("w")] == meaningful[:MAX_QUERY_GROUPS]
    glue = " ".join(sorted(STOPWORDS))  # only glue: still stops, at the cap of all words
    assert len(query_groups(glue)) == min(MAX_QUERY_WORDS, len(STOPWORDS))
    assert len(parse(glue).groups) == min(MAX_QUERY_WORDS, len(STOPWORDS))


@pytest.mark.parametrize("raw, groups", [
    # Chinese and Japanese are typed without spaces: each bigram is looked for alone
    ("日志轮转", [["日志"], ["志轮"], ["轮转"]]),
    ("为什么软链接", [["为什"], ["什么"], ["么软"], ["软链"], ["链接"]]),
    ("テストが失敗", [["テス"], ["スト"], ["トが"], ["が失"], ["失敗"]]),
    ("会议", [["会议"]]),  # two characters: one bigram, as before
    ("把status命令", [["把status"], ["命令"]]),  # the other terms stay together
    ("cpolar 的 status", [["cpolar"], ["的"], ["status"]]),
    # Korean puts spaces between words: a Hangul word stays one phrase
    ("마이그레이션 결과", [["마이", "이그", "그레", "레이", "이션"], ["결과"]]),
    ("2.0에서", [["2", "0", "에서"]]),
    ("session-manager.ts", [["session", "manager", "ts"]]),
])
def test_a_run_typed_without_spaces_is_read_as_its_bigrams(raw: str, groups: list[list[str]]) -> None:
    assert query_groups(raw) == groups
    assert parse(raw).groups == groups


def test_glue_of_chinese_japanese_and_korean_is_dropped_from_what_a_question_asks() -> None:
    kept = content_groups(parse("我们当时为什么把日志改成轮转的？").groups)
    assert ["日志"] in kept and ["轮转"] in kept
    assert not {"我们", "当时", "为什", "什么", "的"} & {g[0] for g in kept}
    assert is_stopword("です") and is_stopword("は") and is_stopword("했지") and is_stopword("를")
    assert not is_stopword("日志") and not is_stopword("결과")
