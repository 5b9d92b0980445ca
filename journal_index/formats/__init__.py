"""Journal formats: one module per agent, each registered here (DESIGN §2).

A format turns one journal line into an :class:`Entry` (or a :class:`Skip`), and knows what
the rest of the program must not: where its agent keeps journals by default, which files are
its own, what a journal says about its session, how its agent names our tool, and how to find
the journal the agent is writing now. Nothing outside this package names an agent; adding one
is one module here, registered in :data:`FORMATS`.

Reads re-parse a line with the format stored for its file, so ``parse_line`` must be a pure
function of the line's bytes and its offset.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from journal_index.formats.base import (
    IMAGE,
    KINDS,
    OWN_TOOL,
    SALVAGE_MAX_BYTES,
    SALVAGE_MAX_TRIES,
    SNIFF_LINES,
    SUMMARY_KINDS,
    AgentHints,
    Entry,
    Header,
    JournalFormat,
    Parsed,
    Root,
    RootLike,
    SessionName,
    Skip,
    ToolCall,
    arguments_text,
    first_line,
    first_object,
    invokes_our_tool,
    is_absolute_cwd,
    is_our_call,
    is_own_tool_name,
    load_object,
    newest_first,
    normalize_cwd,
    open_journal,
    parse_time,
    split_objects,
    synthetic_id,
    text_of_blocks,
)

__all__ = [
    "AgentHints",
    "Entry",
    "Header",
    "IMAGE",
    "JournalFormat",
    "KINDS",
    "OWN_TOOL",
    "Parsed",
    "Root",
    "RootLike",
    "SALVAGE_MAX_BYTES",
    "SALVAGE_MAX_TRIES",
    "SNIFF_LINES",
    "SUMMARY_KINDS",
    "SessionName",
    "Skip",
    "ToolCall",
    "arguments_text",
    "first_line",
    "first_object",
    "invokes_our_tool",
    "is_our_call",
    "is_own_tool_name",
    "load_object",
    "newest_first",
    "is_absolute_cwd",
    "normalize_cwd",
    "open_journal",
    "parse_time",
    "split_objects",
    "synthetic_id",
    "text_of_blocks",
    "FORMATS",
    "register",
    "get_format",
    "all_formats",
    "default_roots",
    "choose_format",
]

FORMATS: dict[str, JournalFormat] = {}


def register(fmt: JournalFormat) -> JournalFormat:
    """Add a format to the registry (a later registration of the same name replaces it)."""
    FORMATS[fmt.NAME] = fmt
    return fmt


def get_format(name: str) -> JournalFormat:
    try:
        return FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown journal format {name!r}; known: {', '.join(FORMATS)}") from None


def all_formats() -> list[JournalFormat]:
    return list(FORMATS.values())




def default_roots(env: Mapping[str, str] | None = None, home: Path | None = None) -> list[Root]:
    """Every registered format's default roots (existing or not), in registry order."""
    env = os.environ if env is None else env
    home = Path.home() if home is None else home
    roots: list[Root] = []
    for fmt in all_formats():
        roots += [Root(path, fmt.NAME) for path in fmt.default_roots(env, home)]
    return roots


def _inside(path: str, folder: Path) -> bool:
    return path.startswith(str(folder).rstrip(os.sep) + os.sep)


def choose_format(path: str, head: bytes, roots: Sequence[Root] = ()) -> JournalFormat | None:
    """The format of a journal not seen before (or rewritten from its first line): that of the
    innermost root holding it, when that root belongs to one agent; else the first registered
    format that owns its name and recognizes its first complete lines (``head``)."""
    holders = [r for r in roots if _inside(path, r.path)]
    if holders:
        root = max(holders, key=lambda r: len(str(r.path)))
        if root.format is not None:
            fmt = FORMATS.get(root.format)
            return fmt if fmt is not None and fmt.owns(path) else None
    for fmt in all_formats():
        if fmt.owns(path) and fmt.sniff(head):
            return fmt
    return None


def _register_builtins() -> None:
    from journal_index.formats import claude, codex, pi

    for module in (pi, claude, codex):
        register(module)


_register_builtins()
