"""Codex CLI rollouts (DESIGN §5c).

Layout: ``${CODEX_HOME:-~/.codex}/sessions/YYYY/MM/DD/rollout-<local time>-<thread id>.jsonl``.
Every line is an envelope ``{timestamp, type, payload}`` (0.171 adds ``ordinal``); the first is
``session_meta``. Lines have no ids: each gets a synthetic one from its offset and a CRC.

Codex writes much twice: what was sent to the model (``response_item``) and an event stream
for the UI (``event_msg``). What becomes text, and from which of the two:

* the human's words: ``event_msg`` ``user_message`` (up to 0.14x), or the ``item_completed``
  event of a ``UserMessage`` item that replaced it (0.171); never the ``response_item``
  user messages, which also carry injected context (environment, AGENTS.md, notifications);
* the assistant's words, tool calls and tool outputs: the ``response_item`` lines (the
  ``agent_message`` and ``AgentMessage`` events repeat them);
* a compaction: ``payload.message`` only, never the re-embedded ``replacement_history``; when
  the summary is encrypted (``message`` empty), the entry says so: ``[summary encrypted by Codex]``.

A tool output starts with lines Codex adds (``Chunk ID``, ``Wall time``, ``Original token count``,
``Process exited with code 0``, then ``Output:``): they are dropped, so their words are not terms of
every output; the command, a non-zero exit code and a process left running stay.

A command still running when its call returns says ``Process running with session ID N``; its
later output comes in the results of ``write_stdin`` calls that name only ``session_id: N``.
Both ends are marked (``Entry.started_process``, ``ToolCall.reads_process``) so the indexer can
file those outputs under the command that started them.

An output produced by our own tool is recognized by its call (linked by ``call_id``) or, also
under a code-mode ``exec`` wrapper, by Codex's ``metadata.mcp_attribution``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
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

NAME = "codex"
LABEL = "Codex CLI"
COLLECTABLE = False
HOME_ENV = "CODEX_HOME"
THREAD_META = "threadId"  # _meta of a tools/call: the thread (= session) making it
TURN_META = "x-codex-turn-metadata"

_NOT_INDEXED_TYPES = frozenset({"session_meta", "turn_context", "world_state", "token_usage_record",
                                "inter_agent_communication_metadata"})
_NOT_INDEXED_ITEMS = frozenset({
    "tool_search_call", "tool_search_output",  # finding a tool, not using one
    "additional_tools", "compaction", "ghost_snapshot",
})
# Events seen in rollouts (0.140–0.171) or reported for older versions; others are counted.
_NOT_INDEXED_EVENTS = frozenset({
    "agent_message", "agent_reasoning", "token_count", "task_started", "task_complete", "turn_aborted",
    "context_compacted", "patch_apply_end", "exec_command_end", "mcp_tool_call_end", "web_search_end",
    "thread_settings_applied", "sub_agent_activity",
    "entered_review_mode", "exited_review_mode",  # the review's text is also an assistant message
})
# A message between Codex agents (multi-agent mode) opens with these lines; "Payload:" ends them.
_AGENT_MESSAGE_HEADER = re.compile(r"(?:Message Type|Task name|Sender): [^\n]*\n")
_AGENT_MESSAGE_BODY = "Payload:\n"
_AGENT_MESSAGE_REACH = 1000  # the header ends within this many characters
ENCRYPTED_SUMMARY = "[summary encrypted by Codex]"
_PROCESS_RUNNING = re.compile(r"Process running with session ID (\d{1,12})\b")
# The lines Codex puts before what a command printed ("Chunk ID: …", "Wall time: … seconds", …,
# "Output:"). Their words would be terms of every output, so they are dropped; the lines that
# say something (the command, a non-zero exit code, a process left running) stay.
_WRAPPER_LINE = re.compile(
    r"Chunk ID: \S+|Wall time:? [\d.]+ s(?:econds)?|Original token count: \d+"
    r"|Process exited with code 0|Exit code: 0|Script completed|Script running with cell ID \d+")
_WRAPPER_END = "Output:"
_WRAPPER_REACH = 8192  # the "Output:" line ends the wrapper within this many characters
_JSON_WRAPPED_START = '{"output":'  # how Codex 0.3x–0.4x began a result written as a JSON string
_POLL_TOOL = "write_stdin"
_WEB_SEARCH_TOOL = "web_search"
_WEB_SEARCH_ARGUMENTS = ("query", "url", "pattern")  # what was searched for, or the page opened
_SAFE_ID = re.compile(r"[0-9A-Za-z-]{8,64}")
_DAY_FOLDERS = 3  # current_journals looks at the newest few day folders only
_FILES_PER_DAY = 30


# -- where the journals are ---------------------------------------------------------------------


def codex_home(env: Mapping[str, str], home: Path) -> Path:
    value = env.get(HOME_ENV)
    return Path(value).expanduser() if value else home / ".codex"


def default_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    # Codex passes its MCP servers a filtered environment without CODEX_HOME: a server started
    # by it sees the default unless the user passes the variable through (`env_vars`).
    return [codex_home(env, home) / "sessions"]


def env_vars() -> tuple[str, ...]:
    return (HOME_ENV,)


def owns(path: str) -> bool:
    name = os.path.basename(path)
    return name.startswith("rollout-") and name.endswith(".jsonl")


def sniff(head: bytes) -> bool:
    obj = first_object(head)
    return (obj is not None and obj.get("type") == "session_meta" and isinstance(obj.get("payload"), dict)
            and "timestamp" in obj)


# -- the session --------------------------------------------------------------------------------


def _session_meta(head: bytes) -> tuple[dict[str, Any], dict[str, Any]] | None:
    for raw in head.split(b"\n"):
        if not raw.strip():
            continue
        obj = load_object(raw)
        if obj is not None and obj.get("type") == "session_meta" and isinstance(obj.get("payload"), dict):
            return obj, obj["payload"]
    return None


def read_header(path: str, head: bytes) -> Header | None:
    found = _session_meta(head)
    if found is None:
        return None
    envelope, meta = found
    session_id, cwd = meta.get("id"), meta.get("cwd")
    started = parse_time(meta.get("timestamp"))
    if started is None:
        started = parse_time(envelope.get("timestamp"))
    return Header(
        session_id=session_id if isinstance(session_id, str) else None,
        cwd=cwd if isinstance(cwd, str) else None,
        started=started,
        parent_session=_parent_thread(meta),
    )


def _parent_thread(meta: dict[str, Any]) -> str | None:
    """The thread that spawned a subagent's thread."""
    spawn: Any = meta.get("source")
    for key in ("subagent", "thread_spawn", "parent_thread_id"):
        spawn = spawn.get(key) if isinstance(spawn, dict) else None
    parent = spawn if isinstance(spawn, str) else meta.get("parent_thread_id")
    return parent if isinstance(parent, str) else None


