"""Tests for the benchmark corpus generator (benchmarks/corpus/)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from benchmarks import corpus

REPO = Path(__file__).resolve().parents[1]
SIZE = 2_000_000
HEX8 = re.compile(r"^[0-9a-f]{8}$")
FILE_RE = re.compile(
    r"^(\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z)_([0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12})\.jsonl$"
)


def _snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.jsonl"))}


def _ms(iso: str) -> int:
    return int(datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S.%f%z").timestamp() * 1000 + 0.5)


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("corpus")
    return out, corpus.generate(out, SIZE, seed=1)


def test_same_seed_identical_other_seed_different(
    generated: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    out, _ = generated
    first = _snapshot(out)
    corpus.generate(tmp_path / "again", SIZE, seed=1)
    again = _snapshot(tmp_path / "again")
    assert first, "nothing generated"
    assert again.keys() == first.keys()
    assert again == first
    for rel in first:  # mtimes are part of the output too
        assert os.stat(out / rel).st_mtime_ns == os.stat(tmp_path / "again" / rel).st_mtime_ns
    corpus.generate(tmp_path / "other", SIZE, seed=2)
    other = _snapshot(tmp_path / "other")
    assert other.keys() != first.keys()
    assert b"".join(other.values()) != b"".join(first.values())


def test_every_line_is_a_valid_pi_entry(generated: tuple[Path, dict[str, Any]]) -> None:
    out, stats = generated
    files = sorted((out / "sessions").rglob("*.jsonl"))
    assert len(files) == stats["files"] >= 3
    all_ids: set[str] = set()
    known_cwds = {p.cwd for p in corpus.PROJECTS}
    for f in files:
        lines = f.read_bytes().split(b"\n")
        assert lines[-1] == b"", f"{f} must end with a newline"
        entries = [orjson.loads(line) for line in lines[:-1]]
        header = entries[0]
        assert header["type"] == "session" and header["version"] == 3
        assert list(header) == ["type", "version", "id", "timestamp", "cwd"]
        assert header["cwd"] in known_cwds
        assert f.parent.name == corpus.encode_cwd(header["cwd"])
        m = FILE_RE.match(f.name)
        assert m, f.name
        assert m.group(1) == header["timestamp"].replace(":", "-").replace(".", "-")
        assert m.group(2) == header["id"]
        start = _ms(header["timestamp"])
        assert int(header["id"].replace("-", "")[:12], 16) == start  # uuid v7 time = header time
        seen: set[str] = set()
        last = start
        for e in entries[1:]:
            assert list(e)[:1] == ["type"] and {"id", "parentId", "timestamp"} <= e.keys(), e
            assert HEX8.match(e["id"]), e["id"]
            assert e["id"] not in all_ids, f"duplicate entry id {e['id']}"
            all_ids.add(e["id"])
            if not seen:
                assert e["parentId"] is None
            else:
                assert e["parentId"] in seen
            seen.add(e["id"])
            ts = _ms(e["timestamp"])
            assert ts >= last, f"timestamps go backwards in {f.name}"
            last = ts
            if e["type"] == "message":
                msg = e["message"]
                assert msg["role"] in {"user", "assistant", "toolResult", "bashExecution"}
                if msg["role"] == "toolResult":
                    assert {"toolCallId", "toolName", "isError"} <= msg.keys()
                if msg["role"] == "assistant":
                    assert {"usage", "stopReason", "api", "provider", "model"} <= msg.keys()
        assert os.stat(f).st_mtime_ns == last * 1_000_000  # mtime = last entry's time
    assert len(all_ids) == stats["entries"]


def test_json_matches_pi_escaping(generated: tuple[Path, dict[str, Any]]) -> None:
    out, _ = generated
    data = b"".join(_snapshot(out).values())
    assert b"\\/" not in data  # JSON.stringify does not escape "/"
    usage = re.compile(rb',"usage":\{[^{}]*\{[^{}]*\}\}')
    objs = usage.findall(data)
    assert objs
    for u in objs:  # numbers as JSON.stringify writes them: no 9e-6, no 1.0
        assert not re.search(rb"\de-|\.0[,}]", u), u
    for line in data.split(b"\n")[:-1]:
        e = orjson.loads(line)
        if e.get("type") == "message" and "usage" in e["message"]:
            del e["message"]["usage"]
            line = usage.sub(b"", line)
        assert orjson.dumps(e) == line  # compact, unescaped non-ASCII, same key order


def test_mix_and_size_close_to_target(generated: tuple[Path, dict[str, Any]]) -> None:
    _, stats = generated
    assert abs(stats["bytes"] - SIZE) <= 0.05 * SIZE
    for cat, target in corpus.TARGET_MIX.items():
        share = stats["categories"][cat]["share"]
        assert abs(share - target) <= 0.10, f"{cat}: {share:.3f} vs target {target:.3f}"
    assert stats["categories"]["tool_result"]["share"] > 0.6
    measured = corpus.measure_corpus(Path(stats["out_dir"]) / "sessions")
    assert measured["bytes"] == stats["bytes"]
    for cat in corpus.TARGET_MIX:  # the in-process statistics equal a re-measurement of the files
        assert measured["categories"][cat]["bytes"] == stats["categories"][cat]["bytes"]
    assert stats["line_length"] == measured["line_length"]


def test_target_mix_constants_come_from_the_fixtures() -> None:
    fixtures = REPO / "fixtures" / "sessions"
    if not fixtures.is_dir():
        pytest.skip("fixtures/sessions not present")
    measured = corpus.measure_corpus(fixtures)
    for cat, target in corpus.TARGET_MIX.items():
        assert abs(measured["categories"][cat]["share"] - target) < 0.02, cat


def test_text_pools_come_from_the_stdlib() -> None:
    pools = corpus.text_pools()
    assert len(pools.sentences) > 1000 and len(pools.files) > 50 and pools.big and pools.small
    assert any(re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", t) for t in corpus.INTL_TEXT)
    assert any(re.search(r"[éüöñ]", t) for t in corpus.INTL_TEXT)


def test_content_has_secrets_cjk_and_identifiers(tmp_path: Path) -> None:
    stats = corpus.generate(tmp_path, 3_000_000, seed=7)
    data = b"".join(_snapshot(tmp_path).values()).decode()
    assert stats["counts"].get("secrets", 0) > 0
    assert re.search(r"ghp_|github_pat_|AKIA|sk-ant-|sk-proj-|xoxb-|password=|BEGIN RSA|Bearer |eyJ", data)
    assert re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", data)
    assert re.search(r"\b[a-z]+[A-Z][a-z]+\w*", data)  # camelCase
    assert re.search(r"\b[a-z]+_[a-z]+\b", data)  # snake_case
    assert re.search(r"\b[a-z]+-[a-z]+-[a-z]+\b", data)  # kebab-case
    assert re.search(r"\.py:\d+: ", data)  # grep output
    assert '"type":"compaction"' in data and '"thinkingSignature"' in data


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("50MB", 50_000_000),
        ("1GB", 10**9),
        ("500KB", 500_000),
        ("2.5GB", 2_500_000_000),
        ("64MiB", 64 * 2**20),
        ("1gib", 2**30),
        ("123456", 123_456),
    ],
)
def test_parse_size(text: str, expected: int) -> None:
    assert corpus.parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "MB", "12XB", "-5MB", "1.2.3GB", "5 M B", "0MB", "1KB"])
def test_parse_size_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        corpus.parse_size(text)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.000009, "0.000009"),
        (1e-7, "1e-7"),
        (123.0, "123"),
        (0.00015000000000000001, "0.00015000000000000001"),
        (2.697e-05, "0.00002697"),
        (1e21, "1e+21"),
        (0.019737750000000002, "0.019737750000000002"),
        (0, "0"),
    ],
)
def test_js_number(value: float, expected: str) -> None:
    assert corpus.js_number(value) == expected


def test_bad_size_exits_nonzero_with_one_line(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.corpus", "--size", "12XB", "--out", str(tmp_path / "x")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "12XB" in proc.stderr
    assert not (tmp_path / "x").exists()


def test_cli_json_output(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.corpus", "--size", "200KB", "--out", str(tmp_path), "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    stats = orjson.loads(proc.stdout)
    assert stats["files"] >= 1 and set(stats["categories"]) == set(corpus.TARGET_MIX)
    assert abs(stats["bytes"] - 200_000) <= 0.05 * 200_000
