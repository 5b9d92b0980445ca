"""Claude Code transcripts (DESIGN §5b).

Layout: ``${CLAUDE_CONFIG_DIR:-~/.claude}/projects/<cwd, every non-alphanumeric char → ->/
<session uuid>.jsonl``; a subagent writes ``<session uuid>/subagents/agent-<id>.jsonl`` beside
it (older versions: ``agent-<id>.jsonl`` with ``isSidechain`` lines in the project folder).

There is no header line: every conversational line carries its own ``uuid``, ``parentUuid``,
``timestamp``, ``sessionId`` and ``cwd``, and an assistant reply is split into one line per
content block. Tool results arrive as ``user`` lines holding ``tool_result`` blocks: they are
indexed as tool results, never as the human's words. New line types appear with most
releases; anything not listed here is skipped and counted.

A command run in the background answers ``Command running in background with ID: X. Output is
being written to: …/tasks/X.output``; what it printed is read later by ``TaskOutput`` (2.x,
``task_id``), ``BashOutput`` (1.x, ``bash_id``), or a command or ``Read`` naming that file. Both
ends are marked (``Entry.started_process``, ``ToolCall.reads_process``), as for Codex's polls,
so the indexer files that later output under the command that started it.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from journal_index.formats.base import (
    IMAGE,
    SNIFF_LINES,
    AgentHints,
    Entry,
    Header,
    Parsed,
    SessionName,
    Skip,
    ToolCall,
    invokes_our_tool,
    is_own_tool_name,
    load_object,
    newest_first,
    open_journal,
    parse_time,
    text_of_blocks,
)

NAME = "claude"
LABEL = "Claude Code"
COLLECTABLE = False
CONFIG_DIR_ENV = "CLAUDE_CONFIG_DIR"
SESSION_ENV = "CLAUDE_CODE_SESSION_ID"
PROJECT_DIR_ENV = "CLAUDE_PROJECT_DIR"
TOOL_USE_META = "claudecode/toolUseId"  # _meta of a tools/call: the id of the tool_use it answers

# Line types that carry nothing to search (titles are handled apart). Anything else that is
# not a user or assistant line is unknown: skipped and counted.
_NOT_INDEXED_TYPES = frozenset({
    "system", "progress", "attachment", "file-history-snapshot", "queue-operation", "last-prompt",
    "pr-link", "permission-mode", "mode", "tag", "agent-name", "agent-color", "relocated",
    "tools-used", "cost-state", "atis-latch", "api-request", "api-request-shape",
    # a copy of what was sent to the API (it can hold tool results): never conversation
    "api-request-blob",
})
_TITLE_FIELDS = {"custom-title": "customTitle", "ai-title": "aiTitle", "summary": "summary"}

_TASK_ID = r"[A-Za-z0-9_-]{3,40}"
_BACKGROUND_STARTED = re.compile(rf"Command running in background with ID: ({_TASK_ID})")
_TASK_OUTPUT_FILE = re.compile(rf"tasks[/\\]({_TASK_ID})\.output\b")
_POLL_TOOLS = {"TaskOutput": "task_id", "BashOutput": "bash_id"}  # tool → the argument naming the task
_FILE_READERS = {"Bash": "command", "Read": "file_path"}  # tool → the argument that may name its output file

# A folder name longer than this is cut and given a hash suffix by Claude Code.
_FOLDER_MAX = 200
_SAFE_ID = re.compile(r"[A-Za-z0-9_-]{1,200}")


# -- where the journals are ---------------------------------------------------------------------


def config_dir(env: Mapping[str, str], home: Path) -> Path:
    value = env.get(CONFIG_DIR_ENV)
    return Path(value).expanduser() if value else home / ".claude"


def default_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    return [config_dir(env, home) / "projects"]


def env_vars() -> tuple[str, ...]:
    return (CONFIG_DIR_ENV,)


def owns(path: str) -> bool:
    return path.endswith(".jsonl")


def project_folder(cwd: str) -> str:
    """Claude Code's folder name for a working folder: every char outside [A-Za-z0-9] → ``-``
    (a name longer than 200 chars is cut there and ends in a hash: see :func:`_folders`)."""
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


# Keys only Claude Code writes at the top level of a line (pi has id/parentId, Codex wraps
# everything in {timestamp, type, payload}).
_CLAUDE_KEYS = ("sessionId", "parentUuid", "leafUuid")


def sniff(head: bytes) -> bool:
    """Whether the first lines are Claude Code's: the first object that says whose it is must
    carry one of Claude's own keys. Line types are not listed: new ones come with releases."""
    for raw in head.split(b"\n", SNIFF_LINES)[:SNIFF_LINES]:
        if not raw.strip():
            continue
        obj = load_object(raw)
        if obj is None:
            continue
        if isinstance(obj.get("payload"), dict) or obj.get("type") == "session":
            return False  # a Codex envelope or a pi header
        if any(key in obj for key in _CLAUDE_KEYS):
            return True
        if obj.get("type") == "file-history-snapshot" and "messageId" in obj:
            continue  # Claude's too, but it names no session: look at the next line
        return False
    return False


