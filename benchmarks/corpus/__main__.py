"""python -m benchmarks.corpus: generate a corpus, or measure the mix of one (see the package docstring)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import orjson

import benchmarks.corpus
from benchmarks.corpus.mix import TARGET_LINE_LENGTHS, TARGET_MIX, measure_corpus
from benchmarks.corpus.sessions import generate
from benchmarks.corpus.units import parse_size

DESCRIPTION = (benchmarks.corpus.__doc__ or "").split("\n")[0]


def format_table(stats: dict[str, Any]) -> str:
    out = []
    if "size_requested" in stats:
        out.append(
            f"wrote {stats['bytes']:,} bytes (requested {stats['size_requested']:,}) "
            f"in {stats['files']} files, "
            f"{stats['projects']} projects, {stats['entries']:,} entries; "
            f"{stats['elapsed_s']} s = {stats['mb_per_s']} MB/s"
        )
    else:
        out.append(f"{stats['bytes']:,} bytes in {stats['files']} files, {stats['lines']:,} lines")
    out.append(f"{'category':16} {'bytes':>14} {'share':>8} {'target':>8}")
    for cat, v in stats["categories"].items():
        out.append(f"{cat:16} {v['bytes']:>14,} {v['share'] * 100:7.2f}% {TARGET_MIX[cat] * 100:7.2f}%")
    ll = stats["line_length"]
    out.append(
        "line length      "
        + "  ".join(f"{k}={ll[k]:,}" for k in ("p50", "p90", "p99", "max"))
        + "   (target "
        + "  ".join(f"{k}={v:,}" for k, v in TARGET_LINE_LENGTHS.items())
        + ")"
    )
    if stats.get("counts"):
        out.append("counts           " + ", ".join(f"{k} {v}" for k, v in stats["counts"].items()))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.corpus", description=DESCRIPTION)
    ap.add_argument("--size", help="output size, e.g. 500KB, 50MB, 1GB, 2.5GB (decimal) or 64MiB (binary)")
    ap.add_argument("--out", type=Path, help="output directory (journals go to OUT/sessions)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="print the statistics as JSON")
    ap.add_argument("--measure", type=Path, metavar="DIR", help="only print the mix of an existing corpus")
    args = ap.parse_args(argv)
    if args.measure:
        stats = measure_corpus(args.measure)
    else:
        if not args.size or not args.out:
            print("corpus: error: --size and --out are required", file=sys.stderr)
            return 2
        try:
            size = parse_size(args.size)
        except ValueError as exc:
            print(f"corpus: error: {exc}", file=sys.stderr)
            return 2
        try:
            stats = generate(args.out, size, args.seed)
        except FileExistsError as exc:
            print(f"corpus: error: {exc}", file=sys.stderr)
            return 2
    if args.json:
        print(orjson.dumps(stats, option=orjson.OPT_INDENT_2).decode())
    else:
        print(format_table(stats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
