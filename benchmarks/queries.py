"""The benchmark's query set, drawn from the corpus and the built index with a seed.

    python -m benchmarks.queries --db INDEX --sessions DIR [--n 110] [--seed 1]   # print the set

Classes (shares of ``n``; a class short of candidates is filled from the others):

* ``rare``       one word whose term is in 1–5 entries (fts5vocab document count)
* ``medium``     one word in max(6, N/2000) … max(4·lo, N/100) entries (N = indexed entries)
* ``common``     one word in ≥ 5 % of the entries (``the``, ``return``, ``file`` …)
* ``phrase``     2–3 consecutive lowercase words from a sentence of the corpus (searched as the
                 user would type them: all words AND, not as a quoted phrase)
* ``identifier`` a camelCase or snake_case name from the corpus (split into a phrase group)
* ``file``       a file name such as ``session_manager.py``
* ``none``       made-up words that match nothing (one and two words: the second also runs the
                 any-word fallback)

Document frequencies are exact: single words from the index vocabulary, the rest by counting
``entries_fts MATCH`` with the same expression ``query.search`` builds. Surface words (``retries``
rather than the stem ``retri``) come from a seeded sample of the journals, read with the indexer's
own parser and redaction. The list is interleaved class by class, so its first k queries (the cold
and rg subsets) are a stratified sample.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

import apsw

from journal_index.data.store import Store, open_store
from journal_index.formats import Entry, pi
from journal_index.indexing.indexer import discover
from journal_index.redact import redact
from journal_index.text.text_forms import match_all, query_groups

SHARES: dict[str, float] = {
    "rare": 0.18,
    "common": 0.14,
    "phrase": 0.20,
    "identifier": 0.14,
    "medium": 0.18,
    "file": 0.11,
    "none": 0.05,
}
CLASSES = tuple(SHARES)
SAMPLE_BYTES = 8_000_000
SCAN_CHARS = 4000  # of each sampled entry's text

_WORD = re.compile(r"\b[A-Za-z]{3,20}\b")
_CAMEL = re.compile(r"\b[a-z]{2,}(?:[A-Z][a-z0-9]+){1,3}\b")
_SNAKE = re.compile(r"\b[a-z][a-z0-9]{1,}(?:_[a-z0-9]{2,}){1,3}\b")
_FILE = re.compile(
    r"\b[A-Za-z_][A-Za-z0-9_-]{2,40}\.(?:py|pyi|ts|tsx|js|json|md|toml|ya?ml|sql|sh|txt|css|html|cfg|ini)\b"
)
_PHRASE = re.compile(r"\b([a-z]{3,14}) ([a-z]{3,14}) ([a-z]{3,14})\b")
_ALPHA_TERM = re.compile(r"^[a-z]{4,20}$")


@dataclass(frozen=True)
class Query:
    text: str
    kind: str  # one of CLASSES
    df: int  # entries holding every word (global scope); 0 for "none"

    @property
    def single_token(self) -> bool:
        """One whitespace-free token: something ``rg -F`` can look for as is."""
        return " " not in self.text


@dataclass
class _Sample:
    words: Counter[str]
    camel: set[str]
    snake: set[str]
    files: set[str]
    phrases: list[str]


def _sample_corpus(sessions: Path, rng: random.Random, sample_bytes: int) -> _Sample:
    paths = sorted(discover([sessions]))
    rng.shuffle(paths)
    sample = _Sample(Counter(), set(), set(), set(), [])
    taken = 0
    for path in paths:
        if taken >= sample_bytes:
            break
        data = Path(path).read_bytes()
        taken += len(data)
        offset = 0
        for line in data.split(b"\n"):
            parsed = pi.parse_line(line, offset) if line else None
            offset += len(line) + 1
            if not isinstance(parsed, Entry) or not parsed.text:
                continue
            text = redact(parsed.text[:SCAN_CHARS])
            sample.words.update(w.lower() for w in _WORD.findall(text))
            sample.camel.update(_CAMEL.findall(text))
            sample.snake.update(_SNAKE.findall(text))
            sample.files.update(_FILE.findall(text))
            for m in _PHRASE.finditer(text):
                if len(sample.phrases) < 20_000:
                    words = m.groups()
                    sample.phrases.append(" ".join(words if rng.random() < 0.5 else words[:2]))
    return sample


class _Vocab:
    """Stemmed terms → entries holding them, and surface words → their single term."""

    def __init__(self, store: Store) -> None:
        conn = store.conn
        conn.execute("DROP TABLE IF EXISTS temp.bench_vocab")
        conn.execute("CREATE VIRTUAL TABLE temp.bench_vocab USING fts5vocab(main, entries_fts, row)")
        self.doc: dict[str, int] = {str(term): int(doc) for term, doc in
                                    conn.execute("SELECT term, doc FROM temp.bench_vocab")}
        conn.execute("DROP TABLE temp.bench_vocab")
        self._tok = conn.fts5_tokenizer("porter", ["unicode61", "remove_diacritics", "2"])
        self.entries = int(store.value("SELECT count(*) FROM entries", default=0))

    def term(self, word: str) -> str | None:
        """The one FTS term a word becomes, or None if it becomes zero or several."""
        tokens = self._tok(word.encode(), apsw.FTS5_TOKENIZE_QUERY, None, include_offsets=False)
        terms = [str(t[0]) for t in tokens]
        return terms[0] if len(terms) == 1 else None


def count_matches(store: Store, text: str) -> int:
    """Entries holding every word of ``text`` (the AND expression ``query.search`` runs first)."""
    groups = query_groups(text)
    if not groups:
        return 0
    return int(store.value("SELECT count(*) FROM entries_fts WHERE entries_fts MATCH ?",
                           (match_all(groups),), default=0))


def _single_word_pools(vocab: _Vocab, sample: _Sample, rng: random.Random) -> dict[str, list[Query]]:
    n = max(vocab.entries, 1)
    medium_lo = max(6, n // 2000)
    medium_hi = max(medium_lo * 4, n // 100)
    common_lo = max(medium_hi + 1, n // 20)
    # Surface forms: the most frequent sampled word for each term.
    surface: dict[str, str] = {}
    for word, _count in sorted(sample.words.items(), key=lambda kv: (-kv[1], kv[0])):
        term = vocab.term(word)
        if term is not None and term not in surface:
            surface[term] = word
    pools: dict[str, list[Query]] = {"rare": [], "medium": [], "common": []}
    unseen: dict[str, list[Query]] = {"rare": [], "medium": [], "common": []}
    for term, doc in sorted(vocab.doc.items()):
        if not term.isascii() or not term.isalpha():
            continue
        cls = ("rare" if 1 <= doc <= 5 else "medium" if medium_lo <= doc <= medium_hi
               else "common" if doc >= common_lo and len(term) >= 3 else None)
        if cls is None:
            continue
        seen = surface.get(term)
        if seen is None and (not _ALPHA_TERM.match(term) or vocab.term(term) != term):
            continue  # a term never seen in the sample is queried as is only if it stems to itself
        (pools[cls] if seen else unseen[cls]).append(Query(seen or term, cls, doc))
    for cls, pool in pools.items():
        # Words seen in the sample first (real words), then bare stems of rarer words.
        rng.shuffle(pool)
        rng.shuffle(unseen[cls])
        pool.extend(unseen[cls])
    return pools


def _counted_pool(store: Store, kind: str, candidates: list[str], want: int,
                  rng: random.Random) -> list[Query]:
    """Seeded candidates that match at least one entry, counted until ``want`` are found."""
    unique = sorted(set(candidates))
    rng.shuffle(unique)
    found: list[Query] = []
    for text in unique:
        if len(found) >= want:
            break
        df = count_matches(store, text)
        if df > 0:
            found.append(Query(text, kind, df))
    return found


def _none_pool(vocab: _Vocab, rng: random.Random, want: int) -> list[Query]:
    out: list[Query] = []
    letters = "bcdfghjklmnpqrstvwxz"
    while len(out) < want:
        words = ["zq" + "".join(rng.choice(letters) for _ in range(8)) for _ in range(1 + len(out) % 2)]
        if all(vocab.doc.get(vocab.term(w) or "", 0) == 0 for w in words):
            out.append(Query(" ".join(words), "none", 0))
    return out


def build_queries(store: Store, sessions: Path, n: int = 110, seed: int = 1,
                  sample_bytes: int = SAMPLE_BYTES) -> list[Query]:
    """``n`` queries of mixed rarity for the index ``store`` built from ``sessions``."""
    rng = random.Random(seed)
    want = {cls: max(1, round(n * share)) for cls, share in SHARES.items()}
    sample = _sample_corpus(sessions, rng, sample_bytes)
    vocab = _Vocab(store)
    pools = _single_word_pools(vocab, sample, rng)
    spare = n  # extra candidates per class, to fill other classes' shortfalls
    pools["phrase"] = _counted_pool(store, "phrase", sample.phrases, want["phrase"] + spare // 4, rng)
    pools["identifier"] = _interleave([
        _counted_pool(store, "identifier", sorted(sample.camel), (want["identifier"] + spare // 4 + 1) // 2,
                      rng),
        _counted_pool(store, "identifier", sorted(sample.snake), (want["identifier"] + spare // 4 + 1) // 2,
                      rng),
    ])
    pools["file"] = _counted_pool(store, "file", sorted(sample.files), want["file"] + spare // 4, rng)
    pools["none"] = _none_pool(vocab, rng, want["none"])
    chosen = {cls: pools[cls][: want[cls]] for cls in CLASSES}
    short = n - sum(len(v) for v in chosen.values())
    while short > 0:
        progressed = False
        for cls in CLASSES:
            if short > 0 and cls != "none" and len(pools[cls]) > len(chosen[cls]):
                chosen[cls].append(pools[cls][len(chosen[cls])])
                short -= 1
                progressed = True
        if not progressed:
            break
    out = _interleave([chosen[cls] for cls in CLASSES])
    return out[:n]


def _interleave(lists: list[list[Query]]) -> list[Query]:
    out: list[Query] = []
    for i in range(max((len(x) for x in lists), default=0)):
        out.extend(x[i] for x in lists if i < len(x))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.queries", description=__doc__.split("\n")[0])
    ap.add_argument("--db", required=True, help="an index built from --sessions")
    ap.add_argument("--sessions", required=True, type=Path)
    ap.add_argument("--n", type=int, default=110)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    store = open_store(args.db)
    try:
        queries = build_queries(store, args.sessions, args.n, args.seed)
    finally:
        store.close()
    for q in queries:
        print(f"{q.kind:10} {q.df:>8}  {q.text}")
    print(f"{len(queries)} queries: " + ", ".join(
        f"{cls} {sum(q.kind == cls for q in queries)}" for cls in CLASSES), file=sys.stderr)
    return 0


def as_json(queries: list[Query]) -> list[dict[str, object]]:
    return [asdict(q) for q in queries]


if __name__ == "__main__":
    sys.exit(main())
