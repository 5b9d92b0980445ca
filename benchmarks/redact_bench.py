"""Throughput of journal_index.redact on journal text and hostile inputs, and what each rule costs.

    python3 /work/shared/tools/scale_corpus.py --unique /tmp/redact-corpus 50 SRC_DIR...
    python benchmarks/redact_bench.py --corpus /tmp/redact-corpus   # message texts of those journals
    python benchmarks/redact_bench.py                               # fixtures/sessions, repeated to ~8 MB
    python benchmarks/redact_bench.py --rules                       # + the finder's cost, rule by rule
    python benchmarks/redact_bench.py --quick                       # 1 MB hostile inputs, not 10 MB

Journal text is what the indexer redacts: the Entry.text of every line (tool results of real source
code dominate). The machine is noisy, so every time is also given against baselines measured in the
same run, on the same texts: ``find``, bytes.find over the encoded texts (touching every byte once),
and ``floor``, RE2 scanning them for a two-literal alternation (the least any DFA scan costs, per call
and per byte). A first pass over new text is slower than later ones: RE2 builds its DFA lazily, state
by state, so ``cold`` (a fresh engine) and ``warm`` (the same engine again) are both shown.

The hostile inputs are 10 MB texts built to make a backtracking engine rescan (runs of one character,
repeated key names, unterminated prefixes); each runs in a child process killed at --limit. For
comparison, Python's re (and regex, if installed) run the same table as one alternation.
"""

from __future__ import annotations

import argparse
import importlib.util
import multiprocessing as mp
import random
import re
import string
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import re2

from journal_index import redact as R
from journal_index.formats import Entry, pi
from journal_index.redaction.rules import KV_TAIL, TOK_HEAD
from journal_index.redaction.table import finder_pattern, plain

ROOT = Path(__file__).resolve().parent.parent
MB = 1_000_000
clock = time.process_time  # CPU time: less disturbed by other processes than wall time


def journal_texts(folder: Path) -> list[str]:
    texts: list[str] = []
    for path in sorted(folder.rglob("*.jsonl")):
        for offset, line in enumerate(path.read_bytes().splitlines()):
            entry = pi.parse_line(line, offset)
            if isinstance(entry, Entry) and entry.text:
                texts.append(entry.text)
    return texts


