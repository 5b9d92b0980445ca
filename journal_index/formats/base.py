"""What every journal format shares: the entry kinds, the types a format returns (:class:`Entry`,
:class:`Header`, :class:`Skip`, …), the protocol a format implements, and the helpers the
built-in formats use to read lines. The registry of formats is the package itself
(:mod:`journal_index.formats`); this module knows none of them.
"""

from __future__ import annotations

import errno
import json
import os
import posixpath
import re
import stat
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Any, BinaryIO, Protocol

import orjson

# The kinds of entry every format maps its lines onto (DESIGN §5). Outside tooling relies on
# these names: add, never rename.
KINDS = ("user", "assistant", "tool_result", "bash", "custom", "compaction", "branch_summary",
         "context_edit")
SUMMARY_KINDS = ("compaction", "branch_summary")
IMAGE = "[image]"
# Our own tool. Whatever prefix a host gives it (mcp__journal-index__memory_context,
# journal_index.memory_context, …), the name ends with this.
OWN_TOOL = "memory_context"


# A folder named as Windows names it (a journal written on Windows: "D:\\work\\app", "C:/x").
_WINDOWS_ABSOLUTE = re.compile(r"^[A-Za-z]:[\\/]")


def is_absolute_cwd(cwd: str) -> bool:
    """Whether a folder's name stands alone: POSIX absolute, or a Windows drive path."""
    return cwd.startswith("/") or bool(_WINDOWS_ABSOLUTE.match(cwd))


def normalize_cwd(cwd: str) -> str:
    """A folder as scopes compare it: ``.`` and ``..`` folded and slashes single, by the name
    alone (the folder need not exist). ``/a/b/../c`` is ``/a/c``, never a folder inside ``/a/b``.
    A Windows drive path keeps its drive and takes ``/`` between its parts (``D:\\app\\web`` is
    ``D:/app/web``), so that its subfolders lie inside it here too."""
    if not cwd:
        return cwd
    if _WINDOWS_ABSOLUTE.match(cwd):
        cwd = cwd.replace("\\", "/")
    folded = posixpath.normpath(cwd)
    # POSIX leaves a leading "//" implementation-defined; a journal means the plain root.
    return "/" + folded.lstrip("/") if folded.startswith("//") else folded


@dataclass(slots=True)
class Header:
    """What a journal says about its session (from its path and first lines). Its cwd is kept
    normalized: the scope of every query is decided by it."""

    session_id: str | None
    cwd: str | None
    started: int | None  # epoch ms
    version: int = 1
    parent_session: str | None = None  # the session this one was copied or spawned from
    name: str | None = None

    def __post_init__(self) -> None:
        if self.cwd:
            self.cwd = normalize_cwd(self.cwd)


@dataclass(slots=True)
class ToolCall:
    call_id: str
    name: str
    arguments: Any  # a dict or list as the agent sent it, or a raw string
    shown: bool = True  # False for calls of our own tool: an earlier search is not what was said
    # A call that only reads more output of a process an earlier call started (Codex's
    # ``write_stdin``): that process's id, so its output is found by the command that started it.
    reads_process: str | None = None

    def text(self) -> str:
        """The call as reads show it: its name, then its arguments as ``key: value`` lines."""
        rendered = arguments_text(self.arguments)
        return f"{self.name}\n{rendered}" if rendered else self.name


@dataclass(slots=True)
class Entry:
    """One indexable journal line, raw: its text is redacted (joined, so a secret cut in two
    still counts) before any term exists and before any text leaves the process.

    ``parts`` is what was said (a prompt, a reply, a summary, a command typed; readable thinking
    included, its places in ``thinking_at``); ``calls`` the
    tool calls made (their names and arguments are shown by the generic code); ``output`` what
    a tool or command printed. Output and call arguments are the bulk of a journal: they are
    indexed apart, without positions.
    """

    entry_id: str
    parent_id: str | None
    ts: int | None  # epoch ms
    kind: str
    role: str | None
    tool: str | None
    parts: list[str]
    tokens_before: int | None = None
    calls: list[ToolCall] = field(default_factory=list)
    answers: str | None = None  # the call id this tool result answers
    # compaction: the first entry still in the agent's context afterwards (None: this line)
    kept_from: str | None = None
    output: list[str] = field(default_factory=list)
    # Which of ``parts`` are the agent's readable thinking (by index): they stay among the parts,
    # in block order, so what is indexed and searched is the same; a view may fold them apart.
    thinking_at: list[int] = field(default_factory=list)
    # A tool result saying its command still runs as a process polled later: that process's id.
    started_process: str | None = None
    # The agent marked this message a note written between steps, not its closing report
    # (Codex's ``phase: "commentary"``); False where a format has no such mark.
    progress: bool = False

    @property
    def thinking(self) -> list[str]:
        """The parts that are thinking, in order."""
        return [self.parts[i] for i in self.thinking_at]

    @property
    def text(self) -> str:
        """The raw text in reading order (before redaction and without a result's call)."""
        pieces = [*self.parts, *(c.text() for c in self.calls if c.shown), *self.output]
        return "\n".join(pieces)


