"""Shared fixtures: every test gets its own index and session folders under tmp_path."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest
from hypothesis import settings

from journal_index.data.store import Store, open_store
from journal_index.indexing.indexer import discover, index_files
from tests.helpers import copy_journal_tree

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"

# Property tests draw the same examples on every run unless asked to explore: a plain run must be
# reproducible (derandomize also turns off the example database, so no earlier run's failures are
# replayed). JOURNAL_INDEX_HYPOTHESIS=explore (or pytest --hypothesis-profile=explore) draws fresh
# random examples each time, for hunting new failures; a failure then prints its @seed.
settings.register_profile("seeded", derandomize=True)
settings.register_profile("explore", derandomize=False, database=None, print_blob=True)
settings.load_profile(os.environ.get("JOURNAL_INDEX_HYPOTHESIS", "seeded"))


def pytest_report_header() -> list[str]:
    return [f"sqlite {apsw.sqlite_lib_version()}, apsw {apsw.apsw_version()}"]


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test may touch a real index or real journals."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "no-agent-dir"))
    # every agent's default folder, or a test would index the journals of whoever runs it
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "no-claude-dir"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "no-codex-home"))
    monkeypatch.delenv("JOURNAL_INDEX_DB", raising=False)
    monkeypatch.delenv("JOURNAL_INDEX_SESSIONS", raising=False)
    monkeypatch.delenv("JOURNAL_INDEX_MAX_SCOPE", raising=False)
    monkeypatch.delenv("JOURNAL_INDEX_NOW", raising=False)


@pytest.fixture
def sessions_root(tmp_path: Path) -> Path:
    """A private copy of the fixture session tree (tests may append to or rewrite it)."""
    root = tmp_path / "sessions"
    return copy_journal_tree(FIXTURES / "sessions", root)


@pytest.fixture
def legacy_dir(tmp_path: Path) -> Path:
    root = tmp_path / "legacy"
    return copy_journal_tree(FIXTURES / "legacy", root)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "index.db"


@pytest.fixture
def store(db_path: Path) -> Iterator[Store]:
    opened = open_store(str(db_path))
    yield opened
    opened.conn.close()


@pytest.fixture
def indexed_store(store: Store, sessions_root: Path) -> Store:
    report = index_files(store, discover([sessions_root]))
    assert report.errors == []
    return store
