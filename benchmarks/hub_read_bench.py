"""The hub's reads in journal order, beside the local ones measured in the same run.

    python -m benchmarks.hub_read_bench [--size 10MB] [--reads 200] [--context 5] [--out DIR]

1. a generated corpus (``benchmarks.corpus``, seed 1) indexed locally, pushed to a real
   PostgreSQL hub (tests/hub/pg_server.py) from one host;
2. the same entries (a seeded sample) read four ways, warm: locally in their place
   (``query.conversation.read_context``: verified re-reads from the journals), on the hub one entry
   (``hub.search.read``), on the hub in their place (``hub.read.read_context``), and a page of their
   session on the hub (``hub.read.read_session``);
3. p50/p95 of each, and the hub's as ratios against the local read in its place and against the
   hub's one-entry read.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from benchmarks.hub_bench import MEMBER, _percentile, _push_as, _setup_hub
from benchmarks.indexed_corpus import indexed_corpus
from journal_index.data import read_sql
from journal_index.hub.read import read_context as hub_context
from journal_index.hub.read import read_session as hub_session
from journal_index.hub.search import HubScope, find_sessions
from journal_index.hub.search import read as hub_read
from journal_index.query.conversation import read_context as local_context
from journal_index.query.scope import Scope
from tests.hub.pg_server import start_server

HOST = "bench-0"


def _times(run: Callable[[str], Any], ids: list[str]) -> dict[str, float]:
    for entry_id in ids[:5]:  # warm caches
        run(entry_id)
    times = []
    for entry_id in ids:
        started = time.perf_counter()
        answer = run(entry_id)
        times.append((time.perf_counter() - started) * 1000)
        assert answer["status"] == "ok", answer
    return {"p50": round(statistics.median(times), 2), "p95": round(_percentile(times, 0.95), 2)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.hub_read_bench", description=__doc__.split("\n")[0])
    ap.add_argument("--size", default="10MB", help="generated corpus size (default 10MB)")
    ap.add_argument("--reads", type=int, default=200)
    ap.add_argument("--context", type=int, default=5, help="entries before and after (default 5)")
    ap.add_argument("--out", type=Path, default=None, help="where the corpus and index go (default: a temp folder)")
    args = ap.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="hub-read-bench-"))
    sessions, db, store = indexed_corpus(out, args.size)
    every = read_sql.newest_hits(store, ("1", ()), 10_000_000)
    # Entry ids one journal holds only (a copy elsewhere would make the read ambiguous).
    seen: dict[str, int] = {}
    for hit in every:
        seen[hit.entry_id] = seen.get(hit.entry_id, 0) + 1
    sample = random.Random(1).sample([h for h in every if seen[h.entry_id] == 1], args.reads)
    ids = [h.entry_id for h in sample]
    print(f"corpus: {len(every)} entries; {len(ids)} reads, context {args.context}", file=sys.stderr)

    server = start_server()
    figures: dict[str, Any] = {"entries": len(every), "reads": len(ids), "context": args.context}
    try:
        with psycopg.connect(server.url(), autocommit=True) as conn:
            conn.execute("CREATE DATABASE hub_read")
        _setup_hub(server.url("hubadmin", "hub_read"))
        url = server.url(MEMBER, "hub_read")
        _push_as((db, url, HOST))
        with psycopg.connect(server.url("hubadmin", "hub_read"), autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE")
        everywhere = Scope("global")
        figures["localContextMs"] = _times(
            lambda i: local_context(store, i, everywhere, args.context, roots=[sessions]), ids)
        hub_scope = HubScope("global")
        with psycopg.connect(url) as conn:
            figures["hubReadMs"] = _times(lambda i: hub_read(conn, i, hub_scope, HOST), ids)
            figures["hubContextMs"] = _times(lambda i: hub_context(conn, i, hub_scope, HOST, args.context), ids)
            scopes = {}  # each entry's session on the hub, found before the clock runs
            for hit in sample:
                host, journal, _, session_id = find_sessions(conn, f"{HOST}:{hit.format}:{hit.session_id}")[0]
                scopes[hit.entry_id] = HubScope("session", session=(host, journal), session_id=session_id)
            figures["hubSessionPageMs"] = _times(lambda i: hub_session(conn, scopes[i]), ids)
        for name in ("hubContextMs", "hubSessionPageMs"):
            figures[name.replace("Ms", "OverLocalContext")] = {
                k: round(figures[name][k] / max(1e-9, figures["localContextMs"][k]), 2) for k in ("p50", "p95")}
        figures["hubContextOverHubRead"] = {
            k: round(figures["hubContextMs"][k] / max(1e-9, figures["hubReadMs"][k]), 2) for k in ("p50", "p95")}
    finally:
        store.close()
        server.stop("immediate")
        server.remove()
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
