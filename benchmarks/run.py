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
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

import journal_index
from benchmarks import corpus as corpus_mod
from benchmarks.measure import (
    DEFAULT_CACHE,
    DEFAULT_JSON,
    MB,
    Timed,
    append_searchable,
    baselines,
    cold_search,
    db_bytes,
    dbstat,
    first_pass_child,
    first_pass_inprocess,
    journal_index_cmd,
    load_average,
    log,
    machine_info,
    ms,
    optimized_copy,
    pct,
    per_class,
    per_format,
    pick_project,
    prepare_corpus,
    read_latency,
    remove_db,
    rg_search,
    scope_folders,
    summarize,
    timed_run,
    warm_search,
)
from benchmarks.queries import as_json, build_queries
from journal_index.data.store import open_store
from journal_index.indexing import indexer, journal_blocks, journal_pass
from journal_index.query.scope import Scope

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
        if args.profile:  # last, so it does not disturb the other figures
            details["profile"] = profiled_first_pass(args.profile, out / "profile.db", paths)
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
        details["profile"] = profiled_first_pass(args.profile, out / "profile.db", paths)
    return finish(args, metrics, notes, details, corpus_stats, journal_bytes, paths)


def profiled_first_pass(stats_file: Path, db: Path, paths: list[str]) -> dict[str, str]:
    """An in-process first pass under cProfile: its stats in ``stats_file``, the top 10 by tottime."""
    log(f"profiled in-process first pass -> {stats_file}")
    profiler = cProfile.Profile()
    profiler.enable()
    first_pass_inprocess(db, paths)
    profiler.disable()
    profiler.dump_stats(str(stats_file))
    text = io.StringIO()
    pstats.Stats(str(stats_file), stream=text).sort_stats("tottime").print_stats(10)
    return {"file": str(stats_file), "top_tottime": text.getvalue()}


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
