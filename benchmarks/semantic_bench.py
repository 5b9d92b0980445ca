"""What the semantic layer costs, against lexical search measured in the same run.

    python -m benchmarks.semantic_bench [--size 50MB] [--embed-seconds 60] [--repeat 5] [--json OUT]

Generates a corpus (benchmarks/corpus.py), indexes it, then measures: model load (the encoder
queries use, and the background embedding's own), embedding speed over the corpus's own said
entries for ``--embed-seconds`` (entries/s, on the one core the background takes), bytes per
vector in the index (dbstat), query embedding time, and warm search latency (p50/p99) in each of
the layer's modes (off, on, gated), with the ratio of each to lexical search (off). Entries the
time budget left unembedded get a copy of an embedded entry's vector (said so in the output):
latency depends on how many vectors there are, not on their values. ``--embed-all`` embeds every
entry instead (slow: see the figures).
Needs the `semantic` extra.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.corpus import generate, parse_size
from benchmarks.queries import build_queries
from benchmarks.run import pct, pick_project
from journal_index.data.store import Store, open_store
from journal_index.indexing.indexer import discover, index_files
from journal_index.query import Filters, search
from journal_index.semantic import background as semantic
from journal_index.semantic import embedder, fusion

# Questions as a person asks weeks later (most hold words no entry has, so the gate opens).
QUESTIONS = ["why did the tests keep failing after the refactor", "what did we decide about the configuration format",
             "how did we fix the slow startup", "what was wrong with the parser",
             "which approach did we pick for caching", "what made the build break yesterday",
             "where do the settings get loaded", "what did the user ask to rename"]


def _timed(fn: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    out = fn()
    return time.perf_counter() - started, out


def _fill(store: Store) -> int:
    """A copy of some embedded entry's vector for each entry still without one (latency only)."""
    blobs = [r[0] for r in store.rows("SELECT vector FROM entry_vectors WHERE vector IS NOT NULL LIMIT 500")]
    if not blobs:
        return 0
    rows = [r[0] for r in store.rows("SELECT e.rowid FROM entries e LEFT JOIN entry_vectors v ON v.entry = e.rowid "
                                     "WHERE v.entry IS NULL AND e.kind IN ('user', 'assistant', 'compaction', "
                                     "'branch_summary')")]
    with store.write():
        for i, rowid in enumerate(rows):
            store.conn.execute("INSERT INTO entry_vectors(entry, vector) VALUES (?, ?)", (rowid, blobs[i % len(blobs)]))
    return len(rows)


def _latency(store: Store, queries: list[str], filters: Filters, mode: str, repeat: int) -> dict[str, Any]:
    os.environ[fusion.ENV] = "off"
    opened = sum(1 for q in queries if fusion.words_fall_short(search(store, q, filters, limit=10).hits, 10))
    os.environ[fusion.ENV] = mode
    for q in queries:  # untimed round: caches, first-use costs (the vectors' copy, the model)
        search(store, q, filters, limit=10)
    samples = [_timed(lambda q=q: search(store, q, filters, limit=10))[0] for _ in range(repeat) for q in queries]
    share = 0.0 if mode == "off" else 1.0 if mode == "on" else opened / len(queries)
    return {"p50_ms": pct(samples, 50) * 1000, "p99_ms": pct(samples, 99) * 1000, "n": len(samples),
            "gate_open_share": share}


