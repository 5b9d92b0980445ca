"""Warm ``query.search`` per query, in CPU time as well as wall time: comparable between two
checkouts on a busy machine (wall time there measures the other work as much as ours).

    python -m benchmarks.search_cpu --db INDEX --sessions DIR [--queries 60] [--rounds 3] [--json FILE]

Queries: ``benchmarks.queries.build_queries`` (seeded). One untimed round, then ``--rounds``
timed rounds over the queries in project and global scope. Run it under each checkout
(``PYTHONPATH=<checkout>``) against the same INDEX and compare the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.queries import build_queries
from journal_index.data.store import open_store
from journal_index.query import Filters, search
from journal_index.query.scope import resolve_scope


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", required=True, type=Path)
    ap.add_argument("--sessions", required=True, type=Path)
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "index.db"
        shutil.copyfile(args.db, copy)
        store = open_store(str(copy))
        queries = build_queries(store, args.sessions, args.queries, args.seed)
        cwd = str(store.value("SELECT cwd FROM files GROUP BY cwd ORDER BY count(*) DESC LIMIT 1"))
        out: dict[str, dict[str, float]] = {}
        for scope in ("project", "global"):
            filters = Filters(resolve_scope(store, scope, cwd))
            for q in queries:
                search(store, q.text, filters, limit=9)
            cpu: list[float] = []
            wall: list[float] = []
            for _ in range(args.rounds):
                for q in queries:
                    c0, w0 = time.process_time(), time.perf_counter()
                    search(store, q.text, filters, limit=9)
                    cpu.append(time.process_time() - c0)
                    wall.append(time.perf_counter() - w0)
            out[scope] = {"cpu_p50_ms": statistics.median(cpu) * 1000, "cpu_p95_ms": pct(cpu, 95) * 1000,
                          "wall_p50_ms": statistics.median(wall) * 1000, "wall_p95_ms": pct(wall, 95) * 1000}
            print(f"{scope:<8} cpu p50 {out[scope]['cpu_p50_ms']:6.2f} ms  p95 {out[scope]['cpu_p95_ms']:6.2f} ms  "
                  f"wall p50 {out[scope]['wall_p50_ms']:6.2f} ms  p95 {out[scope]['wall_p95_ms']:6.2f} ms")
        store.conn.close()
    if args.json:
        args.json.write_text(json.dumps({"pid": os.getpid(), "figures": out}, indent=1) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
