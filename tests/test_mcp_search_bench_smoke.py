"""benchmarks/mcp_search.py runs end to end on the fixture journals, says which semantic mode it
measured, and refuses a mode it cannot run (no thresholds: machines differ)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from journal_index.semantic import embedder
from tests.conftest import REPO


def _bench(tmp_path: Path, sessions: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    db = tmp_path / "index.db"
    if not db.exists():
        subprocess.run([sys.executable, "-m", "journal_index", "--db", str(db), "--sessions", str(sessions), "index"],
                       cwd=REPO, check=True, capture_output=True)
    return subprocess.run([sys.executable, "-m", "benchmarks.mcp_search", "--db", str(db), "--sessions", str(sessions),
                           "--queries", "5", "--rounds", "1", *extra], cwd=REPO, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.slow
def test_mcp_search_bench_measures_the_mode_it_says(tmp_path: Path, sessions_root: Path) -> None:
    out = tmp_path / "mcp.json"
    done = _bench(tmp_path, sessions_root, "--json", str(out))
    assert done.returncode == 0, done.stderr
    result = orjson.loads(out.read_bytes())
    assert result["semantic"] == "off" and "semantic layer off" in done.stdout
    for scope in ("project", "global"):
        assert result[scope]["mcp"]["p50"] > 0
    asked = _bench(tmp_path, sessions_root, "--semantic", "on")
    if embedder.missing():  # the main test run: the extra is not installed
        assert asked.returncode == 2 and embedder.NOT_INSTALLED in asked.stderr, asked.stderr
    else:
        assert asked.returncode == 0 and "semantic layer on" in asked.stdout, asked.stderr


def test_the_paths_take_turns_round_by_round() -> None:
    """Each path is warmed once, then the timed rounds alternate between the paths, every
    query of a round in turn, so a drift of the machine's speed falls on each path alike."""
    from benchmarks.mcp_search import TimedPath, timed_rounds
    from benchmarks.queries import Query

    calls: list[tuple[str, str]] = []

    def path(name: str) -> TimedPath:
        return (lambda q, scope: calls.append((name, q.text)), lambda: 0.0)

    queries = [Query("one", "rare", 1), Query("two", "rare", 1)]
    samples = timed_rounds({"mcp": path("mcp"), "tool": path("tool")}, queries, "project", rounds=2)
    warm = [("mcp", "one"), ("mcp", "two"), ("tool", "one"), ("tool", "two")]
    assert calls == warm + warm + warm
    assert {name: len(wall) for name, (wall, _) in samples.items()} == {"mcp": 4, "tool": 4}
