"""Retrieval eval: recall@1, recall@5 and MRR of `search`, overall, per class and per corpus.

Run: python -m tests.eval.run_eval [--verbose] [--corpus NAME ...]

Each corpus is copied into a temporary folder laid out the way its agent keeps journals, indexed
into a fresh index, and asked its questions (``questions*.json``; see README.md). A hit is mapped
back from (journal path, byte offset) to (file relative to the corpus folder, 1-based line), so a
question's ``expected`` locators name lines of the original files. The old fixture questions name
entry ids instead; either kind counts. A question is answered at rank r when an expected line
(or entry id) is the r-th of the top 10 hits.

A corpus whose journal format is not registered in ``journal_index.formats`` yet is skipped with
a note; it is enabled by registering its format under one of the names in ``FORMAT_NAMES``.
"""

from __future__ import annotations

import argparse
import bisect
import inspect
import os
import shutil
import sys
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import journal_index.formats
from journal_index.extract import find_call
from journal_index.formats import Entry, get_format
from journal_index.hits import Hit
from journal_index.indexer import discover, index_file, index_files
from journal_index.query import Filters, Reader, search
from journal_index.scope import resolve_scope
from journal_index.store import Store, open_store
from tests.eval.corpora import EVAL_NOW_MS, Corpus, corpora, load_all_questions, load_questions
from tests.helpers import strings_in

__all__ = ["EVAL_NOW_MS", "EvalResult", "corpora", "evaluate", "evaluate_corpus", "load_all_questions",
           "load_questions"]

TOP = 10

# Journal format of each corpus kind -> the names its module may be registered under.
FORMAT_NAMES: dict[str, tuple[str, ...]] = {
    "pi": ("pi",),
    "claude": ("claude", "claude-code", "claude_code"),
    "codex": ("codex", "codex-cli", "codex_cli"),
}


def registered_format(fmt: str) -> str | None:
    """The name under which journal_index knows this format, or None while it does not."""
    for name in FORMAT_NAMES[fmt]:
        try:
            get_format(name)
        except (ValueError, KeyError):
            continue
        return name
    return None


# ---------------------------------------------------------------------------------------------
# building an index of a corpus and mapping hits back to lines


@dataclass
class Built:
    corpus: Corpus
    store: Store
    root: Path  # the temporary corpus folder
    origin: dict[str, str] = field(default_factory=dict)  # real laid-out path -> file rel to base
    entries: int = 0  # index rows made from this corpus
    _starts: dict[str, list[int]] = field(default_factory=dict)

    def locate(self, path: str, offset: int) -> tuple[str, int] | None:
        rel = self.origin.get(os.path.realpath(path))
        if rel is None:
            return None
        starts = self._starts.get(path)
        if starts is None:
            data = Path(path).read_bytes()
            starts = [0]
            pos = data.find(b"\n")
            while pos >= 0:
                starts.append(pos + 1)
                pos = data.find(b"\n", pos + 1)
            self._starts[path] = starts
        return rel, bisect.bisect_right(starts, offset)


def _root(path: Path, fmt_name: str) -> Any:
    """A session root tagged with its format where journal_index has typed roots, else the folder."""
    root_type = getattr(journal_index.formats, "Root", None)
    return path if root_type is None else root_type(path, fmt_name)


def _index(store: Store, roots: list[Any], fmt_name: str, origin: dict[str, str]) -> None:
    """Index every journal under the roots, with whichever indexer API this checkout has."""
    batch: Any = index_files  # its signature differs between indexer versions
    if "roots" in inspect.signature(batch).parameters:
        batch(store, discover(roots), roots=roots)
    elif fmt_name == "pi":
        index_files(store, discover(roots))
    else:  # older indexer: one call per journal, format by name
        per_file: Any = index_file
        for path in sorted(origin):
            per_file(store, path, fmt=fmt_name)


