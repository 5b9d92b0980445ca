"""Fit the ranking's weights on the train split, and ablate them.

Run: python -m tests.eval.fit_weights [--write]            # coordinate ascent on train MRR
     python -m tests.eval.fit_weights --consistent [--write]   # each move must hold in every agent family
     python -m tests.eval.fit_weights --ablate [--split train|test]   # each factor off

Fitting reads the train split only: every corpus with train questions is indexed once, then each
weight in turn (features, then the field × intent table; the order shuffled by a fixed seed) is
tried at a few values around its current one, and the best kept when it raises train MRR by at
least MIN_GAIN (about half a question moved from rank 2 to 1, so one question's noise does not
move a weight). Rounds repeat until none moves. With ``--consistent`` a move is also refused when
it lowers the MRR of any one agent family of the split (pi, Claude Code, Codex): a gain in one
agent's journals paid for by another's is one way a refit gains on train and loses on test.
``--write`` stores the result in journal_index/query/ranking_weights.py with a note of the run.

``--ablate`` sets each factor to its neutral value (a feature's weight 0; a name or synonym
multiplier 1 / 0; a field's weight 1 in every intent) and reports R@1, R@5 and MRR of the split,
aggregates only (allowed on test, once per change batch). ``--ablate --off a,b,c`` instead turns
those features off together and reports the full model and that one, per corpus too (aggregates).
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import sys
import tempfile
import textwrap
from collections.abc import Collection
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Protocol

from journal_index.query import ranking
from journal_index.query.ranking_weights import FIELD_NAMES, FITTED, NOTE
from tests.eval.corpora import corpora, load_all_questions
from tests.eval.run_eval import Built, Rank, built, figures, mrr_difference, rank_of, registered_format

SEED = "journal-index-fit-v1"
MIN_GAIN = 0.003
MAX_ROUNDS = 4
WEIGHTS_FILE = Path(ranking.__file__).with_name("ranking_weights.py")
# Neutral value of each feature when ablated (the others: 0).
# (reply_link: a reply far below its question, no transfer; newest_share 1: nothing is lifted)
NEUTRAL = {"synonym": 0.0, "reply_link": -100.0, "name": 1.0, "newest_share": 1.0}
# Feature weights tried: additive steps (their sign may change); multipliers: factors.
STEPS = {"coverage": 0.5, "age": 0.5, "proximity": 0.2, "pairs": 0.15, "question_turn": 0.2, "reply_link": 0.2,
         "copy": 2.0, "newest_share": 0.1, "synonym": 0.15, "name": 0.25, "length": 0.05,
         "thought": 0.5, "later": 0.1, "progress": 0.25, "rest": 0.05}
FIELD_FACTORS = (0.5, 0.7, 1.4, 2.0)
# A share of the best score is a fraction: 0 or below has no logarithm, above 1 is the same as 1.
SHARES = {"newest_share"}


class Scored(Protocol):
    def family_scores(self, weights: dict[str, Any]) -> tuple[tuple[float, float], dict[str, float]]: ...


class Bench:
    """The indexed corpora of a split and their questions, to be ranked again and again."""

    def __init__(self, split: str, stack: ExitStack, only: Collection[str] | None = None) -> None:
        """``only``: these corpora alone (default: every one with questions of the split)."""
        self.sets: list[tuple[Built, list[dict[str, Any]]]] = []
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        for name, corpus in corpora().items():
            if only is not None and name not in only:
                continue
            questions = [q for q in load_all_questions(name) if q.get("split") == split]
            if not questions or not corpus.files or registered_format(corpus.fmt) is None:
                continue
            b = stack.enter_context(built(corpus, tmp))
            if b.entries:
                self.sets.append((b, questions))

    def ranks(self, weights: dict[str, Any]) -> list[Rank]:
        ranking.WEIGHTS = weights
        return [rank_of(b.store, q, b.corpus.now_ms, b) for b, questions in self.sets for q in questions]

    def per_corpus(self, weights: dict[str, Any]) -> dict[str, list[Rank]]:
        """The split's ranks under ``weights``, grouped by corpus (and "ALL")."""
        ranking.WEIGHTS = weights
        out: dict[str, list[Rank]] = {"ALL": []}
        for b, questions in self.sets:
            ranks = [rank_of(b.store, q, b.corpus.now_ms, b) for q in questions]
            out[b.corpus.name] = ranks
            out["ALL"] += ranks
        return out

    def score(self, weights: dict[str, Any]) -> tuple[float, float]:
        f = figures(self.ranks(weights))
        return f.mrr, f.recall_at_1

    def by_family(self, weights: dict[str, Any]) -> tuple[list[Rank], dict[str, list[Rank]]]:
        """The split's ranks under ``weights``, all together and per agent family (its corpora's format)."""
        ranked = self.per_corpus(weights)
        families: dict[str, list[Rank]] = {}
        for b, _ in self.sets:
            families.setdefault(b.corpus.fmt, []).extend(ranked[b.corpus.name])
        return ranked["ALL"], families

    def family_scores(self, weights: dict[str, Any]) -> tuple[tuple[float, float], dict[str, float]]:
        """The split's (MRR, R@1), and the MRR of each agent family."""
        everyone, families = self.by_family(weights)
        f = figures(everyone)
        return (f.mrr, f.recall_at_1), {name: figures(ranks).mrr for name, ranks in families.items()}


