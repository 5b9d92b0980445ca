"""End-to-end benchmark of journal-index against baselines measured in the same run.

    python -m benchmarks.run [--size 50MB] [--out DIR] [--json FILE] [--seed 1]
    python -m benchmarks.run --size 1GB --out /tmp/bench-1g          # the README figures
    python -m benchmarks.run --corpus DIR                             # reuse journals (DIR or DIR/sessions)
    python -m benchmarks.run --corpus-kind ours --size 200MB          # real pi journals, replicated
    python -m benchmarks.run --index-only --formats 20MB              # indexing figures, per format too

Steps, all on this machine in this run (machines are noisy; compare ratios, not absolutes):

1.  corpus: ``benchmarks.corpus.generate`` into OUT/sessions (reused when OUT/corpus.json says the same
    size and seed), or ``--corpus``, or with ``--corpus-kind ours`` the shared real pi journals replicated
    by ``tools/scale_corpus.py --unique`` into ``--cache`` (built once per size; see
    ``benchmarks.agent_corpora``). Every journal is read once first, so everything below runs with a
    warm page cache.
2.  baselines: reading the bytes (MB/s) and reading + ``orjson.loads`` of every line (MB/s), one thread,
    like the indexer.
3.  first pass: ``journal-index --db X --sessions Y index --json`` as a child process; MB/s of journal
    bytes over its wall time (interpreter start included); peak memory: the larger of the child's own
    ``wait4`` ru_maxrss and the summed PSS of its process tree, polled with psutil every 20 ms (the
    summed RSS, an upper bound, is in the JSON). Then the same pass in-process into a second
    index, for ``store.longest_write`` (the longest ``store.write()`` block, lock held) and its own
    MB/s. The spread of all write blocks is in the JSON.
4.  index size: (db + -wal + -shm) / journal bytes as the child left it; then on a copy after FTS
    ``optimize`` + ``wal_checkpoint(TRUNCATE)`` + ``VACUUM``. The ``dbstat`` split is in the JSON.
5.  search: ``benchmarks.queries`` (≥ 100 queries of mixed rarity, seeded). Warm: in-process
    ``query.search(store, q, Filters(scope), limit=10)`` with excerpts, one untimed round then
    ``--repeat`` timed rounds, in project scope (the generated project with the most sub-projects)
    and global scope. Cold: a new ``journal-index search … --json`` process per query for the first
    ``--cold`` queries (a stratified subset), both scopes; the floor of a process is shown by
    ``journal-index --version``.
    rg baseline: ``rg --no-config -c -i -F -- QUERY <session folders in scope>`` for the single-token
    queries of the cold subset (words, identifiers, file names: what a user would grep for; the
    multi-word ones have no fair one-pass rg equivalent and are left out). rg runs on every core, does
    no ranking, no excerpts, no redaction and matches the raw JSON; journal-index's warm and cold
    figures on exactly those queries are compared with it (ratio = rg time / journal-index time).
6.  append → searchable: append one user entry to the newest journal of the project, then time
    ``indexer.index_file`` + a ``query.search`` that must return it; median of ``--appends``. The
    journal is truncated back (and its mtime restored) afterwards.
7.  read: ``query.read(store, entry_id, project scope)`` for ``--reads`` random entries (re-read,
    verify, redact); every answer must be ``ok``.
8.  ``--formats SIZE``: the first pass in-process per journal format (pi, Claude Code, Codex CLI), each
    over about SIZE of real journals laid out where its agent keeps them (``benchmarks.agent_corpora``),
    with its own read + ``orjson.loads`` baseline.
9.  a table on stdout; JSON to ``--json`` (default benchmarks/out/results.json).

``--index-only`` stops after the index size (steps 1–4, and 8): the indexing figures alone.

``--profile FILE`` adds an in-process first pass under cProfile (stats to FILE, top 10 by tottime
after the table); it runs last so it does not disturb the other figures.
"""

from __future__ import annotations

import argparse
import compileall
import cProfile
import io
import os
import platform
import pstats
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import apsw
import orjson

import journal_index
from benchmarks import agent_corpora
from benchmarks import corpus as corpus_mod
from benchmarks.queries import CLASSES, Query, as_json, build_queries
from journal_index import indexer, journal_blocks, journal_pass, query
from journal_index.formats import Root
from journal_index.scope import Scope, is_home, resolve_scope
from journal_index.store import Store, open_store

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_JSON = ROOT / "benchmarks" / "out" / "results.json"
DEFAULT_CACHE = ROOT / "benchmarks" / "out" / "cache"
MB = 1_000_000
RSS_POLL_S = 0.02

