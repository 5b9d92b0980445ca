"""Sweep one ranking weight on the train split, and say what the judging rule says of it.

Run: python -m tests.eval.sweep features.NAME=V1,V2,...        # a feature's weight
     python -m tests.eval.sweep fields.INTENT.FIELD=V1,V2,...   # a cell of the field × intent table
     python -m tests.eval.sweep features.NAME=... --corpus eval  # some corpora only (repeatable)

A new feature is first given a weight of 0 in ``ranking_weights.py`` (the ranking unchanged),
then swept here. Every corpus with train questions is indexed once (``fit_weights.Bench``); each
value is ranked against the weight as it is now. Per value: R@1 / R@5 / MRR, the questions
gained and lost (a better or worse rank than now), each agent family's MRR, and whether the
value passes the train half of the rule written before each run in README.md ("Where the ranking
stands"): completed MRR up by at least MIN_GAIN, more questions gained than lost, and no agent
family's MRR lower. Train only: the test split is judged once, by ``run_eval``, aggregates only.
"""

from __future__ import annotations

import argparse
import copy
import sys
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

from tests.eval.corpora import corpora
from tests.eval.fit_weights import Bench, _set
from tests.eval.run_eval import Rank, figures

MIN_GAIN = 0.005  # the rule's MRR step on train (README.md, "How a change is judged")


@dataclass(frozen=True)
class Outcome:
    """One value's figures against the weights as they are."""

    value: float
    recall_at_1: float
    recall_at_5: float
    mrr: float
    gained: int
    lost: int
    families: dict[str, float]  # agent family -> MRR
    passes: bool


def _place(rank: Rank) -> float:
    """A rank to compare: not in the first ten is below every place."""
    return float("inf") if rank is None else rank


def judge(value: float, now: Sequence[Rank], tried: Sequence[Rank], now_families: Mapping[str, Sequence[Rank]],
          tried_families: Mapping[str, Sequence[Rank]]) -> Outcome:
    """The figures of ``tried`` (ranks in the same question order as ``now``), and whether they
    pass the rule against ``now``."""
    gained = sum(1 for a, b in zip(now, tried, strict=True) if _place(b) < _place(a))
    lost = sum(1 for a, b in zip(now, tried, strict=True) if _place(b) > _place(a))
    base, f = figures(list(now)), figures(list(tried))
    families = {name: figures(list(ranks)).mrr for name, ranks in tried_families.items()}
    lower = [name for name, mrr in families.items() if mrr < figures(list(now_families[name])).mrr - 1e-9]
    passes = f.mrr >= base.mrr + MIN_GAIN - 1e-9 and gained > lost and not lower
    return Outcome(value, f.recall_at_1, f.recall_at_5, f.mrr, gained, lost, families, passes)


def parse_setting(text: str, weights: dict[str, Any]) -> tuple[tuple[str, ...], list[float]]:
    """``features.NAME=V1,V2`` or ``fields.INTENT.FIELD=V1,V2`` → (key, values); ValueError with
    the accepted form when it is neither or names no weight."""
    form = "features.NAME=V1,V2,... or fields.INTENT.FIELD=V1,V2,..."
    name, _, values = text.partition("=")
    key = tuple(name.split("."))
    known = ((len(key) == 2 and key[0] == "features" and key[1] in weights["features"])
             or (len(key) == 3 and key[0] == "fields" and key[2] in weights["fields"].get(key[1], {})))
    if not known:
        raise ValueError(f"{name!r} is not a weight of ranking_weights.py; expected {form}")
    try:
        numbers = [float(v) for v in values.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"{values!r}: the values are numbers; expected {form}") from None
    if not numbers:
        raise ValueError(f"no values after '='; expected {form}")
    return key, numbers


def main(argv: list[str] | None = None) -> int:
    from journal_index.query import ranking

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("setting", help="features.NAME=V1,V2,... or fields.INTENT.FIELD=V1,V2,...")
    parser.add_argument("--corpus", action="append", choices=sorted(corpora()),
                        help="only this corpus (repeatable; default: all)")
    args = parser.parse_args(argv)
    start = copy.deepcopy(ranking.WEIGHTS)
    try:
        key, values = parse_setting(args.setting, start)
    except ValueError as exc:
        print(f"sweep: {exc}", file=sys.stderr)
        return 2
    with ExitStack() as stack:
        split = Bench("train", stack, args.corpus)
        if not split.sets:
            print("sweep: no corpus with train questions to rank", file=sys.stderr)
            return 2
        now, now_families = split.by_family(start)
        base = figures(now)
        current = start["features"][key[1]] if key[0] == "features" else start["fields"][key[1]][key[2]]
        print(f"train (n={base.n}), {'.'.join(key)} now {current}: R@1 {base.recall_at_1:.3f}  "
              f"R@5 {base.recall_at_5:.3f}  MRR {base.mrr:.4f}  "
              + "  ".join(f"{n} {figures(r).mrr:.4f}" for n, r in sorted(now_families.items())))
        for value in values:
            tried, tried_families = split.by_family(_set(start, key, value))
            o = judge(value, now, tried, now_families, tried_families)
            print(f"  {value:<8g} R@1 {o.recall_at_1:.3f}  R@5 {o.recall_at_5:.3f}  MRR {o.mrr:.4f} "
                  f"({o.mrr - base.mrr:+.4f})  {o.gained} gained / {o.lost} lost  "
                  + "  ".join(f"{n} {m:.4f}" for n, m in sorted(o.families.items()))
                  + ("  passes on train" if o.passes else ""), flush=True)
        ranking.WEIGHTS = start
    return 0


if __name__ == "__main__":
    sys.exit(main())
