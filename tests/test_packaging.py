"""The built wheel carries the migrations and the demo journals (a non-editable install works)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO


@pytest.mark.slow
def test_wheel_contains_migrations_and_demo_journals(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(REPO)],
                   check=True, capture_output=True, timeout=600)
    wheel = next(tmp_path.glob("journal_index-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    migrations = sorted(n for n in names if n.startswith("journal_index/migrations/") and n.count("/") == 2)
    assert [Path(n).name for n in migrations] == sorted(p.name for p in (REPO / "migrations").glob("*.sql"))
    hub = sorted(n for n in names if n.startswith("journal_index/migrations/hub/"))  # the team hub's own
    assert [Path(n).name for n in hub] == sorted(p.name for p in (REPO / "migrations" / "hub").glob("*.sql"))
    demo = [n for n in names if n.startswith("journal_index/demo_sessions/") and n.endswith(".jsonl")]
    assert len(demo) == len(list((REPO / "fixtures" / "sessions").rglob("*.jsonl")))
    # The web view's templates and assets ship inside the package (it loads nothing from a CDN).
    web = REPO / "journal_index" / "web"
    for folder in ("templates", "static"):
        shipped = {n for n in names if n.startswith(f"journal_index/web/{folder}/")}
        assert shipped == {f"journal_index/web/{folder}/{p.name}" for p in (web / folder).iterdir()}, folder