# name → (label, unit, comparison, target); comparison ">=" or "<=", or None for no target.
TARGETS: dict[str, tuple[str, str, str | None, float | None]] = {
    "baseline_read_mb_s": ("baseline: read bytes", "MB/s", None, None),
    "baseline_parse_mb_s": ("baseline: read + orjson.loads per line", "MB/s", None, None),
    "first_pass_mb_s": ("first pass, CLI child (wall)", "MB/s", ">=", 60),
    "first_pass_vs_parse": ("  first pass / parse-only baseline", "x", None, None),
    "first_pass_peak_rss_mb": ("first pass peak memory (tree PSS / own RSS)", "MB", "<=", 200),
    "inprocess_first_pass_mb_s": ("first pass, in-process (index_files)", "MB/s", ">=", 60),
    "longest_write_ms": ("longest write transaction (in-process pass)", "ms", "<=", 50),
    "index_size_pct": ("index size (db+wal+shm) / journal bytes", "%", "<=", 10),
    "index_size_optimized_pct": ("  after optimize + checkpoint + VACUUM", "%", "<=", 10),
    "first_pass_pi_mb_s": ("first pass in-process, pi journals", "MB/s", None, None),
    "first_pass_claude_mb_s": ("first pass in-process, Claude Code journals", "MB/s", None, None),
    "first_pass_codex_mb_s": ("first pass in-process, Codex CLI journals", "MB/s", None, None),
    "warm_project_p50_ms": ("warm search, project scope p50", "ms", "<=", 5),
    "warm_project_p95_ms": ("warm search, project scope p95", "ms", None, None),
    "warm_project_p99_ms": ("warm search, project scope p99", "ms", "<=", 40),
    "warm_global_p50_ms": ("warm search, global scope p50", "ms", None, None),
    "warm_global_p95_ms": ("warm search, global scope p95", "ms", None, None),
    "warm_global_p99_ms": ("warm search, global scope p99", "ms", None, None),
    "cold_libraries_p50_ms": ("cold floor: python importing apsw, click, orjson p50", "ms", None, None),
    "cold_startup_p50_ms": ("cold CLI floor: journal-index --version p50", "ms", None, None),
    "cold_project_p50_ms": ("cold CLI search, project scope p50", "ms", "<=", 100),
    "cold_project_p95_ms": ("cold CLI search, project scope p95", "ms", None, None),
    "cold_global_p50_ms": ("cold CLI search, global scope p50", "ms", "<=", 100),
    "cold_global_p95_ms": ("cold CLI search, global scope p95", "ms", None, None),
    "rg_project_p50_ms": ("baseline: rg -c -i -F, project scope p50", "ms", None, None),
    "rg_global_p50_ms": ("baseline: rg -c -i -F, global scope p50", "ms", None, None),
    "rg_vs_warm_project": ("  rg / warm search, project (same queries)", "x", None, None),
    "rg_vs_warm_global": ("  rg / warm search, global (same queries)", "x", None, None),
    "rg_vs_cold_project": ("  rg / cold CLI search, project (same queries)", "x", None, None),
    "rg_vs_cold_global": ("  rg / cold CLI search, global (same queries)", "x", None, None),
    "append_searchable_p50_ms": ("append -> index_file + search finds it, median", "ms", "<=", 10),
    "append_searchable_p95_ms": ("append -> searchable p95", "ms", None, None),
    "read_p50_ms": ("read (re-read + verify + redact) p50", "ms", "<=", 2),
    "read_p95_ms": ("read p95", "ms", "<=", 2),
}
RG_METRICS = tuple(name for name in TARGETS if name.startswith("rg_"))


# ---------------------------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------------------------
def pct(samples: Sequence[float], p: float) -> float:
    """The p-th percentile (nearest rank, linear between ranks) of samples."""
    if not samples:
        return 0.0
    ordered = sorted(samples)
    k = (len(ordered) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def ms(seconds: float) -> float:
    return seconds * 1000


def remove_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def db_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists())


def journal_index_cmd() -> list[str]:
    """The installed console script next to this interpreter, else ``python -m journal_index``."""
    script = Path(sys.executable).parent / "journal-index"
    if script.exists():
        return [str(script)]
    found = shutil.which("journal-index")
    return [found] if found else [sys.executable, "-m", "journal_index"]


