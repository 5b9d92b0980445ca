"""Start-up of ``journal-index mcp``: what a host waits for before it can list or call our tool.

    python -m benchmarks.mcp_startup [--runs 20] [--import-runs 5] [--json FILE]

1.  spawn + initialize: start ``journal-index --db X --sessions EMPTY mcp`` (the console script
    next to this interpreter), send MCP ``initialize``, and time from just before the spawn to the
    reply's line on stdout; then ``notifications/initialized`` + ``tools/list``, timed to its reply.
    Two untimed runs first (a warm file cache), then ``--runs`` timed ones; p50, p95, min and max.
    The floor of a Python process on this machine (``python -c pass``) is timed the same way, in
    turn with the server's runs, and each figure is also given as a multiple of that floor's p50
    (machines differ; the ratio travels better). Codex sends its first model request about 1 s
    after spawning its servers: the initialize reply must come well before (the goal: 150 ms p95).
2.  imports: ``python -X importtime -c "import journal_index.agent.mcp_server"``, its self times summed
    by owner: the interpreter's own start-up, journal_index (and what only it imports), the MCP
    SDK (``mcp`` and the distributions it requires: pydantic, anyio, starlette, …; a stdlib module
    counts for whoever imported it first). Median of ``--import-runs`` runs per owner. The same for
    what the console script imports before serving (``journal_index.agent.entry_point``, which reads an
    ``mcp`` command line without the click CLI), which is what a host waits for.

No figure here is asserted anywhere; machines differ. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import IO, Any

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {"roots": {}},
                         "clientInfo": {"name": "mcp-startup-bench", "version": "0"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
WARMUP = 2
# What `journal-index mcp` imports before it can answer: the console script's module, then the server.
ENTRY_IMPORTS = "journal_index.agent.entry_point, journal_index.agent.mcp_server"
_IMPORTTIME = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( +)(\S+)$")


def executable() -> Path:
    found = Path(sys.executable).parent / "journal-index"
    if not found.exists():
        raise SystemExit(f"{found} is missing: pip install -e . into this interpreter's environment")
    return found


def _send(stream: IO[bytes], message: dict[str, Any]) -> None:
    stream.write(json.dumps(message).encode() + b"\n")
    stream.flush()


def _reply(stream: IO[bytes], wanted: int) -> dict[str, Any]:
    while True:
        line = stream.readline()
        if not line:
            raise RuntimeError("the server closed stdout before answering")
        message = json.loads(line)
        if message.get("id") == wanted:
            return dict(message)


def handshake(folder: Path) -> tuple[float, float, dict[str, Any]]:
    """(seconds to the initialize reply, seconds to the tools/list reply, the initialize result)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JOURNAL_INDEX_", "PI_"))}
    env["HOME"] = str(folder / "home")
    argv = [str(executable()), "--db", str(folder / "index.db"), "--sessions", str(folder / "sessions"), "mcp"]
    errors = folder / "stderr.txt"
    with open(errors, "wb") as stderr:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env,
                                cwd=folder)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        _send(proc.stdin, INITIALIZE)
        try:
            init = _reply(proc.stdout, 1)
        except RuntimeError:
            proc.wait(timeout=10)
            tail = "\n".join(errors.read_text(errors="replace").splitlines()[-5:])
            raise SystemExit(f"journal-index mcp exited {proc.returncode} before answering initialize:\n"
                             f"{tail}") from None
        initialized = time.perf_counter() - started
        _send(proc.stdin, INITIALIZED)
        _send(proc.stdin, TOOLS_LIST)
        tools = _reply(proc.stdout, 2)
        listed = time.perf_counter() - started
        assert [t["name"] for t in tools["result"]["tools"]] == ["memory_context"], tools
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return initialized, listed, dict(init["result"])


def python_floor() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - started


def spread(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"median": statistics.median(values), "p95": p95, "min": min(values), "max": max(values)}


def _closure(dist: str) -> set[str]:
    """A distribution and everything it requires (installed ones), names normalized."""
    seen: set[str] = set()
    todo = [dist]
    while todo:
        name = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if name in seen:
            continue
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        seen.add(name)
        for requirement in requires:
            if "extra ==" not in requirement:
                todo.append(re.split(r"[\s;<>=!~\[(]", requirement, maxsplit=1)[0])
    return seen


def _owner_of_package() -> dict[str, str]:
    """Top-level module → "mcp SDK" (mcp and what it requires) or "journal_index" (it and the rest
    of what it requires); stdlib modules are not listed (they belong to whoever imported them)."""
    sdk = _closure("mcp")
    ours = _closure("journal-index") - sdk
    owners: dict[str, str] = {}
    for module, dists in metadata.packages_distributions().items():
        names = {re.sub(r"[-_.]+", "-", d).lower() for d in dists}
        if names & sdk:
            owners[module] = "mcp SDK"
        elif names & ours:
            owners[module] = "journal_index"
    owners["journal_index"] = "journal_index"
    return owners