class Skip(Enum):
    NOT_INDEXED = "not_indexed"  # a known line type that carries nothing to search
    UNKNOWN = "unknown"  # an entry type or role this version does not know
    MALFORMED = "malformed"  # not JSON, not an object, or wrong field types


@dataclass(slots=True)
class SessionName:
    """A line that names the session (kept as metadata, not indexed)."""

    name: str


Parsed = Entry | Skip | SessionName


@dataclass(frozen=True)
class AgentHints:
    """What the process serving the agent knows about it: its environment, the command line of
    the agent among its parents (if found), and the ``_meta`` of the tool call being answered
    (hosts put ids there: Claude Code the tool-use id, Codex the thread id)."""

    env: Mapping[str, str] = field(default_factory=dict)
    host_argv: Sequence[str] = ()
    call_meta: Mapping[str, Any] = field(default_factory=dict)


class JournalFormat(Protocol):
    """What a format module provides (each of pi.py, claude.py, codex.py is one)."""

    NAME: str  # stored in files.format; results name the agent by it
    LABEL: str  # for people: "pi", "Claude Code", "Codex CLI"
    COLLECTABLE: bool  # may `gc` delete this agent's junk journals?

    def default_roots(self, env: Mapping[str, str], home: Path) -> list[Path]:
        """Where the agent keeps journals (existing or not), honouring its environment overrides."""

    def env_vars(self) -> tuple[str, ...]:
        """Environment variables that move the agent's journals (a service carries them over)."""

    def owns(self, path: str) -> bool:
        """Whether a file found under one of this format's roots is a journal of it (by name)."""

    def sniff(self, head: bytes) -> bool:
        """Whether a journal whose first complete lines are ``head`` is of this format."""

    def read_header(self, path: str, head: bytes) -> Header | None:
        """The session a journal belongs to, from its path and ``head``: its first complete lines."""

    def parse_line(self, line: bytes, offset: int) -> Parsed:
        """One line (without its newline) at byte ``offset``: an Entry, a SessionName or a Skip."""

    def is_own_tool(self, name: str) -> bool:
        """Whether a tool of this name is ours, as this agent names it."""

    def is_host(self, argv: Sequence[str]) -> bool:
        """Whether a process with this command line is this agent (the MCP server's parent)."""

    def current_journals(self, roots: Sequence[Path], cwd: str, hints: AgentHints) -> list[str]:
        """Journals the agent may be writing now for ``cwd``, most likely first (at most a few)."""


@dataclass(frozen=True)
class Root:
    """A folder of journals; ``format`` None means "whichever format each file turns out to be"."""

    path: Path
    format: str | None = None

    def __str__(self) -> str:
        return str(self.path)


RootLike = Root | str | os.PathLike[str]


SNIFF_LINES = 20


def first_object(head: bytes) -> dict[str, Any] | None:
    """The first line of ``head`` that is a JSON object (a damaged first line does not hide
    what the journal is)."""
    for line in head.split(b"\n", SNIFF_LINES)[:SNIFF_LINES]:
        if line.strip():
            obj = load_object(line)
            if obj is not None:
                return obj
    return None


# -- helpers the formats share -----------------------------------------------------------------


def synthetic_id(offset: int, line: bytes) -> str:
    """An id for a line that has none (pi version 1, Codex): its offset and a CRC of its bytes,
    so a different line at the same offset never verifies."""
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


def is_own_tool_name(name: Any) -> bool:
    return isinstance(name, str) and name.endswith(OWN_TOOL)


# A script a host runs for the model (code mode) that calls our tool: tools.<name>memory_context(
# or mcp__<server>__memory_context. Its result carries our answer, so the call counts as ours.
_OWN_TOOL_IN_CODE = re.compile(r"\b(?:tools\.\w*|mcp__\w*)memory_context\b")


