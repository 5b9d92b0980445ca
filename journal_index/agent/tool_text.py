"""What a model is told about ``memory_context``: its name, its description, the server's instructions.

Plain constants with no imports, so that ``journal-index mcp`` answers a host's ``initialize``
before it imports anything of the tool (:mod:`journal_index.agent.mcp_server`).
"""

TOOL_NAME = "memory_context"
DESCRIPTION = ("Search and read this project's past agent sessions (redacted). "
               "action: search (query), read (entryId from a hit), summaries.")
# Sent in the initialize reply. A host in code mode shows the model one line per server, taken
# from the first line of these instructions: it must say on its own what the tool is for.
INSTRUCTIONS = (
    "memory_context: search this project's earlier agent sessions and the turns compaction removed "
    "from your context; read any entry verbatim.\n"
    "Use it before re-deriving a decision, a setting, an error's fix or a file's history that may have "
    "come up earlier. Query with the exact words likely written then: identifiers, file names, error "
    "text, commands (all words must match, else the best partial matches come). "
    "Actions: search (query), read (entryId and sessionId from a hit), summaries (compaction summaries). "
    "What is still in your context from this session is left out of the results."
)