def machine_info() -> dict[str, Any]:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # macOS
        cores = os.cpu_count() or 0
    mem = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) * 1024
    except OSError:
        pass
    rg = shutil.which("rg")
    rg_version = None
    if rg:
        rg_version = subprocess.run([rg, "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    return {
        "cpu": model,
        "cores": cores,
        "memory_gb": round(mem / 2**30, 1) if mem else None,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "sqlite": apsw.sqlite_lib_version(),
        "apsw": apsw.apsw_version(),
        "rg": rg_version,
    }


def load_average() -> tuple[float, float, float]:
    try:
        return os.getloadavg()
    except OSError:
        return (0.0, 0.0, 0.0)


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# 1–2: corpus and baselines
# ---------------------------------------------------------------------------------------------
def prepare_corpus(args: argparse.Namespace, out: Path) -> tuple[Path, dict[str, Any]]:
    if args.corpus_kind == "ours" and not args.corpus:
        cache = Path(args.cache) if args.cache else DEFAULT_CACHE
        log(f"the ours corpus ({args.size}) in {cache}")
        return agent_corpora.ours_corpus(corpus_mod.parse_size(args.size), cache)
    if args.corpus:
        base = Path(args.corpus)
        sessions = base / "sessions" if (base / "sessions").is_dir() else base
        if not sessions.is_dir():
            raise SystemExit(f"bench: error: {args.corpus} is not a folder of journals")
        return sessions, {"source": str(sessions), "generated": False}
    size = corpus_mod.parse_size(args.size)
    sessions = out / "sessions"
    stats_file = out / "corpus.json"
    if sessions.is_dir() and any(sessions.iterdir()):
        if stats_file.exists():
            stats = orjson.loads(stats_file.read_bytes())
            if stats.get("size_requested") == size and stats.get("seed") == args.seed:
                log(f"reusing the corpus in {sessions}")
                return sessions, {**stats, "generated": False}
        raise SystemExit(f"bench: error: {sessions} holds another corpus; pass an empty --out, or --corpus")
    log(f"generating a {args.size} corpus (seed {args.seed}) into {sessions}")
    stats = corpus_mod.generate(out, size, args.seed)
    stats.pop("counts", None)
    stats_file.write_bytes(orjson.dumps(stats, option=orjson.OPT_INDENT_2))
    return sessions, {**stats, "generated": True}


def baselines(paths: list[str]) -> dict[str, float]:
    """Warm the page cache, then time reading, and reading + parsing every line, one thread."""
    total = 0
    for path in paths:
        with open(path, "rb") as handle:
            total += len(handle.read())
    started = time.perf_counter()
    for path in paths:
        with open(path, "rb") as handle:
            handle.read()
    read_s = time.perf_counter() - started
    loads = orjson.loads
    started = time.perf_counter()
    lines = 0
    for path in paths:
        with open(path, "rb") as handle:
            data = handle.read()
        for line in data.split(b"\n"):
            if line:
                loads(line)
                lines += 1
    parse_s = time.perf_counter() - started
    return {"bytes": total, "lines": lines, "read_s": read_s, "parse_s": parse_s,
            "read_mb_s": total / MB / read_s, "parse_mb_s": total / MB / parse_s}


# ---------------------------------------------------------------------------------------------
# 3: first pass
# ---------------------------------------------------------------------------------------------
def first_pass_child(db: Path, sessions: Path, work: Path) -> dict[str, Any]:
    """``journal-index index --json`` in a child: wall time, its report, peak RSS two ways."""
    try:
        import psutil
    except ImportError:  # optional: wait4's rusage is exact on its own
        psutil = None
    out_path, err_path = work / "first-pass.stdout", work / "first-pass.stderr"
    cmd = [*journal_index_cmd(), "--db", str(db), "--sessions", str(sessions), "index", "--json"]
    polled = polled_pss = polled_main = most_processes = 0
    done = threading.Event()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        started = time.perf_counter()
        child = subprocess.Popen(cmd, stdout=out, stderr=err)

        def poll() -> None:
            # The whole tree: the indexer may parse in worker processes. Summed PSS counts a
            # shared page once overall; summed RSS (kept too) counts it in every process.
            nonlocal polled, polled_pss, polled_main, most_processes
            if psutil is None:
                return
            try:
                proc = psutil.Process(child.pid)
            except psutil.Error:
                return
            while not done.is_set():
                try:
                    main_rss = proc.memory_info().rss
                    tree = [proc, *proc.children(recursive=True)]
                except psutil.Error:
                    break
                total = total_pss = 0
                for member in tree:
                    try:
                        info = member.memory_full_info()
                    except psutil.Error:
                        continue
                    total += info.rss
                    total_pss += getattr(info, "pss", info.rss)
                polled, polled_main = max(polled, total), max(polled_main, main_rss)
                polled_pss = max(polled_pss, total_pss)
                most_processes = max(most_processes, len(tree))
                done.wait(RSS_POLL_S)

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        try:
            _, status, usage = os.wait4(child.pid, 0)
        except BaseException:  # Ctrl-C: do not leave the indexer running
            child.kill()
            child.wait()
            raise
        wall = time.perf_counter() - started
        done.set()
        poller.join()
        child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"bench: error: {' '.join(cmd)} exited {child.returncode}: "
                         f"{err_path.read_text()[-2000:]}")
    report = orjson.loads(out_path.read_bytes())
    # ru_maxrss is KiB on Linux, bytes on macOS.
    maxrss = usage.ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    return {"command": cmd, "wall_s": wall, "report": report, "peak_rss_bytes": max(maxrss, polled_pss),
            "main_maxrss_bytes": maxrss, "polled_main_rss_bytes": polled_main,
            "polled_tree_rss_bytes": polled, "polled_tree_pss_bytes": polled_pss,
            "most_processes": most_processes,
            "psutil": psutil is not None, "stderr": err_path.read_text()[-2000:]}


