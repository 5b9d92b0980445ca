"""The frozen train/test split of the eval questions: how it was drawn, and how a new question joins it.

Run: python -m tests.eval.split [--write]

Every question carries ``"split": "train"`` or ``"split": "test"`` in its file; that field is the
split (it is never recomputed). Ranking work is tuned on train only; test is reported once per
change batch, as aggregates. The blind held-out files (``questions_heldout_*.json``) are test only;
the training-set files (``questions_train_*.json``, over fixtures/train-agents) are train only, so
their strata are exempt from the test share below.

The procedure that drew it, and that assigns a question added later (``--write`` fills in every
missing ``split`` and changes no recorded one):

1. Strata are (corpus, class).
2. Within a stratum, questions are put in the order of ``sha256(SEED + ":" + id)`` (hex), so the
   order depends on the ids alone, not on file order or on the other questions.
3. Drawing a stratum from scratch: the first ``ceil(TEST_SHARE * n)`` in that order are test, the
   rest train. So every stratum has a test share of at least 40 %; a stratum of one question is test.
4. A question added to a stratum that already has recorded splits goes to test when its hash
   (as a fraction of 2**256) is below 0.5, or when the stratum's test share would drop below
   ``TEST_SHARE`` with it in train; else to train. New questions are placed in hash order, one by
   one, so adding questions never moves a recorded one.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
from pathlib import Path
from typing import Any

from tests.eval.corpora import HERE

SEED = "journal-index-eval-split-v1"
TEST_SHARE = 0.4
SPLITS = ("train", "test")
HELDOUT_PREFIX = "questions_heldout_"
TRAIN_ONLY_PREFIX = "questions_train_"


def question_files() -> list[Path]:
    return sorted(HERE.glob("questions*.json"))


def is_heldout(path: Path) -> bool:
    return path.name.startswith(HELDOUT_PREFIX)


def is_train_only(path: Path) -> bool:
    return path.name.startswith(TRAIN_ONLY_PREFIX)


def id_hash(qid: str) -> str:
    return hashlib.sha256(f"{SEED}:{qid}".encode()).hexdigest()


def stratum(q: dict[str, Any]) -> tuple[str, str]:
    return q.get("corpus", "fixtures"), q["category"]


def share_of_test(splits: list[str]) -> float:
    return splits.count("test") / len(splits) if splits else 1.0


def assign(questions: list[dict[str, Any]]) -> dict[str, str]:
    """The split of every question without one (id -> split); recorded splits are kept as they are."""
    by_stratum: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for q in questions:
        by_stratum.setdefault(stratum(q), []).append(q)
    new: dict[str, str] = {}
    for members in by_stratum.values():
        recorded = [q["split"] for q in members if q.get("split") in SPLITS]
        missing = sorted((q for q in members if q.get("split") not in SPLITS), key=lambda q: id_hash(q["id"]))
        if not recorded:  # a stratum drawn from scratch
            k = math.ceil(TEST_SHARE * len(missing))
            for i, q in enumerate(missing):
                new[q["id"]] = "test" if i < k else "train"
            continue
        splits = list(recorded)
        for q in missing:
            coin = int(id_hash(q["id"]), 16) / 2**256
            split = "test" if coin < 0.5 or share_of_test([*splits, "train"]) < TEST_SHARE else "train"
            splits.append(split)
            new[q["id"]] = split
    return new


def problems(questions_by_file: dict[Path, list[dict[str, Any]]]) -> list[str]:
    """What breaks the split's rules: a question without a split, a held-out question outside
    test, a training-set question outside train, a stratum of two or more questions (training-set
    files aside) whose test share is below TEST_SHARE."""
    found: list[str] = []
    strata: dict[tuple[str, str], list[str]] = {}
    for path, questions in questions_by_file.items():
        for q in questions:
            split = q.get("split")
            if split not in SPLITS:
                found.append(f"{q.get('id', '?')} ({path.name}): no split (run python -m tests.eval.split --write)")
                continue
            if is_heldout(path) and split != "test":
                found.append(f"{q['id']} ({path.name}): a held-out question must be in test, not {split!r}")
            if is_train_only(path):
                if split != "train":
                    found.append(f"{q['id']} ({path.name}): a training-set question must be in train, not {split!r}")
                continue  # a training set has no test share to keep
            strata.setdefault(stratum(q), []).append(split)
    for (corpus, cls), splits in sorted(strata.items()):
        if len(splits) >= 2 and share_of_test(splits) < TEST_SHARE:
            found.append(f"stratum {corpus}/{cls}: test share {share_of_test(splits):.2f} < {TEST_SHARE} "
                         f"({splits.count('test')} of {len(splits)})")
    return found


def load_files() -> dict[Path, list[dict[str, Any]]]:
    return {path: json.loads(path.read_text("utf-8")) for path in question_files()}


def write(questions_by_file: dict[Path, list[dict[str, Any]]]) -> int:
    """Record the split of every question lacking one, in its file (same layout); how many were set."""
    everything = [q for qs in questions_by_file.values() for q in qs]
    new = assign(everything)
    for path, questions in questions_by_file.items():
        changed = False
        for q in questions:
            if q["id"] in new:
                q["split"] = "test" if is_heldout(path) else "train" if is_train_only(path) else new[q["id"]]
                changed = True
        if changed:
            old = path.read_text("utf-8")
            tail = "\n" if old.endswith("\n") else ""
            path.write_text(json.dumps(questions, indent=1, ensure_ascii=False) + tail, "utf-8")
    return len(new)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="record a split for every question lacking one")
    args = parser.parse_args(argv)
    by_file = load_files()
    if args.write:
        print(f"recorded the split of {write(by_file)} questions")
    strata: dict[tuple[str, str], list[str]] = {}
    for qs in by_file.values():
        for q in qs:
            strata.setdefault(stratum(q), []).append(str(q.get("split")))
    print(f"{'corpus':<16}{'class':<17}{'n':>4}{'test':>6}{'share':>7}")
    for (corpus, cls), splits in sorted(strata.items()):
        print(f"{corpus:<16}{cls:<17}{len(splits):>4}{splits.count('test'):>6}{share_of_test(splits):>7.2f}")
    found = problems(by_file)
    print("\n".join(found) or "every question has a split; every stratum keeps its test share")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
