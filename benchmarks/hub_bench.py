"""The team hub's figures, beside local search measured in the same run.

    python -m benchmarks.hub_bench [--size 20MB] [--hosts 20] [--queries 60] [--out DIR] [--json FILE]
    python -m benchmarks.hub_bench --size 200MB --hosts 2 --hub-entries 1000000   # the 1-million-entry hub

1. a generated corpus (``benchmarks.corpus``, seed 1) indexed locally, every project shared;
2. a real PostgreSQL server started in a temporary folder (tests/hub/pg_server.py), one hub database;
3. push throughput: one host, then ``--hosts`` hosts pushing the same journals at once (one
   process each, as many machines would), in MB of journal per second;
4. hub size per entry (tables and indexes, ``pg_total_relation_size``);
5. search p50/p95 on the hub holding one host's entries — the same entries as the local index —
   and locally (``query.search``, warm, in-process), the same queries (``benchmarks.queries``),
   limit 10, global scope; then on the hub holding every host's copies;
6. with ``--hub-entries N``: a hub of about N entries — one host's push, then older copies of
   that history as more hosts (copied on the server: pushing them for real would take an hour):
   earlier times, other entry ids, the same texts — beside a local index of the same copies
   (journals rewritten the same way, indexed as usual); the same queries on both, p50/p95 and
   their ratio. Copies of history rather than copies of entries: exact copies fold into one
   hit, and a real hub's newest entries are mostly distinct.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg

from benchmarks.indexed_corpus import indexed_corpus
from benchmarks.queries import build_queries
from journal_index.data.store import open_store
from journal_index.hub.push import push
from journal_index.hub.schema import migrate
from journal_index.hub.search import HubFilters, HubScope
from journal_index.hub.search import search as hub_search
from journal_index.hub.shares import Share
from journal_index.indexing.indexer import discover, index_files
from journal_index.query import search as local_search
from journal_index.query.hits import Filters
from journal_index.query.scope import Scope
from tests.hub.pg_server import start_server

MEMBER = "benchmember"
SHARES = [Share("/", "/", "bench")]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _setup_hub(admin_url: str) -> None:
    with psycopg.connect(admin_url) as conn:
        migrate(conn)
        conn.execute(f"DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{MEMBER}') THEN "
                     f"CREATE ROLE {MEMBER} LOGIN IN ROLE journal_hub_member; END IF; END $$")
        conn.execute("INSERT INTO hub_team_members (team, member) VALUES ('bench', %s) ON CONFLICT DO NOTHING",
                     (MEMBER,))


def _push_as(args: tuple[str, str, str]) -> tuple[str, int, int, float]:
    db, url, host = args
    store = open_store(db)
    try:
        with psycopg.connect(url) as conn:
            report = push(conn, store, SHARES, host)
    finally:
        store.close()
    return host, report.entries, report.bytes, report.seconds


def _journal_bytes(sessions: Path) -> int:
    return sum(p.stat().st_size for p in sessions.rglob("*.jsonl"))


def _search_times(run: Any, queries: list[str]) -> list[float]:
    for q in queries[:5]:  # warm caches and compiled patterns
        run(q)
    times = []
    for q in queries:
        started = time.perf_counter()
        run(q)
        times.append((time.perf_counter() - started) * 1000)
    return times


def _summary(times: list[float]) -> dict[str, float]:
    return {"p50": round(statistics.median(times), 2), "p95": round(_percentile(times, 0.95), 2)}


def _ratios(hub: dict[str, float], local: dict[str, float]) -> dict[str, float]:
    return {k: round(hub[k] / max(1e-9, local[k]), 2) for k in ("p50", "p95")}


# Entry ids a copy of history rewrites (pi's 8-hex ids, and the links to them), and its times.
_IDS = re.compile(rb'"(id|parentId|firstKeptEntryId|fromId)":"([0-9a-f]{2})([0-9a-f]{6})"')
_SESSION_ID = re.compile(rb'"id":"([0-9a-f-]{33})([0-9a-f]{3})"')
_ISO_TIME = re.compile(rb'"timestamp":"([0-9T:.-]+)Z"')
_MS_TIME = re.compile(rb'"timestamp":(\d{13})')


def _older_copy(line: bytes, copy: int, shift_ms: int) -> bytes:
    """A journal line as if written ``shift_ms`` earlier in another session: other ids, same text."""
    line = _IDS.sub(lambda m: b'"%s":"%02x%s"' % (m.group(1), copy, m.group(3)), line)
    line = _SESSION_ID.sub(lambda m: b'"id":"%s%03x"' % (m.group(1), copy), line)

    def iso(m: re.Match[bytes]) -> bytes:
        when = datetime.fromisoformat(m.group(1).decode() + "+00:00") - timedelta(milliseconds=shift_ms)
        return b'"timestamp":"%sZ"' % when.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3].encode()

    line = _ISO_TIME.sub(iso, line)
    return _MS_TIME.sub(lambda m: b'"timestamp":%d' % (int(m.group(1)) - shift_ms), line)


def _copy_journals(sessions: Path, folder: Path, copy: int, shift_ms: int) -> None:
    for path in sessions.rglob("*.jsonl"):
        target = folder / path.relative_to(sessions)
        target.parent.mkdir(parents=True, exist_ok=True)
        with path.open("rb") as src, target.open("wb") as dst:
            dst.writelines(_older_copy(line, copy, shift_ms) for line in src)


def _copy_hosts(admin_url: str, source: str, copies: range, shift_ms: int) -> int:
    """Older copies of ``source``'s history on the server, one host each (copy k: times k ×
    ``shift_ms`` earlier, entry ids as _older_copy rewrites them, a text hash of its own so
    search never folds them as the same entry); the entries' indexes are rebuilt once at the end.
    Returns the hub's entries."""
    with psycopg.connect(admin_url) as conn:
        found = [(str(r[0]), str(r[1])) for r in conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'hub_entries' "
            "AND indexname NOT LIKE '%pkey'")]
        for name, _ in found:
            conn.execute(f'DROP INDEX "{name}"')
        shifted = {"host": "%(host)s", "started": "started - %(shift)s", "last_ts": "last_ts - %(shift)s",
                   "ts": "ts - %(shift)s", "entry_id": "lpad(to_hex(%(copy)s::integer), 2, '0') || substr(entry_id, 3)",
                   "digest": "md5(digest || %(copy)s::text)"}
        for table in ("hub_hosts", "hub_journals", "hub_entries"):
            columns = [str(r[0]) for r in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = %s "
                "AND is_generated = 'NEVER' ORDER BY ordinal_position", (table,))]
            values = ", ".join(shifted.get(c, f'"{c}"') if not (table == "hub_journals" and c == "digest")
                               else f'"{c}"' for c in columns)
            listed = ", ".join(f'"{c}"' for c in columns)
            for copy in copies:
                conn.execute(f"INSERT INTO {table} ({listed}) SELECT {values} FROM {table} WHERE host = %(source)s",
                             {"host": f"bench-{copy}", "shift": copy * shift_ms, "copy": copy, "source": source})
            conn.commit()
        for _, definition in found:
            conn.execute(definition)
        conn.commit()
        row = conn.execute("SELECT count(*) FROM hub_entries").fetchone()
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
    return int(row[0]) if row else 0


