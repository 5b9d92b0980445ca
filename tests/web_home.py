"""Journals of all three agents copied into a temporary folder and indexed, for the web view's
tests: the pi fixture sessions (the planted secrets of fixtures/SECRETS.json among them) and the
recorded Claude Code and Codex journals."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from journal_index.data.store import open_store
from journal_index.indexing.indexer import as_roots, discover, index_files
from journal_index.service import Service
from tests.agent_homes import AGENT_FIXTURES
from tests.conftest import FIXTURES, REPO
from tests.helpers import copy_journal_tree

# "Now" for everything asked of the home, the web view's answers and the CLI's alike: the age
# factor moves with the clock, and between a request and the CLI's own run a score's fourth
# decimal (or a near tie's order) flipped once in CI's random-order pass. Later than every journal
# here, so "--since 2d" finds nothing, as it does today.
NOW = "2026-12-06T12:00:00Z"


@dataclass
class WebHome:
    root: Path
    db: Path
    folders: list[Path]  # the session roots
    cwd: Path  # where `serve` and the CLI run: a folder with no sessions of its own

    @property
    def global_args(self) -> list[str]:
        args = ["--db", str(self.db)]
        for folder in self.folders:
            args += ["--sessions", str(folder)]
        return args

    def service(self) -> Service:
        return Service(open_store(str(self.db)), as_roots(self.folders))

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update({"NO_COLOR": "1", "PYTHONPATH": str(REPO), "JOURNAL_INDEX_NOW": NOW})
        return env

    def cli_json(self, *args: str) -> Any:
        """``journal-index GLOBALS ARGS --json`` in a subprocess, run in ``cwd``."""
        done = subprocess.run([sys.executable, "-m", "journal_index", *self.global_args, *args, "--json"],
                              cwd=self.cwd, env=self.env(), capture_output=True, timeout=120,
                              stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr.decode()
        return orjson.loads(done.stdout)


def make_home(root: Path) -> WebHome:
    pi = copy_journal_tree(FIXTURES / "sessions", root / "pi")
    claude = root / "claude"
    codex = root / "codex"
    shutil.copytree(AGENT_FIXTURES / "claude", claude)
    shutil.copytree(AGENT_FIXTURES / "codex", codex)
    cwd = root / "elsewhere"
    cwd.mkdir()
    home = WebHome(root, root / "index.db", [pi, claude, codex], cwd)
    store = open_store(str(home.db))
    try:
        report = index_files(store, discover(home.folders), roots=as_roots(home.folders))
        assert report.errors == []
    finally:
        store.close()
    return home
