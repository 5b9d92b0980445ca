"""From blocks of complete journal lines to index rows and the redacted text of their terms.

The one place where a line is parsed, its text redacted and given its index form. A pass over
a journal keeps one :class:`Extractor`, which links each tool result to the call it answers:
calls seen earlier in the pass are remembered, calls before the pass are found through
``before`` (the indexer reads the bytes before the cursor). A result links only to a call
that starts at most :data:`LINK_WINDOW` bytes before it, so a pass that resumes mid-journal
links exactly as one from byte 0 does.

The output of a command polled later (a call that only reads a running process,
``ToolCall.reads_process``) is also filed under the command that started the process: the
result that said so is remembered in the pass, or found through ``before`` too,
under the same window, and that command's summary joins the poll result's searched text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from journal_index.formats import Entry, JournalFormat, Parsed, SessionName, Skip
from journal_index.redact import redact
from journal_index.text.call_lookback import LINK_WINDOW
from journal_index.text.call_sites import CallSite, parse_salvaging
from journal_index.text.entry_text import call_summary, index_texts
from journal_index.text.text_forms import index_form, indexed_part

_PRUNE_AT = 4096


class Before(Protocol):
    """What lies in the journal before a pass (``journal_blocks.BytesBefore`` reads it)."""

    def call(self, call_id: str, result_offset: int) -> CallSite | None:
        """The call a result answers."""

    def process(self, process: str, poll_offset: int) -> CallSite | None:
        """The call that started the process a poll's result reads."""


class EntryRow(NamedTuple):
    """One entry's row, as :mod:`journal_index.data.index_sql` writes it (the id and kind are packed there)."""

    entry_id: str
    ts: int | None
    kind: str
    role: str | None
    tool: str | None
    chars: int  # of the indexed text
    offset: int  # of the line in the journal
    length: int
    tokens_before: int | None
    link_offset: int | None  # of the line holding a result's call
    link_length: int | None


@dataclass
class Extracted:
    rows: list[EntryRow] = field(default_factory=list)
    terms: list[tuple[int, str]] = field(default_factory=list)  # (index into rows, light text for entries_fts)
    bulk: list[tuple[int, str]] = field(default_factory=list)  # (index into rows, whole text for entries_bulk)
    skipped: int = 0
    name: str | None = None  # the last session name seen (redacted)
    last_ts: int | None = None
    # compactions, in file order: (offset of the compaction, id of the first entry kept after it)
    compactions: list[tuple[int, str | None]] = field(default_factory=list)


def lines_of(data: bytes, base_offset: int) -> list[tuple[int, bytes]]:
    """(offset, line) of each non-blank line of a block of complete lines."""
    out = []
    start, size = 0, len(data)
    while start < size:
        newline = data.find(b"\n", start)
        if newline < 0:
            newline = size
        line = data[start:newline]
        if line.strip():
            out.append((base_offset + start, line))
        start = newline + 1
    return out


def _in_window(seen: dict[str, CallSite], look_before: Callable[[str, int], CallSite | None] | None, key: str,
               offset: int) -> CallSite | None:
    """The site ``key`` names, seen in the pass or else found before it, if it starts within
    LINK_WINDOW before ``offset``."""
    site = seen.get(key)
    if site is None and look_before is not None:
        site = look_before(key, offset)
    return site if site is not None and offset - LINK_WINDOW <= site.offset < offset else None


class Extractor:
    """Parses one journal's blocks, in file order, within one pass."""

    def __init__(self, fmt: JournalFormat, before: Before | None = None) -> None:
        self.fmt = fmt
        self.before = before
        self.calls: dict[str, CallSite] = {}
        self.processes: dict[str, CallSite] = {}  # process id → the call that started it
        # the summary of each shown call in self.calls, by id() of the call (alive while there)
        self.summaries: dict[int, str] = {}

    def _linked(self, entry: Entry, offset: int) -> CallSite | None:
        if entry.answers is None:
            return None
        return _in_window(self.calls, self.before.call if self.before else None, entry.answers, offset)

    def _remember(self, entry: Entry, offset: int, length: int) -> None:
        for call in entry.calls:
            replaced = self.calls.get(call.call_id)
            if replaced is not None:
                self.summaries.pop(id(replaced.call), None)
            self.calls[call.call_id] = CallSite(offset, length, call)
            if call.shown:
                self.summaries[id(call)] = call_summary(call)
        if len(self.calls) > _PRUNE_AT:
            self.calls = {k: s for k, s in self.calls.items() if s.offset >= offset - LINK_WINDOW}
            kept = {id(s.call) for s in self.calls.values()}
            self.summaries = {k: v for k, v in self.summaries.items() if k in kept}
            self.processes = {k: s for k, s in self.processes.items() if s.offset >= offset - LINK_WINDOW}

    def _started(self, entry: Entry, site: CallSite | None, offset: int) -> CallSite | None:
        """For a poll's result, the call that started the process it reads (None otherwise);
        for a result saying its command left a process running, remembers that command."""
        if site is None:
            return None
        if site.call.reads_process is None:
            if entry.started_process is not None:
                self.processes[entry.started_process] = site
            return None
        return _in_window(self.processes, self.before.process if self.before else None, site.call.reads_process,
                          offset)

    def block(self, data: bytes, base_offset: int) -> Extracted:
        """Rows and terms of a block of complete lines (``base_offset``: its place in the file)."""
        out = Extracted()
        for line_offset, raw in lines_of(data, base_offset):
            for offset, line, parsed in parse_salvaging(self.fmt, raw, line_offset):
                self._parsed(out, parsed, offset, len(line))
        return out

    def line(self, line: bytes, offset: int, length: int) -> Extracted:
        """Rows and terms of one line standing for the ``length`` bytes at ``offset`` (a giant
        line's condensed form, :mod:`journal_index.text.giant_line`)."""
        out = Extracted()
        self._parsed(out, self.fmt.parse_line(line, offset), offset, length)
        return out

    def _parsed(self, out: Extracted, parsed: Parsed, offset: int, length: int) -> None:
        if isinstance(parsed, Entry):
            self._entry(out, parsed, offset, length)
        elif isinstance(parsed, SessionName):
            out.name = redact(parsed.name)
        elif parsed is not Skip.NOT_INDEXED:
            out.skipped += 1

    def _entry(self, out: Extracted, entry: Entry, offset: int, length: int) -> None:
        self._remember(entry, offset, length)
        site = self._linked(entry, offset)
        call = site.call if site is not None else None
        if call is not None and (not call.shown or self.fmt.is_own_tool(call.name)):
            return  # our own answer, however the host labelled its result
        started = self._started(entry, site, offset)
        tool = entry.tool or (call.name if call is not None else None)
        texts = index_texts(entry, call, self.summaries, started.call if started is not None else None)
        if texts is None and entry.kind != "compaction":
            return  # nothing a search could find (a compaction still marks where the context restarts)
        out.rows.append(EntryRow(entry.entry_id, entry.ts, entry.kind, entry.role, tool, texts.chars if texts else 0,
                                 offset, length, entry.tokens_before,
                                 site.offset if site else None, site.length if site else None))
        row = len(out.rows) - 1
        if texts is not None:
            if texts.light and not texts.light.isspace():
                out.terms.append((row, index_form(indexed_part(texts.light))))
            if texts.bulk is not None:
                out.bulk.append((row, index_form(indexed_part(texts.bulk))))
        if entry.ts is not None and (out.last_ts is None or entry.ts > out.last_ts):
            out.last_ts = entry.ts
        if entry.kind == "compaction":
            out.compactions.append((offset, entry.kept_from))
