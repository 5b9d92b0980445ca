"""``journal-index mcp``: the ``memory_context`` tool over MCP stdio, and nothing else.

One tool, no prompts, no resources; the initialize reply carries short instructions (a host in
code mode shows the model their first line). The tool itself (the index, the query layer) is
imported and opened on the first call, so the handshake costs only the SDK's own start-up.
Calls run one at a time in a worker thread so the event loop keeps answering pings; each call's
``_meta`` reaches the tool (hosts name their session or tool-use there). When the host closes
stdin the server returns and the process exits 0.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import mcp.types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

from journal_index import __version__
from journal_index.tool_args import DESCRIPTION, INPUT_SCHEMA, INSTRUCTIONS, TOOL_NAME

if TYPE_CHECKING:
    from journal_index.tool import MemoryTool


def tool_listing() -> types.Tool:
    return types.Tool(name=TOOL_NAME, description=DESCRIPTION, input_schema=INPUT_SCHEMA)


def _meta_of(params: types.CallToolRequestParams) -> dict[str, Any]:
    return dict(params.meta or {})


def build_server(make_tool: Callable[[], MemoryTool], opened: list[MemoryTool]) -> Server[Any]:
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
            if not opened:
                opened.append(await anyio.to_thread.run_sync(make_tool))
            answer = await anyio.to_thread.run_sync(opened[0].call, params.arguments, _meta_of(params))
        return types.CallToolResult(content=[types.TextContent(text=answer.text)],
                                    structured_content=answer.structured(), is_error=answer.is_error)

    return Server("journal-index", version=__version__, instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool)


async def serve(make_tool: Callable[[], MemoryTool], opened: list[MemoryTool]) -> None:
    server = build_server(make_tool, opened)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def run(make_tool: Callable[[], MemoryTool]) -> None:
    """Serve until stdin closes, then close the store."""
    opened: list[MemoryTool] = []
    try:
        anyio.run(serve, make_tool, opened)
    except KeyboardInterrupt:
        pass
    finally:
        for tool in opened:
            tool.close()