def invokes_our_tool(arguments: Any) -> bool:
    """Whether a call's arguments are code that calls our tool."""
    try:
        # Nearly no call mentions the name at all: a byte search in the JSON says so cheaply
        # (the name has no character JSON escapes), before the arguments are rendered.
        if OWN_TOOL.encode() not in orjson.dumps(arguments):
            return False
    except (TypeError, orjson.JSONEncodeError):
        pass  # not JSON-like (never from a parsed line): look the slow way
    return _OWN_TOOL_IN_CODE.search(arguments_text(arguments)) is not None


def is_our_call(name: str, arguments: Any) -> bool:
    """A call of our tool, by its name or from inside a code-mode script."""
    return is_own_tool_name(name) or invokes_our_tool(arguments)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _clean(value: Any) -> Any:
    """Lone surrogates (Node writes them when it cuts a pair) → U+FFFD, in every string."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, dict):
        return {_clean(k): _clean(v) for k, v in value.items()}
    return value


def load_object(line: bytes) -> dict[str, Any] | None:
    """A line's JSON object, or None. A bad character never costs the whole line (DESIGN
    invariant 11): invalid UTF-8 and lone surrogate escapes become U+FFFD, the rest is kept."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        try:
            obj = _clean(json.loads(line.decode("utf-8", "replace")))
        except (ValueError, RecursionError):
            return None
    except RecursionError:
        return None
    return obj if isinstance(obj, dict) else None


# A line holding several objects is salvaged only this far: the split is a retry per boundary.
SALVAGE_MAX_BYTES = 16 << 20
SALVAGE_MAX_TRIES = 32
_BOUNDARY = re.compile(rb"\}[ \t\r]*\{")


def split_objects(line: bytes) -> list[tuple[int, int]]:
    """(start, end) of each complete JSON object on a line that holds several (a writer lost a
    newline); [] when the line is not such a run of objects."""
    if len(line) > SALVAGE_MAX_BYTES:
        return []
    pieces: list[tuple[int, int]] = []
    start, tries = 0, 0
    for boundary in _BOUNDARY.finditer(line):
        tries += 1
        if tries > SALVAGE_MAX_TRIES:
            return []
        end = boundary.start() + 1
        if end <= start:
            continue
        if load_object(line[start:end]) is not None:
            pieces.append((start, end))
            start = boundary.end() - 1
    if pieces and load_object(line[start:]) is not None:
        pieces.append((start, len(line)))
        return pieces
    return []


def arguments_text(arguments: Any, depth: int = 0) -> str:
    """A tool call's arguments as people read them: ``key: value`` lines, strings as they are
    (a command or a patch keeps its real newlines and quotes, not JSON escapes), a list of
    edits as their own ``key: value`` lines."""
    if isinstance(arguments, str):
        return arguments
    if arguments is None:
        return ""
    if depth < 3 and isinstance(arguments, dict):
        return "\n".join(f"{key}: {arguments_text(value, depth + 1)}" for key, value in arguments.items())
    if depth < 3 and isinstance(arguments, list) and all(isinstance(v, str | dict) for v in arguments):
        return "\n".join(arguments_text(value, depth + 1) for value in arguments)
    return orjson.dumps(arguments).decode()


def text_of_blocks(content: Any, parts: list[str], kinds: Iterable[str] = ("text",)) -> bool:
    """Append the text of a content value (a string, or a list of blocks whose type is one of
    ``kinds``; images become [image]). False when its shape is wrong."""
    if isinstance(content, str):
        parts.append(content)
        return True
    if not isinstance(content, list):
        return content is None
    wanted = set(kinds)
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind in wanted:
            text = block.get("text")
            if isinstance(text, str):
                parts.append(text)
        elif kind in ("image", "input_image"):
            parts.append(IMAGE)
    return True


def open_journal(path: str | os.PathLike[str]) -> BinaryIO:
    """Open a journal for reading; a FIFO, socket or device is refused instead of blocking on it."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def first_line(path: str | os.PathLike[str], limit: int = 1 << 20) -> bytes | None:
    """A journal's first line (without its newline), or None if it cannot be read."""
    try:
        with open_journal(path) as handle:
            return handle.readline(limit).rstrip(b"\r\n")
    except OSError:
        return None


def newest_first(paths: Iterable[Path]) -> list[Path]:
    """Existing files, newest mtime first (ties by path, so the order never depends on the disk)."""
    stamped = []
    for path in paths:
        try:
            stamped.append((-path.stat().st_mtime_ns, str(path), path))
        except OSError:
            continue
    return [p for _, _, p in sorted(stamped)]