def first_pass_inprocess(db: Path, paths: list[str], roots: Sequence[Root] = ()) -> dict[str, Any]:
    """``indexer.index_files`` into a new index.

    Every ``store.write()`` block is also timed from outside (BEGIN IMMEDIATE to COMMIT done, so a
    little wider than ``store.longest_write``, which starts once the lock is held) for the spread.
    """
    store = open_store(str(db))
    durations: list[float] = []
    inner = store.write

    @contextmanager
    def timed_write() -> Iterator[apsw.Connection]:
        started = time.perf_counter()
        with inner() as conn:
            yield conn
        durations.append(time.perf_counter() - started)

    store.write = timed_write  # type: ignore[method-assign]
    try:
        report = indexer.index_files(store, paths, roots=roots)
        longest = store.longest_write
    finally:
        store.write = inner  # type: ignore[method-assign]
        store.close()
    return {"report": report.as_json(), "seconds": report.seconds, "bytes": report.bytes,
            "longest_write_s": longest,
            "writes": {"n": len(durations), "p50_ms": ms(pct(durations, 50)), "p99_ms": ms(pct(durations, 99)),
                       "p95_ms": ms(pct(durations, 95)), "max_ms": ms(max(durations, default=0.0)),
                       "longest_ms": [round(ms(d), 1) for d in sorted(durations)[-5:]],
                       "over_50ms": sum(d > 0.05 for d in durations),
                       "total_s": sum(durations)}}