def _entry_count(store: Store) -> int:
    row = store.conn.execute("SELECT count(*) FROM entries").fetchone()
    return int(row[0]) if row else 0


@contextmanager
def built(corpus: Corpus, tmp: Path) -> Iterator[Built]:
    """Lay the corpus out under ``tmp`` and index it (the caller checks the format is registered)."""
    fmt_name = registered_format(corpus.fmt)
    if fmt_name is None:
        raise RuntimeError(f"format {corpus.fmt!r} is not registered")
    root = tmp / corpus.name
    origin = {}
    for rel in corpus.files:
        target = root / corpus.layout(rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(corpus.base / rel, target)
        shutil.copystat(corpus.base / rel, target)
        origin[os.path.realpath(target)] = rel
    session_dir = root / ("projects" if corpus.fmt == "claude" else "sessions")
    store = open_store(str(tmp / f"{corpus.name}.db"))
    try:
        _index(store, [_root(session_dir, fmt_name)], fmt_name, origin)
        yield Built(corpus, store, root, origin, entries=_entry_count(store))
    finally:
        store.conn.close()


# ---------------------------------------------------------------------------------------------
# scoring

Rank = int | None


@dataclass
class Figures:
    n: int
    recall_at_1: float
    recall_at_5: float
    mrr: float


def figures(ranks: list[Rank]) -> Figures:
    n = len(ranks) or 1
    return Figures(
        len(ranks),
        sum(1 for r in ranks if r == 1) / n,
        sum(1 for r in ranks if r is not None and r <= 5) / n,
        sum(1 / r for r in ranks if r is not None) / n,
    )


@dataclass
class EvalResult:
    recall_at_1: float
    recall_at_5: float
    mrr: float
    by_category: dict[str, tuple[float, float]]  # category -> (recall@5, mrr)
    misses: list[str]
    ranks: dict[str, Rank] = field(default_factory=dict)  # question id -> rank


def _answers(expected: Iterable[Any]) -> tuple[set[str], set[tuple[str, int]]]:
    ids: set[str] = set()
    lines: set[tuple[str, int]] = set()
    for item in expected:
        if isinstance(item, str):
            ids.add(item)
        else:
            lines.add((item["file"], int(item["line"])))
    return ids, lines


def _call_shown_whole(reader: Reader, hit: Hit) -> tuple[str, int] | None:
    """For a tool result whose hit shows its call whole (the tool's name and every argument), the
    call's entry id and byte offset; else None. Search shows a call once, as its result led by
    the call, so such a result answers for a call named as an answer."""
    if hit.link_offset is None or hit.link_length is None:
        return None
    fmt = get_format(hit.format)
    with open(hit.path, "rb") as handle:
        handle.seek(hit.offset)
        result = fmt.parse_line(handle.read(hit.length), hit.offset)
        handle.seek(hit.link_offset)
        call_line = handle.read(hit.link_length)
    if not isinstance(result, Entry) or not result.answers:
        return None
    site = find_call(fmt, result.answers, call_line, hit.link_offset)
    caller = fmt.parse_line(call_line, hit.link_offset)
    shown = reader.verified_text(hit)
    if site is None or not isinstance(caller, Entry) or shown is None:
        return None
    flat = " ".join(shown.split())
    if all(" ".join(s.split()) in flat for s in strings_in(site.call.arguments)):
        return caller.entry_id, hit.link_offset
    return None


def rank_of(store: Store, q: dict[str, Any], now_ms: int, where: Built | None = None) -> Rank:
    scope = resolve_scope(store, q.get("scope") or "global", q.get("cwd") or "/")
    hits = search(store, q["query"], Filters(scope), limit=TOP, now=now_ms).hits
    ids, lines = _answers(q["expected"])
    reader = Reader(store)
    for i, hit in enumerate(hits, 1):
        if hit.entry_id in ids:
            return i
        if lines and where is not None and where.locate(hit.path, hit.offset) in lines:
            return i
        call = _call_shown_whole(reader, hit)
        if call is not None and (call[0] in ids or (where is not None and where.locate(hit.path, call[1]) in lines)):
            return i
    return None


def evaluate(store: Store, questions: list[dict[str, Any]], now_ms: int = EVAL_NOW_MS,
             where: Built | None = None) -> EvalResult:
    """Rank every question against one index (``where`` maps hits to lines for locator answers)."""
    ranks: dict[str, Rank] = {}
    per_category: dict[str, list[Rank]] = {}
    misses = []
    for q in questions:
        rank = rank_of(store, q, now_ms, where)
        ranks[q["id"]] = rank
        per_category.setdefault(q["category"], []).append(rank)
        if rank is None or rank > 5:
            misses.append(f"{q['id']} [{q['category']}] {q['query']!r} rank={rank}")
    total = figures(list(ranks.values()))
    cats = {c: (f.recall_at_5, f.mrr) for c, f in ((c, figures(v)) for c, v in sorted(per_category.items()))}
    return EvalResult(total.recall_at_1, total.recall_at_5, total.mrr, cats, misses, ranks)


def evaluate_corpus(corpus: Corpus, questions: list[dict[str, Any]]) -> EvalResult | None:
    """The corpus's figures, or None when its journals gave no index rows (a format still a stub)."""
    with tempfile.TemporaryDirectory() as tmp, built(corpus, Path(tmp)) as b:
        if b.entries == 0:
            return None
        return evaluate(b.store, questions, corpus.now_ms, b)


# ---------------------------------------------------------------------------------------------
# report


def _row(label: str, f: Figures) -> str:
    return f"  {label:<22} n={f.n:<4} recall@1 {f.recall_at_1:.2f}  recall@5 {f.recall_at_5:.2f}  MRR {f.mrr:.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--verbose", action="store_true", help="list the questions missed at 5")
    parser.add_argument("--corpus", action="append", choices=sorted(corpora()),
                        help="evaluate only this corpus (repeatable; default: all)")
    args = parser.parse_args(argv)
    known = corpora()
    names = args.corpus or list(known)
    ranks: dict[str, Rank] = {}
    asked: list[dict[str, Any]] = []
    misses: list[str] = []
    for name in names:
        corpus = known[name]
        questions = load_all_questions(name)
        if not questions:
            continue
        if registered_format(corpus.fmt) is None:
            print(f"skipped {name}: {len(questions)} questions; the {corpus.fmt!r} journal format is not registered "
                  f"yet (register it as one of {', '.join(FORMAT_NAMES[corpus.fmt])} to enable)")
            continue
        if not corpus.files:
            print(f"skipped {name}: no journals under {corpus.base}")
            continue
        result = evaluate_corpus(corpus, questions)
        if result is None:
            print(f"skipped {name}: {len(questions)} questions; the {corpus.fmt!r} format is registered but "
                  f"indexed nothing from {len(corpus.files)} journals")
            continue
        ranks.update(result.ranks)
        asked += questions
        misses += result.misses
    if not asked:
        print("no corpus could be evaluated")
        return 1
    total = figures(list(ranks.values()))
    print(f"questions  {total.n}")
    print(f"recall@1   {total.recall_at_1:.3f}")
    print(f"recall@5   {total.recall_at_5:.3f}")
    print(f"MRR        {total.mrr:.3f}")
    for title, key in (("per class", "category"), ("per corpus", "corpus")):
        groups: dict[str, list[Rank]] = {}
        for q in asked:
            label = q[key] if key == "category" else f"{q['corpus']} ({known[q['corpus']].fmt})"
            groups.setdefault(label, []).append(ranks[q["id"]])
        print(title + ":")
        for label, values in sorted(groups.items()):
            print(_row(label, figures(values)))
    if args.verbose:
        print("\n".join(["missed at 5:", *misses]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
