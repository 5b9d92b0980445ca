"""`journal-index mcp` driven by the SDK's own stdio client, as a host would drive it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from journal_index.entry_text import ANSWER_END, ANSWER_START
from tests.conftest import FIXTURES
from tests.helpers import load_secrets

BE_CWD = "/home/dev/Apps/prjct/prjct-be"
FLUENTY_ENTRY = "c670e76f"
NOW = "2026-10-15T00:00:00Z"


def server_args(db_path: Path, root: Path, *extra: str) -> list[str]:
    return ["-m", "journal_index", "--db", str(db_path), "--sessions", str(root), "mcp", "--cwd", BE_CWD,
            *extra]


async def with_session(db_path: Path, root: Path, extra: tuple[str, ...], body: Any) -> Any:
    params = StdioServerParameters(command=sys.executable, args=server_args(db_path, root, *extra),
                                   env={"JOURNAL_INDEX_NOW": NOW})
    with tempfile.TemporaryFile("w+") as errlog:
        async with (stdio_client(params, errlog=errlog) as (read, write),
                    ClientSession(read, write) as session):
            init = await session.initialize()
            result = await body(session, init)
        errlog.seek(0)
        assert "Traceback" not in errlog.read()
    return result


def run(db_path: Path, root: Path, body: Any, *extra: str) -> Any:
    return anyio.run(with_session, db_path, root, extra, body)


def text_of(result: types.CallToolResult) -> str:
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def test_one_tool_no_prompts_no_resources_and_the_three_actions(db_path: Path, sessions_root: Path):
    secrets = load_secrets(FIXTURES)
    seen: list[str] = []

    async def body(session: ClientSession, init: types.InitializeResult) -> None:
        assert init.capabilities.prompts is None
        assert init.capabilities.resources is None
        with pytest.raises(MCPError, match="not found"):
            await session.list_prompts()
        with pytest.raises(MCPError, match="not found"):
            await session.list_resources()
        tools = (await session.list_tools()).tools
        assert [t.name for t in tools] == ["memory_context"]
        assert tools[0].description is not None and len(tools[0].description) < 200
        assert tools[0].input_schema["additionalProperties"] is False

        found = await session.call_tool("memory_context",
                                        {"action": "search", "query": "rate limit per token"})
        assert not found.is_error
        text = text_of(found)
        hits = found.structured_content["result"]["results"]
        assert hits and hits[0]["entryId"] in text
        assert "read more: " in text and "index: 26 sessions" in text
        seen.append(text + json.dumps(found.structured_content))

        read = await session.call_tool("memory_context", {"action": "read", "entryId": hits[0]["entryId"],
                                                          "sessionId": hits[0]["sessionId"]})
        assert not read.is_error
        assert read.structured_content["result"]["status"] == "ok"
        assert read.structured_content["result"]["text"] in text_of(read)
        seen.append(text_of(read) + json.dumps(read.structured_content))

        summaries = await session.call_tool("memory_context", {"action": "summaries"})
        assert not summaries.is_error
        assert {r["kind"] for r in summaries.structured_content["result"]["results"]} <= {
            "compaction", "branch_summary"}
        seen.append(text_of(summaries) + json.dumps(summaries.structured_content))

        # Entries that hold planted secrets, read whole: the text comes back redacted.
        for entry_id, session_id in [("b3318842", "01a05d32-b780-77a8-84b6-ccc1caffba94"),
                                     ("be1598e1", "01a08ad4-d880-7548-b534-0b41e2f8cfb5"),
                                     ("8f0edf41", "01a0a9b1-d8c0-7020-b8d6-dc370f1d94dc")]:
            secret_read = await session.call_tool("memory_context", {"action": "read", "entryId": entry_id,
                                                                     "sessionId": session_id})
            assert secret_read.structured_content["result"]["status"] == "ok"
            seen.append(text_of(secret_read) + json.dumps(secret_read.structured_content))
        leaky = await session.call_tool("memory_context",
                                        {"action": "search", "query": "aws secret key stripe"})
        seen.append(text_of(leaky) + json.dumps(leaky.structured_content))

    run(db_path, sessions_root, body)
    everything = "\n".join(seen)
    for secret in secrets:
        assert secret not in everything
        assert json.dumps(secret)[1:-1] not in everything


def test_bad_calls_are_error_results_and_the_server_keeps_serving(db_path: Path, sessions_root: Path):
    async def body(session: ClientSession, init: types.InitializeResult) -> None:
        bad_calls: list[dict[str, Any] | None] = [
            {"action": "remember"},
            {"action": "search", "query": ["not", "a", "string"]},
            {"action": "search", "since": "next week"},
            {"action": "search", "offset": 10**15},
            {"action": "search", "color": "blue"},
            {"action": "search", "scope": "global"},
            None,
        ]
        for arguments in bad_calls:
            result = await session.call_tool("memory_context", arguments)
            assert result.is_error, arguments
            assert text_of(result).startswith(ANSWER_START + "\nerror (")
            assert text_of(result).endswith(ANSWER_END)
            error = result.structured_content["error"]
            assert set(error) == {"code", "message", "hint"}
        other = await session.call_tool("memory_context", {"action": "read", "entryId": FLUENTY_ENTRY})
        assert other.is_error and other.structured_content["error"]["code"] == "not_found"
        unknown_tool = await session.call_tool("recall", {"action": "search"})
        assert unknown_tool.is_error
        still = await session.call_tool("memory_context", {"action": "search", "query": "alembic"})
        assert not still.is_error and still.structured_content["result"]["results"]

    run(db_path, sessions_root, body)


def test_max_scope_global_opens_other_projects(db_path: Path, sessions_root: Path):
    async def body(session: ClientSession, init: types.InitializeResult) -> None:
        found = await session.call_tool("memory_context", {"action": "search", "query": "openai tts",
                                                           "scope": "global"})
        assert not found.is_error
        read = await session.call_tool("memory_context", {"action": "read", "entryId": FLUENTY_ENTRY,
                                                          "scope": "global"})
        assert read.structured_content["result"]["status"] == "ok"

    run(db_path, sessions_root, body, "--max-scope", "global")


def test_server_exits_cleanly_when_stdin_closes(db_path: Path, sessions_root: Path):
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                             "clientInfo": {"name": "test", "version": "0"}}}
    process = subprocess.run([sys.executable, *server_args(db_path, sessions_root)],
                             input=json.dumps(initialize) + "\n", capture_output=True, text=True, timeout=30,
                             env={**os.environ, "JOURNAL_INDEX_NOW": NOW})
    assert process.returncode == 0, process.stderr
    assert "Traceback" not in process.stderr
    reply = json.loads(process.stdout.splitlines()[0])
    assert reply["id"] == 1 and "result" in reply


@pytest.mark.parametrize("option", [["--max-scope", "galaxy"]])
def test_bad_options_are_usage_errors(db_path: Path, sessions_root: Path, option: list[str]):
    process = subprocess.run([sys.executable, *server_args(db_path, sessions_root, *option)],
                             input="", capture_output=True, text=True, timeout=30)
    assert process.returncode == 2
