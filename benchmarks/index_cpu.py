"""A first pass over a corpus, in this process and without workers, in CPU time as well as
wall time: comparable between two checkouts on a busy machine (the figures of
``benchmarks.run`` are wall time, which there measures the other work as much as ours).

    python -m benchmarks.index_cpu --sessions DIR [--rounds 3] [--json FILE]

Each round indexes every journal under DIR into a new index in a temporary folder. Run it under
each checkout (``PYTHONPATH=<checkout>``), rounds of the two taking turns, and compare the
medians; ``benchmarks.run --out DIR`` leaves a generated corpus in DIR/sessions.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from journal_index.data.store import open_store
from journal_index.indexing.indexer import discover, index_files


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", required=True, type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    paths = discover([args.sessions])
    size = sum(os.path.getsize(p) for p in paths)
    cpu: list[float] = []
    wall: list[float] = []
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory() as tmp:
            store = open_store(str(Path(tmp) / "index.db"))
            c0, w0 = time.process_time(), time.perf_counter()
            report = index_files(store, paths, workers=0)
            cpu.append(time.process_time() - c0)
            wall.append(time.perf_counter() - w0)
            store.conn.close()
            assert not report.errors, report.errors[:3]
    figures = {"mb": size / 1e6, "cpu_p50_s": statistics.median(cpu), "wall_p50_s": statistics.median(wall),
               "cpu_mb_per_s": size / 1e6 / statistics.median(cpu)}
    print(f"{figures['mb']:.1f} MB in {len(paths)} journals: cpu p50 {figures['cpu_p50_s']:.2f} s "
          f"({figures['cpu_mb_per_s']:.2f} MB/s)  wall p50 {figures['wall_p50_s']:.2f} s  "
          f"cpu rounds {', '.join(f'{c:.2f}' for c in cpu)}")
    if args.json:
        args.json.write_text(json.dumps({"pid": os.getpid(), "figures": figures}, indent=1) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
