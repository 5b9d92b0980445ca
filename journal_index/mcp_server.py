"""``journal-index mcp``: the ``memory_context`` tool over MCP stdio, and nothing else.

One tool, no prompts, no resources. The store is opened once and kept for the connection;
calls run one at a time in a worker thread so the event loop keeps answering pings. When the
host closes stdin the server returns and the process exits 0.
"""

from __future__ import annotations

from typing import Any

import anyio
import anyio.to_thread
import mcp.types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

from journal_index import __version__
from journal_index.tool import DESCRIPTION, INPUT_SCHEMA, TOOL_NAME, MemoryTool


def tool_listing() -> types.Tool:
    return types.Tool(name=TOOL_NAME, description=DESCRIPTION, input_schema=INPUT_SCHEMA)


def build_server(tool: MemoryTool) -> Server[Any]:
    lock = anyio.Lock()

    async def list_tools(ctx: ServerRequestContext[Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool_listing()])

    async def call_tool(ctx: ServerRequestContext[Any],
                        params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name != TOOL_NAME:
            return types.CallToolResult(
                content=[types.TextContent(text=f"unknown tool {params.name!r}; this server has only "
                                                f"{TOOL_NAME}")],
                is_error=True)
        async with lock:  # one apsw connection: one call at a time
            answer = await anyio.to_thread.run_sync(tool.call, params.arguments)
        return types.CallToolResult(content=[types.TextContent(text=answer.text)],
                                    structured_content=answer.structured(), is_error=answer.is_error)

    return Server("journal-index", version=__version__, on_list_tools=list_tools, on_call_tool=call_tool)


async def serve(tool: MemoryTool) -> None:
    server = build_server(tool)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def run(tool: MemoryTool) -> None:
    """Serve until stdin closes, then close the store."""
    try:
        anyio.run(serve, tool)
    except KeyboardInterrupt:
        pass
    finally:
        tool.close()