# -- the session --------------------------------------------------------------------------------


def read_header(path: str, head: bytes) -> Header | None:
    """Session id from the file name; cwd, start and title from the first lines that have them.
    A subagent transcript is a session of its own whose parent is the session that spawned it."""
    file = Path(path)
    session_id = file.stem
    cwd: str | None = None
    started: int | None = None
    name: str | None = None
    line_session: str | None = None
    forked_from: str | None = None
    for raw in head.split(b"\n"):
        if not raw.strip():
            continue
        obj = load_object(raw)
        if obj is None:
            continue
        if cwd is None and isinstance(obj.get("cwd"), str) and obj["cwd"]:
            cwd = obj["cwd"]
        if started is None and obj.get("timestamp") is not None:
            started = parse_time(obj.get("timestamp"))
        if line_session is None and isinstance(obj.get("sessionId"), str):
            line_session = obj["sessionId"]
        fork = obj.get("forkedFrom")
        if forked_from is None and isinstance(fork, dict) and isinstance(fork.get("sessionId"), str):
            forked_from = fork["sessionId"]
        title = _title(obj)
        if title is not None:
            name = title
    parent: str | None = None
    if session_id.startswith("agent-"):
        if file.parent.name == "subagents":
            parent = file.parent.parent.name
        elif line_session and line_session != session_id:
            parent = line_session  # older layout: the lines carry the parent's session id
    elif forked_from and forked_from != session_id:
        parent = forked_from
    return Header(session_id=session_id, cwd=cwd, started=started, parent_session=parent, name=name)


def _title(obj: dict[str, Any]) -> str | None:
    kind = obj.get("type")
    field = _TITLE_FIELDS.get(kind) if isinstance(kind, str) else None
    value = obj.get(field) if field else None
    return value if isinstance(value, str) and value.strip() else None


def is_own_tool(name: str) -> bool:
    return is_own_tool_name(name)


def is_host(argv: Sequence[str]) -> bool:
    """The native ``claude`` binary (``claude.exe`` in the npm package) or node running the
    claude-code package."""
    return any(os.path.basename(arg) in ("claude", "claude.exe") or "@anthropic-ai/claude-code" in arg
               for arg in argv[:2])


# -- the journal being written now --------------------------------------------------------------

POLL_SECONDS = 1.5  # the tool_use line is usually flushed 6–120 ms after the call arrives
POLL_INTERVAL = 0.03
_POLL_FILES = 4  # newest journals per folder (and newest subagent transcripts) looked into
_TAIL_BYTES = 1 << 20


def _folders(roots: Sequence[Path], cwds: Iterable[str]) -> list[Path]:
    folders: list[Path] = []
    for cwd in cwds:
        name = project_folder(cwd)
        for root in roots:
            if len(name) <= _FOLDER_MAX:
                folders.append(root / name)
            else:  # cut at 200 chars and suffixed with a hash we do not compute: match the cut
                folders += sorted(p for p in root.glob(glob_escape(name[:_FOLDER_MAX]) + "-*") if p.is_dir())
    return list(dict.fromkeys(folders))