def _candidates(weights: dict[str, Any], key: tuple[str, ...]) -> list[float]:
    if key[0] == "features":
        value, step = weights["features"][key[1]], STEPS[key[1]]
        tried = [round(value + d * step, 4) for d in (-2, -1, 1, 2)]
        return [v for v in tried if 0 < v <= 1] if key[1] in SHARES else tried
    value = weights["fields"][key[1]][key[2]]
    return [round(value * f, 4) for f in FIELD_FACTORS]


def _moved(start: dict[str, Any], end: dict[str, Any]) -> list[str]:
    """Each weight the fit changed, as "name old -> new"."""
    moved = [f"{name} {start['features'][name]} -> {value}"
             for name, value in end["features"].items() if value != start["features"][name]]
    moved += [f"{intent}.{field} {start['fields'][intent][field]} -> {value}"
              for intent, row in end["fields"].items() for field, value in row.items()
              if value != start["fields"][intent][field]]
    return moved


def _set(weights: dict[str, Any], key: tuple[str, ...], value: float) -> dict[str, Any]:
    out = copy.deepcopy(weights)
    if key[0] == "features":
        out["features"][key[1]] = value
    else:
        out["fields"][key[1]][key[2]] = value
    return out


def fit(bench: Scored, start: dict[str, Any],
        consistent: bool = False) -> tuple[dict[str, Any], list[str], tuple[float, float]]:
    keys: list[tuple[str, ...]] = [("features", f) for f in start["features"]]
    keys += [("fields", i, f) for i in start["fields"] for f in FIELD_NAMES]
    random.Random(SEED).shuffle(keys)
    weights = copy.deepcopy(start)
    best, families = bench.family_scores(start)
    log = [f"start: train MRR {best[0]:.4f}, R@1 {best[1]:.4f}"]
    if consistent:
        log[0] += " (" + ", ".join(f"{name} {mrr:.4f}" for name, mrr in sorted(families.items())) + ")"
    for round_no in range(1, MAX_ROUNDS + 1):
        moved = False
        for key in keys:
            trials = [(bench.family_scores(_set(weights, key, v)), v) for v in _candidates(weights, key)]
            if consistent:  # a move may cost no family anything
                trials = [t for t in trials if all(t[0][1][name] >= mrr for name, mrr in families.items())]
            if not trials:
                continue
            ((score, by_family), value) = max(trials, key=lambda t: (t[0][0], t[1]))
            if score[0] >= best[0] + MIN_GAIN or (score[0] >= best[0] and score[1] > best[1] + MIN_GAIN):
                weights, best, families, moved = _set(weights, key, value), score, by_family, True
                log.append(f"round {round_no}: {'.'.join(key)} = {value} -> train MRR {best[0]:.4f}, R@1 {best[1]:.4f}")
                print(log[-1], flush=True)
        if not moved:
            break
    return weights, log, best


def write(weights: dict[str, Any], note: str) -> None:
    text = WEIGHTS_FILE.read_text("utf-8")
    head = text[:text.index("NOTE = (")]
    lines = textwrap.wrap(note, 100)
    quoted = "".join(f'    "{line}{" " if i < len(lines) - 1 else ""}"\n' for i, line in enumerate(lines))
    body = json.dumps(weights, indent=4)
    WEIGHTS_FILE.write_text(f"{head}NOTE = (\n{quoted})\nFITTED: dict[str, object] = {body}\n", "utf-8")


