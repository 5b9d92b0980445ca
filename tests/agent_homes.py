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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw
from click.testing import CliRunner

from journal_index.cli import cli
from tests import format_samples as samples
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


RealHome = tuple[Path, dict[str, str], dict[Path, Path]]


def index_real_home(tmp: Path, place: Callable[[Path, list[Path]], dict[Path, Path]],
                    journals: list[Path]) -> RealHome:
    """Lay ``journals`` out in a home as their agent does and index it with the CLI: the home,
    the environment of a process using it, and where each source journal was placed."""
    home = tmp / "home"
    placed = place(home, journals)
    env = home_env(home, tmp / "index.db")
    report = cli_json(env, "index")
    assert report["errors"] == [] and report["files"] == len(placed) and report["ignoredFiles"] == 0
    return home, env, placed


def assert_reads_and_finds(env: dict[str, str], agent: str, phrases: dict[str, str]) -> None:
    """Every indexed entry reads back verified as ``agent``'s, and each phrase (words -> the
    session id that holds them) is found in that session. The caller points HOME at the home."""
    db = env["JOURNAL_INDEX_DB"]
    conn = apsw.Connection(db)
    try:
        ids = [row[0] for row in conn.execute("SELECT entry_id FROM entries ORDER BY rowid")]
    finally:
        conn.close()
    runner = CliRunner()
    for entry_id in ids:
        answer = json.loads(runner.invoke(cli, ["--db", db, "read", entry_id, "--scope", "global", "--json"]).output)
        assert answer["status"] == "ok" and answer["entryId"] == entry_id and answer["agent"] == agent, answer
    for phrase, session in phrases.items():
        result = runner.invoke(cli, ["--db", db, "search", *phrase.split(), "--scope", "global", "--json"])
        sessions = {hit["sessionId"] for hit in json.loads(result.output)["results"]}
        assert session in sessions, (phrase, sessions)


def assert_agent_status(env: dict[str, str], agent: str, sessions: int, entries: int) -> None:
    """`status --json` counts ``agent``'s sessions and entries."""
    by_agent = cli_json(env, "status")["byAgent"][agent]
    assert (by_agent["sessions"], by_agent["entries"]) == (sessions, entries)


OTHER_PROJECT_SESSION = "e15e0000-0000-4000-8000-0000000000aa"


@dataclass
class ThreeAgentHome:
    home: Path
    env: dict[str, str]  # HOME and the index, for the CLI in a subprocess
    project: Path  # the folder all three agents' sessions worked in
    written: dict[str, samples.Sample]  # by agent


def three_agent_home(tmp_path: Path, secret: str, secret_in: str = "user") -> ThreeAgentHome:
    """A private HOME with one pi, one Claude Code and one Codex session of the same project,
    whose words name their agent (the same text in two sessions would take one slot) and whose
    user (or, with ``secret_in="assistant"``, assistant) words carry ``secret``; and a pi session
    of another project (id OTHER_PROJECT_SESSION, the newest) with the same user words, which a
    project-scoped answer must never show."""
    home = tmp_path / "home"
    project = home / "work" / "contract-proj"
    project.mkdir(parents=True)
    written = [
        samples.write_pi(home / ".pi" / "agent" / "sessions"),
        samples.write_claude(home / ".claude" / "projects"),
        samples.write_codex(home / ".codex" / "sessions"),
    ]
    user_tail, assistant_tail = (f" {secret}", "") if secret_in == "user" else ("", f" {secret}")
    for sample in written:
        sample.lines = [line.replace(samples.CWD.encode(), str(project).encode())
                            .replace(samples.USER_WORDS.encode(),
                                     f"{samples.USER_WORDS} by {sample.fmt}{user_tail}".encode())
                            .replace(samples.ASSISTANT_WORDS.encode(),
                                     f"{samples.ASSISTANT_WORDS} by {sample.fmt}{assistant_tail}".encode())
                        for line in sample.lines]
        sample.path.parent.mkdir(parents=True, exist_ok=True)
        sample.write()
    other = home / ".pi" / "agent" / "sessions" / "--home-dev-elsewhere--"
    other.mkdir(parents=True)
    (other / f"2026-09-02T10-00-00-000Z_{OTHER_PROJECT_SESSION}.jsonl").write_text("\n".join([
        json.dumps({"type": "session", "version": 3, "id": OTHER_PROJECT_SESSION,
                    "timestamp": "2026-09-02T10:00:00.000Z", "cwd": "/home/dev/elsewhere"}),
        json.dumps({"type": "message", "id": "e1000001", "parentId": None, "timestamp": "2026-09-02T10:00:01.000Z",
                    "message": {"role": "user", "content": [{"type": "text", "text": samples.USER_WORDS}]}}),
    ]) + "\n")
    return ThreeAgentHome(home, home_env(home, tmp_path / "index.db"), project, {s.fmt: s for s in written})
