"""benchmarks/web_bench.py runs end to end on a tiny corpus and reports every figure (no thresholds)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.conftest import REPO


@pytest.mark.slow
def test_web_bench_runs_on_a_tiny_corpus(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    done = subprocess.run([sys.executable, "-m", "benchmarks.web_bench", "--size", "1MB", "--long", "300",
                           "--queries", "3", "--repeat", "1", "--out", str(tmp_path / "corpus"), "--json", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    result = orjson.loads(out.read_bytes())
    for key in ("page", "api"):
        assert result["search"][key]["full_ms"] >= result["search"][key]["first_byte_ms"] > 0
    for key in ("first_page", "middle_page", "entry_near_end"):
        assert result["long_session"][key]["bytes"] > 1000
    assert "long session" in done.stdout and "web/CLI" in done.stdout
