"""`journal-index sessions`: one row per journal of every agent, scoped and filtered as search
is, with first user words re-read from the journal (verified, redacted), never stored."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests import format_samples as samples
from tests.agent_homes import OTHER_PROJECT_SESSION, cli_json, three_agent_home

SECRET = "ghp_" + "Q7x9Lm2Rt5Vw8Yz1Bc4Df6Gh3Jk0Np2Sa9Ue"  # a GitHub token's shape
OTHER_ID = OTHER_PROJECT_SESSION


def _home(tmp_path: Path) -> tuple[dict[str, str], Path, dict[str, samples.Sample]]:
    """The three agents' sessions of one project (each user message holds a secret) and another
    project's session with the same words, indexed."""
    made = three_agent_home(tmp_path, SECRET, secret_in="user")
    assert cli_json(made.env, "index")["files"] == 4
    return made.env, made.project, made.written


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "journal_index", *args], env=env, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL, cwd=env["HOME"])


def test_one_row_per_session_of_the_project_with_its_first_words(tmp_path: Path) -> None:
    env, project, _ = _home(tmp_path)
    done = run(env, "sessions", "--cwd", str(project), "--json")
    assert done.returncode == 0, done.stderr
    assert SECRET not in done.stdout
    listed = json.loads(done.stdout)
    assert listed["scope"] == {"kind": "project", "root": str(project)}
    rows = listed["sessions"]
    assert sorted(r["agent"] for r in rows) == ["claude", "codex", "pi"]
    assert {r["cwd"] for r in rows} == {str(project)}  # the other project's session is not here
    by_agent = cli_json(env, "status")["byAgent"]
    for row in rows:
        assert set(row) == {"agent", "sessionId", "path", "cwd", "name", "started", "lastActivity", "entries",
                            "firstWords"}
        assert row["firstWords"].startswith(f"{samples.USER_WORDS} by {row['agent']} [REDACTED:"), row
        assert row["entries"] > 0
        assert row["started"] <= row["lastActivity"]
    activity = [r["lastActivity"] for r in rows]
    assert activity == sorted(activity, reverse=True)
    everything = json.loads(run(env, "sessions", "--scope", "global", "--json").stdout)["sessions"]
    assert len(everything) == 4 and everything[0]["sessionId"] == OTHER_ID  # the newest activity first
    for agent, counts in by_agent.items():  # every entry is counted in its session
        assert sum(r["entries"] for r in everything if r["agent"] == agent) == counts["entries"]


def test_the_filters_of_search(tmp_path: Path) -> None:
    env, project, _ = _home(tmp_path)

    def agents(*args: str) -> list[str]:
        done = run(env, "sessions", *args, "--json")
        assert done.returncode == 0, done.stderr
        return [r["agent"] for r in json.loads(done.stdout)["sessions"]]

    assert agents("--cwd", str(project), "--agent", "codex") == ["codex"]
    assert sorted(agents("--cwd", str(project), "--agent", "codex", "--agent", "pi")) == ["codex", "pi"]
    assert len(agents("--scope", "global", "--limit", "2")) == 2
    assert agents("--scope", "global", "--since", "2026-09-02") == ["pi"]  # the other project's
    assert sorted(agents("--scope", "global", "--until", "2026-09-01")) == ["claude", "codex", "pi"]
    assert agents("--scope", "global", "--since", "2026-09-03") == []
    assert sorted(agents("--scope", "global", "--kind", "compaction")) == ["claude", "codex", "pi"]
    pi_session = next(r["sessionId"] for r in json.loads(run(env, "sessions", "--cwd", str(project), "--agent", "pi",
                                                             "--json").stdout)["sessions"])
    assert agents("--session", pi_session[:8]) == ["pi"]
    bad = run(env, "sessions", "--since", "the other day")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1


def test_text_has_a_line_per_session_with_short_ids(tmp_path: Path) -> None:
    env, project, _ = _home(tmp_path)
    done = run(env, "sessions", "--cwd", str(project))
    assert done.returncode == 0, done.stderr
    assert SECRET not in done.stdout
    lines = done.stdout.strip().splitlines()
    assert lines[0] == f"sessions: 3 in project {project}, newest activity first"
    assert len(lines) == 4
    for line in lines[1:]:
        agent, short_id = line.split()[:2]
        assert agent in ("pi", "claude", "codex") and len(short_id) == 8, line
        assert f'"{samples.USER_WORDS} by {agent} [REDACTED:' in line and str(project) in line
    empty = run(env, "sessions", "--cwd", str(project), "--since", "2030-01-01")
    assert empty.returncode == 0 and len([x for x in empty.stdout.splitlines() if x.startswith("hint:")]) == 1


def test_first_words_are_read_from_the_journal_and_verified(tmp_path: Path) -> None:
    env, project, written = _home(tmp_path)
    pi = written["pi"]
    data = pi.path.read_bytes()
    # Rewritten in place (same length, same entry id): the listing shows what the journal says now,
    # so nothing of the old words was kept in the index.
    pi.path.write_bytes(data.replace(samples.USER_WORDS.encode(), samples.REWRITTEN_WORDS.encode()))

    def pi_words() -> str | None:
        rows = json.loads(run(env, "sessions", "--cwd", str(project), "--agent", "pi", "--json").stdout)["sessions"]
        return rows[0]["firstWords"]

    assert (pi_words() or "").startswith(f"{samples.REWRITTEN_WORDS} by pi [REDACTED:")
    # The line at that place is no longer the entry the index names: it is not shown at all.
    assert pi.user_id is not None
    other_id = "f" * len(pi.user_id)
    pi.path.write_bytes(pi.path.read_bytes().replace(f'"id":"{pi.user_id}"'.encode(), f'"id":"{other_id}"'.encode(), 1))
    assert pi_words() is None
