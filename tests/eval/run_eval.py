"""Retrieval eval: recall@1, recall@5 and MRR of `search` on the fixture journals.

Run: python -m tests.eval.run_eval [--verbose]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from journal_index.indexer import discover, index_files
from journal_index.query import Filters, search
from journal_index.scope import resolve_scope
from journal_index.store import Store, open_store

HERE = Path(__file__).resolve().parent
FIXTURE_SESSIONS = HERE.parent.parent / "fixtures" / "sessions"
# Recency is part of the ranking; a fixed "now" a month after the newest fixture keeps it stable.
EVAL_NOW_MS = 1_796_083_200_000  # 2026-12-01T00:00:00Z


@dataclass
class EvalResult:
    recall_at_1: float
    recall_at_5: float
    mrr: float
    by_category: dict[str, tuple[float, float]]  # category -> (recall@5, mrr)
    misses: list[str]


def load_questions() -> list[dict]:
    return json.loads((HERE / "questions.json").read_text("utf-8"))


def evaluate(store: Store, questions: list[dict]) -> EvalResult:
    ranks: list[int | None] = []
    per_category: dict[str, list[int | None]] = {}
    misses = []
    for q in questions:
        scope = resolve_scope(store, q.get("scope") or "global", q.get("cwd") or "/")
        hits = search(store, q["query"], Filters(scope), limit=10, now=EVAL_NOW_MS).hits
        ids = [h.entry_id for h in hits]
        rank = next((i + 1 for i, entry_id in enumerate(ids) if entry_id in q["expected"]), None)
        ranks.append(rank)
        per_category.setdefault(q["category"], []).append(rank)
        if rank is None or rank > 5:
            misses.append(f"{q['id']} [{q['category']}] {q['query']!r} rank={rank}")

    def summarize(values: list[int | None]) -> tuple[float, float, float]:
        n = len(values) or 1
        r1 = sum(1 for r in values if r == 1) / n
        r5 = sum(1 for r in values if r is not None and r <= 5) / n
        mrr = sum(1 / r for r in values if r is not None) / n
        return r1, r5, mrr

    r1, r5, mrr = summarize(ranks)
    cats = {c: summarize(v)[1:] for c, v in sorted(per_category.items())}
    return EvalResult(r1, r5, mrr, cats, misses)


def build_index(folder: Path) -> Store:
    sessions = folder / "sessions"
    shutil.copytree(FIXTURE_SESSIONS, sessions)
    store = open_store(str(folder / "eval.db"))
    index_files(store, discover([sessions]))
    return store


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--verbose", action="store_true", help="list the questions missed at 5")
    args = parser.parse_args(argv)
    questions = load_questions()
    with tempfile.TemporaryDirectory() as tmp:
        store = build_index(Path(tmp))
        try:
            result = evaluate(store, questions)
        finally:
            store.conn.close()
    print(f"questions  {len(questions)}")
    print(f"recall@1   {result.recall_at_1:.3f}")
    print(f"recall@5   {result.recall_at_5:.3f}")
    print(f"MRR        {result.mrr:.3f}")
    for category, (r5, mrr) in result.by_category.items():
        print(f"  {category:<16} recall@5 {r5:.2f}  MRR {mrr:.2f}")
    if args.verbose:
        print("\n".join(["missed at 5:", *result.misses]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
