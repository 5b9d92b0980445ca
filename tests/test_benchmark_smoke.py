"""The benchmark runs end to end on a tiny corpus and reports every metric (no timing thresholds)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parent.parent

METRICS = (
    "baseline_read_mb_s",
    "baseline_parse_mb_s",
    "first_pass_mb_s",
    "first_pass_vs_parse",
    "first_pass_peak_rss_mb",
    "inprocess_first_pass_mb_s",
    "longest_write_ms",
    "index_size_pct",
    "index_size_optimized_pct",
    "warm_project_p50_ms",
    "warm_project_p95_ms",
    "warm_project_p99_ms",
    "warm_global_p50_ms",
    "warm_global_p95_ms",
    "warm_global_p99_ms",
    "cold_startup_p50_ms",
    "cold_project_p50_ms",
    "cold_project_p95_ms",
    "cold_global_p50_ms",
    "cold_global_p95_ms",
    "append_searchable_p50_ms",
    "append_searchable_p95_ms",
    "read_p50_ms",
    "read_p95_ms",
)
RG_METRICS = (
    "rg_project_p50_ms",
    "rg_global_p50_ms",
    "rg_vs_warm_project",
    "rg_vs_warm_global",
    "rg_vs_cold_project",
    "rg_vs_cold_global",
)


def test_benchmark_smoke(tmp_path: Path) -> None:
    results = tmp_path / "results.json"
    cmd = [sys.executable, "-m", "benchmarks.run", "--size", "3MB", "--out", str(tmp_path / "work"),
           "--json", str(results), "--queries", "21", "--repeat", "1", "--cold", "3", "--reads", "10",
           "--appends", "3"]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "| metric" in done.stdout

    data = orjson.loads(results.read_bytes())
    metrics = data["metrics"]
    expected = METRICS + (RG_METRICS if shutil.which("rg") else ())
    for name in expected:
        assert name in metrics, f"{name} missing"
        value = metrics[name]["value"]
        assert isinstance(value, int | float) and value > 0, f"{name} = {value!r}"
    if not shutil.which("rg"):
        assert any("rg" in note for note in data["notes"])
    assert data["corpus"]["journal_bytes"] > 2_000_000
    assert len(data["details"]["queries"]["list"]) == 21
    assert data["machine"]["cores"] >= 1
    # The journal used for the append rounds was put back as it was.
    appended = Path(data["details"]["append"]["journal"])
    assert appended.stat().st_size == data["details"]["append"]["journal_bytes"]
