"""Retrieval eval: recall@1, recall@5 and MRR of `search`, overall, per class and per corpus.

Run: python -m tests.eval.run_eval [--split train|test|all] [--naive] [--json OUT] [--corpus NAME ...]
                                   [--strict] [--verbose [--i-am-not-tuning]]

Each corpus is copied into a temporary folder laid out the way its agent keeps journals, indexed
into a fresh index, and asked its questions (``questions*.json``; see README.md). A hit is mapped
back from (journal path, byte offset) to (file relative to the corpus folder, 1-based line), so a
question's ``expected`` locators name lines of the original files. The old fixture questions name
entry ids instead; either kind counts. A question is answered at rank r when an expected line
(or entry id) is the r-th of the top 10 hits. Expected lines marked ``"by": "judge"`` were added
after the question was written, by a judge who read the journal and never the search's output
(README.md "Stop 35"); ``--strict`` counts only the lines the question's writer listed.

Every figure is reported per split (train, test; README.md "Split"), overall, per agent, per corpus
and per class, with a 95 % bootstrap interval, and with ``--naive`` beside the figures of a naive FTS5
baseline over the same index (naive.py). ``--verbose`` lists the questions missed at 5; it refuses
to list those of the test split (nobody looks at per-question test results while choosing a
ranking change) unless ``--i-am-not-tuning`` is given.

A corpus whose journal format is not registered in ``journal_index.formats`` yet is skipped with
a note; it is enabled by registering its format under one of the names in ``FORMAT_NAMES``.
"""

from __future__ import annotations

import argparse
import bisect
import hashlib
import inspect
import json
import os
import random
import shutil
import sys
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import journal_index.formats
from journal_index.data.store import Store, open_store
from journal_index.formats import Entry, get_format
from journal_index.indexing.indexer import discover, index_file, index_files
from journal_index.query import Filters, Reader, search
from journal_index.query.hits import Hit
from journal_index.query.scope import resolve_scope
from journal_index.text.call_sites import find_call
from tests.eval.corpora import EVAL_NOW_MS, Corpus, as_written, corpora, load_all_questions, load_questions
from tests.eval.naive import NaiveSearch
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
    naive_ranks: dict[str, Rank] = field(default_factory=dict)  # question id -> rank of naive FTS (if asked)


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


def naive_rank_of(naive: NaiveSearch, store: Store, q: dict[str, Any], where: Built | None = None) -> Rank:
    """The rank of the first answer among the naive baseline's top hits (its own line or entry id)."""
    scope = resolve_scope(store, q.get("scope") or "global", q.get("cwd") or "/")
    ids, lines = _answers(q["expected"])
    for i, hit in enumerate(naive.search(q["query"], scope, TOP), 1):
        if hit.entry_id in ids or (lines and where is not None and where.locate(hit.path, hit.offset) in lines):
            return i
    return None


def evaluate_corpus(corpus: Corpus, questions: list[dict[str, Any]], with_naive: bool = False) -> EvalResult | None:
    """The corpus's figures, or None when its journals gave no index rows (a format still a stub).
    ``with_naive`` also ranks every question with the naive FTS baseline (``EvalResult.naive_ranks``)."""
    with tempfile.TemporaryDirectory() as tmp, built(corpus, Path(tmp)) as b:
        if b.entries == 0:
            return None
        result = evaluate(b.store, questions, corpus.now_ms, b)
        if with_naive:
            naive = NaiveSearch(b.store)
            result.naive_ranks = {q["id"]: naive_rank_of(naive, b.store, q, b) for q in questions}
        return result


# ---------------------------------------------------------------------------------------------
# bootstrap intervals

RESAMPLES = 2000
SEED = "journal-index-eval-bootstrap-v1"
METRICS = ("recall_at_1", "recall_at_5", "mrr")


def _per_question(ranks: list[Rank]) -> list[tuple[float, float, float]]:
    return [(float(r == 1), float(r is not None and r <= 5), 1 / r if r is not None else 0.0) for r in ranks]


def _rng(label: str) -> random.Random:
    """A generator seeded by the group's label, so a group's interval does not depend on what else is run."""
    return random.Random(int(hashlib.sha256(f"{SEED}:{label}".encode()).hexdigest(), 16))


def _percentiles(values: list[float]) -> tuple[float, float]:
    values = sorted(values)
    last = len(values) - 1
    return values[round(0.025 * last)], values[round(0.975 * last)]


def _resampled_means(rows: list[tuple[float, float, float]], rng: random.Random,
                     resamples: int) -> list[tuple[float, float, float]]:
    n = len(rows)
    means = []
    for _ in range(resamples):
        sample = rng.choices(rows, k=n)
        means.append((sum(s[0] for s in sample) / n, sum(s[1] for s in sample) / n, sum(s[2] for s in sample) / n))
    return means


