"""The web view's page times, against the CLI measured in the same run.

    python -m benchmarks.web_bench [--size 50MB] [--out DIR] [--long 10000] [--queries 30] [--json FILE]

1. corpus: ``benchmarks.corpus.generate`` into OUT/sessions (reused when OUT/corpus.json says the
   same size and seed), plus one long pi session of ``--long`` entries (user, assistant with a
   tool call, tool result, over and over) in OUT/sessions/--home-bench-long--.
2. index: ``journal-index index`` (a child process), then ``journal-index serve`` (a child
   process on a free port), signed in once with its token.
3. search: for ``--queries`` queries of ``benchmarks.queries`` (stratified: rare, common, phrases,
   identifiers, nothing), the search page ``/search?q=`` and ``/api/search?q=``, each timed to
   its first byte (headers read) and to its last byte, over one keep-alive connection, after one
   untimed round; against ``journal-index search --json`` per query (a new process, as a user runs
   it) and the same ``Service.search`` in-process (warm, the floor).
4. long session: its first page, a page in the middle, and an entry near its end opened in its
   place (``?at=``), each ``--repeat`` times; against ``journal-index read --session … --json``.
5. a table on stdout, JSON to ``--json`` (default benchmarks/out/web-bench.json). Times are
   medians in milliseconds; ratios are web ÷ CLI (below 1: the page is faster than the command).
"""

from __future__ import annotations

import argparse
import http.client
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import orjson

from benchmarks.corpus import generate, parse_size
from benchmarks.queries import build_queries
from journal_index.data.store import open_store
from journal_index.indexing.indexer import as_roots
from journal_index.service import Caller, Request, Service

REPO = Path(__file__).resolve().parent.parent
LONG_CWD = "/home/bench/long"
LONG_ID = "01b00000-0000-7000-8000-00000000long"


def long_session(folder: Path, entries: int) -> Path:
    """A pi journal of ``entries`` message entries: a user asks, the assistant calls a tool, the
    tool answers (about 1 KB of output), round after round."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"2026-09-01T08-00-00-000Z_{LONG_ID}.jsonl"
    start = 1_788_249_600_000  # 2026-09-01T08:00Z
    lines = [orjson.dumps({"type": "session", "version": 3, "id": LONG_ID, "timestamp": "2026-09-01T08:00:00.000Z",
                           "cwd": LONG_CWD})]
    parent = None
    for n in range(entries):
        ms = start + n * 1000
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"
        step = n % 3
        if step == 0:
            message: dict[str, Any] = {"role": "user", "content": [{"type": "text", "text":
                                       f"round {n // 3}: check the queue worker for retries and backoff"}]}
        elif step == 1:
            message = {"role": "assistant", "content": [
                {"type": "text", "text": f"Looking at worker step {n // 3}."},
                {"type": "toolCall", "id": f"call_{n}", "name": "bash",
                 "arguments": {"command": f"grep -n retry app/worker_{n % 50}.py"}}]}
        else:
            body = "\n".join(f"app/worker_{n % 50}.py:{i}: retry_backoff(attempt={i}) # exponential" for i in range(18))
            message = {"role": "toolResult", "toolCallId": f"call_{n - 1}", "toolName": "bash",
                       "content": [{"type": "text", "text": body}], "isError": False}
        entry_id = f"{n:08x}"
        lines.append(orjson.dumps({"type": "message", "id": entry_id, "parentId": parent, "timestamp": stamp,
                                   "message": {**message, "timestamp": ms}}))
        parent = entry_id
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _cli(db: Path, sessions: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "journal_index", "--db", str(db), "--sessions", str(sessions), *args]


class Client:
    """One keep-alive connection to the server, signed in: (first byte, last byte) per GET."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        assert parts.hostname and parts.port
        self.conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
        self.conn.request("GET", f"/?{parts.query}")
        answer = self.conn.getresponse()
        answer.read()
        assert answer.status == 303, answer.status
        self.cookie = answer.getheader("set-cookie", "").split(";")[0]

    def get(self, path: str) -> tuple[float, float, int, bytes]:
        began = time.perf_counter()
        self.conn.request("GET", path, headers={"Cookie": self.cookie})
        answer = self.conn.getresponse()  # returns once the status line and headers are in
        first = time.perf_counter() - began
        body = answer.read()
        return first, time.perf_counter() - began, answer.status, body


def _median_ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1000, 2)