def run(size: int, embed_seconds: float, repeat: int, embed_all: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"size_bytes": size, "cores": os.cpu_count(), "load": os.getloadavg()}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        generate(work, size)
        sessions = work / "sessions"
        store = open_store(str(work / "index.db"))
        seconds, _ = _timed(lambda: index_files(store, discover([sessions])))
        out["index_seconds"] = seconds
        out["entries"] = int(store.value("SELECT count(*) FROM entries"))
        out["said_entries"] = semantic.pending_count(store)
        out["query_model_load_s"], query_model = _timed(embedder.encoder)
        out["bulk_model_load_s"], _ = _timed(embedder.bulk_encoder)
        report = semantic.embed_pending(store, float("inf") if embed_all else embed_seconds)
        out["embedding"] = report.as_json()
        out["entries_per_second"] = (report.embedded + report.empty) / max(report.seconds, 1e-9)
        out["vectors_per_second"] = report.embedded / max(report.seconds, 1e-9)
        stat = dict(store.rows("SELECT name, sum(pgsize) FROM dbstat WHERE name IN "
                               "('entry_vectors', 'sqlite_autoindex_entry_vectors_1') GROUP BY name"))
        rows = int(store.value("SELECT count(*) FROM entry_vectors"))
        out["bytes_per_vector_row"] = sum(stat.values()) / max(rows, 1)
        out["filled_with_copies"] = _fill(store)
        out["vectors"] = int(store.value("SELECT count(*) FROM entry_vectors WHERE vector IS NOT NULL"))
        out["bytes_per_vector_row_filled"] = sum(dict(store.rows(
            "SELECT name, sum(pgsize) FROM dbstat WHERE name IN ('entry_vectors', 'sqlite_autoindex_entry_vectors_1') "
            "GROUP BY name")).values()) / max(int(store.value("SELECT count(*) FROM entry_vectors")), 1)
        q_samples = []
        for q in QUESTIONS * 5:
            q_samples.append(_timed(lambda q=q: query_model.query(q))[0])
        out["query_embedding_ms_p50"] = pct(q_samples, 50) * 1000
        cwd, scope = pick_project(store)
        lexical_queries = [q.text for q in build_queries(store, sessions, n=40)]
        out["latency"] = {}
        for label, queries in (("benchmark queries", lexical_queries), ("questions", QUESTIONS)):
            for where, filters in (("global", Filters(_global(store))), (f"project {cwd}", Filters(scope))):
                block = {m: _latency(store, queries, filters, m, repeat) for m in fusion.MODES}
                for m in fusion.MODES[1:]:
                    block[m]["ratio_p50"] = block[m]["p50_ms"] / block["off"]["p50_ms"]
                    block[m]["ratio_p99"] = block[m]["p99_ms"] / block["off"]["p99_ms"]
                out["latency"][f"{label}, {where}"] = block
        os.environ.pop(fusion.ENV, None)
        store.conn.close()
    return out


def _global(store: Store) -> Any:
    from journal_index.query.scope import resolve_scope

    return resolve_scope(store, "global")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="50MB")
    parser.add_argument("--embed-seconds", type=float, default=60.0)
    parser.add_argument("--embed-all", action="store_true")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", metavar="OUT")
    args = parser.parse_args(argv)
    if not embedder.installed():
        print("semantic_bench: the semantic extra is not installed: pip install -e '.[semantic]'", file=sys.stderr)
        return 2
    out = run(parse_size(args.size), args.embed_seconds, args.repeat, args.embed_all)
    print(f"corpus {args.size}: {out['entries']} entries ({out['said_entries']} said), indexed in "
          f"{out['index_seconds']:.1f} s; {os.cpu_count()} cores, load {out['load'][0]:.1f}")
    print(f"model load ({embedder.MODEL_NAME}): queries {out['query_model_load_s']:.2f} s, "
          f"background {out['bulk_model_load_s']:.2f} s")
    e = out["embedding"]
    print(f"embedding: {e['embedded']} vectors + {e['empty']} empty in {e['seconds']:.1f} s = "
          f"{out['entries_per_second']:.1f} entries/s ({out['vectors_per_second']:.1f} vectors/s); "
          f"{out['filled_with_copies']} more filled with copies for latency")
    print(f"index bytes per vector row: {out['bytes_per_vector_row']:.0f} "
          f"({out['bytes_per_vector_row_filled']:.0f} with {out['vectors']} vectors)")
    print(f"query embedding: {out['query_embedding_ms_p50']:.1f} ms p50")
    for label, block in out["latency"].items():
        cells = "; ".join(f"{m} p50 {b['p50_ms']:.1f} ms p99 {b['p99_ms']:.1f} ms"
                          + (f" (x{b['ratio_p50']:.2f} / x{b['ratio_p99']:.2f}, gate open {b['gate_open_share']:.0%})"
                             if m != "off" else "")
                          for m, b in block.items())
        print(f"warm search, {label}: {cells}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
