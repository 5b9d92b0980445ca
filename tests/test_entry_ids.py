"""Entry ids the same short way for every agent, and read back by a unique prefix.

pi's ids are 8 hex digits, Claude Code's 36-character UUIDs, Codex's lines get synthetic ids
("v1.<offset>.<crc>"). People are shown 8 characters of each (a synthetic id's CRC), and
``read`` takes that back; a prefix of several entries is an error listing their whole ids, and
only entries the caller may see are counted. Real journals, the real CLI and tool subprocesses.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.agent_homes import cli_json
from tests.colliding_home import PROJ_A, PROJ_B, Home

# "2026-01-24 15:42  assistant      f7faa00a  session 019ed836  claude  /home/…"
_HEADER = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d  \S+ +(\S+)  session (\S+)  (\w+)  ")


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Home:
    return Home(tmp_path_factory.mktemp("ids"))


def _shown(done: subprocess.CompletedProcess[str]) -> list[tuple[str, str]]:
    """(shown entry id, agent) of each hit header of a search's text output."""
    assert done.returncode == 0, done.stderr
    return [(m.group(1), m.group(3)) for line in done.stdout.splitlines() if (m := _HEADER.match(line))]


def test_every_agents_ids_are_shown_as_eight_characters_and_read_back(home: Home):
    for agent in ("claude", "codex"):
        text = home.run("search", "--scope", "global", "--agent", agent, "--limit", "6")
        shown = _shown(text)
        full = [hit["entryId"] for hit in cli_json(home.env, "search", "--scope", "global", "--agent", agent,
                                                   "--limit", "6")["results"]]
        assert len(shown) == len(full) == 6 and {a for _, a in shown} == {agent}
        assert all(len(short) == 8 for short, _ in shown), shown
        if agent == "claude":
            assert all(len(entry_id) == 36 for entry_id in full)
        else:
            assert all(entry_id.startswith("v1.") for entry_id in full)
        for (short, _), entry_id in zip(shown, full, strict=True):
            answer = cli_json(home.env, "read", short)
            assert answer["status"] == "ok" and answer["entryId"] == entry_id and answer["agent"] == agent
            assert cli_json(home.env, "read", entry_id)["entryId"] == entry_id  # the whole id still works
        # The read hint printed under the hits works as printed.
        hint = next(line for line in text.stdout.splitlines() if line.startswith("read one whole: "))
        command = hint.removeprefix("read one whole: journal-index ").split()
        done = home.run(*command)
        assert done.returncode == 0 and "characters 0–" in done.stdout, (hint, done.stderr)
        assert f"entry {shown[0][0]} " in done.stdout  # the read page names it the same way


def test_a_prefix_of_a_claude_uuid_reads_the_entry(home: Home):
    answer = cli_json(home.env, "read", home.a_entry[:8])
    assert answer["status"] == "ok" and answer["entryId"] == home.a_entry
    assert cli_json(home.env, "read", home.a_entry[:5])["entryId"] == home.a_entry
    too_short = home.run("read", home.a_entry[:3])
    assert too_short.returncode == 1 and "no entry" in too_short.stdout


def _append_claude_entry_with_id(home: Home, entry_id: str) -> None:
    """One more user line in A's transcript, as Claude Code writes them, under ``entry_id``."""
    first_user = next(json.loads(raw) for raw in home.claude.read_bytes().splitlines()
                      if b'"type":"user"' in raw and b'"tool_use_id"' not in raw)
    first_user.update({"uuid": entry_id, "parentUuid": None, "timestamp": "2026-01-25T09:00:00.000Z"})
    first_user["message"] = {"role": "user", "content": "one more request about the prefix"}
    with open(home.claude, "ab") as handle:
        handle.write(json.dumps(first_user).encode() + b"\n")


def test_an_ambiguous_prefix_lists_the_candidates_and_a_scope_decides_what_counts(tmp_path: Path):
    home = Home(tmp_path)
    codex_id = cli_json(home.env, "search", "--agent", "codex", "--scope", "global", "--limit", "1")[
        "results"][0]["entryId"]
    crc = codex_id.rsplit(".", 1)[1]
    claude_id = f"{crc[:6]}ff-0000-4000-8000-000000000000"  # shares six characters with the rollout's id
    _append_claude_entry_with_id(home, claude_id)
    cli_json(home.env, "index")
    done = home.run("read", crc[:6])
    assert done.returncode == 3, (done.stdout, done.stderr)
    assert codex_id in done.stdout and claude_id in done.stdout and "give more of the id" in done.stdout
    answer = json.loads(home.run("read", crc[:6], "--json").stdout)
    assert answer["status"] == "ambiguous" and answer["what"] == "entryId"
    assert {c["entryId"] for c in answer["candidates"]} == {codex_id, claude_id}
    # Either one by more of its id, or by a scope that holds only one of them.
    assert cli_json(home.env, "read", crc)["entryId"] == codex_id
    assert cli_json(home.env, "read", claude_id[:8])["entryId"] == claude_id
    assert cli_json(home.env, "read", crc[:6], "--scope", "project", "--cwd", PROJ_A)["entryId"] == claude_id
    # The agent in B never learns of A's entry: the prefix is B's entry alone there.
    tool = home.tool({"action": "read", "entryId": crc[:6]}, cwd=PROJ_B)
    assert tool["result"]["entryId"] == codex_id and claude_id not in tool["text"]
    tool = home.tool({"action": "read", "entryId": claude_id[:8]}, cwd=PROJ_B)
    assert tool["error"]["code"] == "not_found" and claude_id not in json.dumps(tool)