def _timed(run: Callable[[], Any], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        began = time.perf_counter()
        run()
        out.append(time.perf_counter() - began)
    return out


def _page(client: Client, path: str, repeat: int) -> dict[str, Any]:
    client.get(path)  # untimed: warms the page cache and the templates
    firsts, fulls, size = [], [], 0
    for _ in range(repeat):
        first, full, status, body = client.get(path)
        assert status == 200, (path, status, body[:200])
        firsts.append(first)
        fulls.append(full)
        size = len(body)
    return {"first_byte_ms": _median_ms(firsts), "full_ms": _median_ms(fulls), "bytes": size}


def run(args: argparse.Namespace) -> dict[str, Any]:
    out = Path(args.out)
    size = parse_size(args.size)
    marker = out / "corpus.json"
    sessions = out / "sessions"
    wanted = {"size": size, "seed": args.seed, "long": args.long}
    if not (marker.exists() and orjson.loads(marker.read_bytes()) == wanted):
        if sessions.exists():
            import shutil

            shutil.rmtree(sessions)
        generate(out, size, args.seed)
        long_session(sessions / "--home-bench-long--", args.long)
        marker.write_bytes(orjson.dumps(wanted))
    journal_bytes = sum(p.stat().st_size for p in sessions.rglob("*.jsonl"))
    db = out / "index.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    began = time.perf_counter()
    subprocess.run(_cli(db, sessions, "index", "--json"), check=True, capture_output=True, cwd=out)
    index_s = time.perf_counter() - began

    store = open_store(str(db))
    service = Service(store, as_roots([sessions]))
    queries = [q.text for q in build_queries(store, sessions, n=max(args.queries, 20), seed=args.seed)][: args.queries]
    caller = Caller(cwd=str(out))

    proc = subprocess.Popen(_cli(db, sessions, "serve", "--no-open"), cwd=out, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().decode().strip()
        client = Client(url)
        search: dict[str, Any] = {"queries": len(queries)}
        pages, apis, clis, warm = [], [], [], []
        for q in queries:
            # limit=10 on the page too: the CLI's and the API's default (the page alone shows 20)
            pages.append(_page(client, f"/search?q={quote(q)}&scope=global&limit=10", args.repeat))
            apis.append(_page(client, f"/api/search?q={quote(q)}&scope=global", args.repeat))
            command = _cli(db, sessions, "search", *q.split(), "--scope", "global", "--json")
            clis.append(_timed(partial(subprocess.run, command, check=True, capture_output=True, cwd=out), 1)[0])
            request = Request(q, scope="global")
            warm.append(statistics.median(_timed(partial(service.search, request, caller), args.repeat)))
        for name, rows in (("page", pages), ("api", apis)):
            search[name] = {"first_byte_ms": round(statistics.median(r["first_byte_ms"] for r in rows), 2),
                            "full_ms": round(statistics.median(r["full_ms"] for r in rows), 2),
                            "p90_full_ms": round(sorted(r["full_ms"] for r in rows)[int(len(rows) * 0.9) - 1], 2)}
        search["cli_process_ms"] = _median_ms(clis)
        search["in_process_ms"] = _median_ms(warm)
        for name in ("page", "api"):
            search[name]["ratio_to_cli_process"] = round(search[name]["full_ms"] / search["cli_process_ms"], 3)
            search[name]["ratio_to_in_process"] = round(search[name]["full_ms"] / search["in_process_ms"], 2)

        base = f"/session/pi/{LONG_ID}"
        near_end = f"{args.long - 7:08x}"
        long: dict[str, Any] = {"entries": args.long,
                                "first_page": _page(client, base, args.repeat),
                                "middle_page": _page(client, f"{base}?offset={args.long // 2}", args.repeat),
                                "entry_near_end": _page(client, f"{base}?at={near_end}", args.repeat)}
        cli_read = _timed(lambda: subprocess.run(_cli(db, sessions, "read", "--session", f"pi:{LONG_ID}", "--json"),
                                                 check=True, capture_output=True, cwd=out), args.repeat)
        long["cli_read_process_ms"] = _median_ms(cli_read)
        for name in ("first_page", "middle_page", "entry_near_end"):
            long[name]["ratio_to_cli_process"] = round(long[name]["full_ms"] / long["cli_read_process_ms"], 3)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        store.close()
    return {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "system": platform.platform()},
            "corpus": {"size": args.size, "journal_bytes": journal_bytes, "seed": args.seed,
                       "long_session_entries": args.long, "index_s": round(index_s, 1)},
            "search": search, "long_session": long}


def table(result: dict[str, Any]) -> str:
    s, long = result["search"], result["long_session"]
    rows = [f"corpus {result['corpus']['journal_bytes'] / 1e6:.0f} MB of journals (indexed in "
            f"{result['corpus']['index_s']} s), a {long['entries']:,}-entry session; medians in ms",
            f"search ({s['queries']} queries, 10 hits)  first byte   full  p90 full  web/CLI process  web/in-process",
            *(f"  {label:<24} {s[key]['first_byte_ms']:>10} {s[key]['full_ms']:>7} {s[key]['p90_full_ms']:>9} "
              f"{s[key]['ratio_to_cli_process']:>16} {s[key]['ratio_to_in_process']:>15}"
              for key, label in (("page", "page /search?q="), ("api", "api  /api/search?q="))),
            f"  CLI search --json (a process) {s['cli_process_ms']} · Service.search in-process {s['in_process_ms']}",
            "long session                first byte   full    bytes    web/CLI read process"]
    for name in ("first_page", "middle_page", "entry_near_end"):
        row = long[name]
        rows.append(f"  {name:<24} {row['first_byte_ms']:>10} {row['full_ms']:>7} {row['bytes']:>8} "
                    f"{row['ratio_to_cli_process']:>14}")
    rows.append(f"  CLI read --session --json (a process) {long['cli_read_process_ms']}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", default="50MB")
    parser.add_argument("--out", default="/tmp/journal-index-web-bench")
    parser.add_argument("--long", type=int, default=10_000, help="entries of the long session")
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", default=str(REPO / "benchmarks" / "out" / "web-bench.json"))
    args = parser.parse_args(argv)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    result = run(args)
    print(table(result))
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
