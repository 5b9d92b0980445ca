"""Temporary homes holding journals where each agent keeps them, and the CLI run inside them.

The real transcripts of the shared folder sit under their checkpoint names; a test copies
them to ``~/.claude/projects/<dashed cwd>/<name>.jsonl`` or
``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<thread>.jsonl`` so that journal-index finds them
through its default roots, as it would on a user's machine.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import FIXTURES

AGENT_FIXTURES = FIXTURES / "agents"
# Variables that would point journal-index elsewhere than the temporary home.
_MOVERS = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "JOURNAL_INDEX_SESSIONS", "JOURNAL_INDEX_DB")


def first_cwd(path: Path) -> str:
    for raw in path.read_bytes().splitlines():
        try:
            obj = json.loads(raw)
        except ValueError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("cwd"), str):
            return str(obj["cwd"])
    raise AssertionError(f"no cwd in {path}")


def place_claude(home: Path, journals: list[Path]) -> dict[Path, Path]:
    """Copy Claude Code transcripts under ``home/.claude/projects``: {source: placed}."""
    placed = {}
    for source in journals:
        folder = home / ".claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-", first_cwd(source))
        folder.mkdir(parents=True, exist_ok=True)
        placed[source] = Path(shutil.copy(source, folder / source.name))
    return placed


def place_codex(home: Path, journals: list[Path]) -> dict[Path, Path]:
    """Copy Codex rollouts under ``home/.codex/sessions/YYYY/MM/DD``, named after their thread."""
    placed = {}
    for source in journals:
        meta = json.loads(source.read_bytes().split(b"\n", 1)[0])["payload"]
        stamp = meta["timestamp"][:19].replace(":", "-")
        folder = home / ".codex" / "sessions" / stamp[:4] / stamp[5:7] / stamp[8:10]
        folder.mkdir(parents=True, exist_ok=True)
        placed[source] = Path(shutil.copy(source, folder / f"rollout-{stamp}-{meta['id']}.jsonl"))
    return placed


def place_fixtures(home: Path) -> None:
    """The recorded Claude Code and Codex journals of fixtures/agents, as their agents keep them."""
    shutil.copytree(AGENT_FIXTURES / "claude", home / ".claude")
    shutil.copytree(AGENT_FIXTURES / "codex", home / ".codex")


def home_env(home: Path, db: Path) -> dict[str, str]:
    """The environment of a journal-index process whose only journals are those under ``home``."""
    env = {k: v for k, v in os.environ.items() if k not in _MOVERS}
    env.update({"HOME": str(home), "JOURNAL_INDEX_DB": str(db), "PI_CODING_AGENT_DIR": str(home / ".pi" / "agent"),
                "NO_COLOR": "1"})
    return env


def cli_json(env: dict[str, str], *args: str) -> Any:
    """Run ``python -m journal_index ARGS --json`` and return its parsed output."""
    done = subprocess.run([sys.executable, "-m", "journal_index", *args, "--json"], env=env, capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL, cwd=env["HOME"])
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
