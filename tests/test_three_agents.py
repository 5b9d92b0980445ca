"""A user with pi, Claude Code and Codex CLI all installed: `journal-index index` with no flags
finds each agent's journals where it keeps them, and `search` from the project answers from all
three, never from another project; `read` verifies and redacts an entry of each agent."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests import format_samples as samples
from tests.agent_homes import cli_json, three_agent_home

SECRET = "ghp_" + "Q7x9Lm2Rt5Vw8Yz1Bc4Df6Gh3Jk0Np2Sa9Ue"  # a GitHub token's shape


def _home(tmp_path: Path) -> tuple[Path, dict[str, str], Path]:
    made = three_agent_home(tmp_path, SECRET, secret_in="assistant")
    return made.home, made.env, made.project


def test_index_then_search_answers_from_every_agent_within_the_project(tmp_path: Path) -> None:
    home, env, project = _home(tmp_path)
    report = cli_json(env, "index")
    assert report["errors"] == [] and report["files"] == 4
    status = cli_json(env, "status")
    assert {agent: counts["sessions"] for agent, counts in status["byAgent"].items()} == \
        {"pi": 2, "claude": 1, "codex": 1}

    found = cli_json(env, "search", *samples.USER_WORDS.split(), "--cwd", str(project))
    hits = found["results"]
    assert sorted(h["agent"] for h in hits) == ["claude", "codex", "pi"], hits
    assert {h["cwd"] for h in hits} == {str(project)}  # the other project's entry is not here

    everywhere = cli_json(env, "search", *samples.USER_WORDS.split(), "--scope", "global")
    assert "/home/dev/elsewhere" in {h["cwd"] for h in everywhere["results"]}

    said = cli_json(env, "search", *samples.ASSISTANT_WORDS.split(), "--cwd", str(project))
    assert sorted(h["agent"] for h in said["results"]) == ["claude", "codex", "pi"]
    for hit in said["results"]:
        assert SECRET not in json.dumps(hit)
        answer = cli_json(env, "read", hit["entryId"], "--session", hit["sessionId"])
        assert answer["status"] == "ok" and answer["agent"] == hit["agent"]
        assert samples.ASSISTANT_WORDS in answer["text"] and SECRET not in answer["text"]
        assert "[REDACTED" in answer["text"]

    # The secret is not a term in any agent's entries.
    done = subprocess.run([sys.executable, "-m", "journal_index", "search", SECRET, "--scope", "global", "--json"],
                          env=env, cwd=home, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["results"] == []