def is_own_tool(name: str) -> bool:
    return is_own_tool_name(name)


def is_host(argv: Sequence[str]) -> bool:
    """The ``codex`` binary (``codex exec``, the TUI, the ``codex app-server`` daemon that the
    TUI starts) or node running the @openai/codex package."""
    return any(os.path.basename(arg) == "codex" or "@openai/codex" in arg for arg in argv[:2])


# -- the journal being written now --------------------------------------------------------------


def _thread_of(meta: Mapping[str, Any]) -> str | None:
    thread = meta.get(THREAD_META)
    if not isinstance(thread, str):
        turn = meta.get(TURN_META)
        thread = turn.get("thread_id") if isinstance(turn, dict) else None
    return thread if isinstance(thread, str) and _SAFE_ID.fullmatch(thread) else None


def _days_of(thread: str) -> list[str]:
    """The YYYY/MM/DD folders a thread's rollout is likely in: a thread id is a UUIDv7, whose
    first 48 bits are its creation time (the folder is that day in local time; ± a day for
    clocks and zones), so a lookup need not list years of folders."""
    digits = thread.replace("-", "")
    if len(digits) != 32 or digits[12] != "7":
        return []
    try:
        created = datetime.fromtimestamp(int(digits[:12], 16) / 1000)
    except (ValueError, OverflowError, OSError):
        return []
    return [(created + timedelta(days=d)).strftime("%Y/%m/%d") for d in (0, -1, 1)]


def _day_folders(root: Path) -> list[Path]:
    """The newest few YYYY/MM/DD folders of a root (names sort by date)."""
    days: list[Path] = []
    for year in sorted((p for p in root.glob("[0-9][0-9][0-9][0-9]") if p.is_dir()), reverse=True):
        for month in sorted((p for p in year.glob("[0-9][0-9]") if p.is_dir()), reverse=True):
            for day in sorted((p for p in month.glob("[0-9][0-9]") if p.is_dir()), reverse=True):
                days.append(day)
                if len(days) >= _DAY_FOLDERS:
                    return days
    return days