def adversarial(size: int) -> dict[str, str]:
    b64 = "QWxhZGRpbjpvcGVuIHNlc2FtZQ+/="
    return {
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
        "mysql -p$P ": ("mysql -p$P " * (size // 11 + 1))[:size],
        "ghp_": ("ghp_" * (size // 4 + 1))[:size],
        "a_AAAA": ("ab_" + "Ab1" * 20 + "-") * (size // 64),
        "dense real hits": dense_hits(size),
    }


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


# --- baselines and scans -------------------------------------------------------------------------


def _options() -> re2.Options:
    opts = re2.Options()
    opts.encoding = re2.Options.Encoding.LATIN1
    opts.max_mem = 64 << 20
    opts.log_errors = False
    return opts


def compile_fresh(pattern: str) -> re2._re2.RE2:
    """An RE2 program with an empty DFA (re2.compile would hand back a cached, warm one)."""
    rx = re2._re2.RE2(pattern.encode(), _options())
    if not rx.ok():
        raise ValueError(rx.error())
    return rx


def scan(rx: re2._re2.RE2, bufs: Sequence[bytes]) -> float:
    """Seconds to find every match of ``rx`` in ``bufs``, as the engine's finder does."""
    anchor = re2._Anchor.UNANCHORED
    t = clock()
    for buf in bufs:
        pos, end = 0, len(buf)
        while True:
            s, e = rx.Match(anchor, buf, pos, end)[0]
            if s < 0:
                break
            pos = e if e > s else s + 1
    return clock() - t


def timed(fn: Callable[[], object], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = clock()
        fn()
        best = min(best, clock() - t)
    return best


def line(label: str, seconds: float, size: int, floor: float) -> None:
    print(f"  {label:42} {size / MB / seconds:8.1f} MB/s  {seconds / floor:6.2f} x floor")


# --- the finder, rule by rule ----------------------------------------------------------------------


def rule_costs(bufs: Sequence[bytes], size: int, floor: float) -> None:
    """What rules add to the finder: the whole table against the table without them, cold (a
    fresh DFA, one pass) and warm (the same DFA again), and the rules alone against the floor."""
    rules = list(R.RULES)

    def cold_warm(subset: Sequence[R.Rule]) -> tuple[float, float]:
        rx = compile_fresh(finder_pattern(subset))
        return scan(rx, bufs), scan(rx, bufs)

    runs = [cold_warm(rules) for _ in range(3)]
    full_cold, full_warm = min(c for c, _ in runs), min(w for _, w in runs)
    spread = max(c for c, _ in runs) / full_cold - 1
    print(f"\n== finder, rule by rule ({size / MB:.1f} MB)")
    print(f"  whole table: cold {size / MB / full_cold:.0f} MB/s ({full_cold / floor:.1f} x floor), "
          f"warm {size / MB / full_warm:.0f} MB/s ({full_warm / floor:.1f} x floor); "
          f"cold runs spread {spread:.0%}")
    families = {
        "name=value rules (_kv)": [r for r in rules if r.regex.endswith(KV_TAIL)],
        "provider tokens (\\b-anchored)": [r for r in rules if r.regex.startswith(TOK_HEAD)],
        "counting shapes (prefixed, azure_ad, mailchimp, discord_bot)": [
            r for r in rules if r.kind in ("prefixed_token", "azure_ad_client_secret", "mailchimp_api_key",
                                           "discord_bot_token")],
    }
    print("  share of the whole table's time saved without a family, and the family alone:")
    for name, family in families.items():
        cold, warm = cold_warm([r for r in rules if r not in family])
        alone = scan(compile_fresh(finder_pattern(family)), bufs)
        print(f"    {name:62} cold {1 - cold / full_cold:4.0%}  warm {1 - warm / full_warm:4.0%}"
              f"   alone {alone / floor:4.1f} x floor")
    rows = []
    for i, rule in enumerate(rules):
        without = min(scan(compile_fresh(finder_pattern(rules[:i] + rules[i + 1 :])), bufs) for _ in range(2))
        alone = scan(compile_fresh(finder_pattern([rule])), bufs)
        rows.append((1 - without / full_cold, alone / floor, i, rule.kind))
    alone_all = [a for _, a, _, _ in rows]
    print(f"  every rule alone: {min(alone_all):.1f} to {max(alone_all):.1f} x floor; the cost is in the mix.")
    print("  the cold share saved without one rule, largest first (below the spread above is noise):")
    for share, _, i, kind in sorted(rows, reverse=True)[:15]:
        print(f"    #{i:<3} {kind:28} {share:5.0%}")


# --- hostile inputs, and the backtracking engines ---------------------------------------------------


def _redact_in_child(engine: str, text: str, queue: mp.Queue) -> None:
    if engine == "re2":
        fn: Callable[[str], object] = R.Engine().redact
    else:  # the table as one alternation in a backtracking engine, searched to the end
        rx = importlib.import_module(engine).compile("|".join(f"(?:{plain(r.regex)})" for r in R.RULES), re.ASCII)

        def fn(text: str) -> object:
            return sum(1 for _ in rx.finditer(text))

    t = time.perf_counter()
    fn(text)
    queue.put(time.perf_counter() - t)


def timed_in_child(engine: str, text: str, limit: float) -> float | None:
    """Seconds to redact ``text``, or None if it took longer than ``limit`` (the child is killed)."""
    queue: mp.Queue = mp.Queue()
    child = mp.Process(target=_redact_in_child, args=(engine, text, queue))
    child.start()
    child.join(limit)
    if child.is_alive():
        child.kill()
        child.join()
        return None
    return queue.get()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", type=Path, help="a folder of journals (default: fixtures/sessions, repeated)")
    ap.add_argument("--rules", action="store_true", help="also measure the finder rule by rule (slow)")
    ap.add_argument("--quick", action="store_true", help="1 MB hostile inputs instead of 10 MB")
    ap.add_argument("--limit", type=float, default=20.0, help="seconds before a hostile run is killed")
    args = ap.parse_args()

    texts = journal_texts(args.corpus or ROOT / "fixtures" / "sessions")
    if not args.corpus:
        one = sum(len(t.encode()) for t in texts)
        texts = texts * max(1, 8 * MB // one)
    bufs = [t.encode("utf-8", "surrogatepass") for t in texts]
    size = sum(len(b) for b in bufs)
    print(f"journal text: {len(texts)} entries, {size / MB:.1f} MB ({args.corpus or 'fixtures, repeated'})")

    find = timed(lambda: [b.find(b"\x00\x01") for b in bufs])
    floor = min(scan(compile_fresh("zq|qz"), bufs) for _ in range(3))
    print("\n== baselines")
    print(f"  find  (bytes.find, every byte once)        {size / MB / find:8.1f} MB/s  {find / floor:6.2f} x floor")
    print(f"  floor (RE2, two literals)                  {size / MB / floor:8.1f} MB/s")

    print("\n== redact(), one call per entry")
    engine = R.Engine()
    t = clock()
    for text in texts:
        engine.redact(text)
    line("cold: a fresh engine, first pass", clock() - t, size, floor)
    line("warm: the same engine again", timed(lambda: [engine.redact(x) for x in texts]), size, floor)
    print("  of which:")
    line("  encoding to UTF-8", timed(lambda: [x.encode("utf-8", "surrogatepass") for x in texts]), size, floor)
    finder = compile_fresh(finder_pattern(R.RULES))
    line("  finder alone, cold", scan(finder, bufs), size, floor)
    line("  finder alone, warm", scan(finder, bufs), size, floor)

    if args.rules:
        rule_costs(bufs, size, floor)

    hostile = adversarial(MB if args.quick else 10 * MB)
    engines = ["re2"] + [e for e in ("re", "regex") if e == "re" or importlib.util.find_spec(e)]
    for name in engines:
        print(f"\n== {name}" + ("" if name == "re2" else ": the table as one alternation, for comparison"))
        if name != "re2":
            sample, sample_size = [], 0
            for text in texts:
                sample.append(text)
                sample_size += len(text.encode())
                if sample_size > MB // 2:
                    break
            dt = timed_in_child(name, "\n".join(sample), args.limit)
            shown = f"{sample_size / MB / dt:8.1f} MB/s" if dt else f"> {args.limit:.0f} s (killed)"
            print(f"  journal text, 0.5 MB sample: {shown}")
        for label, text in hostile.items():
            dt = timed_in_child(name, text, args.limit)
            shown = f"{dt:7.2f} s" if dt is not None else f"> {args.limit:.0f} s (killed)"
            print(f"  hostile {label!r:18} {len(text) / MB:5.1f} MB: {shown}")


if __name__ == "__main__":
    main()