def glob_escape(text: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", text)


def _journals_of(folder: Path) -> list[Path]:
    return newest_first(folder.glob("*.jsonl"))


def _candidates(folders: Sequence[Path]) -> list[Path]:
    """The journals that may hold a tool call made just now: the newest few of each folder and
    the newest few subagent transcripts of those sessions (a subagent's file sits in its
    session's folder, and that session's own journal is being written too)."""
    found: list[Path] = []
    for folder in folders:
        newest = _journals_of(folder)[:_POLL_FILES]
        found += newest
        for journal in newest:
            found += newest_first((folder / journal.stem / "subagents").glob("agent-*.jsonl"))[:_POLL_FILES]
    return found


class _TailScanner:
    """Looks for a needle in the bytes journals gain between polls (each byte read once)."""

    def __init__(self, needle: bytes) -> None:
        self.needle = needle
        self.scanned: dict[Path, int] = {}

    def holds(self, path: Path) -> bool:
        try:
            with open_journal(path) as handle:
                size = os.fstat(handle.fileno()).st_size
                start = self.scanned.get(path)
                if start is None or start > size:
                    start = max(0, size - _TAIL_BYTES)
                start = max(0, start - len(self.needle))  # a needle cut by the last read
                handle.seek(start)
                data = handle.read(size - start)
        except OSError:
            return False
        self.scanned[path] = start + len(data)
        return self.needle in data


def find_tool_use(folders: Sequence[Path], tool_use_id: str, wait: float = POLL_SECONDS) -> str | None:
    """The journal holding the tool_use ``tool_use_id``, polling up to ``wait`` seconds for
    Claude Code to flush it (it writes every ~100 ms; the file may not even exist yet)."""
    scanner = _TailScanner(b'"' + tool_use_id.encode() + b'"')
    deadline = time.monotonic() + wait
    while True:
        for path in _candidates(folders):
            if scanner.holds(path):
                return os.path.abspath(path)
        if time.monotonic() >= deadline:
            return None
        time.sleep(POLL_INTERVAL)


def current_journals(roots: Sequence[Path], cwd: str, hints: AgentHints) -> list[str]:
    """The journal holding the tool call being answered (``_meta`` names its tool_use id, and
    that stays right across /clear, resumes, forks and subagents); else the session named
    when the server was started (wrong after /clear); else the newest of the cwd's folder."""
    cwds = [c for c in (hints.env.get(PROJECT_DIR_ENV), cwd) if c]
    folders = _folders(roots, cwds)
    tool_use_id = hints.call_meta.get(TOOL_USE_META)
    if isinstance(tool_use_id, str) and _SAFE_ID.fullmatch(tool_use_id):
        found = find_tool_use(folders, tool_use_id, POLL_SECONDS)
        if found is not None:
            return [found]
    session_id = hints.env.get(SESSION_ENV)
    if session_id and _SAFE_ID.fullmatch(session_id):
        for folder in folders:
            named = folder / f"{session_id}.jsonl"
            if named.is_file():
                return [os.path.abspath(named)]
    newest: list[Path] = []
    for folder in folders:
        newest += _journals_of(folder)[:3]
    return [os.path.abspath(p) for p in newest_first(newest)[:3]]


# -- lines --------------------------------------------------------------------------------------

# `progress` lines (hook, bash and subagent progress) can be most of a file, and a subagent's
# progress lines embed its messages. Claude Code writes a line's own "type" after a few plain keys (parentUuid,
# isSidechain, userType, cwd, sessionId, version, gitBranch, slug) and before the nested "data":
# when no "{" or "[" comes before it, that key belongs to the line itself (inside a JSON string
# the quotes would be escaped), and the line is skipped without a parse. A line that may hold a
# second object (a lost newline: `}{"`) is parsed, so the salvage still finds that object.
# Measured: 0.9 against 1.4 µs a ~750-byte hook line, 6 against 19 µs a ~17 KB subagent line;
# parsing a file of 75 % progress lines takes 4 instead of 6 ms, a whole first pass over it
# gains ~5 % (the entries' redaction and terms dominate).
_PROGRESS = b'"type":"progress"'
_PROGRESS_WITHIN = 4096
_SECOND_OBJECT = re.compile(rb'\}\{"')


def is_progress_line(line: bytes) -> bool:
    at = line.find(_PROGRESS, 0, _PROGRESS_WITHIN)
    return (at > 0 and line[0] == 0x7B and line[-1] == 0x7D  # { … }
            and line.find(b"{", 1, at) < 0 and line.find(b"[", 1, at) < 0
            and _SECOND_OBJECT.search(line) is None)


def parse_line(line: bytes, offset: int) -> Parsed:
    """One transcript line: an Entry, a SessionName (titles) or a Skip."""
    if is_progress_line(line):
        return Skip.NOT_INDEXED
    obj = load_object(line)
    if obj is None:
        return Skip.MALFORMED
    kind = obj.get("type")
    if not isinstance(kind, str):
        return Skip.MALFORMED
    if kind in _TITLE_FIELDS:
        title = _title(obj)
        return SessionName(title) if title is not None else Skip.NOT_INDEXED
    if kind in _NOT_INDEXED_TYPES:
        return Skip.NOT_INDEXED
    if kind not in ("user", "assistant"):
        return Skip.UNKNOWN
    uuid = obj.get("uuid")
    message = obj.get("message")
    if not isinstance(uuid, str) or not uuid or not isinstance(message, dict):
        return Skip.MALFORMED
    parent = obj.get("parentUuid")
    parent_id = parent if isinstance(parent, str) else None
    ts = parse_time(obj.get("timestamp"))
    if kind == "user":
        return _user(obj, message, uuid, parent_id, ts)
    return _assistant(message, uuid, parent_id, ts)


def _user(obj: dict[str, Any], message: dict[str, Any], uuid: str, parent_id: str | None,
          ts: int | None) -> Parsed:
    content = message.get("content")
    if obj.get("isCompactSummary") is True:
        parts: list[str] = []
        if not text_of_blocks(content, parts):
            return Skip.MALFORMED
        return Entry(uuid, parent_id, ts, "compaction", None, None, parts)
    if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
        return _tool_results(content, uuid, parent_id, ts)
    if obj.get("isMeta") is True:
        return Skip.NOT_INDEXED  # injected by the harness: command caveats, hook context
    parts = []
    if not text_of_blocks(content, parts):
        return Skip.MALFORMED
    return Entry(uuid, parent_id, ts, "user", "user", None, parts)


def _tool_results(content: list[Any], uuid: str, parent_id: str | None, ts: int | None) -> Entry:
    """A user line answering tool calls: the first call's id links it, all of its text counts."""
    output: list[str] = []
    answers: str | None = None
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_result":
            call_id = block.get("tool_use_id")
            if answers is None and isinstance(call_id, str):
                answers = call_id
            text_of_blocks(block.get("content"), output)
        elif block.get("type") == "text" and isinstance(block.get("text"), str):
            output.append(block["text"])
        elif block.get("type") == "image":
            output.append(IMAGE)
    started = _BACKGROUND_STARTED.search(output[0][:400]) if output else None
    return Entry(uuid, parent_id, ts, "tool_result", "user", None, [], answers=answers, output=output,
                 started_process=started.group(1) if started else None)


def _polled_task(name: str, arguments: Any) -> str | None:
    """The background task a call reads the output of: named by TaskOutput or BashOutput, or by
    its output file in a command or a Read."""
    if not isinstance(arguments, dict):
        return None
    if name in _POLL_TOOLS:
        task = arguments.get(_POLL_TOOLS[name])
        return task if isinstance(task, str) and re.fullmatch(_TASK_ID, task) else None
    named = arguments.get(_FILE_READERS.get(name, ""))
    found = _TASK_OUTPUT_FILE.search(named) if isinstance(named, str) else None
    return found.group(1) if found else None


def _assistant(message: dict[str, Any], uuid: str, parent_id: str | None, ts: int | None) -> Parsed:
    content = message.get("content")
    parts: list[str] = []
    calls: list[ToolCall] = []
    thinking_at: list[int] = []
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        for block in content:
            if isinstance(block, dict):
                _assistant_block(block, parts, calls, thinking_at)
    else:
        return Skip.MALFORMED
    if not calls and not any(p.strip() for p in parts):
        return Skip.NOT_INDEXED  # an empty or encrypted-only block: nothing a search could find
    return Entry(uuid, parent_id, ts, "assistant", "assistant", None, parts, calls=calls, thinking_at=thinking_at)


def _assistant_block(block: dict[str, Any], parts: list[str], calls: list[ToolCall], thinking_at: list[int]) -> None:
    kind = block.get("type")
    if kind == "text":
        if isinstance(block.get("text"), str):
            parts.append(block["text"])
    elif kind == "thinking":
        # redacted_thinking blocks (and empty thinking kept only for its signature) are opaque
        if isinstance(block.get("thinking"), str):
            thinking_at.append(len(parts))
            parts.append(block["thinking"])
    elif kind in ("tool_use", "server_tool_use"):
        name, call_id = block.get("name"), block.get("id")
        if not isinstance(name, str):
            return
        arguments = block.get("input")
        # Calls of our tool (directly or from a script) are kept, so that their results are
        # known as ours, but never shown.
        calls.append(ToolCall(call_id if isinstance(call_id, str) else "", name, arguments,
                              shown=not (is_own_tool(name) or invokes_our_tool(arguments)),
                              reads_process=_polled_task(name, arguments)))
    elif kind == "web_search_tool_result":
        results = block.get("content")
        if isinstance(results, list):
            for result in results:
                if isinstance(result, dict):
                    parts += [v for v in (result.get("title"), result.get("url")) if isinstance(v, str)]
    elif kind == "image":
        parts.append(IMAGE)
