"""Hosts of the hub's tests: private homes holding journals where their agents keep them (copies,
with the project folder moved to where this host checked it out), and the CLI run as that host."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.agent_homes import AGENT_FIXTURES, first_cwd, home_env, place_claude, place_codex
from tests.helpers import load_secrets

PI_JOURNALS = Path("/work/shared/pi-journals")
PI_SESSIONS = PI_JOURNALS / "sessions"


def pi_folder(cwd: str) -> str:
    return "--" + cwd.strip("/").replace("/", "-") + "--"


def place_pi(home: Path, source: Path, cwd: str | None = None) -> Path:
    """Copy a pi journal under ``home/.pi/agent/sessions``, its session's folder moved to ``cwd``."""
    data = source.read_bytes()
    old = first_cwd(source)
    new = cwd or old
    data = data.replace(json.dumps(old).encode(), json.dumps(new).encode())
    folder = home / ".pi" / "agent" / "sessions" / pi_folder(new)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / source.name
    target.write_bytes(data)
    return target


def moved_copy(source: Path, scratch: Path, cwd: str) -> Path:
    """A copy of a Claude Code or Codex journal whose folder is ``cwd`` (every line's)."""
    scratch.mkdir(parents=True, exist_ok=True)
    found = re.search(rb'"cwd":\s*"([^"]+)"', source.read_bytes())  # Codex keeps it inside its payload
    assert found is not None, source
    old = found.group(1).decode()
    target = scratch / source.name
    target.write_bytes(source.read_bytes().replace(old.encode(), cwd.encode()))
    return target


def place_other_agents(home: Path, cwd: str) -> list[Path]:
    """One Claude Code and one Codex journal of the recorded fixtures, working in ``cwd``."""
    claude = sorted((AGENT_FIXTURES / "claude" / "projects").glob("*/*.jsonl"))[0]
    codex = sorted((AGENT_FIXTURES / "codex" / "sessions").rglob("*.jsonl"))[0]
    scratch = home.parent / f"{home.name}-moved"
    placed = list(place_claude(home, [moved_copy(claude, scratch / "claude", cwd)]).values())
    placed += list(place_codex(home, [moved_copy(codex, scratch / "codex", cwd)]).values())
    return placed


def append_user_line(journal: Path, entry_id: str, text: str, ts: str = "2026-10-20T10:00:00.000Z") -> None:
    """Append a pi user message (a journal the agent goes on writing)."""
    line = {"type": "message", "id": entry_id, "parentId": None, "timestamp": ts,
            "message": {"role": "user", "content": [{"type": "text", "text": text}]}}
    with journal.open("ab") as handle:
        handle.write(json.dumps(line).encode() + b"\n")


def git_checkout(folder: Path, remote: str) -> Path:
    """A folder that is a git repository whose origin is ``remote`` (no commits needed)."""
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    subprocess.run(["git", "-C", str(folder), "remote", "add", "origin", remote], check=True)
    return folder


class HostHome:
    """A machine: its home, index, host name and the hub member it pushes as."""

    def __init__(self, root: Path, host: str, hub_url: str) -> None:
        self.root, self.host = root, host
        self.home = root / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        self.env = home_env(self.home, root / "index.db")
        self.env.update({"JOURNAL_INDEX_HOST": host, "JOURNAL_INDEX_HUB": hub_url,
                         "XDG_CONFIG_HOME": str(self.home / ".config"), "XDG_CACHE_HOME": str(self.home / ".cache"),
                         "JOURNAL_INDEX_NOW": "2026-10-21T00:00:00Z"})
        for mover in ("CLAUDE_CONFIG_DIR", "CODEX_HOME"):
            self.env.pop(mover, None)

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "journal_index", *args]

    def run(self, *args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(self.command(*args), env=self.env, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, cwd=self.home)
        if check:
            assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args, "--json").stdout)

    def quick_json(self, *args: str) -> Any:
        """The same command run in this process (no interpreter start-up), for read-only commands."""
        from click.testing import CliRunner

        from journal_index.cli import cli

        result = CliRunner().invoke(cli, [*args, "--json"], env=self.env)
        assert result.exit_code == 0, (args, result.output)
        return json.loads(result.output)

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(self.command(*args), env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, stdin=subprocess.DEVNULL, cwd=self.home)


def copy_pi_corpus(home: Path) -> list[Path]:
    """Every journal of the shared pi corpus (secrets planted in it) in ``home``'s pi folder."""
    placed = []
    for source in sorted(PI_SESSIONS.glob("*/*.jsonl")):
        target = home / ".pi" / "agent" / "sessions" / source.parent.name / source.name
        target.parent.mkdir(parents=True, exist_ok=True)
        placed.append(Path(shutil.copy(source, target)))
    return placed


def secrets() -> list[str]:
    return load_secrets(PI_JOURNALS)


def unique_word(prefix: str, n: int) -> str:
    """A word no journal holds (letters only, so no stemmer or splitter changes it)."""
    return prefix + "".join(chr(ord("a") + int(d)) for d in str(n))
