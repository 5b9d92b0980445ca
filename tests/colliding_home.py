"""A private home holding two agents' real journals in two projects under one session id.

One Claude Code transcript and one Codex rollout of the shared folder are rewritten: the Claude
one's session id becomes the Codex rollout's thread id and its cwd projA, the rollout's cwd
projB. They are laid out as their agents keep them and indexed through the real CLI.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import apsw

from tests.agent_homes import cli_json, first_cwd, home_env, place_claude, place_codex
from tests.shared_data import agent_journals

SHARED_ID = "019ed836-b1da-78f1-8a0c-e598363d10f4"  # the Codex rollout's own thread id
PROJ_A = "/home/dev/code/projA"
PROJ_B = "/home/dev/code/projB"
WORD_ONLY_IN_A = "condensation"  # said in the Claude transcript, never in the Codex rollout


def _rewrite(source: Path, target: Path, old_id: str, new_id: str, old_cwd: str, new_cwd: str) -> Path:
    data = source.read_bytes()
    # The folders stand inside JSON strings: a Windows folder's backslashes are escaped there.
    escaped = json.dumps(new_cwd)[1:-1]
    data = data.replace(old_id.encode(), new_id.encode()).replace(old_cwd.encode(), escaped.encode())
    target.write_bytes(data)
    return target


def _claude_source() -> Path:
    (path,) = [p for p in agent_journals("claude-code") if "aa-778e725b89" in p.name]
    return path


def _codex_source() -> Path:
    (path,) = [p for p in agent_journals("codex") if "a3-92ff332928" in p.name]
    return path


class Home:
    """A private home holding A's Claude transcript and B's Codex rollout under one session id."""

    def __init__(self, tmp: Path, claude_cwd: str = PROJ_A) -> None:
        src = tmp / "src"
        src.mkdir()
        claude = _rewrite(_claude_source(), src / f"{SHARED_ID}.jsonl", "4fec7ea0-3335-43ec-a178-d4ab47d5aef3",
                          SHARED_ID, first_cwd(_claude_source()), claude_cwd)
        codex = _rewrite(_codex_source(), src / "rollout.jsonl", SHARED_ID, SHARED_ID,
                         "/home/entity/projects/EntityProcess/agentv", PROJ_B)
        assert WORD_ONLY_IN_A in claude.read_text().lower()
        assert WORD_ONLY_IN_A not in codex.read_text().lower()
        self.home = tmp / "home"
        self.claude = place_claude(self.home, [claude])[claude]
        self.codex = place_codex(self.home, [codex])[codex]
        self.env = home_env(self.home, tmp / "index.db")
        report = cli_json(self.env, "index")
        assert report["files"] == 2 and report["errors"] == []
        conn = apsw.Connection(str(tmp / "index.db"))
        try:
            # An entry of A that holds the word: what must never reach B's session scope.
            rows = list(conn.execute("SELECT e.entry_id, e.offset, e.length FROM entries e JOIN files f "
                                     "ON f.id = e.file_id WHERE f.format = 'claude' ORDER BY e.offset"))
        finally:
            conn.close()
        data = self.claude.read_bytes()
        self.a_entry = next(entry_id for entry_id, offset, length in rows
                            if WORD_ONLY_IN_A.encode() in data[offset:offset + length].lower())

    def run(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "journal_index", *args], env=self.env, capture_output=True,
                              text=True, timeout=300, input=stdin, cwd=self.env["HOME"])

    def tool(self, arguments: dict[str, Any], cwd: str = PROJ_B, session_file: Path | None = None) -> dict[str, Any]:
        """A call of the agent working in ``cwd`` (by default B's Codex, writing B's rollout)."""
        journal = session_file or self.codex
        done = self.run("tool", "--cwd", cwd, "--session-file", str(journal), json.dumps(arguments))
        assert done.returncode == 0, done.stderr
        answer: dict[str, Any] = json.loads(done.stdout)
        return answer
