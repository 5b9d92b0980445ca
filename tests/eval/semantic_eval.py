"""The semantic layer's gain: the eval with the layer off and fused in several settings, on one index per corpus.

Run: python -m tests.eval.semantic_eval [--split train|test] [--json OUT] [--corpus NAME ...]

Each corpus is laid out and indexed as run_eval does, every said entry is embedded
(semantic.embed_pending), and each question is asked once per setting: JOURNAL_INDEX_SEMANTIC=off,
on (every query fused: the shipped setting), gated (fused only when the lexical top hits do not
hold every word) and on at full weight. Train: figures
per corpus and per class, for choosing. Test: aggregates only (all, and per corpus), never a
question's result (README.md "Train and test").
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from journal_index.semantic import background as semantic
from journal_index.semantic import embedder, fusion
from tests.eval.corpora import corpora, load_all_questions
from tests.eval.run_eval import Rank, bootstrap, built, figures, rank_of, registered_format

# (label, JOURNAL_INDEX_SEMANTIC, fusion.SEMANTIC_WEIGHT, fusion.KEEP). Stop 42's train run also
# tried gated at weight 1 with none kept and at 0.5 with 3 kept (tests/eval/README.md).
CONFIGS = [("off", "off", 1.0, 0), ("on", "on", 0.25, 3), ("gated", "gated", 0.25, 3), ("on w1", "on", 1.0, 0)]
MODES = tuple(c[0] for c in CONFIGS)
CACHE = Path(tempfile.gettempdir()) / "journal-index-eval-vectors"


def _cached(encode: Any) -> Any:
    """The bulk encoder's ``passages``, remembering each text's vector on disk between runs (the
    eval asks the same texts every run; the cost figures come from benchmarks/semantic_bench.py)."""
    import numpy as np

    CACHE.mkdir(exist_ok=True)

    def cached(texts: list[str], threads: int | None = None) -> Any:
        keys = [hashlib.sha256(f"{embedder.MODEL_NAME}\0{t}".encode()).hexdigest() for t in texts]
        missing = [i for i, k in enumerate(keys) if not (CACHE / f"{k}.npy").exists()]
        if missing:
            for i, v in zip(missing, encode([texts[i] for i in missing], threads), strict=True):
                # written aside, then renamed: another run reading the cache never sees half a file
                part = CACHE / f"{keys[i]}.{os.getpid()}.part"
                with open(part, "wb") as handle:
                    np.save(handle, v)
                os.replace(part, CACHE / f"{keys[i]}.npy")
        return np.stack([np.load(CACHE / f"{k}.npy") for k in keys]) if keys else np.zeros((0, 384), np.float32)
    return cached


def ready(tool: str) -> bool:
    """Whether the semantic extra is installed (if not, ``tool`` says so on stderr); the bulk
    encoder then keeps its vectors on disk between runs."""
    if not embedder.installed():
        print(f"{tool}: the semantic extra is not installed: pip install -e '.[semantic]'", file=sys.stderr)
        return False
    model = embedder.bulk_encoder()
    model.passages = _cached(model.passages)  # type: ignore[method-assign]
    return True


def run(names: list[str], split: str) -> dict[str, Any]:
    ranks: dict[str, dict[str, Rank]] = {m: {} for m in MODES}
    asked: list[dict[str, Any]] = []
    cost: dict[str, Any] = {}
    known = corpora()
    for name in names:
        corpus = known[name]
        questions = [q for q in load_all_questions(name) if q.get("split") == split]
        if not questions or registered_format(corpus.fmt) is None or not corpus.files:
            continue
        with tempfile.TemporaryDirectory() as tmp, built(corpus, Path(tmp)) as b:
            report = semantic.embed_pending(b.store, budget_seconds=float("inf"))
            cost[name] = {**report.as_json(), "entries": b.entries}
            for label, mode, weight, keep in CONFIGS:
                os.environ[fusion.ENV] = mode
                fusion.SEMANTIC_WEIGHT, fusion.KEEP = weight, keep
                for q in questions:
                    ranks[label][q["id"]] = rank_of(b.store, q, corpus.now_ms, b)
        asked += questions
    os.environ.pop(fusion.ENV, None)
    groups: dict[str, list[str]] = {"ALL": [q["id"] for q in asked]}
    for q in asked:
        groups.setdefault(f"corpus {q['corpus']}", []).append(q["id"])
        if split == "train":
            groups.setdefault(f"class {q['category']}", []).append(q["id"])
    out: dict[str, Any] = {"split": split, "embedding": cost, "groups": {}}
    for label, ids in groups.items():
        out["groups"][label] = {"n": len(ids)}
        for mode in MODES:
            f = figures([ranks[mode][i] for i in ids])
            block: dict[str, Any] = {"r1": f.recall_at_1, "r5": f.recall_at_5, "mrr": f.mrr}
            if label == "ALL" or label.startswith("corpus"):
                block["mrr_interval"] = bootstrap([ranks[mode][i] for i in ids], f"sem:{split}:{mode}:{label}")["mrr"]
            out["groups"][label][mode] = block
    if split == "train":  # per question, train only: which the layer won or lost
        out["changed"] = {i: {m: ranks[m][i] for m in MODES} for i in groups["ALL"]
                          if len({ranks[m][i] for m in MODES}) > 1}
    return out


def print_figures(out: dict[str, Any]) -> None:
    print(f"== {out['split']} ==   R@1 / R@5 / MRR   " + " | ".join(MODES))
    for label, block in out["groups"].items():
        cells = " | ".join(f"{block[m]['r1']:.2f} {block[m]['r5']:.2f} {block[m]['mrr']:.2f}" for m in MODES)
        print(f"  {label:<28} n={block['n']:<4} {cells}")
    for name, c in out["embedding"].items():
        print(f"  embedded {name}: {c['embedded']} vectors, {c['empty']} empty, {c['seconds']:.1f} s "
              f"({c['embedded'] / max(c['seconds'], 1e-9):.1f}/s), of {c['entries']} entries")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=("train", "test"), default="train")
    parser.add_argument("--json", metavar="OUT")
    parser.add_argument("--corpus", action="append", choices=sorted(corpora()))
    args = parser.parse_args(argv)
    if not ready("semantic_eval"):
        return 2
    started = time.monotonic()
    out = run(args.corpus or list(corpora()), args.split)
    out["seconds"] = round(time.monotonic() - started, 1)
    print_figures(out)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