def _meta_cwd(path: Path) -> str | None:
    line = first_line(path)
    obj = load_object(line) if line else None
    payload = obj.get("payload") if obj is not None and obj.get("type") == "session_meta" else None
    cwd = payload.get("cwd") if isinstance(payload, dict) else None
    return cwd if isinstance(cwd, str) else None


def current_journals(roots: Sequence[Path], cwd: str, hints: AgentHints) -> list[str]:
    """The rollout of the thread making the call (``_meta.threadId``: Codex has written the
    call's line before it calls us); else the newest rollouts of the last days whose session
    started in ``cwd``."""
    thread = _thread_of(hints.call_meta)
    if thread is not None:
        pattern = f"rollout-*-{thread}.jsonl"
        for root in roots:
            likely = [f"{day}/{pattern}" for day in _days_of(thread)]
            for glob in (*likely, f"*/*/*/{pattern}", pattern):
                for found in root.glob(glob):
                    return [os.path.abspath(found)]
    recent: list[Path] = []
    for root in roots:
        for day in _day_folders(root):
            recent += newest_first(day.glob("rollout-*.jsonl"))[:_FILES_PER_DAY]
        recent += newest_first(root.glob("rollout-*.jsonl"))[:_FILES_PER_DAY]
    found_paths = [p for p in newest_first(recent)[:_FILES_PER_DAY] if _meta_cwd(p) == cwd]
    return [os.path.abspath(p) for p in found_paths[:3]]


# -- lines --------------------------------------------------------------------------------------


def tool_name(payload: dict[str, Any]) -> str | None:
    """A call's tool name as the model knew it: an MCP tool called directly comes as
    ``name: "memory_context"`` in ``namespace: "mcp__<server>"``, i.e. ``mcp__<server>__memory_context``."""
    name = payload.get("name")
    if not isinstance(name, str):
        return None
    namespace = payload.get("namespace")
    if isinstance(namespace, str) and namespace.startswith("mcp__"):
        return f"{namespace}__{name}"
    return name


def _arguments(raw: Any) -> Any:
    """function_call arguments are a JSON string: parsed, so the call's key arguments show."""
    if isinstance(raw, str):
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return raw
        return parsed if isinstance(parsed, dict | list) else raw
    return raw


def _call(payload: dict[str, Any], entry_id: str, ts: int | None) -> Parsed:
    kind = payload.get("type")
    call_id = payload.get("call_id")
    parts: list[str] = []
    calls: list[ToolCall] = []
    if kind == "web_search_call":
        # A search the model ran (no result line follows): a call, as Claude Code's WebSearch is.
        action = payload.get("action")
        action = action if isinstance(action, dict) else {}
        searched = {k: v for k in _WEB_SEARCH_ARGUMENTS if isinstance(v := action.get(k), str)}
        calls.append(ToolCall(call_id if isinstance(call_id, str) else "", _WEB_SEARCH_TOOL, searched))
        return Entry(entry_id, None, ts, "assistant", "assistant", None, parts, calls=calls)
    if kind == "local_shell_call":
        name: str | None = "local_shell"
        action = payload.get("action")
        arguments: Any = action if isinstance(action, dict) else None
    else:
        name = tool_name(payload)
        raw = payload.get("arguments") if kind == "function_call" else payload.get("input")
        arguments = _arguments(raw) if kind == "function_call" else raw
    if name is None:
        return Skip.MALFORMED
    own = is_own_tool(name) or invokes_our_tool(arguments)
    # Our own tool's calls are kept (their results are found by them) but never shown.
    calls.append(ToolCall(call_id if isinstance(call_id, str) else "", name, arguments, shown=not own,
                          reads_process=_polled_process(name, arguments)))
    return Entry(entry_id, None, ts, "assistant", "assistant", None, parts, calls=calls)


def _polled_process(name: str, arguments: Any) -> str | None:
    if name != _POLL_TOOL or not isinstance(arguments, dict):
        return None
    session = arguments.get("session_id")
    if isinstance(session, bool) or not isinstance(session, int | str):
        return None
    session = str(session)
    return session if session.isdigit() and len(session) <= 12 else None


def _started_process(output: list[str]) -> str | None:
    """The process a command's first output says it left running (Codex prints it in the header)."""
    found = _PROCESS_RUNNING.search(output[0][:400]) if output else None
    return found.group(1) if found else None


