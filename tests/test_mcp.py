"""`journal-index mcp` driven by the SDK's own stdio client, as a host would drive it, and by hand
(raw JSON-RPC lines, real signals) where the protocol's edges are the point."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from journal_index.text.entry_text import ANSWER_END, ANSWER_START
from tests.conftest import FIXTURES
from tests.helpers import copy_journal_tree, load_secrets

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
    """The one text block of a result; there is nothing else (hosts would show the model that instead)."""
    assert result.structured_content is None
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def read_more(text: str) -> dict[str, Any]:
    """The arguments of the ``read more:`` call an answer suggests."""
    line = next(line for line in text.splitlines() if line.startswith("read more: "))
    return dict(json.loads(line.removeprefix("read more: ")))


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
        assert tools[0].output_schema is None  # a declared output would make hosts want structuredContent

        found = await session.call_tool("memory_context",
                                        {"action": "search", "query": "rate limit per token"})
        assert not found.is_error
        text = text_of(found)
        best = read_more(text)
        assert f"entry {best['entryId']}" in text
        assert "index: 26 sessions" in text
        seen.append(text)

        read = await session.call_tool("memory_context", {"action": "read", **best})
        assert not read.is_error
        page = text_of(read)
        assert page.startswith(ANSWER_START) and f"entry {best['entryId']}" in page.splitlines()[1]
        seen.append(page)

        summaries = await session.call_tool("memory_context", {"action": "summaries"})
        assert not summaries.is_error
        kinds = {line.split(" · ")[1] for line in text_of(summaries).splitlines() if line.startswith("[")
                 and " · " in line}
        assert kinds and kinds <= {"compaction", "branch_summary"}
        seen.append(text_of(summaries))

        # Entries that hold planted secrets, read whole: the text comes back redacted.
        for entry_id, session_id in [("b3318842", "01a05d32-b780-77a8-84b6-ccc1caffba94"),
                                     ("be1598e1", "01a08ad4-d880-7548-b534-0b41e2f8cfb5"),
                                     ("8f0edf41", "01a0a9b1-d8c0-7020-b8d6-dc370f1d94dc")]:
            secret_read = await session.call_tool("memory_context", {"action": "read", "entryId": entry_id,
                                                                     "sessionId": session_id})
            assert not secret_read.is_error
            seen.append(text_of(secret_read))
        leaky = await session.call_tool("memory_context",
                                        {"action": "search", "query": "aws secret key stripe"})
        seen.append(text_of(leaky))

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
            assert "\nhint: " in text_of(result)
            assert text_of(result).endswith(ANSWER_END)
        other = await session.call_tool("memory_context", {"action": "read", "entryId": FLUENTY_ENTRY})
        assert other.is_error and text_of(other).startswith(ANSWER_START + "\nerror (not_found)")
        unknown_tool = await session.call_tool("recall", {"action": "search"})
        assert unknown_tool.is_error
        still = await session.call_tool("memory_context", {"action": "search", "query": "alembic"})
        assert not still.is_error and "[1] " in text_of(still)

    run(db_path, sessions_root, body)


def test_max_scope_global_opens_other_projects(db_path: Path, sessions_root: Path):
    async def body(session: ClientSession, init: types.InitializeResult) -> None:
        found = await session.call_tool("memory_context", {"action": "search", "query": "openai tts",
                                                           "scope": "global"})
        assert not found.is_error
        read = await session.call_tool("memory_context", {"action": "read", "entryId": FLUENTY_ENTRY,
                                                          "scope": "global"})
        assert not read.is_error and f"entry {FLUENTY_ENTRY}" in text_of(read)

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


class RawServer:
    """``journal-index mcp`` spoken to line by line, as the stdio transport defines it."""

    def __init__(self, db_path: Path, root: Path, tmp_path: Path, *extra: str) -> None:
        self.stderr = open(tmp_path / "server-stderr.txt", "w+b")  # noqa: SIM115 (closed in close())
        self.proc = subprocess.Popen([sys.executable, *server_args(db_path, root, *extra)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.stderr,
                                     env={**os.environ, "JOURNAL_INDEX_NOW": NOW})

    def send_line(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.send_line(json.dumps(message).encode())

    def receive(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.endswith(b"\n"), f"the server closed stdout: {self.errors()}"
        return dict(json.loads(line))

    def ask(self, request_id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, **({"params": params} if params else {})})
        reply = self.receive()
        assert reply["id"] == request_id, reply
        return reply

    def errors(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def raw_server(db_path: Path, sessions_root: Path, tmp_path: Path) -> Any:
    server = RawServer(db_path, sessions_root, tmp_path)
    yield server
    server.close()


def initialize(version: str) -> dict[str, Any]:
    return {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}


def test_the_protocol_at_its_edges(raw_server: RawServer):
    init = raw_server.ask(1, "initialize", initialize("2025-03-26"))["result"]
    assert init["protocolVersion"] == "2025-03-26"  # a version we speak is the one agreed on
    assert init["capabilities"] == {"tools": {}}
    assert init["serverInfo"]["name"] == "journal-index" and init["instructions"].startswith("memory_context: ")
    assert raw_server.ask(2, "initialize", initialize("1999-01-01"))["result"]["protocolVersion"] == "2025-11-25"
    raw_server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    # A line that is not JSON gets a parse error (id null), and the server goes on serving.
    raw_server.send_line(b"this is not json {")
    assert raw_server.receive() == {"jsonrpc": "2.0", "id": None,
                                    "error": {"code": -32700, "message": "parse error: the line is not a JSON value"}}
    raw_server.send_line(b'{"jsonrpc": "2.0", "id": 3, "method": "ping"} trailing')
    assert raw_server.receive()["error"]["code"] == -32700
    assert raw_server.ask(4, "ping") == {"jsonrpc": "2.0", "id": 4, "result": {}}
    raw_server.send_line(b"[1, 2]")
    assert raw_server.receive()["error"]["code"] == -32600
    raw_server.send({"jsonrpc": "2.0", "id": 5})
    assert raw_server.receive() == {"jsonrpc": "2.0", "id": 5, "error": {
        "code": -32600, "message": 'invalid request: needs "jsonrpc": "2.0" and a method'}}
    assert raw_server.ask(6, "resources/list")["error"]["code"] == -32601
    raw_server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}})
    raw_server.send({"jsonrpc": "2.0", "method": "notifications/whatever"})  # notifications get no reply

    tools = raw_server.ask(7, "tools/list")["result"]["tools"]
    assert [set(t) for t in tools] == [{"name", "description", "inputSchema"}]
    reply = raw_server.ask(8, "tools/call", {"name": "memory_context",
                                             "arguments": {"action": "search", "query": "alembic"}})
    assert set(reply["result"]) == {"content", "isError"}  # the text only: no structuredContent
    assert reply["result"]["isError"] is False
    [block] = reply["result"]["content"]
    assert block["type"] == "text" and block["text"].startswith(ANSWER_START + "\nsearch: results 1–")

    # A read page is the entry's own text, its line breaks as they are.
    page = raw_server.ask(9, "tools/call", {"name": "memory_context", "arguments": {
        "action": "read", **read_more(block["text"])}})["result"]["content"][0]["text"]
    assert page.count("\n") > 4 and "\\n" not in page
    assert "Traceback" not in raw_server.errors()


def test_a_ping_is_answered_while_a_call_runs(raw_server: RawServer):
    raw_server.ask(1, "initialize", initialize("2025-06-18"))
    # The first call also imports the tool and opens the index: the ping sent after it comes back first.
    raw_server.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                     "params": {"name": "memory_context", "arguments": {"action": "search", "query": "alembic"}}})
    raw_server.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    assert [raw_server.receive()["id"] for _ in range(2)] == [3, 2]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_the_server_and_closes_the_index(raw_server: RawServer, db_path: Path, signum: int):
    raw_server.ask(1, "initialize", initialize("2025-06-18"))
    found = raw_server.ask(2, "tools/call", {"name": "memory_context",
                                             "arguments": {"action": "search", "query": "alembic"}})
    assert found["result"]["isError"] is False
    wal = Path(f"{db_path}-wal")
    assert wal.exists()  # the index is open (and was written to)
    started = time.monotonic()
    raw_server.proc.send_signal(signum)  # stdin stays open: the signal alone must stop it
    assert raw_server.proc.wait(timeout=5) == 0
    assert time.monotonic() - started < 2.0
    assert not wal.exists()  # closed: the last connection's close checkpoints and removes the WAL
    assert "Traceback" not in raw_server.errors()


def test_the_handshake_needs_nothing_heavy():
    """What answers initialize imports neither click, nor apsw, nor the tool (the host is waiting)."""
    probe = ("import sys, journal_index.agent.entry_point, journal_index.agent.mcp_server\n"
             "print(sorted(m for m in ('click', 'apsw', 'mcp', 'journal_index.agent.tool', 'journal_index.cli') "
             "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize(("argv", "served"), [
    (["mcp"], {"db": None, "sessions": [], "options": {}}),
    (["--db", "i.db", "--sessions", "a", "--sessions=b", "mcp", "--cwd", "/p", "--max-scope=global"],
     {"db": "i.db", "sessions": ["a", "b"], "options": {"--cwd": "/p", "--max-scope": "global"}}),
    (["mcp", "--help"], None),  # the CLI prints the help
    (["mcp", "--max-scope", "galaxy"], None),  # the CLI says what is wrong
    (["mcp", "--db", "x"], None),  # a global option after the command: the CLI's error
    (["--db"], None),
    (["search", "mcp"], None),
    (["mcp", "mcp"], None),
])
def test_only_a_plain_mcp_line_skips_the_cli(argv: list[str], served: dict[str, Any] | None):
    from journal_index.agent.entry_point import mcp_line

    line = mcp_line(argv)
    assert (None if line is None else vars(line)) == served


def test_mcp_help_still_comes_from_the_cli():
    done = subprocess.run([sys.executable, "-m", "journal_index", "mcp", "--help"], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0 and "--max-scope" in done.stdout


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_the_first_call_and_the_first_pass_stops_the_server(tmp_path: Path, signum: int):
    """A brand-new index over real journals: the first call waits for the background pass. A
    signal then still stops everything within 2 s, the index closed, whatever was running."""
    from tests.shared_data import shared_dir

    root = copy_journal_tree(shared_dir() / "agent-journals-real", tmp_path / "journals")
    copy_journal_tree(shared_dir() / "pi-journals-real", root / "pi")
    db_path = tmp_path / "index.db"
    server = RawServer(db_path, root, tmp_path)
    try:
        server.ask(1, "initialize", initialize("2025-06-18"))
        server.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                     "params": {"name": "memory_context", "arguments": {"action": "search", "query": "commit"}}})
        time.sleep(0.3)  # somewhere in the imports, the first pass or the call: any of them
        started = time.monotonic()
        server.proc.send_signal(signum)
        assert server.proc.wait(timeout=10) == 0
        assert time.monotonic() - started < 2.0
        assert not Path(f"{db_path}-wal").exists()
        assert "Traceback" not in server.errors()
    finally:
        server.close()
