"""A session is (agent, journal file), never a bare id: two agents' journals that carry the same
session id in two projects stay two sessions, and a scope never widens because the ids collide.
Also: a cwd is normalized before it decides a scope (``projB/../projA`` is projA).

Real journals (one Claude Code transcript, one Codex rollout from the shared folder) are
rewritten to share one session id, laid out in a private home, and queried through the real
``journal-index`` subprocess: the CLI, the ``tool`` command and the MCP server.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import apsw
import mcp.types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.agent_homes import cli_json
from tests.colliding_home import PROJ_A, PROJ_B, SHARED_ID, WORD_ONLY_IN_A, Home


@pytest.fixture(scope="module")
def colliding(tmp_path_factory: pytest.TempPathFactory) -> Home:
    return Home(tmp_path_factory.mktemp("colliding"))


def _paths_and_text(answer: dict[str, Any]) -> tuple[set[str], str]:
    results = (answer.get("result") or {}).get("results", [])
    return {hit["path"] for hit in results}, answer["text"]


def test_tool_session_scope_is_the_current_journal_not_every_journal_of_its_id(colliding: Home):
    for arguments in ({"action": "search", "query": WORD_ONLY_IN_A, "scope": "session"},
                      {"action": "search", "query": WORD_ONLY_IN_A, "scope": "session", "sessionId": SHARED_ID},
                      {"action": "search", "query": WORD_ONLY_IN_A, "scope": "session",
                       "sessionId": SHARED_ID[:8]},
                      {"action": "search", "query": WORD_ONLY_IN_A},
                      {"action": "summaries", "scope": "session"}):
        answer = colliding.tool(arguments)
        paths, text = _paths_and_text(answer)
        assert str(colliding.claude) not in paths, arguments
        assert PROJ_A not in text and WORD_ONLY_IN_A not in text.lower(), (arguments, text)


def test_tool_read_in_session_scope_never_prints_the_other_projects_entry(colliding: Home):
    for arguments in ({"action": "read", "entryId": colliding.a_entry, "scope": "session"},
                      {"action": "read", "entryId": colliding.a_entry, "scope": "session", "sessionId": SHARED_ID},
                      {"action": "read", "entryId": colliding.a_entry, "sessionId": SHARED_ID},
                      {"action": "read", "entryId": colliding.a_entry[:8], "scope": "session"}):
        answer = colliding.tool(arguments)
        assert answer["error"]["code"] == "not_found", (arguments, answer)
        assert WORD_ONLY_IN_A not in answer["text"].lower() and PROJ_A not in answer["text"]


def test_tool_in_project_a_still_reads_its_own_entry_by_the_shared_id(colliding: Home):
    # A's own Claude Code session, named by the id it shares with B's rollout.
    for session_file in (colliding.claude, colliding.codex):
        answer = colliding.tool({"action": "read", "entryId": colliding.a_entry, "sessionId": SHARED_ID,
                                 "scope": "session"}, cwd=PROJ_A, session_file=session_file)
        if session_file == colliding.codex:  # B's rollout is the current session: the id names it
            assert answer["error"]["code"] == "not_found"
            continue
        assert answer["result"]["status"] == "ok" and answer["result"]["agent"] == "claude"
        assert WORD_ONLY_IN_A in answer["text"].lower()


async def _mcp_calls(home: Home, calls: list[dict[str, Any]]) -> list[types.CallToolResult]:
    params = StdioServerParameters(command=sys.executable, env=home.env,
                                   args=["-m", "journal_index", "mcp", "--cwd", PROJ_B,
                                         "--session-file", str(home.codex)])
    out = []
    with tempfile.TemporaryFile("w+") as errlog:
        async with (stdio_client(params, errlog=errlog) as (read, write),
                    ClientSession(read, write) as session):
            await session.initialize()
            for arguments in calls:
                out.append(await session.call_tool("memory_context", arguments))
    return out


def test_mcp_session_scope_does_not_reach_the_other_agents_session_of_the_same_id(colliding: Home):
    calls = [{"action": "search", "query": WORD_ONLY_IN_A, "scope": "session"},
             {"action": "search", "query": WORD_ONLY_IN_A, "scope": "session", "sessionId": SHARED_ID},
             {"action": "read", "entryId": colliding.a_entry, "scope": "session"}]
    for arguments, result in zip(calls, anyio.run(_mcp_calls, colliding, calls), strict=True):
        text = "".join(block.text for block in result.content if isinstance(block, types.TextContent))
        assert WORD_ONLY_IN_A not in text.lower() and PROJ_A not in text, (arguments, text)
        structured = result.structured_content or {}
        hits = (structured.get("result") or {}).get("results", [])
        assert all(hit["path"] != str(colliding.claude) for hit in hits)


def test_cli_session_refuses_an_id_two_agents_share_and_says_how_to_pick(colliding: Home):
    done = colliding.run("search", WORD_ONLY_IN_A, "--session", SHARED_ID[:8])
    assert done.returncode == 1 and done.stdout == ""
    assert "claude:" in done.stderr and "codex:" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    done = colliding.run("read", colliding.a_entry, "--session", SHARED_ID)
    assert done.returncode == 1 and "claude:" in done.stderr and WORD_ONLY_IN_A not in done.stdout.lower()


def test_cli_session_qualified_by_agent_is_that_journal_only(colliding: Home):
    found = cli_json(colliding.env, "search", WORD_ONLY_IN_A, "--session", f"claude:{SHARED_ID[:8]}")
    assert found["results"] and {hit["path"] for hit in found["results"]} == {str(colliding.claude)}
    other = cli_json(colliding.env, "search", WORD_ONLY_IN_A, "--session", f"codex:{SHARED_ID}")
    assert other["results"] == []
    read = cli_json(colliding.env, "read", colliding.a_entry, "--session", f"claude:{SHARED_ID}")
    assert read["status"] == "ok" and read["agent"] == "claude"


# -- item 4: a cwd with `..` ---------------------------------------------------------------------


def test_a_header_cwd_with_dotdot_is_the_folder_it_names(tmp_path: Path):
    home = Home(tmp_path, claude_cwd=f"{PROJ_B}/../projA")
    # From B, the project scope holds B's rollout only: A's transcript lies in projA.
    answer = home.tool({"action": "search", "query": WORD_ONLY_IN_A})
    paths, text = _paths_and_text(answer)
    assert str(home.claude) not in paths and WORD_ONLY_IN_A not in text.lower()
    found = cli_json(home.env, "search", WORD_ONLY_IN_A, "--cwd", PROJ_B, "--scope", "project")
    assert found["results"] == []
    # From A (however the caller spells it), A's transcript is in the project.
    found = cli_json(home.env, "search", WORD_ONLY_IN_A, "--cwd", f"{PROJ_B}/./../projA/", "--scope", "project")
    assert found["scope"]["root"] == PROJ_A
    assert found["results"] and {hit["cwd"] for hit in found["results"]} == {PROJ_A}
    answer = home.tool({"action": "search", "query": WORD_ONLY_IN_A}, cwd=f"{PROJ_A}/../projB/../projA",
                       session_file=home.codex)
    assert answer["result"]["scope"]["root"] == PROJ_A
    assert {hit["path"] for hit in answer["result"]["results"]} == {str(home.claude)}


def _back_to_schema(conn: apsw.Connection, version: int) -> None:
    """Make an index read as schema ``version``: what migration 0012 added goes (the others
    after 8 are data fixes and CREATE … IF NOT EXISTS, which apply again as they would)."""
    conn.execute("ALTER TABLE entries DROP COLUMN reply")
    conn.execute("ALTER TABLE files DROP COLUMN open_turn")
    conn.pragma("user_version", version)


def test_an_index_made_before_cwds_were_normalized_is_fixed_by_the_next_pass(tmp_path: Path):
    home = Home(tmp_path)
    db = home.env["JOURNAL_INDEX_DB"]
    conn = apsw.Connection(db)
    try:  # as an older version stored it, one schema back
        conn.execute("UPDATE files SET cwd = ? WHERE format = 'claude'", (f"{PROJ_B}/../projA",))
        _back_to_schema(conn, 8)
    finally:
        conn.close()
    # Opened by this version: never in projB, not even before the next pass has run...
    found = cli_json(home.env, "search", WORD_ONLY_IN_A, "--cwd", PROJ_B, "--scope", "project")
    assert found["results"] == []
    # ...and in projA again once it has.
    cli_json(home.env, "index")
    found = cli_json(home.env, "search", WORD_ONLY_IN_A, "--cwd", PROJ_A, "--scope", "project")
    assert found["results"] and {hit["cwd"] for hit in found["results"]} == {PROJ_A}


WINDOWS_A = "D:\\work\\projA\\web"  # a transcript written by Claude Code on Windows


def test_a_windows_cwd_is_a_folder_of_its_own_not_one_relative_to_here(tmp_path: Path):
    home = Home(tmp_path, claude_cwd=WINDOWS_A)
    for asked in (WINDOWS_A, "D:\\work\\projA", "D:/work/projA/web/"):
        found = cli_json(home.env, "search", WORD_ONLY_IN_A, "--cwd", asked, "--scope", "project")
        assert found["results"], asked
        assert {hit["cwd"] for hit in found["results"]} == {"D:/work/projA/web"}
    for elsewhere in (PROJ_B, "D:\\work\\projB", "E:\\work\\projA\\web"):
        found = cli_json(home.env, "search", WORD_ONLY_IN_A, "--cwd", elsewhere, "--scope", "project")
        assert found["results"] == [], elsewhere


def test_an_index_holding_windows_cwds_as_written_is_fixed_by_the_next_pass(tmp_path: Path):
    home = Home(tmp_path, claude_cwd=WINDOWS_A)
    db = home.env["JOURNAL_INDEX_DB"]
    conn = apsw.Connection(db)
    try:  # as version 9 stored it
        conn.execute("UPDATE files SET cwd = ? WHERE format = 'claude'", (WINDOWS_A,))
        _back_to_schema(conn, 9)
    finally:
        conn.close()
    cli_json(home.env, "index")
    found = cli_json(home.env, "search", WORD_ONLY_IN_A, "--cwd", WINDOWS_A, "--scope", "project")
    assert found["results"] and {hit["cwd"] for hit in found["results"]} == {"D:/work/projA/web"}


def test_tool_names_another_agents_session_by_agent_id_only_where_the_operator_allows(colliding: Home):
    arguments = {"action": "search", "query": WORD_ONLY_IN_A, "scope": "session", "sessionId": f"claude:{SHARED_ID}"}
    refused = colliding.tool(arguments)  # the default limit: B's project
    assert refused["error"]["code"] == "session_not_found" and WORD_ONLY_IN_A not in refused["text"].lower()
    done = colliding.run("tool", "--cwd", PROJ_B, "--session-file", str(colliding.codex), "--max-scope", "global",
                         json.dumps(arguments))
    answer = json.loads(done.stdout)
    assert {hit["path"] for hit in answer["result"]["results"]} == {str(colliding.claude)}


def test_one_agents_id_in_two_journals_is_refused_until_the_journal_is_named(tmp_path: Path):
    home = Home(tmp_path)
    copy = home.home / ".claude" / "projects" / "-home-dev-code-projC" / home.claude.name
    copy.parent.mkdir(parents=True)
    copy.write_bytes(home.claude.read_bytes().replace(PROJ_A.encode(), b"/home/dev/code/projC"))
    cli_json(home.env, "index")
    done = home.run("search", WORD_ONLY_IN_A, "--session", f"claude:{SHARED_ID}")
    assert done.returncode == 1 and "several journals" in done.stderr and str(copy) in done.stderr
    found = cli_json(home.env, "search", WORD_ONLY_IN_A, "--session", str(copy))
    assert found["results"] and {hit["path"] for hit in found["results"]} == {str(copy)}


def test_the_refusal_of_an_ambiguous_session_prints_no_secret_from_a_cwd(tmp_path: Path):
    token = "ghp_R8kzQ2vX7mN4pL9sT1wY6bC3dF5gH0jK2aZx"
    home = Home(tmp_path, claude_cwd=f"/home/dev/code/{token}/projA")
    done = home.run("search", WORD_ONLY_IN_A, "--session", SHARED_ID[:8])
    assert done.returncode == 1 and "[REDACTED:github_token]" in done.stderr
    assert token not in done.stderr + done.stdout


def test_cli_agent_option_picks_among_sessions_sharing_an_id(colliding: Home):
    found = cli_json(colliding.env, "search", WORD_ONLY_IN_A, "--session", SHARED_ID[:8], "--agent", "claude")
    assert found["results"] and {hit["path"] for hit in found["results"]} == {str(colliding.claude)}