def bootstrap(ranks: list[Rank], label: str, resamples: int = RESAMPLES) -> dict[str, dict[str, float]]:
    """R@1, R@5 and MRR of these ranks, each with its 95 % percentile interval over ``resamples``
    resamplings of the questions (with replacement), seeded by ``label``."""
    rows = _per_question(ranks)
    if not rows:
        return {m: {"value": 0.0, "low": 0.0, "high": 0.0} for m in METRICS}
    means = _resampled_means(rows, _rng(label), resamples)
    out = {}
    for i, metric in enumerate(METRICS):
        low, high = _percentiles([m[i] for m in means])
        out[metric] = {"value": sum(r[i] for r in rows) / len(rows), "low": low, "high": high}
    return out


def mrr_difference(first: list[Rank], second: list[Rank], label: str,
                   resamples: int = RESAMPLES) -> dict[str, float] | None:
    """MRR(first) - MRR(second) with a 95 % interval, both resampled independently; None if one is empty."""
    a, b = _per_question(first), _per_question(second)
    if not a or not b:
        return None
    rng = _rng(label)
    pairs = zip(_resampled_means(a, rng, resamples), _resampled_means(b, rng, resamples), strict=True)
    diffs = [x[2] - y[2] for x, y in pairs]
    low, high = _percentiles(diffs)
    return {"value": sum(r[2] for r in a) / len(a) - sum(r[2] for r in b) / len(b), "low": low, "high": high}


# ---------------------------------------------------------------------------------------------
# report

SPLITS = ("train", "test")
NOT_TUNING = ("--verbose lists per-question results, and nobody looks at the test split's while choosing a "
              "ranking change: use --split train, or add --i-am-not-tuning")


def _row(label: str, f: Figures) -> str:
    return f"  {label:<22} n={f.n:<4} recall@1 {f.recall_at_1:.2f}  recall@5 {f.recall_at_5:.2f}  MRR {f.mrr:.2f}"


def _cell(fig: dict[str, float]) -> str:
    return f"{fig['value']:.2f} [{fig['low']:.2f}, {fig['high']:.2f}]"


def groups_of(questions: list[dict[str, Any]], fmt_of: dict[str, str]) -> dict[str, dict[str, list[str]]]:
    """Question ids by group: "all", each agent (journal format: the issue's goals are per agent),
    each corpus (with its format) and each class."""
    out: dict[str, dict[str, list[str]]] = {"all": {"ALL": []}, "agent": {}, "corpus": {}, "class": {}}
    for q in questions:
        out["all"]["ALL"].append(q["id"])
        out["agent"].setdefault(fmt_of[q["corpus"]], []).append(q["id"])
        out["corpus"].setdefault(f"{q['corpus']} ({fmt_of[q['corpus']]})", []).append(q["id"])
        out["class"].setdefault(q["category"], []).append(q["id"])
    return {kind: dict(sorted(members.items())) for kind, members in out.items()}


def report(questions: list[dict[str, Any]], ranks: dict[str, Rank], naive: dict[str, Rank] | None,
           fmt_of: dict[str, str], splits: tuple[str, ...], resamples: int = RESAMPLES) -> dict[str, Any]:
    """Every figure, machine-readable: per split, per group, the ranking's (and naive FTS's) R@1,
    R@5 and MRR with intervals; and the train - test MRR difference."""
    out: dict[str, Any] = {"resamples": resamples, "interval": "95 % percentile bootstrap over questions",
                           "top": TOP, "splits": {}}
    for split in splits:
        asked = [q for q in questions if q.get("split") == split]
        blocks: dict[str, Any] = {}
        for kind, members in groups_of(asked, fmt_of).items():
            blocks[kind] = {}
            for label, ids in members.items():
                block: dict[str, Any] = {"n": len(ids),
                                         "ranking": bootstrap([ranks[i] for i in ids], f"{split}:{label}", resamples)}
                if naive is not None:
                    block["naive"] = bootstrap([naive[i] for i in ids], f"naive:{split}:{label}", resamples)
                blocks[kind][label] = block
        out["splits"][split] = blocks
    if set(SPLITS) <= set(splits):
        train = [ranks[q["id"]] for q in questions if q.get("split") == "train"]
        test = [ranks[q["id"]] for q in questions if q.get("split") == "test"]
        out["train_minus_test_mrr"] = mrr_difference(train, test, "train-test", resamples)
        # per agent too: the splits hold the agents in different shares, which moves the overall gap
        def of(split: str, fmt: str) -> list[Rank]:
            return [ranks[q["id"]] for q in questions if q.get("split") == split and fmt_of[q["corpus"]] == fmt]

        by_agent = {fmt: mrr_difference(of("train", fmt), of("test", fmt), f"train-test:{fmt}", resamples)
                    for fmt in sorted({fmt_of[q["corpus"]] for q in questions})}
        out["train_minus_test_mrr_by_agent"] = {fmt: d for fmt, d in by_agent.items() if d is not None}
    return out


