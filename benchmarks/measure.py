"""The measurements of :mod:`benchmarks.run`: the baselines, first passes, index sizes,
warm, cold and ripgrep searches, appends and reads, each timed the same way and summarized
by percentile. ``run`` decides what to measure and prints the figures.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
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

from benchmarks import agent_corpora
from benchmarks import corpus as corpus_mod
from benchmarks.queries import CLASSES, Query
from journal_index import query
from journal_index.data.store import Store, open_store
from journal_index.formats import Root
from journal_index.indexing import indexer
from journal_index.query.scope import Scope, is_home, resolve_scope

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_JSON = ROOT / "benchmarks" / "out" / "results.json"
DEFAULT_CACHE = ROOT / "benchmarks" / "out" / "cache"
MB = 1_000_000
RSS_POLL_S = 0.02




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
