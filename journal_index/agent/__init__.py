"""The agent tool: the memory_context contract, its arguments and instructions, the MCP stdio
server and its console script, which host and journal a call comes from, and the background
indexing that keeps the tool's answers fresh.
"""
