"""Echoes: a later entry that repeats an earlier candidate's words ranks below that entry.

Models paste earlier answers of ours into their replies ("the index says: [2] … We need
personal API tokens …"), and people paste what they saw. Such a copy holds the words of the
entry it copies, is newer (age damping favours it) and often holds more of the question's
words, so it outranked the original: searches then returned copies of copies. Our signed
answers are never indexed (entry_text.strip_our_answers), but a reply quoting part of one is
the model's own text.

At query time, a candidate said by a person or a model (``COPY_KINDS``) that shares a run of
at least ``RUN_WORDS`` words and ``RUN_CHARS`` characters, verbatim (whitespace aside: our
excerpts collapse it), with an older candidate is a copy of it — when it is in another session
than that candidate, or names its entry id as our answers do (a reply quoting a compacted turn
of its own session). A model restating its own words a few entries later in the same turn is
not an echo: its closing summary is often the answer. A copy found above its original gets the
ranking's ``copy`` factor (a fitted penalty, ranking.py); it is kept, not dropped: its own words
may say more.
"""

from __future__ import annotations

from collections.abc import Callable

from journal_index.query.hits import Hit

RUN_WORDS = 10
RUN_CHARS = 60
# The candidates compared: more than a page, so an original ranked low is still found (copies
# outrank it by recency, 5.5 and 4.3 against 1.06 once).
WINDOW = 30
# Where pastes land. Tool output repeating an older one (a file read twice) is not an echo: the
# newer read is the current state of the file.
COPY_KINDS = frozenset({"assistant", "user"})

SHORT_ID = 8  # an entry id is named by at least its first 8 characters (as people see it)

TextOf = Callable[[Hit], str | None]
# a text's runs: (start, hash) of each in order, and the hashes as a set
HashedRuns = tuple[list[tuple[int, int]], set[int]]


def _runs(words: list[str], hashed: list[tuple[int, int]]) -> dict[int, int]:
    """hash of each run of RUN_WORDS words long enough → where the run starts (``hashed``: the
    start and hash of every run, :func:`_run_hashes`)."""
    if len(words) < RUN_WORDS:
        return {}
    lengths = [len(w) for w in words]
    # zip over shifted lists: the run lengths are summed in C, not word by word in Python
    sizes = map(sum, zip(*(lengths[i:] for i in range(RUN_WORDS)), strict=False))
    return {run: start for (start, run), size in zip(hashed, sizes, strict=False) if size + RUN_WORDS - 1 >= RUN_CHARS}


def _run_hashes(words: list[str], start: int = 0) -> list[tuple[int, int]]:
    """Where each run of RUN_WORDS words (however short) starts, and its hash, in order (built in
    C); ``start``: the position of ``words`` in a longer text."""
    return list(enumerate(map(hash, zip(*(words[i:] for i in range(RUN_WORDS)), strict=False)), start))


def _run_hashes_within(words: list[str], vocabulary: set[str]) -> list[tuple[int, int]]:
    """:func:`_run_hashes`, of the runs whose every word is in ``vocabulary`` alone: a run holding
    another word repeats no copy, and a long tool output shares few stretches of ten words with
    the copies' words, so most of its runs are never hashed."""
    known = [w in vocabulary for w in words]
    out: list[tuple[int, int]] = []
    start = 0
    while True:
        try:
            start = known.index(True, start)
        except ValueError:
            return out
        try:
            end = known.index(False, start)
        except ValueError:
            end = len(words)
        if end - start >= RUN_WORDS:
            out += _run_hashes(words[start:end], start)
        start = end


def _copied(copy: list[str], runs: dict[int, int], original: list[str], hashes: HashedRuns) -> bool:
    """Does ``copy`` (whose runs are ``runs``) repeat a run of ``original`` (whose runs are
    ``hashes``: start and hash in order, and the hashes as a set) word for word? Only the runs
    whose hashes both hold are compared word by word."""
    ordered, present = hashes
    for run in runs.keys() & present:
        wanted = copy[runs[run]:runs[run] + RUN_WORDS]
        if any(h == run and original[start:start + RUN_WORDS] == wanted for start, h in ordered):
            return True
    return False


def _names(text: str, named: str) -> bool:
    """Does a word of ``text`` hold ``named``? Without whitespace in it, that is: does the text."""
    if named.split() == [named]:
        return named in text
    return any(named in word for word in text.split())


def originals(ranked: list[Hit], text_of: TextOf, limit: int) -> dict[int, Hit]:
    """id() of each copy among the first ``limit`` hits → the oldest candidate of the first
    WINDOW it repeats and that ranks below it."""
    window = ranked[:WINDOW]
    copies = [(n, h) for n, h in enumerate(window[:limit]) if h.kind in COPY_KINDS and h.ts is not None]
    if not copies:
        return {}
    texts: dict[int, str] = {}
    words: dict[int, list[str]] = {}
    hashed: dict[int, HashedRuns] = {}  # each text's runs, hashed once per search

    def text_of_hit(hit: Hit) -> str:
        if id(hit) not in texts:
            texts[id(hit)] = text_of(hit) or ""
        return texts[id(hit)]

    def words_of(hit: Hit) -> list[str]:
        if id(hit) not in words:
            words[id(hit)] = text_of_hit(hit).split()
        return words[id(hit)]

    def hashes_of(hit: Hit) -> HashedRuns:
        if id(hit) not in hashed:
            # a copy's every run (its long ones are looked for); of a possible original, only
            # those whose words some copy holds
            ordered = _run_hashes(words_of(hit)) if id(hit) in copied else _run_hashes_within(words_of(hit), vocabulary)
            hashed[id(hit)] = ordered, {h for _, h in ordered}
        return hashed[id(hit)]

    def may_copy(copy: Hit, original: Hit) -> bool:
        if copy.session_id != original.session_id:
            return True
        return _names(text_of_hit(copy), original.entry_id[:SHORT_ID])

    copied = {id(h) for _, h in copies}
    vocabulary = {w for _, h in copies for w in words_of(h)}
    found: dict[int, Hit] = {}
    for n, copy in copies:
        when = copy.ts or 0
        # those ranked below it (in rank order, then oldest first: sorted keeps ties in that order)
        below = sorted((h for h in window[n + 1:] if h.ts is not None and h.ts < when and h.entry_id != copy.entry_id),
                       key=lambda h: h.ts or 0)
        if not below:
            continue
        runs = _runs(words_of(copy), hashes_of(copy)[0])
        if not runs:
            continue
        for original in below:
            if may_copy(copy, original) and _copied(words_of(copy), runs, words_of(original), hashes_of(original)):
                found[id(copy)] = original
                break
    return found