def _ours_by_attribution(obj: dict[str, Any]) -> bool:
    """Codex marks an output that came from MCP tools (also through a code-mode script)."""
    metadata = obj.get("metadata")
    attribution = metadata.get("mcp_attribution") if isinstance(metadata, dict) else None
    sources = attribution.get("sources") if isinstance(attribution, dict) else None
    if not isinstance(sources, list):
        return False
    return any(isinstance(s, dict) and is_own_tool_name(s.get("tool_name")) for s in sources)


def _output(obj: dict[str, Any], payload: dict[str, Any], entry_id: str, ts: int | None) -> Parsed:
    if _ours_by_attribution(obj):
        return Skip.NOT_INDEXED
    call_id = payload.get("call_id")
    printed = payload.get("output")
    output: list[str] = []
    if isinstance(printed, dict):  # {content, success} in some versions
        printed = printed.get("content", printed.get("output"))
    if isinstance(printed, str) and (text := _json_wrapped(printed)) is not None:
        printed = text
    if not text_of_blocks(printed, output, ("input_text", "output_text", "text")):
        return Skip.MALFORMED
    started = _started_process(output)
    return Entry(entry_id, None, ts, "tool_result", "tool", None, [],
                 answers=call_id if isinstance(call_id, str) else None, output=_unwrapped(output),
                 started_process=started)


def _json_wrapped(printed: str) -> str | None:
    """The text of an output that Codex 0.3x–0.4x wrote as a JSON string, ``{"output": "…",
    "metadata": {"exit_code": N, …}}``, with a non-zero exit code first as later versions say it;
    None when ``printed`` is not that (it is then what the command printed)."""
    if not printed.startswith(_JSON_WRAPPED_START):
        return None
    try:
        wrapped = orjson.loads(printed)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(wrapped, dict) or not isinstance(text := wrapped.get("output"), str):
        return None
    metadata = wrapped.get("metadata")
    if not wrapped.keys() <= {"output", "metadata"} or not isinstance(metadata, dict | None):
        return None
    code = metadata.get("exit_code") if metadata else None
    if isinstance(code, int) and not isinstance(code, bool) and code != 0:
        return f"Exit code: {code}\n{text}"
    return text


def _unwrapped(output: list[str]) -> list[str]:
    """``output`` without the wrapper lines Codex writes before what the command printed (in its
    first block, up to a line ``Output:``). Left whole when no such line is there."""
    if not output:
        return output
    first = output[0]
    lines = first[:_WRAPPER_REACH].split("\n")
    if _WRAPPER_END not in lines[:-1] and not (lines[-1] == _WRAPPER_END and len(first) <= _WRAPPER_REACH):
        return output
    end = lines.index(_WRAPPER_END)
    header = lines[:end]
    kept = [line for line in header if not _WRAPPER_LINE.fullmatch(line)]
    if len(kept) == len(header):
        return output  # an "Output:" line, but no wrapper: what the command printed
    body = first[sum(len(line) + 1 for line in lines[:end + 1]):]
    unwrapped = "\n".join([*kept, body] if body else kept)
    return [unwrapped, *output[1:]] if unwrapped else output[1:]


def _response_item(obj: dict[str, Any], payload: dict[str, Any], entry_id: str, ts: int | None) -> Parsed:
    kind = payload.get("type")
    if kind == "message":
        role = payload.get("role")
        if role != "assistant":
            return Skip.NOT_INDEXED if isinstance(role, str) else Skip.MALFORMED
        parts: list[str] = []
        if not text_of_blocks(payload.get("content"), parts, ("output_text", "text")):
            return Skip.MALFORMED
        return Entry(entry_id, None, ts, "assistant", "assistant", None, parts,
                     progress=payload.get("phase") == "commentary")
    if kind == "reasoning":
        parts = []
        summary = payload.get("summary")
        if isinstance(summary, list):
            text_of_blocks(summary, parts, ("summary_text",))
        if not any(p.strip() for p in parts):
            return Skip.NOT_INDEXED  # the content is encrypted; only the summary is readable
        return Entry(entry_id, None, ts, "assistant", "assistant", None, parts, thinking_at=list(range(len(parts))))
    if kind == "agent_message":
        return _agent_message(payload, entry_id, ts)
    if kind in ("function_call", "custom_tool_call", "web_search_call", "local_shell_call"):
        return _call(payload, entry_id, ts)
    if kind in ("function_call_output", "custom_tool_call_output"):
        return _output(obj, payload, entry_id, ts)
    if kind in _NOT_INDEXED_ITEMS:
        return Skip.NOT_INDEXED
    return Skip.UNKNOWN