def print_report(figs: dict[str, Any]) -> None:
    print(f"95 % intervals: percentile bootstrap, {figs['resamples']} resamples of the questions (seeded)")
    for split, blocks in figs["splits"].items():
        print(f"\n== {split} ==")
        with_naive = any("naive" in b for b in blocks["all"].values())
        head = f"  {'':<24}{'n':>4}  {'R@1':<18}{'R@5':<18}{'MRR':<18}"
        print(head + ("| naive FTS  R@1   R@5   MRR" if with_naive else ""))
        for kind in ("all", "agent", "corpus", "class"):
            if kind != "all":
                print(f" per {kind}:")
            for label, block in blocks[kind].items():
                r = block["ranking"]
                line = f"  {label:<24}{block['n']:>4}  " + "".join(f"{_cell(r[m]):<18}" for m in METRICS)
                if "naive" in block:
                    line += "|           " + "  ".join(f"{block['naive'][m]['value']:.2f}" for m in METRICS)
                print(line)
    diff = figs.get("train_minus_test_mrr")
    if diff is not None:
        print(f"\ntrain - test MRR: {diff['value']:+.3f} [{diff['low']:+.3f}, {diff['high']:+.3f}]")
        for fmt, d in figs.get("train_minus_test_mrr_by_agent", {}).items():
            print(f"  {fmt:<8}{d['value']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=("train", "test", "all"), default="all",
                        help="which questions to report (default: all, train and test apart)")
    parser.add_argument("--naive", action="store_true", help="also rank with naive FTS5 (bm25, AND then OR)")
    parser.add_argument("--json", metavar="OUT", help="write every figure to this file as JSON")
    parser.add_argument("--resamples", type=int, default=RESAMPLES, help=argparse.SUPPRESS)
    parser.add_argument("--verbose", action="store_true", help="list the questions missed at 5")
    parser.add_argument("--i-am-not-tuning", action="store_true",
                        help="allow --verbose (and --json) to show per-question results of the test split")
    parser.add_argument("--corpus", action="append", choices=sorted(corpora()),
                        help="evaluate only this corpus (repeatable; default: all)")
    parser.add_argument("--strict", action="store_true",
                        help="count only the answer lines the question writers listed, not those a judge added")
    args = parser.parse_args(argv)
    splits = SPLITS if args.split == "all" else (args.split,)
    per_question_ok = set(splits) if args.i_am_not_tuning else set(splits) - {"test"}
    if args.verbose and "test" in splits and not args.i_am_not_tuning:
        print(f"run_eval: {NOT_TUNING}", file=sys.stderr)
        return 2
    known = corpora()
    names = args.corpus or list(known)
    ranks: dict[str, Rank] = {}
    naive_ranks: dict[str, Rank] = {}
    asked: list[dict[str, Any]] = []
    for name in names:
        corpus = known[name]
        questions = [q for q in load_all_questions(name) if q.get("split") in splits]
        if args.strict:
            questions = [as_written(q) for q in questions]
        if not questions:
            continue
        if registered_format(corpus.fmt) is None:
            print(f"skipped {name}: {len(questions)} questions; the {corpus.fmt!r} journal format is not registered "
                  f"yet (register it as one of {', '.join(FORMAT_NAMES[corpus.fmt])} to enable)")
            continue
        if not corpus.files:
            print(f"skipped {name}: no journals under {corpus.base}")
            continue
        result = evaluate_corpus(corpus, questions, with_naive=args.naive)
        if result is None:
            print(f"skipped {name}: {len(questions)} questions; the {corpus.fmt!r} format is registered but "
                  f"indexed nothing from {len(corpus.files)} journals")
            continue
        ranks.update(result.ranks)
        naive_ranks.update(result.naive_ranks)
        asked += questions
    if not asked:
        print("no corpus could be evaluated")
        return 1
    figs = report(asked, ranks, naive_ranks if args.naive else None, {n: c.fmt for n, c in known.items()},
                  splits, args.resamples)
    print_report(figs)
    shown = [q for q in asked if q["split"] in per_question_ok]
    if args.json:
        figs["questions"] = {q["id"]: {"split": q["split"], "rank": ranks[q["id"]],
                                       **({"naive_rank": naive_ranks[q["id"]]} if args.naive else {})}
                             for q in shown}
        Path(args.json).write_text(json.dumps(figs, indent=1) + "\n", "utf-8")
    if args.verbose:
        print("\nmissed at 5:")
        for q in shown:
            rank = ranks[q["id"]]
            if rank is None or rank > 5:
                print(f"{q['id']} ({q['split']}) [{q['category']}] {q['query']!r} rank={rank}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
