"""The ``journal-index`` console script: ``mcp`` straight to the server, everything else to the CLI.

A host waits for ``journal-index mcp`` to answer ``initialize``; importing the click CLI (and the
indexer and query layer it imports) would cost most of that wait. So a plain ``mcp`` command
line is read here, by hand, and served at once. Anything else, or anything unusual on an
``mcp`` line (``--help``, an unknown option, a bad scope), goes to :mod:`journal_index.cli`,
which parses it properly and explains its errors.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing itself costs milliseconds this module exists to save
if TYPE_CHECKING:
    from journal_index.agent.tool import MemoryTool

GLOBAL_OPTIONS = ("--db", "--sessions")  # the CLI group's options, before the command
MCP_OPTIONS = ("--cwd", "--session-file", "--max-scope")  # the mcp command's own (cli.agent_options)
SCOPES = ("session", "project", "global", "team")  # config.AGENT_SCOPES, not imported here (config imports formats)


class McpLine:
    """What an ``mcp`` command line asks for."""

    def __init__(self) -> None:
        self.db: str | None = None
        self.sessions: list[str] = []
        self.options: dict[str, str] = {}


def mcp_line(argv: list[str]) -> McpLine | None:
    """``[--db F] [--sessions D]... mcp [--cwd D] [--session-file F] [--max-scope S]`` read, or None
    when ``argv`` is anything else (the CLI takes it then)."""
    line = McpLine()
    command_seen = False
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "mcp" and not command_seen:
            command_seen, i = True, i + 1
            continue
        name, equals, value = arg.partition("=")
        if name not in (MCP_OPTIONS if command_seen else GLOBAL_OPTIONS):
            return None
        if not equals:
            if i + 1 >= len(argv) or argv[i + 1].startswith("-"):
                return None
            value = argv[i + 1]
        i += 1 if equals else 2
        if name == "--db":
            line.db = value
        elif name == "--sessions":
            line.sessions.append(value)
        else:
            line.options[name] = value
    if not command_seen:
        return None
    if line.options.get("--max-scope", SCOPES[1]) not in SCOPES:
        return None
    if os.environ.get("JOURNAL_INDEX_MAX_SCOPE", SCOPES[1]) not in SCOPES:
        return None  # the CLI says what is wrong with it
    return line


def serve_mcp(line: McpLine) -> int:
    from journal_index.agent.mcp_server import run

    def make_tool() -> MemoryTool:  # called in the server's worker thread, after the handshake
        from journal_index.agent.tool import MemoryTool
        from journal_index.config import db_path, session_roots
        from journal_index.text.output import redacting

        # Warnings and tracebacks from here on are redacted as the CLI's are; stdout carries
        # only JSON-RPC answers, already redacted by the tool.
        sys.stderr = redacting(sys.stderr)

        return MemoryTool(db_path(line.db), session_roots(tuple(line.sessions)), cwd=line.options.get("--cwd"),
                          session_file=line.options.get("--session-file"),
                          max_scope=line.options.get("--max-scope"))

    return run(make_tool)


def main() -> None:
    line = mcp_line(sys.argv[1:])
    if line is not None:
        sys.exit(serve_mcp(line))
    from journal_index.cli import main as cli_main

    cli_main()
