"""From a block of complete journal lines to index rows and the redacted text of their terms.

Pure and picklable, so worker processes can run it while the main process writes: the one
place where a line is parsed, its text redacted and given its index form.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from journal_index.formats import Entry, SessionName, Skip, get_format
from journal_index.redact import redact
from journal_index.text_forms import index_form, indexed_part


@dataclass
class Extracted:
    # (entry_id, parent_id, ts, kind, role, tool, chars, offset, length, tokens_before)
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    terms: list[tuple[int, str]] = field(default_factory=list)  # (index into rows, text for the FTS)
    skipped: int = 0
    name: str | None = None  # the last session name seen (redacted)
    last_ts: int | None = None


def extract_block(fmt_name: str, data: bytes, base_offset: int) -> Extracted:
    """Parse every line of ``data`` (complete lines; ``base_offset`` is its place in the file)."""
    parse_line = get_format(fmt_name).parse_line
    out = Extracted()
    start = 0
    end_of_data = len(data)
    while start < end_of_data:
        newline = data.find(b"\n", start)
        if newline < 0:
            newline = end_of_data
        line = data[start:newline]
        offset = base_offset + start
        start = newline + 1
        if not line.strip():
            continue
        parsed = parse_line(line, offset)
        if isinstance(parsed, Entry):
            text = redact(parsed.text) if parsed.text else ""
            out.rows.append((parsed.entry_id, parsed.parent_id, parsed.ts, parsed.kind, parsed.role, parsed.tool,
                             len(text), offset, len(line), parsed.tokens_before))
            if text:
                out.terms.append((len(out.rows) - 1, index_form(indexed_part(text))))
            if parsed.ts is not None and (out.last_ts is None or parsed.ts > out.last_ts):
                out.last_ts = parsed.ts
        elif isinstance(parsed, SessionName):
            out.name = redact(parsed.name)
        elif parsed is not Skip.NOT_INDEXED:
            out.skipped += 1
    return out