def ablations(start: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {"(none off)": start}
    for feature in start["features"]:
        out[feature] = _set(start, ("features", feature), NEUTRAL.get(feature, 0.0))
    for name in FIELD_NAMES:
        w = copy.deepcopy(start)
        for intent in w["fields"]:
            w["fields"][intent][name] = 1.0
        out[f"field {name}"] = w
    flat = copy.deepcopy(start)
    flat["fields"] = {i: dict.fromkeys(FIELD_NAMES, 1.0) for i in flat["fields"]}
    out["all fields 1"] = flat
    for intent in start["fields"]:
        w = copy.deepcopy(start)
        w["fields"][intent] = dict(start["fields"]["lookup"])
        if intent != "lookup":
            out[f"intent {intent} as lookup"] = w
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="store the fitted weights in ranking_weights.py")
    parser.add_argument("--consistent", action="store_true",
                        help="keep a move only if no agent family of the split loses MRR by it")
    parser.add_argument("--ablate", action="store_true", help="report each factor off instead of fitting")
    parser.add_argument("--split", choices=("train", "test"), default="train", help="the split ablated")
    parser.add_argument("--off", metavar="A,B", help="with --ablate: these features off together, per corpus")
    args = parser.parse_args(argv)
    off = [name for name in (args.off or "").split(",") if name]
    unknown = [name for name in off if name not in FITTED["features"]]  # type: ignore[operator]
    if unknown or (off and not args.ablate):
        print(f"fit_weights: --off takes features of ranking_weights.py with --ablate; not {', '.join(unknown)}"
              if unknown else "fit_weights: --off goes with --ablate", file=sys.stderr)
        return 2
    if args.consistent and args.ablate:
        print("fit_weights: --consistent goes with fitting, not with --ablate", file=sys.stderr)
        return 2
    if not args.ablate and args.split != "train":
        print("fit_weights: weights are fitted on the train split only", file=sys.stderr)
        return 2
    start = copy.deepcopy(FITTED)
    with ExitStack() as stack:
        bench = Bench(args.split, stack)
        if off:
            joint = start
            for name in off:
                joint = _set(joint, ("features", name), NEUTRAL.get(name, 0.0))
            print(f"{args.split}: R@1 / R@5 / MRR with every factor, and with {', '.join(off)} off together")
            for label, weights in (("full model", start), ("off together", joint)):
                for group, ranks in bench.per_corpus(weights).items():
                    f = figures(ranks)
                    print(f"  {label:<13} {group:<16} n={f.n:<4} {f.recall_at_1:.3f}  {f.recall_at_5:.3f}  {f.mrr:.3f}")
            return 0
        if args.ablate:
            ranks = bench.ranks(start)
            base = figures(ranks)
            if args.split == "test":  # the gap of the full model, as run_eval reports it (aggregate)
                gap = mrr_difference(Bench("train", stack).ranks(start), ranks, "train-test")
                if gap is not None:
                    print(f"train - test MRR: {gap['value']:+.3f} [{gap['low']:+.3f}, {gap['high']:+.3f}]")
            print(f"ablation on {args.split} (n={base.n}): R@1 / R@5 / MRR, and MRR minus the full model's")
            for label, weights in ablations(start).items():
                f = figures(bench.ranks(weights))
                print(f"  {label:<26} {f.recall_at_1:.3f}  {f.recall_at_5:.3f}  {f.mrr:.3f}  {f.mrr - base.mrr:+.3f}")
            return 0
        weights, log, best = fit(bench, start, consistent=args.consistent)
    print(json.dumps(weights, indent=1))
    if args.write:
        end = f"end: train MRR {best[0]:.4f}, R@1 {best[1]:.4f}"
        moved = _moved(start, weights)
        # The note keeps every earlier fit: it is the weights' history.
        how = ", every agent family no lower" if args.consistent else ""
        write(weights, f"{NOTE}; refitted (seed {SEED!r}, min gain {MIN_GAIN}{how}): {log[0]}; "
                       f"{len(moved)} weights moved ({', '.join(moved)}); {end}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
