"""``journal-index mcp`` under the MCP Inspector's CLI (another real MCP client, run by Node 22)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from journal_index.text.entry_text import ANSWER_END, ANSWER_START
from tests.e2e.node_host import NodeHost, install_inspector
from tests.e2e.pi_host import FIXTURE_SESSIONS, journal_index_executable

pytestmark = pytest.mark.slow

BE_CWD = "/home/dev/Apps/prjct/prjct-be"


@pytest.fixture(scope="module")
def inspector(node_host: NodeHost) -> list[str]:
    return install_inspector()


def inspect(inspector: list[str], node_host: NodeHost, tmp_path: Path, *method: str) -> tuple[int, Any, str]:
    """Run the inspector CLI against journal-index over the fixture journals; (exit, JSON out, stderr)."""
    sessions = tmp_path / "sessions"
    if not sessions.exists():
        shutil.copytree(FIXTURE_SESSIONS, sessions)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JOURNAL_INDEX_", "PI_"))}
    env.update({"HOME": str(home), "PATH": node_host.path_with_node()})
    # The server's own options come after "--", or the inspector would take --cwd for itself.
    argv = [*inspector, "--cli", *method, "--", str(journal_index_executable()), "--db", str(tmp_path / "index.db"),
            "--sessions", str(sessions), "mcp", "--cwd", BE_CWD]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path,
                          stdin=subprocess.DEVNULL)
    return done.returncode, json.loads(done.stdout) if done.stdout.strip() else None, done.stderr


def test_the_inspector_lists_our_one_tool(inspector: list[str], node_host: NodeHost, tmp_path: Path) -> None:
    code, out, err = inspect(inspector, node_host, tmp_path, "--method", "tools/list")
    assert code == 0, err
    assert [t["name"] for t in out["tools"]] == ["memory_context"]
    assert out["tools"][0]["inputSchema"]["required"] == ["action"]


def test_the_inspector_calls_our_tool(inspector: list[str], node_host: NodeHost, tmp_path: Path) -> None:
    code, out, err = inspect(inspector, node_host, tmp_path, "--method", "tools/call", "--tool-name", "memory_context",
                             "--tool-arg", "action=search", "--tool-arg", "query=600 requests minute bursts")
    assert code == 0, err
    assert out["isError"] is False
    text = out["content"][0]["text"]
    lines = text.splitlines()
    assert (lines[0], lines[-1]) == (ANSWER_START, ANSWER_END), text  # every answer is signed
    assert lines[1].startswith("search: results 1–8 in project /home/dev/Apps/prjct")
    assert "entry 20147e3f" in text
    assert "structuredContent" not in out  # hosts would show the model that instead of the text

    # An error answer is a tool error to the inspector too (its exit code 5).
    code, out, err = inspect(inspector, node_host, tmp_path, "--method", "tools/call", "--tool-name",
                             "memory_context", "--tool-arg", "action=guess")
    assert code == 5, err
    assert out["isError"] is True
    assert out["content"][0]["text"].splitlines()[1].startswith("error (bad_argument): ")

    # A read that finds nothing is an error too.
    code, out, err = inspect(inspector, node_host, tmp_path, "--method", "tools/call", "--tool-name",
                             "memory_context", "--tool-arg", "action=read", "--tool-arg", "entryId=deadbeef")
    assert code == 5, err
    assert out["isError"] is True
    assert out["content"][0]["text"].splitlines()[1].startswith("error (not_found): ")