# ---------------------------------------------------------------------------------------------
# 4: index size
# ---------------------------------------------------------------------------------------------
def dbstat(path: Path) -> dict[str, int]:
    """Bytes per table/index (dbstat), FTS shadow tables summed under entries_fts."""
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        rows = conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name").fetchall()
    except apsw.SQLError:
        return {}
    finally:
        conn.close()
    out: dict[str, int] = {}
    for name, size in rows:
        out[str(name)] = int(size)  # type: ignore[arg-type]
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def fts_tables(conn: apsw.Connection) -> list[str]:
    return [str(r[0]) for r in conn.execute(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%USING fts5(%'")]


def per_format(work: Path, size: int) -> dict[str, Any]:
    """The first pass in-process over each format's journals, with their own parse baseline."""
    home = work / "agent-home"
    shutil.rmtree(home, ignore_errors=True)
    out: dict[str, Any] = {}
    for name, root in agent_corpora.agent_home(home, size).items():
        paths = indexer.discover([root])
        base = baselines(paths)
        db = work / f"format-{name}.db"
        remove_db(db)
        inproc = first_pass_inprocess(db, paths, [root])
        out[name] = {"journals": len(paths), "bytes": base["bytes"], "parse_mb_s": base["parse_mb_s"],
                     "first_pass_mb_s": inproc["bytes"] / MB / inproc["seconds"],
                     "entries": inproc["report"]["entries"], "index_bytes": db_bytes(db),
                     "longest_write_ms": ms(inproc["longest_write_s"])}
        remove_db(db)
    shutil.rmtree(home, ignore_errors=True)
    return out


def optimized_copy(db: Path, target: Path) -> dict[str, Any]:
    for suffix in ("", "-wal", "-shm"):
        source = Path(f"{db}{suffix}")
        if source.exists():
            shutil.copyfile(source, f"{target}{suffix}")
    conn = apsw.Connection(str(target))
    started = time.perf_counter()
    for table in fts_tables(conn):
        conn.execute(f"INSERT INTO {table}({table}) VALUES('optimize')")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("VACUUM")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    seconds = time.perf_counter() - started
    conn.close()
    return {"bytes": db_bytes(target), "seconds": seconds, "tables": dbstat(target)}


# ---------------------------------------------------------------------------------------------
# 5: search
# ---------------------------------------------------------------------------------------------
def pick_project(store: Store) -> tuple[str, Scope]:
    """The cwd with the most sub-project cwds (then the most sessions), and its project scope."""
    counts = dict(store.rows("SELECT cwd, count(*) FROM files WHERE cwd IS NOT NULL GROUP BY cwd"))
    best: tuple[int, int, str] | None = None
    for cwd, files in counts.items():
        if is_home(cwd):
            continue
        children = sum(1 for other in counts if other.startswith(cwd.rstrip("/") + "/"))
        key = (children, files, cwd)
        if best is None or key > best:
            best = key
    if best is None:
        raise SystemExit("bench: error: the corpus has no project cwd")
    cwd = best[2]
    return cwd, resolve_scope(store, "project", cwd)


@dataclass
class Timed:
    query: Query
    seconds: list[float]
    hits: int
    match: str


def warm_search(store: Store, queries: list[Query], scope: Scope, repeat: int) -> list[Timed]:
    filters = query.Filters(scope)
    out = []
    for q in queries:  # untimed round: caches, first-use costs
        result = query.search(store, q.text, filters, limit=10)
        out.append(Timed(q, [], len(result.hits), result.match))
    for _ in range(repeat):
        for timed in out:
            started = time.perf_counter()
            query.search(store, timed.query.text, filters, limit=10)
            timed.seconds.append(time.perf_counter() - started)
    return out


def timed_run(cmd: list[str], ok: Callable[[int], bool] = lambda rc: rc == 0) -> float:
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True)
    elapsed = time.perf_counter() - started
    if not ok(done.returncode):
        raise SystemExit(f"bench: error: {' '.join(cmd)} exited {done.returncode}: "
                         f"{done.stderr.decode(errors='replace')[-2000:]}")
    return elapsed


def cold_search(db: Path, sessions: Path, queries: list[Query], cwd: str, scope: str) -> list[float]:
    base = [*journal_index_cmd(), "--db", str(db), "--sessions", str(sessions), "search",
            "--cwd", cwd, "--scope", scope, "--limit", "10", "--json", "--"]
    return [timed_run([*base, *q.text.split()]) for q in queries]


def rg_search(rg: str, folders: list[str], queries: list[Query]) -> list[float]:
    # rg exits 1 when nothing matched: that is an answer, not an error.
    return [timed_run([rg, "--no-config", "-c", "-i", "-F", "--", q.text, *folders], lambda rc: rc in (0, 1))
            for q in queries]


def scope_folders(store: Store, scope: Scope) -> list[str]:
    where, params = scope.sql("f")
    paths = [row[0] for row in store.rows(f"SELECT f.path FROM files f WHERE {where}", params)]
    return sorted({os.path.dirname(p) for p in paths})


# ---------------------------------------------------------------------------------------------
# 6–7: append → searchable, read
# ---------------------------------------------------------------------------------------------
def append_searchable(store: Store, scope: Scope, rounds: int, seed: int) -> dict[str, Any]:
    where, params = scope.sql("f")
    row = store.one(f"SELECT f.path FROM files f WHERE {where} ORDER BY f.last_ts DESC, f.id LIMIT 1", params)
    if row is None:
        raise SystemExit("bench: error: no journal in the project scope")
    path = str(row[0])
    rng = random.Random(seed)
    st = os.stat(path)
    with open(path, "rb") as handle:
        handle.seek(max(0, st.st_size - 1_000_000))
        last = handle.read().rstrip(b"\n").rsplit(b"\n", 1)[-1]
    try:
        parent = orjson.loads(last).get("id")
    except (orjson.JSONDecodeError, AttributeError):  # a last line longer than what was read
        parent = None
    filters = query.Filters(scope)
    samples: list[float] = []
    try:
        for i in range(rounds):
            token = "zqprobe" + "".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(8))
            entry_id = f"{rng.getrandbits(32):08x}"
            now = int(time.time() * 1000)
            line = orjson.dumps({
                "type": "message", "id": entry_id, "parentId": parent,
                "timestamp": datetime.fromtimestamp(now / 1000, UTC).isoformat(timespec="milliseconds")
                .replace("+00:00", "Z"),
                "message": {"role": "user", "content": [
                    {"type": "text", "text": f"benchmark probe {i}: where did we leave {token}?"}],
                    "timestamp": now},
            }) + b"\n"
            with open(path, "ab") as handle:
                handle.write(line)
            started = time.perf_counter()
            indexer.index_file(store, path)
            result = query.search(store, token, filters, limit=10)
            elapsed = time.perf_counter() - started
            if not result.hits or result.hits[0].entry_id != entry_id:
                raise SystemExit(f"bench: error: the appended entry {entry_id} was not found by search")
            samples.append(elapsed)
            parent = entry_id
    finally:
        os.truncate(path, st.st_size)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    return {"journal": path, "journal_bytes": st.st_size, "seconds": samples}


def read_latency(store: Store, scope: Scope, n: int, seed: int) -> dict[str, Any]:
    where, params = scope.sql("f")
    ids = [row[0] for row in store.rows(
        f"SELECT e.entry_id FROM entries e JOIN files f ON f.id = e.file_id WHERE {where} "
        "GROUP BY e.entry_id HAVING count(*) = 1 ORDER BY e.entry_id", params)]
    chosen = random.Random(seed).sample(ids, min(n, len(ids)))
    samples: list[float] = []
    chars: list[int] = []
    for entry_id in chosen:
        started = time.perf_counter()
        answer = query.read(store, entry_id, scope)
        samples.append(time.perf_counter() - started)
        if answer["status"] != "ok":
            raise SystemExit(f"bench: error: read {entry_id} answered {answer['status']}")
        chars.append(int(answer["totalChars"]))
    return {"seconds": samples, "entries": len(chosen), "median_chars": statistics.median(chars) if chars else 0}


# ---------------------------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------------------------
def summarize(samples: list[float]) -> dict[str, float]:
    return {"n": len(samples), "p50_ms": ms(pct(samples, 50)), "p95_ms": ms(pct(samples, 95)),
            "p99_ms": ms(pct(samples, 99)), "max_ms": ms(max(samples, default=0.0))}


def per_class(timed: list[Timed]) -> dict[str, dict[str, float]]:
    out = {}
    for cls in CLASSES:
        samples = [s for t in timed if t.query.kind == cls for s in t.seconds]
        if samples:
            out[cls] = {"queries": sum(t.query.kind == cls for t in timed),
                        "p50_ms": round(ms(pct(samples, 50)), 3), "p95_ms": round(ms(pct(samples, 95)), 3),
                        "median_hits": statistics.median(t.hits for t in timed if t.query.kind == cls)}
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    temp: str | None = None
    if args.out:
        out = Path(args.out).resolve()
        out.mkdir(parents=True, exist_ok=True)
    else:
        temp = tempfile.mkdtemp(prefix="journal-index-bench-")
        out = Path(temp)
    try:
        return _run(args, out)
    finally:
        if temp and not args.keep:
            shutil.rmtree(temp, ignore_errors=True)


def _run(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    metrics: dict[str, float] = {}
    notes: list[str] = []
    details: dict[str, Any] = {"load_before": load_average()}
    sessions, corpus_stats = prepare_corpus(args, out)
    sessions = sessions.resolve()
    paths = indexer.discover([sessions])
    log(f"{len(paths)} journals; baselines")
    base = baselines(paths)
    journal_bytes = base["bytes"]
    metrics["baseline_read_mb_s"] = base["read_mb_s"]
    metrics["baseline_parse_mb_s"] = base["parse_mb_s"]
    details["baselines"] = base

    db, db2, db3 = out / "index.db", out / "inprocess.db", out / "optimized.db"
    for path in (db, db2, db3, out / "profile.db"):
        remove_db(path)

    log("first pass (CLI child)")
    child = first_pass_child(db, sessions, out)
    metrics["first_pass_mb_s"] = journal_bytes / MB / child["wall_s"]
    metrics["first_pass_vs_parse"] = metrics["first_pass_mb_s"] / base["parse_mb_s"]
    metrics["first_pass_peak_rss_mb"] = child["peak_rss_bytes"] / MB
    child["internal_mb_s"] = child["report"]["bytes"] / MB / max(child["report"]["seconds"], 1e-9)
    details["first_pass_child"] = child
    if child["report"]["bytes"] != journal_bytes:
        notes.append(f"the first pass indexed {child['report']['bytes']} bytes of {journal_bytes}")

    log("first pass (in-process, for the longest write transaction)")
    inproc = first_pass_inprocess(db2, paths)
    metrics["inprocess_first_pass_mb_s"] = inproc["bytes"] / MB / inproc["seconds"]
    metrics["longest_write_ms"] = ms(inproc["longest_write_s"])
    details["first_pass_inprocess"] = inproc

    log("index size")
    size = db_bytes(db)
    metrics["index_size_pct"] = 100 * size / journal_bytes
    optimized = optimized_copy(db, db3)
    metrics["index_size_optimized_pct"] = 100 * optimized["bytes"] / journal_bytes
    details["index_size"] = {"bytes": size, "tables": dbstat(db), "optimized": optimized}

    if args.formats:
        log(f"first pass per format ({args.formats} of journals each)")
        formats = per_format(out, corpus_mod.parse_size(args.formats))
        for name, figures in formats.items():
            metrics[f"first_pass_{name}_mb_s"] = figures["first_pass_mb_s"]
        details["per_format"] = formats
    if args.index_only:
        details["scope"] = {"cwd": None, "root": None, "project_entries": None,
                            "entries": int(inproc["report"]["entries"])}
        return finish(args, metrics, notes, details, corpus_stats, journal_bytes, paths)
    store = open_store(str(db))
    try:
        entries = int(store.value("SELECT count(*) FROM entries", default=0))
        cwd, project = pick_project(store)
        where, params = project.sql("f")
        in_project = int(store.value(
            f"SELECT count(*) FROM entries e JOIN files f ON f.id = e.file_id WHERE {where}", params, default=0))
        details["scope"] = {"cwd": cwd, "root": project.root, "entries": entries,
                            "project_entries": in_project}
        log(f"project scope {project.root}: {in_project} of {entries} entries; building {args.queries} queries")
        started = time.perf_counter()
        queries = build_queries(store, sessions, args.queries, args.seed)
        details["queries"] = {"build_s": time.perf_counter() - started, "list": as_json(queries)}

        scopes = {"project": project, "global": Scope("global")}
        warm: dict[str, list[Timed]] = {}
        for name, scope in scopes.items():
            log(f"warm search, {name} scope: {len(queries)} queries x {args.repeat}")
            warm[name] = warm_search(store, queries, scope, args.repeat)
            samples = [s for t in warm[name] for s in t.seconds]
            summary = summarize(samples)
            for p in ("p50", "p95", "p99"):
                metrics[f"warm_{name}_{p}_ms"] = summary[f"{p}_ms"]
            details[f"warm_{name}"] = {**summary, "by_class": per_class(warm[name])}

        cold_queries = queries[: args.cold]
        # pip compiles bytecode at install; an edited checkout (or PYTHONDONTWRITEBYTECODE, set on
        # some machines) would otherwise recompile changed modules in every cold process.
        compileall.compile_dir(str(Path(journal_index.__file__).parent), quiet=1)
        libraries = [sys.executable, "-c", "import apsw, click, orjson"]
        metrics["cold_libraries_p50_ms"] = ms(pct([timed_run(libraries) for _ in range(5)], 50))
        cmd = [*journal_index_cmd(), "--version"]
        startup = [timed_run(cmd) for _ in range(5)]
        metrics["cold_startup_p50_ms"] = ms(pct(startup, 50))
        cold: dict[str, list[float]] = {}
        for name in scopes:
            log(f"cold CLI search, {name} scope: {len(cold_queries)} processes")
            cold[name] = cold_search(db, sessions, cold_queries, cwd, name)
            summary = summarize(cold[name])
            metrics[f"cold_{name}_p50_ms"] = summary["p50_ms"]
            metrics[f"cold_{name}_p95_ms"] = summary["p95_ms"]
            details[f"cold_{name}"] = summary

        rg = shutil.which("rg")
        rg_queries = [i for i, q in enumerate(cold_queries) if q.single_token]
        if rg is None:
            notes.append("rg (ripgrep) not found: the rg baseline was skipped "
                         "(install it, e.g. apt-get install ripgrep)")
        elif not rg_queries:
            notes.append("no single-token query in the cold subset: the rg baseline was skipped")
        else:
            for name, scope in scopes.items():
                folders = [str(sessions)] if scope.kind == "global" else scope_folders(store, scope)
                log(f"rg baseline, {name} scope: {len(rg_queries)} queries over {len(folders)} folders")
                rg_times = rg_search(rg, folders, [cold_queries[i] for i in rg_queries])
                rg_p50 = pct(rg_times, 50)
                warm_same = [statistics.median(warm[name][i].seconds) for i in rg_queries]
                cold_same = [cold[name][i] for i in rg_queries]
                metrics[f"rg_{name}_p50_ms"] = ms(rg_p50)
                metrics[f"rg_vs_warm_{name}"] = rg_p50 / pct(warm_same, 50)
                metrics[f"rg_vs_cold_{name}"] = rg_p50 / pct(cold_same, 50)
                details[f"rg_{name}"] = {**summarize(rg_times), "folders": len(folders),
                                         "queries": [cold_queries[i].text for i in rg_queries],
                                         "warm_same_p50_ms": ms(pct(warm_same, 50)),
                                         "cold_same_p50_ms": ms(pct(cold_same, 50))}

        log(f"read latency: {args.reads} entries")
        reads = read_latency(store, project, args.reads, args.seed)
        summary = summarize(reads.pop("seconds"))
        metrics["read_p50_ms"], metrics["read_p95_ms"] = summary["p50_ms"], summary["p95_ms"]
        details["read"] = {**summary, **reads}

        log(f"append -> searchable: {args.appends} rounds")
        appended = append_searchable(store, project, args.appends, args.seed)
        summary = summarize(appended.pop("seconds"))
        metrics["append_searchable_p50_ms"] = summary["p50_ms"]
        metrics["append_searchable_p95_ms"] = summary["p95_ms"]
        details["append"] = {**summary, **appended}
    finally:
        store.close()

    if args.profile:
        log(f"profiled in-process first pass -> {args.profile}")
        profiler = cProfile.Profile()
        profiler.enable()
        first_pass_inprocess(out / "profile.db", paths)
        profiler.disable()
        profiler.dump_stats(str(args.profile))
        text = io.StringIO()
        pstats.Stats(str(args.profile), stream=text).sort_stats("tottime").print_stats(10)
        details["profile"] = {"file": str(args.profile), "top_tottime": text.getvalue()}

    return finish(args, metrics, notes, details, corpus_stats, journal_bytes, paths)


def finish(args: argparse.Namespace, metrics: dict[str, float], notes: list[str], details: dict[str, Any],
           corpus_stats: dict[str, Any], journal_bytes: float, paths: list[str]) -> dict[str, Any]:
    details["load_after"] = load_average()
    cores = machine_info()["cores"] or 1
    if max(details["load_before"][0], details["load_after"][0]) > cores:
        notes.append(f"the 1-minute load average ({details['load_before'][0]:.1f} before, "
                     f"{details['load_after'][0]:.1f} after) exceeded the {cores} cores: other work "
                     "competed with this run")
    details["indexer"] = {name: getattr(module, name) for module in (indexer, journal_blocks, journal_pass)
                          for name in ("CHUNK_BYTES", "GROUP_CHARS", "GROUP_ROWS", "MERGE_PAGES", "WORKERS_MIN_BYTES")
                          if hasattr(module, name)}
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join(["python -m benchmarks.run", *sys.argv[1:]]),
        "machine": machine_info(),
        "corpus": {**{k: v for k, v in corpus_stats.items() if k not in ("categories", "target_mix",
                                                                          "target_line_length")},
                   "journal_bytes": journal_bytes, "journals": len(paths)},
        "settings": {k: v for k, v in vars(args).items() if k != "func"},
        "metrics": {name: metric_json(name, value) for name, value in metrics.items()},
        "notes": notes,
        "details": details,
    }


def met(name: str, value: float) -> bool | None:
    _, _, op, target = TARGETS[name]
    if op is None or target is None:
        return None
    return value >= target if op == ">=" else value <= target


def metric_json(name: str, value: float) -> dict[str, Any]:
    label, unit, op, target = TARGETS[name]
    return {"label": label.strip(), "value": round(value, 4), "unit": unit,
            "target": f"{op} {target:g}" if op else None, "met": met(name, value)}


def format_table(results: dict[str, Any]) -> str:
    m = results["machine"]
    c = results["corpus"]
    scope = results["details"]["scope"]
    where = (f"; project scope {scope['root']} ({scope['project_entries']:,} entries)"
             if scope["root"] is not None else "")
    lines = [
        f"journal-index benchmark: {c['journal_bytes'] / MB:,.1f} MB in {c['journals']} journals "
        f"({c.get('kind', 'generated')}; {scope['entries']:,} entries){where}",
        f"machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}, SQLite {m['sqlite']}",
        "",
        f"| {'metric':<50} | {'value':>12} | {'target':>9} | met |",
        f"|{'-' * 52}|{'-' * 14}|{'-' * 11}|-----|",
    ]
    for name, entry in results["metrics"].items():
        value = entry["value"]
        unit = entry["unit"]
        shown = f"{value:.2f}x" if unit == "x" else f"{value:,.1f} {unit}" if value >= 10 else f"{value:.2f} {unit}"
        target = f"{entry['target']} {unit}" if entry["target"] else ""
        flag = "" if entry["met"] is None else "yes" if entry["met"] else "NO"
        lines.append(f"| {TARGETS[name][0]:<50} | {shown:>12} | {target:>9} | {flag:^3} |")
    tables = results["details"].get("index_size", {}).get("tables", {})
    if tables:
        lines.append("index split, % of journal bytes: " + ", ".join(
            f"{name} {100 * size / c['journal_bytes']:.2f}" for name, size in tables.items()
            if size / c["journal_bytes"] >= 0.0005))
    for name, figures in results["details"].get("per_format", {}).items():
        lines.append(f"format {name}: {figures['bytes'] / MB:.1f} MB in {figures['journals']} journals, "
                     f"{figures['first_pass_mb_s']:.1f} MB/s (parse baseline {figures['parse_mb_s']:.0f} MB/s), "
                     f"index {100 * figures['index_bytes'] / figures['bytes']:.1f} %")
    for note in results["notes"]:
        lines.append(f"note: {note}")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__.split("\n")[0])
    ap.add_argument("--size", default="50MB", help="corpus size to generate (default 50MB; e.g. 1GB)")
    ap.add_argument("--seed", type=int, default=1, help="corpus and query seed (default 1)")
    ap.add_argument("--out", help="work folder: corpus (OUT/sessions, reused if the same size and seed) and "
                                  "indexes (default: a temporary folder, removed afterwards)")
    ap.add_argument("--corpus", help="use these journals (DIR or DIR/sessions) instead of generating")
    ap.add_argument("--corpus-kind", choices=("generated", "ours"), default="generated",
                    help="generated: benchmarks/corpus/ (default); ours: the shared real pi journals "
                         "replicated to --size by tools/scale_corpus.py --unique, kept in --cache")
    ap.add_argument("--cache", help=f"where --corpus-kind ours keeps its corpora (default {DEFAULT_CACHE})")
    ap.add_argument("--index-only", action="store_true",
                    help="only the corpus, baselines, first passes and index size (no search, read, append)")
    ap.add_argument("--formats", metavar="SIZE",
                    help="also the first pass per journal format over about SIZE of each (e.g. 20MB)")
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON, help=f"results file (default {DEFAULT_JSON})")
    ap.add_argument("--queries", type=int, default=110, help="warm search queries (default 110)")
    ap.add_argument("--repeat", type=int, default=2, help="timed warm rounds over the queries (default 2)")
    ap.add_argument("--cold", type=int, default=20, help="cold CLI searches per scope (default 20)")
    ap.add_argument("--reads", type=int, default=100, help="entries read (default 100)")
    ap.add_argument("--appends", type=int, default=20, help="append -> searchable rounds (default 20)")
    ap.add_argument("--profile", type=Path, help="also profile an in-process first pass into this file")
    ap.add_argument("--keep", action="store_true", help="keep the temporary work folder")
    args = ap.parse_args(argv)
    for name in ("queries", "repeat", "cold", "reads", "appends"):
        if getattr(args, name) < 1:
            ap.error(f"--{name} must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    results = run(args)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_bytes(orjson.dumps(results, option=orjson.OPT_INDENT_2, default=str))
    print(format_table(results))
    if "profile" in results["details"]:
        print("\nprofiled in-process first pass (one process), top 10 by tottime:")
        print(results["details"]["profile"]["top_tottime"].rstrip())
    print(f"\nresults: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
