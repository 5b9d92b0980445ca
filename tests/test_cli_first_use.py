"""What a new user meets first: a --db where no index is, empty results, counts, completion."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

READ_ONLY = [
    ["status"],
    ["status", "--json"],
    ["search", "token"],
    ["read", "20147e3f"],
    ["summaries"],
    ["sessions"],
    ["export", "files"],
]


def journal_index(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "journal_index", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120)


@pytest.mark.parametrize("command", READ_ONLY, ids=" ".join)
def test_a_read_only_command_creates_no_index(tmp_path: Path, sessions_root: Path, command: list[str]) -> None:
    folder = tmp_path / "typo"  # neither the file nor its folder exists
    db = folder / "index.db"
    done = journal_index("--db", str(db), "--sessions", str(sessions_root), *command)
    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"no index at {db}" in lines[0] and "journal-index index" in lines[0], lines
    assert done.stdout == ""
    assert not folder.exists()


def test_no_index_from_the_environment_or_an_empty_file(tmp_path: Path, sessions_root: Path) -> None:
    db = tmp_path / "index.db"
    done = journal_index("search", "token", env={"JOURNAL_INDEX_DB": str(db), "JOURNAL_INDEX_SESSIONS":
                                                 str(sessions_root)})
    assert done.returncode == 1 and "no index at" in done.stderr
    for suffix in ("", "-wal", "-shm"):
        assert not Path(f"{db}{suffix}").exists()
    db.write_bytes(b"")  # an empty file (touch) is no index either, and stays as it was
    done = journal_index("--db", str(db), "status")
    assert done.returncode == 1 and "no index at" in done.stderr
    assert db.stat().st_size == 0 and not Path(f"{db}-wal").exists()


def test_index_still_makes_the_index_and_then_reads_work(tmp_path: Path, sessions_root: Path) -> None:
    db = tmp_path / "new" / "index.db"
    assert journal_index("--db", str(db), "--sessions", str(sessions_root), "index").returncode == 0
    done = journal_index("--db", str(db), "--sessions", str(sessions_root), "status")
    assert done.returncode == 0 and "sessions" in done.stdout
