"""Where a tool result's call is: the line (or salvaged object of a line) that made it.

Both sides need this: the indexer links each result to its call as it indexes, and a read
re-reads the call's line to show the result under it. It is a pure function of a line's
bytes, so neither side depends on the other for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from journal_index.formats import Entry, JournalFormat, Skip, ToolCall, split_objects


@dataclass(frozen=True, slots=True)
class CallSite:
    offset: int  # of the line (or salvaged object) that made the call
    length: int
    call: ToolCall


def parse_salvaging(fmt: JournalFormat, line: bytes, offset: int) -> list[tuple[int, bytes, Any]]:
    """(offset, bytes, parsed) for a line, or for each object of a line that holds several."""
    parsed = fmt.parse_line(line, offset)
    if parsed is Skip.MALFORMED:
        pieces = split_objects(line)
        if pieces:
            return [(offset + s, line[s:e], fmt.parse_line(line[s:e], offset + s)) for s, e in pieces]
    return [(offset, line, parsed)]


def find_call(fmt: JournalFormat, call_id: str, line: bytes, offset: int) -> CallSite | None:
    """The call ``call_id`` made by the line (or one of its salvaged objects) at ``offset``."""
    for piece_offset, piece, parsed in parse_salvaging(fmt, line, offset):
        if isinstance(parsed, Entry):
            for call in parsed.calls:
                if call.call_id == call_id:
                    return CallSite(piece_offset, len(piece), call)
    return None
