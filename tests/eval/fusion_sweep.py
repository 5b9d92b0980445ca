"""Ways of fusing the semantic layer with the lexical ranking, compared on the train split only.

Run: python -m tests.eval.fusion_sweep [--json OUT]    (needs the semantic extra)

Each train question is asked once: the lexical ranking's first 50 hits (with their scores, whether
they hold every word, and their cosine to the question where the entry has a vector) and the 50
entries nearest in meaning inside the question's scope. The fusions below are then computed from
those two lists, so a sweep of many settings costs one pass:

* ``rrf``: weighted reciprocal-rank fusion below the first ``keep`` lexical hits, as
  ``journal_index/semantic/fusion.py`` does it (``gated``: only when no hit of the page holds
  every word);
* ``score``: the lexical score plus ``w`` times the cosine (entries without a vector, tool output,
  get nothing), the nearest entries the lexical ranking lacks entering at its lowest score.

Train only, by construction (there is no ``--split``): it prints per-corpus figures and how many
questions each setting won and lost against the lexical ranking, which is what a setting is
chosen by; the chosen one is then measured once on test by ``semantic_eval``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from journal_index.query import Filters, search
from journal_index.query.find import Reader
from journal_index.query.hits import Hit
from journal_index.query.scope import resolve_scope
from journal_index.semantic import background as semantic
from journal_index.semantic import embedder, vectors
from tests.eval.corpora import corpora, load_all_questions
from tests.eval.run_eval import Built, Rank, _answers, _call_shown_whole, built, figures, registered_format
from tests.eval.semantic_eval import ready

DEPTH = 50  # of each list, as fusion.DEPTH
RRF_K = 60
PAGE = 10  # a question is answered within the first 10, as run_eval counts


@dataclass
class Candidate:
    rowid: int
    score: float  # lexical score, or the cosine for a nearest entry
    complete: bool  # holds every word (lexical) ; False for a nearest entry
    cosine: float | None  # to the question, where the entry has a vector
    answers: bool  # an expected line (or the call shown whole of one)


@dataclass
class Lists:
    corpus: str
    lexical: list[Candidate]
    nearest: list[Candidate]


Fusion = Callable[[Lists], list[Candidate]]


def _answering(b: Built, reader: Reader, q: dict[str, Any]) -> Callable[[Hit], bool]:
    ids, lines = _answers(q["expected"])

    def answers(hit: Hit) -> bool:
        if hit.entry_id in ids or (lines and b.locate(hit.path, hit.offset) in lines):
            return True
        call = _call_shown_whole(reader, hit)
        return call is not None and (call[0] in ids or b.locate(hit.path, call[1]) in lines)
    return answers


def _cosine(held: Any, rowid: int, asked: Any) -> float | None:
    """The entry's cosine to the question, where it has a vector (tool output has none)."""
    row = held.where.get(rowid)
    return None if row is None else float(held.matrix[row] @ asked)


def collect() -> dict[str, Lists]:
    """Both lists for every train question of every corpus."""
    out: dict[str, Lists] = {}
    query_model = embedder.encoder()
    for name, corpus in corpora().items():
        questions = [q for q in load_all_questions(name) if q.get("split") == "train"]
        if not questions or registered_format(corpus.fmt) is None or not corpus.files:
            continue
        with tempfile.TemporaryDirectory() as tmp, built(corpus, Path(tmp)) as b:
            semantic.embed_pending(b.store, budget_seconds=float("inf"))
            held = vectors._vectors(b.store)
            reader = Reader(b.store)
            for q in questions:
                answers = _answering(b, reader, q)
                filters = Filters(resolve_scope(b.store, q.get("scope") or "global", q.get("cwd") or "/"))
                hits = search(b.store, q["query"], filters, limit=DEPTH, now=corpus.now_ms).hits
                asked = query_model.query(q["query"])
                lexical = [Candidate(h.rowid, h.score, h.complete, _cosine(held, h.rowid, asked), answers(h))
                           for h in hits]
                nearest = [Candidate(h.rowid, h.score, False, h.score, answers(h))
                           for h in vectors.nearest(b.store, asked, filters, DEPTH)]
                out[q["id"]] = Lists(name, lexical, nearest)
    return out


