"""pi session journals (versions 1, 2 and 3): one JSON object a line, the first a header.

Layout: ``~/.pi/agent/sessions/--<cwd, / → ->--/<time>_<uuid>.jsonl``; a session folder set
by ``PI_CODING_AGENT_SESSION_DIR``, ``--session-dir`` or the ``sessionDir`` setting holds the
journals flat. What becomes searchable text follows DESIGN §5. Version-1 lines have no ids;
they get a synthetic id from their byte offset and a CRC of the line.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from journal_index.formats.base import (
    IMAGE,
    AgentHints,
    Entry,
    Header,
    Parsed,
    SessionName,
    Skip,
    ToolCall,
    first_line,
    first_object,
    invokes_our_tool,
    is_own_tool_name,
    load_object,
    newest_first,
    parse_time,
    synthetic_id,
    text_of_blocks,
)

NAME = "pi"
LABEL = "pi"
COLLECTABLE = True
SESSION_DIR_ENV = "PI_CODING_AGENT_SESSION_DIR"
AGENT_DIR_ENV = "PI_CODING_AGENT_DIR"

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


# -- where the journals are ---------------------------------------------------------------------


def agent_dir(env: Mapping[str, str], home: Path) -> Path:
    value = env.get(AGENT_DIR_ENV)
    return Path(value).expanduser() if value else home / ".pi" / "agent"


def _setting_session_dir(settings: Path, cwd: str | None) -> Path | None:
    """The ``sessionDir`` of a pi settings file. pi resolves a relative one from its working
    folder, so without ``cwd`` (the folder pi runs in) only an absolute one is known."""
    try:
        data = orjson.loads(settings.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    value = data.get("sessionDir") if isinstance(data, dict) else None
    if not isinstance(value, str) or not value:
        return None
    path = Path(value).expanduser()
    if path.is_absolute():
        return path
    return Path(cwd) / path if cwd else None


def default_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    roots: list[Path] = []
    override = env.get(SESSION_DIR_ENV)
    if override:
        roots.append(Path(override).expanduser())
    configured = _setting_session_dir(agent_dir(env, home) / "settings.json", None)
    if configured is not None:
        roots.append(configured)
    roots.append(agent_dir(env, home) / "sessions")
    return list(dict.fromkeys(roots))


def env_vars() -> tuple[str, ...]:
    return (SESSION_DIR_ENV, AGENT_DIR_ENV)


def owns(path: str) -> bool:
    return path.endswith(".jsonl")


# Line types only pi writes: a journal whose header was lost still starts with one of them.
_PI_TYPES = frozenset({"session", "message", "compaction", "branch_summary", "custom_message", "context_edit",
                       "session_info"}) | _NOT_INDEXED_TYPES


def sniff(head: bytes) -> bool:
    obj = first_object(head)
    return obj is not None and obj.get("type") in _PI_TYPES


def encoded_cwd_dir(cwd: str) -> str:
    """pi's folder name for a cwd's journals: ``--<cwd without leading slash, / \\ : → ->--``."""
    inner = cwd.lstrip("/")
    for char in "/\\:":
        inner = inner.replace(char, "-")
    return f"--{inner}--"


# -- the session --------------------------------------------------------------------------------


def read_header(path: str, head: bytes) -> Header | None:
    first = head.split(b"\n", 1)[0]
    obj = load_object(first)
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


def is_own_tool(name: str) -> bool:
    return is_own_tool_name(name)


def is_host(argv: Sequence[str]) -> bool:
    head = " ".join(argv[:3])
    return "pi-coding-agent" in head or any(os.path.basename(a) == "pi" for a in argv[:2])


def header_cwd(path: Path) -> str | None:
    line = first_line(path)  # a FIFO or device is refused, not waited on
    header = read_header(str(path), line) if line is not None else None
    return header.cwd if header else None


def _session_dir_from_argv(argv: Sequence[str]) -> Path | None:
    for i, arg in enumerate(argv):
        if arg == "--session-dir" and i + 1 < len(argv):
            return Path(argv[i + 1]).expanduser()
        if arg.startswith("--session-dir="):
            return Path(arg.split("=", 1)[1]).expanduser()
    return None


def current_journals(roots: Sequence[Path], cwd: str, hints: AgentHints) -> list[str]:
    """pi's journals of ``cwd``, newest first: in the cwd's own folder under each root, or flat
    in a session folder chosen by flag, environment or setting (header cwd must match). pi
    tells an MCP server nothing about its session, so the newest is the best guess."""
    folders: list[Path] = []
    flag_dir = _session_dir_from_argv(hints.host_argv)
    # The project's own setting wins over the user's, as in pi; relative ones are from the cwd.
    project_setting = _setting_session_dir(Path(cwd) / ".pi" / "settings.json", cwd)
    user_setting = _setting_session_dir(agent_dir(hints.env, Path.home()) / "settings.json", cwd)
    for flat in (flag_dir, project_setting, user_setting):
        if flat is not None:
            folders.append(flat if flat.is_absolute() else Path(cwd) / flat)
    for root in roots:
        folders += [root / encoded_cwd_dir(cwd), root]
    found: list[str] = []
    for folder in dict.fromkeys(folders):
        for path in newest_first(folder.glob("*.jsonl"))[:50]:
            if header_cwd(path) == cwd:
                found.append(os.path.abspath(path))
                break
    return newest_first_paths(found)


def newest_first_paths(paths: list[str]) -> list[str]:
    return [str(p) for p in newest_first(Path(p) for p in dict.fromkeys(paths))]


# -- lines --------------------------------------------------------------------------------------


def _assistant_blocks(content: Any, parts: list[str], calls: list[ToolCall], thinking_at: list[int]) -> bool:
    """Text, readable thinking (its places among the parts in ``thinking_at``) and tool calls
    of an assistant message."""
    if not isinstance(content, list):
        return text_of_blocks(content, parts)
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
        elif kind == "thinking":
            # Redacted or encrypted thinking carries no readable text worth a term.
            thinking = block.get("thinking")
            if not block.get("redacted") and isinstance(thinking, str):
                thinking_at.append(len(parts))
                parts.append(thinking)
        elif kind == "toolCall":
            _tool_call(block, parts, calls)
    return True


def _tool_call(block: dict[str, Any], parts: list[str], calls: list[ToolCall]) -> None:
    name = block.get("name")
    if not isinstance(name, str):
        return
    call_id = block.get("id")
    arguments = block.get("arguments")
    # Calls of our tool (directly or from a code-mode script) are kept, so that their results
    # are known as ours, but never shown.
    calls.append(ToolCall(call_id if isinstance(call_id, str) else "", name, arguments,
                          shown=not (is_own_tool(name) or invokes_our_tool(arguments))))


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
    output: list[str] = []
    calls: list[ToolCall] = []
    thinking_at: list[int] = []
    tool: str | None = None
    answers: str | None = None
    content = message.get("content")
    if role == "assistant":
        ok = _assistant_blocks(content, parts, calls, thinking_at)
        error = message.get("errorMessage")
        if not parts and not calls and isinstance(error, str):
            parts.append(error)  # a failed request: what went wrong is what this entry says
    elif role == "toolResult":
        name = message.get("toolName")
        if isinstance(name, str):
            if is_own_tool(name):
                return Skip.NOT_INDEXED
            tool = name
        call_id = message.get("toolCallId")
        answers = call_id if isinstance(call_id, str) else None
        ok = text_of_blocks(content, output)
    elif role == "bashExecution":
        command, printed = message.get("command"), message.get("output")
        ok = isinstance(command, str | None) and isinstance(printed, str | None)
        if isinstance(command, str):
            parts.append(command)
        if isinstance(printed, str):
            output.append(printed)
        tool = "bash"
    else:
        ok = text_of_blocks(content, parts)
    if not ok:
        return Skip.MALFORMED
    return Entry(entry_id, parent_id, ts, kind, role, tool, parts, calls=calls, answers=answers, output=output,
                 thinking_at=thinking_at)


def parse_line(line: bytes, offset: int) -> Parsed:
    """Turn one journal line (without its newline) into an Entry, a SessionName or a Skip."""
    obj = load_object(line)
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
        kept = obj.get("firstKeptEntryId")
        return Entry(entry_id, parent_id, ts, "compaction", None, None, [summary], tokens_before,
                     kept_from=kept if isinstance(kept, str) else None)
    if kind == "branch_summary":
        summary = obj.get("summary")
        if not isinstance(summary, str):
            return Skip.MALFORMED
        return Entry(entry_id, parent_id, ts, "branch_summary", None, None, [summary])
    if kind == "custom_message":
        parts: list[str] = []
        if not text_of_blocks(obj.get("content"), parts):
            return Skip.MALFORMED
        return Entry(entry_id, parent_id, ts, "custom", "custom", None, parts)
    if kind == "context_edit":
        replacement = obj.get("replacement")
        if replacement is None:
            return Skip.NOT_INDEXED
        if not isinstance(replacement, dict):
            return Skip.MALFORMED
        parts = []
        if not text_of_blocks(replacement.get("content"), parts):
            return Skip.MALFORMED
        return Entry(entry_id, parent_id, ts, "context_edit", None, None, parts)
    return Skip.UNKNOWN