def _user_words(content: Any, parts: list[str]) -> None:
    """The blocks of a UserMessage item: text, images."""
    if not isinstance(content, list):
        return
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif block.get("type") in ("image", "local_image"):
            parts.append(IMAGE)


def _agent_message(payload: dict[str, Any], entry_id: str, ts: int | None) -> Parsed:
    """A message between agents: a sub-agent's report to the parent, or a task given to one.
    Said by an agent, so an assistant entry; its text is the payload, after the sender."""
    parts: list[str] = []
    if not text_of_blocks(payload.get("content"), parts, ("input_text", "output_text", "text")):
        return Skip.MALFORMED
    text = "\n".join(_agent_payload(part) for part in parts).strip()
    if not text:
        return Skip.NOT_INDEXED  # encrypted: nothing readable
    author = payload.get("author")
    said = f"Sender: {author}\n{text}" if isinstance(author, str) and author else text
    return Entry(entry_id, None, ts, "assistant", "assistant", None, [said])


def _agent_payload(text: str) -> str:
    """``text`` without the header lines an agent message opens with (left whole without them)."""
    position = 0
    while header := _AGENT_MESSAGE_HEADER.match(text, position):
        position = header.end()
    if position and text.startswith(_AGENT_MESSAGE_BODY, position) and position <= _AGENT_MESSAGE_REACH:
        return text[position + len(_AGENT_MESSAGE_BODY):]
    return text


def _event(payload: dict[str, Any], entry_id: str, ts: int | None) -> Parsed:
    kind = payload.get("type")
    if kind == "user_message":
        message = payload.get("message")
        if not isinstance(message, str):
            return Skip.MALFORMED
        parts = [message]
        for key in ("images", "local_images"):
            images = payload.get(key)
            if isinstance(images, list):
                parts += [IMAGE] * len(images)
        return Entry(entry_id, None, ts, "user", "user", None, parts)
    if kind == "item_completed":
        item = payload.get("item")
        if isinstance(item, dict) and item.get("type") == "UserMessage":
            parts = []
            _user_words(item.get("content"), parts)
            return Entry(entry_id, None, ts, "user", "user", None, parts)
        return Skip.NOT_INDEXED  # AgentMessage, McpToolCall, …: the response_items say it
    if kind == "thread_name_updated":
        name = payload.get("thread_name")
        return SessionName(name.strip()) if isinstance(name, str) and name.strip() else Skip.NOT_INDEXED
    if kind in _NOT_INDEXED_EVENTS:
        return Skip.NOT_INDEXED
    return Skip.UNKNOWN


def parse_line(line: bytes, offset: int) -> Parsed:
    """One rollout line: an Entry, a SessionName (a thread renamed) or a Skip."""
    obj = load_object(line)
    if obj is None:
        return Skip.MALFORMED
    kind = obj.get("type")
    payload = obj.get("payload")
    if not isinstance(kind, str) or not isinstance(payload, dict):
        return Skip.MALFORMED
    if kind in _NOT_INDEXED_TYPES:
        return Skip.NOT_INDEXED
    entry_id = synthetic_id(offset, line)
    ts = parse_time(obj.get("timestamp"))
    if kind == "response_item":
        return _response_item(obj, payload, entry_id, ts)
    if kind == "event_msg":
        return _event(payload, entry_id, ts)
    if kind == "compacted":
        message = payload.get("message")
        if not isinstance(message, str | None):
            return Skip.MALFORMED
        return Entry(entry_id, None, ts, "compaction", None, None, [message or _summary_withheld(payload)])
    return Skip.UNKNOWN


def _summary_withheld(payload: dict[str, Any]) -> str:
    """What a compaction with no summary text says instead. Codex keeps the summary of a remote
    compaction encrypted (``replacement_history`` ends with an ``encrypted_content`` item) and
    writes ``message: ""``; the window number keeps two such compactions apart (copies of one
    text collapse into one result)."""
    history = payload.get("replacement_history")
    encrypted = isinstance(history, list) and any(
        isinstance(item, dict) and "encrypted_content" in item for item in history)
    what = ENCRYPTED_SUMMARY if encrypted else "[no summary text]"
    window = payload.get("window_number")
    return f"{what} (context window {window})" if isinstance(window, int) else what
