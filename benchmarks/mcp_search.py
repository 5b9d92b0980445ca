"""Warm search through ``journal-index mcp``: what an agent waits for per ``memory_context`` call.

    python -m benchmarks.mcp_search --db INDEX --sessions DIR [--queries 60] [--rounds 3] [--json FILE]
                                    [--semantic off|on|gated]

INDEX must already hold DIR (``journal-index --db INDEX --sessions DIR index``); it is copied, so
the server's writes (it indexes the current journal before every call) never touch it.

1.  queries: ``benchmarks.queries.build_queries`` (seeded; rare, medium and common words, phrases,
    identifiers, file names, words that match nothing).
2.  the server: ``journal-index --db COPY --sessions DIR mcp --session-file NEWEST --cwd ITS_CWD``
    (the newest journal stands for the agent's current one: unchanged between calls, the case of
    a model reading results), after ``initialize``; one untimed round, then ``--rounds`` timed
    rounds of ``tools/call`` (project scope, as an agent calls by default; then global), each
    timed from writing the request to reading its reply line. The three paths (this one and the
    two baselines below) take turns round by round, so a drift of the machine's speed falls on
    each alike.
3.  baselines in this run, same queries, same copy: ``MemoryTool.call`` in-process (the tool
    without the MCP transport) and ``query.search`` alone (the search without the tool's
    freshness check, scope and rendering).

Figures: p50, p95, p99 and max in ms per path and scope, the mean CPU per call (in-process: this
process's; the server: its whole process from /proc, its background Freshener included), and the
ratios MCP / in-process tool and in-process tool / bare search. No figure is asserted anywhere;
machines differ.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.mcp_startup import _reply, _send
from benchmarks.queries import Query, build_queries
from journal_index.agent.tool import MemoryTool
from journal_index.data.store import open_store
from journal_index.indexing.indexer import discover
from journal_index.query import Filters, search
from journal_index.query.scope import resolve_scope
from journal_index.semantic import fusion

INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "mcp-search-bench", "version": "0"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
SCOPES = ("project", "global")


def newest_journal(sessions: Path) -> str:
    """The newest journal under ``sessions`` (by mtime, then path)."""
    return max(discover([sessions]), key=lambda p: (os.stat(p).st_mtime_ns, p))


def spread(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"p50": statistics.median(ordered) * 1000,
            "p95": _rank(ordered, 0.95) * 1000, "p99": _rank(ordered, 0.99) * 1000,
            "max": ordered[-1] * 1000, "n": len(ordered)}


def _rank(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def process_cpu(pid: int) -> float:
    """Seconds of CPU (user + system, all threads) a process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


TimedPath = tuple[Callable[[Query, str], None], Callable[[], float]]  # a call, and the CPU clock it is counted by


def timed_rounds(paths: dict[str, TimedPath], queries: list[Query], scope: str,
                 rounds: int) -> dict[str, tuple[list[float], list[float]]]:
    """Per path, (wall seconds per call, CPU seconds per call as its clock counts them: this
    process's, or for the server its whole process's, read from /proc, threads included). The
    paths take turns round by round (MCP, tool, search, MCP, …): this VM's speed drifts within
    a minute, and a drift then falls on every path alike, so their ratios hold."""
    for call, _ in paths.values():
        for q in queries:  # untimed: page cache, statement cache, lazily built state
            call(q, scope)
    samples: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in paths}
    for _ in range(rounds):
        for name, (call, cpu) in paths.items():
            wall, used = samples[name]
            for q in queries:
                started, cpu_started = time.perf_counter(), cpu()
                call(q, scope)
                wall.append(time.perf_counter() - started)
                used.append(cpu() - cpu_started)
    return samples


def figures(samples: tuple[list[float], list[float]]) -> dict[str, Any]:
    wall, used = samples
    return {**spread(wall), "cpu": spread(used), "cpu_mean": statistics.fmean(used) * 1000}


