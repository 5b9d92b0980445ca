"""Throughput of journal_index.redact on journal text and on hostile inputs, per regex engine.

    python benchmarks/redact_bench.py            # all engines installed (re2, re, regex)
    python benchmarks/redact_bench.py --quick    # smaller adversarial inputs

Journal text is what the indexer redacts: the Entry.text of every line of fixtures/sessions,
repeated to about 8 MB. The adversarial inputs are 10 MB lines built to make a backtracking engine
rescan (runs of one character, repeated key names, unterminated prefixes).
"""

from __future__ import annotations

import argparse
import importlib.util
import multiprocessing as mp
import random
import string
import time
from collections.abc import Callable
from pathlib import Path

from journal_index.formats import Entry, pi
from journal_index.redact import Engine

ROOT = Path(__file__).resolve().parent.parent
MB = 1_000_000


def journal_texts() -> list[str]:
    texts: list[str] = []
    for path in sorted((ROOT / "fixtures" / "sessions").rglob("*.jsonl")):
        for offset, line in enumerate(path.read_bytes().splitlines()):
            entry = pi.parse_line(line, offset)
            if isinstance(entry, Entry) and entry.text:
                texts.append(entry.text)
    return texts


def adversarial(size: int) -> dict[str, str]:
    b64 = "QWxhZGRpbjpvcGVuIHNlc2FtZQ+/="
    cases = {
        "aaaa": "a" * size,
        "====": "=" * size,
        "::::": ":" * size,
        "----": "-" * size,
        "base64": (b64 * (size // len(b64) + 1))[:size],
        "password=": ("password=" * (size // 9 + 1))[:size],
        "token: ": ("token: " * (size // 7 + 1))[:size],
        "password=$": ("password=$" * (size // 10 + 1))[:size],
        "eyJ-": ("eyJ-" * (size // 4 + 1))[:size],
        "-----BEGIN": ("-----BEGIN RSA PRIVATE KEY-----\n" * (size // 32 + 1))[:size],
        "://a:": "://a:" + "b" * size,
        "mysql ": ("mysql " * (size // 6 + 1))[:size],
        "ghp_": ("ghp_" * (size // 4 + 1))[:size],
        "a_AAAA": ("ab_" + "Ab1" * 20 + "-") * (size // 64),
        "dense real hits": dense_hits(size),
    }
    return cases


def dense_hits(size: int) -> str:
    """A real secret every ~30 bytes, all different (so no verdict is reused)."""
    rnd = random.Random(7)
    alphabet = string.ascii_letters + string.digits
    parts: list[str] = []
    total = 0
    while total < size:
        part = "password=" + "".join(rnd.choice(alphabet) for _ in range(14)) + "7 token: x9" + "\n"
        parts.append(part)
        total += len(part)
    return "".join(parts)[:size]


def _timed(engine: str, text: str, queue: mp.Queue) -> None:
    fn = Engine(engine).redact
    t = time.perf_counter()
    fn(text)
    queue.put(time.perf_counter() - t)


def timed_in_child(engine: str, text: str, limit: float) -> float | None:
    """Seconds to redact ``text``, or None if it took longer than ``limit`` (the child is killed)."""
    queue: mp.Queue = mp.Queue()
    child = mp.Process(target=_timed, args=(engine, text, queue))
    child.start()
    child.join(limit)
    if child.is_alive():
        child.kill()
        child.join()
        return None
    return queue.get()


def rate(fn: Callable[[str], str], texts: list[str], total: int, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        for text in texts:
            fn(text)
        best = min(best, time.perf_counter() - t)
    return total / MB / best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="1 MB adversarial inputs instead of 10 MB")
    ap.add_argument("--engines", default="re2,re,regex")
    ap.add_argument("--limit", type=float, default=20.0, help="seconds before an adversarial run is killed")
    args = ap.parse_args()

    texts = journal_texts()
    one = sum(len(t.encode()) for t in texts)
    reps = max(1, 8 * MB // one)
    corpus = texts * reps
    total = one * reps
    blob = "\n".join(texts)
    print(f"journal text: {len(texts)} entries, {one / MB:.2f} MB, x{reps} = {total / MB:.1f} MB")

    engines = [e for e in args.engines.split(",") if e in ("re2", "re") or importlib.util.find_spec(e)]
    size = MB if args.quick else 10 * MB
    for name in engines:
        engine = Engine(name)

        def fn(text: str, engine: Engine = engine) -> str:
            return engine.redact(text)[0]

        print(f"\n== {name}")
        if name == "re2":
            print(f"  journal entries, one call each: {rate(fn, corpus, total):8.1f} MB/s")
            print(f"  journal as one text:            {rate(fn, [blob] * reps, total, 1):8.1f} MB/s")
        else:
            # Backtracking engines are too slow on this table for the full corpus: one pass over
            # the first ~0.5 MB of entries.
            sample, size_s = [], 0
            for text in texts:
                sample.append(text)
                size_s += len(text.encode())
                if size_s > MB // 2:
                    break
            print(f"  journal entries, one call each: {rate(fn, sample, size_s, 1):8.1f} MB/s (0.5 MB sample)")
        for label, text in adversarial(size).items():
            # Backtracking engines can take hours on some of these: each runs in a child process
            # that is killed at the limit.
            dt = timed_in_child(name, text, args.limit)
            shown = f"{dt:7.2f} s" if dt is not None else f"> {args.limit:.0f} s (killed)"
            print(f"  adversarial {label!r:18} {len(text) / MB:5.1f} MB: {shown}")


if __name__ == "__main__":
    main()
