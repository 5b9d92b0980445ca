"""pi session journals (versions 1, 2 and 3): one JSON object a line, the first a header.

What becomes searchable text follows DESIGN §5. Version-1 lines have no ids; they get a
synthetic id from their byte offset and a CRC of the line, so a read can still verify that the
line at an offset is the one it asked for.
"""

from __future__ import annotations

import zlib
from datetime import datetime
from typing import Any

import orjson

from journal_index.formats import Entry, Header, Parsed, SessionName, Skip

NAME = "pi"
IMAGE = "[image]"
# Our own search tool: indexing its answers would make searches echo earlier searches.
OWN_TOOL_SUFFIX = "memory_context"

_NOT_INDEXED_TYPES = frozenset(
    {"model_change", "thinking_level_change", "label", "custom", "usage", "session"}
)
_ROLE_KIND = {
    "user": "user",
    "assistant": "assistant",
    "toolResult": "tool_result",
    "bashExecution": "bash",
    "custom": "custom",
    "hookMessage": "custom",  # version-2 name of the custom role
}


def synthetic_id(offset: int, line: bytes) -> str:
    return f"v1.{offset:x}.{zlib.crc32(line):08x}"


def parse_time(value: Any) -> int | None:
    """ISO-8601 string or epoch-ms number → epoch ms."""
    if isinstance(value, str):
        try:
            return int(datetime.fromisoformat(value).timestamp() * 1000)
        except ValueError:
            return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    return None


def _loads(line: bytes) -> dict[str, Any] | None:
    try:
        obj = orjson.loads(line)
    except (orjson.JSONDecodeError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def parse_header(line: bytes) -> Header | None:
    obj = _loads(line)
    if obj is None or obj.get("type") != "session":
        return None
    version = obj.get("version", 1)
    session_id = obj.get("id")
    cwd = obj.get("cwd")
    parent = obj.get("parentSession") or obj.get("branchedFrom")
    return Header(
        session_id=session_id if isinstance(session_id, str) else None,
        cwd=cwd if isinstance(cwd, str) else None,
        started=parse_time(obj.get("timestamp")),
        version=version if isinstance(version, int) and not isinstance(version, bool) else 1,
        parent_session=parent if isinstance(parent, str) else None,
    )


def _blocks_text(content: Any, parts: list[str], assistant: bool = False) -> bool:
    """Append the text of a content value (string or block list); False if its shape is wrong.

    ``assistant`` adds what only assistant messages carry: thinking and tool calls.
    """
    if isinstance(content, str):
        parts.append(content)
        return True
    if not isinstance(content, list):
        return content is None
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if isinstance(text, str):
                parts.append(text)
        elif kind == "image":
            parts.append(IMAGE)
        elif assistant and kind == "thinking":
            # Redacted or encrypted thinking carries no readable text worth a term.
            thinking = block.get("thinking")
            if not block.get("redacted") and isinstance(thinking, str):
                parts.append(thinking)
        elif assistant and kind == "toolCall":
            _tool_call_text(block, parts)
    return True


def _tool_call_text(block: dict[str, Any], parts: list[str]) -> None:
    name = block.get("name")
    if isinstance(name, str) and name.endswith(OWN_TOOL_SUFFIX):
        return
    if isinstance(name, str):
        parts.append(name)
    arguments = block.get("arguments")
    if isinstance(arguments, dict | list):
        parts.append(orjson.dumps(arguments).decode())
    elif isinstance(arguments, str):
        parts.append(arguments)


def _message(obj: dict[str, Any], entry_id: str, parent_id: str | None, ts: int | None) -> Parsed:
    message = obj.get("message")
    if not isinstance(message, dict):
        return Skip.MALFORMED
    role = message.get("role")
    if not isinstance(role, str):
        return Skip.MALFORMED
    if role == "system":
        return Skip.NOT_INDEXED
    kind = _ROLE_KIND.get(role)
    if kind is None:
        return Skip.UNKNOWN
    parts: list[str] = []
    tool: str | None = None
    content = message.get("content")
    if role == "assistant":
        ok = _blocks_text(content, parts, assistant=True)
    elif role == "toolResult":
        name = message.get("toolName")
        if isinstance(name, str):
            if name.endswith(OWN_TOOL_SUFFIX):
                return Skip.NOT_INDEXED
            tool = name
            parts.append(name)
        ok = _blocks_text(content, parts)
    elif role == "bashExecution":
        command, output = message.get("command"), message.get("output")
        ok = isinstance(command, str | None) and isinstance(output, str | None)
        parts.extend(p for p in (command, output) if isinstance(p, str))
        tool = "bash"
    else:
        ok = _blocks_text(content, parts)
    if not ok:
        return Skip.MALFORMED
    return Entry(entry_id, parent_id, ts, kind, role, tool, "\n".join(parts))


def parse_line(line: bytes, offset: int) -> Parsed:
    """Turn one journal line (without its newline) into an Entry, a SessionName or a Skip."""
    obj = _loads(line)
    if obj is None:
        return Skip.MALFORMED
    kind = obj.get("type")
    if not isinstance(kind, str):
        return Skip.MALFORMED
    if kind in _NOT_INDEXED_TYPES:
        return Skip.NOT_INDEXED
    if kind == "session_info":
        name = obj.get("name")
        return SessionName(name) if isinstance(name, str) else Skip.NOT_INDEXED
    raw_id = obj.get("id")
    if raw_id is None:
        entry_id = synthetic_id(offset, line)
    elif isinstance(raw_id, str) and raw_id:
        entry_id = raw_id
    else:
        return Skip.MALFORMED
    parent = obj.get("parentId")
    parent_id = parent if isinstance(parent, str) else None
    ts = parse_time(obj.get("timestamp"))

    if kind == "message":
        return _message(obj, entry_id, parent_id, ts)
    if kind == "compaction":
        summary = obj.get("summary")
        if not isinstance(summary, str):
            return Skip.MALFORMED
        tokens = obj.get("tokensBefore")
        tokens_before = tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else None
        return Entry(entry_id, parent_id, ts, "compaction", None, None, summary, tokens_before)
    if kind == "branch_summary":
        summary = obj.get("summary")
        if not isinstance(summary, str):
            return Skip.MALFORMED
        return Entry(entry_id, parent_id, ts, "branch_summary", None, None, summary)
    if kind == "custom_message":
        parts: list[str] = []
        if not _blocks_text(obj.get("content"), parts):
            return Skip.MALFORMED
        return Entry(entry_id, parent_id, ts, "custom", "custom", None, "\n".join(parts))
    if kind == "context_edit":
        replacement = obj.get("replacement")
        if replacement is None:
            return Skip.NOT_INDEXED
        if not isinstance(replacement, dict):
            return Skip.MALFORMED
        parts = []
        if not _blocks_text(replacement.get("content"), parts):
            return Skip.MALFORMED
        return Entry(entry_id, parent_id, ts, "context_edit", None, None, "\n".join(parts))
    return Skip.UNKNOWN