def run(db: Path, sessions: Path, n: int, rounds: int, seed: int) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="mcp-search-"))
    try:
        copy = work / "index.db"
        shutil.copy(db, copy)
        store = open_store(str(copy))
        queries = build_queries(store, sessions, n, seed)
        current = newest_journal(sessions)
        cwd = str(store.value("SELECT cwd FROM files WHERE path = ?", (current,), default="") or "/")
        results: dict[str, Any] = {"queries": len(queries), "rounds": rounds, "current": current, "cwd": cwd,
                                   "byClass": sorted({q.kind for q in queries}),
                                   "semantic": os.environ.get(fusion.ENV, fusion.DEFAULT_MODE)}

        def bare(q: Query, scope: str) -> None:
            search(store, q.text, Filters(resolve_scope(store, scope, cwd)), limit=9)

        tool = MemoryTool(str(copy), [sessions], cwd=cwd, session_file=current, max_scope="global")

        def in_process(q: Query, scope: str) -> None:
            answer = tool.call({"action": "search", "query": q.text, "scope": scope})
            assert not answer.is_error, answer.text

        # None of the caller's settings, but the semantic layer's mode this run measures
        env = {k: v for k, v in os.environ.items() if not k.startswith("JOURNAL_INDEX_")}
        env[fusion.ENV] = os.environ[fusion.ENV]
        exe = Path(sys.executable).parent / "journal-index"
        argv = [str(exe), "--db", str(copy), "--sessions", str(sessions), "mcp", "--session-file", current,
                "--cwd", cwd, "--max-scope", "global"]
        errors = work / "stderr.txt"
        with open(errors, "wb") as stderr:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env,
                                    cwd=work)
        assert proc.stdin is not None and proc.stdout is not None
        stdin, stdout = proc.stdin, proc.stdout
        ids = iter(range(1, 10**9))

        def over_mcp(q: Query, scope: str) -> None:
            wanted = next(ids)
            _send(stdin, {"jsonrpc": "2.0", "id": wanted, "method": "tools/call",
                          "params": {"name": "memory_context",
                                     "arguments": {"action": "search", "query": q.text, "scope": scope}}})
            reply = _reply(stdout, wanted)
            assert "result" in reply and not reply["result"].get("isError"), reply

        try:
            _send(stdin, INITIALIZE)
            _reply(stdout, 0)
            _send(stdin, INITIALIZED)
            for scope in SCOPES:
                paths: dict[str, TimedPath] = {"mcp": (over_mcp, lambda: process_cpu(proc.pid)),
                                           "tool": (in_process, time.process_time),
                                           "search": (bare, time.process_time)}
                samples = timed_rounds(paths, queries, scope, rounds)
                results[scope] = {name: figures(samples[name]) for name in paths}
        finally:
            stdin.close()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            tool.close()
            store.close()
        return results
    finally:
        shutil.rmtree(work, ignore_errors=True)


def table(results: dict[str, Any]) -> str:
    lines = [f"{results['queries']} queries × {results['rounds']} rounds; current journal unchanged; "
             f"semantic layer {results.get('semantic', 'off')}",
             f"{'scope':8} {'path':22} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'max ms':>8}"
             f" {'CPU mean':>9}"]
    names = {"mcp": "MCP (stdio round trip)", "tool": "tool in-process", "search": "query.search alone"}
    for scope in SCOPES:
        for path, name in names.items():
            s = results[scope][path]
            lines.append(f"{scope:8} {name:22} {s['p50']:8.1f} {s['p95']:8.1f} {s['p99']:8.1f} {s['max']:8.1f}"
                         f" {s['cpu_mean']:9.1f}")
        mcp, tool, bare = (results[scope][k]["p50"] for k in ("mcp", "tool", "search"))
        lines.append(f"{'':8} p50 ratios: MCP/tool {mcp / tool:.2f}, tool/search {tool / bare:.2f}")
    lines.append("CPU mean: ms of CPU per call (the server: its whole process, the Freshener's thread too; "
                 "/proc ticks, 10 ms apiece, so only the mean means anything)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.mcp_search", description=__doc__.split("\n")[0])
    ap.add_argument("--db", required=True, type=Path, help="an index built from --sessions (copied, never written)")
    ap.add_argument("--sessions", required=True, type=Path)
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", type=Path, help="write the figures here too")
    ap.add_argument("--semantic", choices=fusion.MODES, default="off",
                    help="the semantic layer's mode, for the server and the in-process paths alike (default off; "
                         "'on' needs the extra and an index with vectors)")
    args = ap.parse_args(argv)
    if not args.db.is_file():
        ap.error(f"--db {args.db} is not a file; build it with journal-index --db DB --sessions DIR index")
    os.environ[fusion.ENV] = args.semantic
    if fusion.mode() != args.semantic:
        ap.error(f"--semantic {args.semantic}: {fusion.setting().why_off}")
    results = run(args.db, args.sessions, args.queries, args.rounds, args.seed)
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