def _grow(server: Any, out: Path, sessions: Path, per_host: int, target: int, queries: list[str]) -> dict[str, Any]:
    """A hub of about ``target`` entries: one host's history and older copies of it (other
    ids, earlier times, the same texts), beside a local index of the same journals."""
    copies = max(1, -(-target // max(1, per_host)))
    admin = server.url("hubadmin", "hub_grown")
    with psycopg.connect(server.url(), autocommit=True) as conn:  # hub_one holds one host's push
        conn.execute("CREATE DATABASE hub_grown TEMPLATE hub_one")
    with psycopg.connect(admin) as conn:
        row = conn.execute("SELECT max(ts) - min(ts) FROM hub_entries").fetchone()
    shift_ms = int(row[0] or 0) + 86_400_000 if row else 86_400_000
    started = time.perf_counter()
    entries = _copy_hosts(admin, "bench-0", range(1, copies), shift_ms)
    grown: dict[str, Any] = {"copies": copies, "hubEntries": entries,
                             "hubCopySeconds": round(time.perf_counter() - started, 1)}
    with psycopg.connect(admin) as conn:
        row = conn.execute("SELECT pg_total_relation_size('hub_entries') + pg_total_relation_size('hub_journals')"
                           ).fetchone()
        grown["hubBytesPerEntry"] = round(row[0] / max(1, entries)) if row else 0
    copied = out / "history"
    for copy in range(copies):
        if not (copied / f"copy-{copy}").is_dir():
            _copy_journals(sessions, copied / f"copy-{copy}", copy, copy * shift_ms)
    started = time.perf_counter()
    store = open_store(str(out / "history.db"))
    try:
        index_files(store, discover([copied]), roots=[copied])
        grown["localEntries"] = int(store.value("SELECT count(*) FROM entries", default=0))
        grown["localIndexSeconds"] = round(time.perf_counter() - started, 1)
        local = Filters(Scope("global"))
        local_times = _search_times(lambda q: local_search(store, q, local, limit=10, roots=[copied]), queries)
    finally:
        store.close()
    everything = HubFilters(HubScope("global"))
    with psycopg.connect(server.url(MEMBER, "hub_grown")) as conn:
        hub_times = _search_times(lambda q: hub_search(conn, q, everything, limit=10), queries)
    grown["localSearchMs"] = _summary(local_times)
    grown["hubSearchMs"] = _summary(hub_times)
    grown["hubOverLocal"] = _ratios(grown["hubSearchMs"], grown["localSearchMs"])
    return grown


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.hub_bench", description=__doc__.split("\n")[0])
    ap.add_argument("--size", default="20MB", help="generated corpus size (default 20MB)")
    ap.add_argument("--hosts", type=int, default=20)
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--out", type=Path, default=None, help="where the corpus and index go (default: a temp folder)")
    ap.add_argument("--hub-entries", type=int, default=0,
                    help="also grow the hub to about this many entries with more hosts' copies, beside a local "
                         "index of as many copies (default 0: not done)")
    ap.add_argument("--keep-hub", action="store_true",
                    help="leave the PostgreSQL server running at the end (for EXPLAIN ANALYZE); prints how to stop it")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = ap.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="hub-bench-"))
    sessions, db, store = indexed_corpus(out, args.size)
    entries = int(store.value("SELECT count(*) FROM entries", default=0))
    journal_mb = _journal_bytes(sessions) / 1e6
    print(f"corpus: {journal_mb:.1f} MB of journals, {entries} entries", file=sys.stderr)

    server = start_server()
    figures: dict[str, Any] = {"corpusMB": round(journal_mb, 2), "entries": entries, "hosts": args.hosts}
    try:
        with psycopg.connect(server.url(), autocommit=True) as conn:
            conn.execute("CREATE DATABASE hub_one")
            conn.execute("CREATE DATABASE hub_many")
        for name in ("hub_one", "hub_many"):
            _setup_hub(server.url("hubadmin", name))
        one_url = server.url(MEMBER, "hub_one")
        _, pushed, _, seconds = _push_as((db, one_url, "bench-0"))
        figures["pushOneHostMBps"] = round(journal_mb / seconds, 2)
        figures["pushOneHostEntriesPerS"] = round(pushed / seconds)
        with psycopg.connect(server.url("hubadmin", "hub_one")) as conn:
            row = conn.execute("SELECT pg_total_relation_size('hub_entries') + pg_total_relation_size('hub_journals'),"
                               " (SELECT count(*) FROM hub_entries)").fetchone()
            assert row is not None
            figures["hubBytesPerEntry"] = round(row[0] / max(1, row[1]))
            figures["hubBytesPerJournalByte"] = round(row[0] / (journal_mb * 1e6), 3)
        many_url = server.url(MEMBER, "hub_many")
        started = time.perf_counter()
        with multiprocessing.get_context("spawn").Pool(args.hosts) as pool:
            results = pool.map(_push_as, [(db, many_url, f"bench-{n}") for n in range(args.hosts)])
        wall = time.perf_counter() - started
        figures["pushConcurrentMBps"] = round(journal_mb * args.hosts / wall, 2)
        figures["pushConcurrentWallS"] = round(wall, 2)
        figures["pushConcurrentEntries"] = sum(r[1] for r in results)

        for name in ("hub_one", "hub_many"):  # searches meet a settled hub, not autovacuum's first pass
            with psycopg.connect(server.url("hubadmin", name), autocommit=True) as conn:
                conn.execute("VACUUM ANALYZE")
        queries = [q.text for q in build_queries(store, sessions, args.queries, seed=1)]
        local = Filters(Scope("global"))
        local_times = _search_times(lambda q: local_search(store, q, local, limit=10, roots=[sessions]), queries)
        everything = HubFilters(HubScope("global"))
        with psycopg.connect(one_url) as conn:
            hub_times = _search_times(lambda q: hub_search(conn, q, everything, limit=10), queries)
        with psycopg.connect(many_url) as conn:
            many_times = _search_times(lambda q: hub_search(conn, q, everything, limit=10), queries)
        figures["localSearchMs"] = _summary(local_times)
        figures["hubSearchMs"] = _summary(hub_times)
        figures["hubSearchMsAllHosts"] = _summary(many_times)
        figures["hubOverLocal"] = _ratios(figures["hubSearchMs"], figures["localSearchMs"])
        if args.hub_entries:
            figures["grown"] = _grow(server, out, sessions, pushed, args.hub_entries, queries)
    finally:
        store.close()
        if args.keep_hub:
            print(f"hub kept: psql '{server.url('hubadmin', 'hub_many')}'; stop it with "
                  f"pg_ctl -D {server.data} stop, then remove {server.folder}", file=sys.stderr)
        else:
            server.stop("immediate")
            server.remove()
    print(json.dumps(figures, indent=2))
    print(f"push: one host {figures['pushOneHostMBps']} MB/s; {args.hosts} at once "
          f"{figures['pushConcurrentMBps']} MB/s in all; hub {figures['hubBytesPerEntry']} bytes per entry "
          f"({figures['hubBytesPerJournalByte']} of the journal bytes)\n"
          f"search p50/p95: local {figures['localSearchMs']['p50']}/{figures['localSearchMs']['p95']} ms, "
          f"hub {figures['hubSearchMs']['p50']}/{figures['hubSearchMs']['p95']} ms "
          f"(×{figures['hubOverLocal']['p50']} / ×{figures['hubOverLocal']['p95']}), hub with every host's copies "
          f"{figures['hubSearchMsAllHosts']['p50']}/{figures['hubSearchMsAllHosts']['p95']} ms", file=sys.stderr)
    if "grown" in figures:
        grown = figures["grown"]
        print(f"grown: hub {grown['hubEntries']} entries ({grown['copies']} hosts' copies, {grown['hubBytesPerEntry']} "
              f"bytes per entry), local {grown['localEntries']} entries; search p50/p95: local "
              f"{grown['localSearchMs']['p50']}/{grown['localSearchMs']['p95']} ms, hub "
              f"{grown['hubSearchMs']['p50']}/{grown['hubSearchMs']['p95']} ms "
              f"(×{grown['hubOverLocal']['p50']} / ×{grown['hubOverLocal']['p95']})", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("JOURNAL_INDEX_HUB_BATCH", "500")
    sys.exit(main())