def import_shares(modules: str, runs: int) -> dict[str, Any]:
    """``runs`` runs of :func:`import_once`: the median per owner, and the slowest modules of the
    median run (by total)."""
    once = sorted((import_once(modules) for _ in range(runs)), key=lambda r: r["totalMs"])
    owners = list(once[0]["byOwnerMs"])
    by_owner = {k: statistics.median(r["byOwnerMs"][k] for r in once) for k in owners}
    total = sum(by_owner.values())
    middle = once[len(once) // 2]
    return {"import": modules, "runs": runs, "totalMs": total, "byOwnerMs": by_owner,
            "shares": {k: v / total for k, v in by_owner.items()},
            "mcpServerCumulativeMs": middle["mcpServerCumulativeMs"], "slowestSelfMs": middle["slowestSelfMs"]}


def import_once(modules: str) -> dict[str, Any]:
    """Self times of ``import MODULES`` (microseconds) summed by owner: a module of a package goes
    to that package's owner, a stdlib module to the owner of what imported it."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {modules}"],
                          capture_output=True, text=True, check=True)
    rows = []
    for line in done.stderr.splitlines():
        match = _IMPORTTIME.match(line)
        if match:
            rows.append((int(match[1]), int(match[2]), (len(match[3]) - 1) // 2, match[4]))
    packages = _owner_of_package()
    owners = {"interpreter": 0, "journal_index": 0, "mcp SDK": 0}
    stack: list[tuple[int, str]] = []  # (depth, owner) of the open ancestors
    top: dict[str, int] = {}
    # importtime prints children before their parent: read backwards, parents come first.
    for self_us, cumulative_us, depth, name in reversed(rows):
        while stack and stack[-1][0] >= depth:
            stack.pop()
        owner = packages.get(name.split(".")[0]) or (stack[-1][1] if stack else "interpreter")
        owners[owner] += self_us
        stack.append((depth, owner))
        if depth == 0:
            top[name] = cumulative_us
    total = sum(owners.values())
    return {"totalMs": total / 1000, "byOwnerMs": {k: v / 1000 for k, v in owners.items()},
            "shares": {k: v / total for k, v in owners.items()},
            "mcpServerCumulativeMs": top.get("journal_index.agent.mcp_server", 0) / 1000,
            "slowestSelfMs": sorted(((r[0] / 1000, r[3]) for r in rows), reverse=True)[:10]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--import-runs", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="mcp-startup-") as tmp:
        folder = Path(tmp)
        (folder / "home").mkdir()
        (folder / "sessions").mkdir()
        for _ in range(WARMUP):
            handshake(folder)
            python_floor()
        runs, floors = [], []
        for _ in range(args.runs):  # in turn, so a busy moment of the machine weighs on both
            runs.append(handshake(folder))
            floors.append(python_floor())
    instructions = runs[0][2].get("instructions") or ""
    imports = import_shares("journal_index.agent.mcp_server", args.import_runs)
    entry = import_shares(ENTRY_IMPORTS, args.import_runs)
    results = {
        "runs": args.runs,
        "initializeSeconds": spread([r[0] for r in runs]),
        "toolsListSeconds": spread([r[1] for r in runs]),
        "pythonFloorSeconds": spread(floors),
        "instructionsFirstLine": instructions.splitlines()[0] if instructions else None,
        "imports": imports,
        "entryPointImports": entry,
    }
    init, listed, floor = results["initializeSeconds"], results["toolsListSeconds"], results["pythonFloorSeconds"]
    print(f"journal-index mcp, {args.runs} spawns after {WARMUP} warm-up runs (p50, p95, min–max; "
          "× the floor's p50):")
    for label, figures in (("spawn → initialize reply", init), ("spawn → tools/list reply", listed),
                           ("python -c pass (floor)", floor)):
        print(f"  {label:<26} p50 {figures['median'] * 1000:6.1f} ms ({figures['median'] / floor['median']:4.1f}×)"
              f"  p95 {figures['p95'] * 1000:6.1f} ms ({figures['p95'] / floor['median']:4.1f}×)"
              f"  ({figures['min'] * 1000:.1f}–{figures['max'] * 1000:.1f})")
    print(f"  instructions sent: {'yes' if instructions else 'NO'}")
    for shares in (imports, entry):
        print(f"import {shares['import']} (-X importtime, self times summed, median of {shares['runs']}): "
              f"{shares['totalMs']:.1f} ms")
        for owner, ms in shares["byOwnerMs"].items():
            print(f"  {owner:<14} {ms:7.1f} ms  {shares['shares'][owner]:6.1%}")
        print("  slowest modules (self): "
              + ", ".join(f"{name} {ms:.1f} ms" for ms, name in shares["slowestSelfMs"][:5]))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