def lexical_only(lists: Lists) -> list[Candidate]:
    return lists.lexical


def _gate_shut(lists: Lists, gated: bool) -> bool:
    return gated and any(c.complete for c in lists.lexical[:PAGE])


def rrf(weight: float, keep: int, gated: bool) -> Fusion:
    def fuse(lists: Lists) -> list[Candidate]:
        if _gate_shut(lists, gated):
            return lists.lexical
        kept = lists.lexical[:keep]
        held = {c.rowid for c in kept}
        score: dict[int, float] = {}
        by_row: dict[int, Candidate] = {}
        near = [c for c in lists.nearest if c.rowid not in held]
        for ranked, w in ((lists.lexical[keep:], 1.0), (near, weight)):
            for rank, c in enumerate(ranked, 1):
                score[c.rowid] = score.get(c.rowid, 0.0) + w / (RRF_K + rank)
                by_row.setdefault(c.rowid, c)
        return kept + sorted(by_row.values(), key=lambda c: -score[c.rowid])
    return fuse


def score_fusion(weight: float, keep: int, gated: bool) -> Fusion:
    def fuse(lists: Lists) -> list[Candidate]:
        if _gate_shut(lists, gated) or not lists.lexical:
            return lists.lexical
        kept = lists.lexical[:keep]
        floor = min(c.score for c in lists.lexical)
        score = {c.rowid: c.score + weight * (c.cosine or 0.0) for c in lists.lexical[keep:]}
        by_row = {c.rowid: c for c in lists.lexical[keep:]}
        held = {c.rowid for c in kept}
        for c in lists.nearest:
            if c.rowid not in score and c.rowid not in held:
                score[c.rowid], by_row[c.rowid] = floor + weight * (c.cosine or 0.0), c
        return kept + sorted(by_row.values(), key=lambda c: -score[c.rowid])
    return fuse


def rank(order: list[Candidate]) -> Rank:
    return next((i for i, c in enumerate(order[:PAGE], 1) if c.answers), None)


def settings() -> dict[str, Fusion]:
    out: dict[str, Fusion] = {"lexical": lexical_only}
    for w, keep, gated in itertools.product((0.25, 0.5, 1.0), (0, 1, 3), (True, False)):
        out[f"rrf w{w} keep{keep} {'gated' if gated else 'ungated'}"] = rrf(w, keep, gated)
    for w, keep, gated in itertools.product((0.5, 1.0, 2.0, 4.0), (0, 1), (True, False)):
        out[f"score w{w} keep{keep} {'gated' if gated else 'ungated'}"] = score_fusion(w, keep, gated)
    return out


def sweep(lists: dict[str, Lists]) -> dict[str, Any]:
    groups: dict[str, list[str]] = {"ALL": list(lists)}
    for qid, li in lists.items():
        groups.setdefault(li.corpus, []).append(qid)
    base = {qid: rank(li.lexical) for qid, li in lists.items()}
    out: dict[str, Any] = {}
    for label, fusion in settings().items():
        ranks = {qid: rank(fusion(li)) for qid, li in lists.items()}
        row: dict[str, Any] = {}
        for group, ids in groups.items():
            f = figures([ranks[i] for i in ids])
            row[group] = {"n": len(ids), "r1": f.recall_at_1, "r5": f.recall_at_5, "mrr": f.mrr}
        row["won"] = sum(1 for i in ranks if (ranks[i] or 99) < (base[i] or 99))
        row["lost"] = sum(1 for i in ranks if (ranks[i] or 99) > (base[i] or 99))
        out[label] = row
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", metavar="OUT")
    args = parser.parse_args(argv)
    if not ready("fusion_sweep"):
        return 2
    out = sweep(collect())
    groups = [g for g in next(iter(out.values())) if g not in ("won", "lost")]
    print("train split, MRR / R@5 per corpus; won / lost against the lexical ranking")
    for label, row in out.items():
        cells = " ".join(f"{g}:{row[g]['mrr']:.3f}/{row[g]['r5']:.2f}" for g in groups)
        print(f"  {label:<28} {cells}  won {row['won']} lost {row['lost']}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
