"""Reading a journal in blocks of complete lines, from a byte cursor.

A block ends at a newline, so a line is never split between two commits; a line too long to
hold whole becomes a block of its own holding its head and tail (:mod:`journal_index.text.giant_line`).
The head of a journal (its first line, the bytes just before the cursor) is what tells whether
the file is still the one that was indexed (:mod:`journal_index.indexing.journal_pass`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from journal_index.formats import JournalFormat
from journal_index.text import giant_line
from journal_index.text.call_lookback import lookback, process_lookback
from journal_index.text.call_sites import CallSite

CHUNK_BYTES = 512 * 1024
ANCHOR_BYTES = 4096
# A format reads its session from the first complete lines within this many bytes (Claude Code
# has no header line: the cwd is on its first conversational line).
HEAD_BYTES = 256 * 1024


def fingerprint(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=12).hexdigest()


@dataclass
class Block:
    """Complete lines to index, and where the cursor stands once they are committed."""

    data: bytes
    start: int  # file offset of data[0]
    end: int  # the cursor after this block
    skipped: int  # lines dropped just before this block (none any more: a giant is a block)
    anchor: bytes  # the ANCHOR_BYTES just before ``end``
    final: bool = False  # the last block of this pass: record size and mtime
    # A block of one line too long to hold whole (``data`` is empty): its head and tail. The
    # writer parses it (a worker's parse of the block's data is empty).
    giant: giant_line.Giant | None = None


def read_first_line(handle: BinaryIO) -> bytes | None:
    """The header line (a giant's first bytes), or None while it is still being written (no
    newline yet)."""
    parts: list[bytes] = []
    total, position = 0, 0
    line_limit = giant_line.limit()
    while total <= line_limit:
        chunk = os.pread(handle.fileno(), 64 * 1024, position)
        if not chunk:
            return None
        position += len(chunk)
        newline = chunk.find(b"\n")
        if newline >= 0:
            parts.append(chunk[:newline])
            return b"".join(parts)
        parts.append(chunk)
        total += len(chunk)
    return b"".join(parts)[:line_limit]


def read_head(fd: int, first_line: bytes) -> bytes:
    """The complete lines within the first HEAD_BYTES (at least the first line; a giant first
    line as the JSON its start makes, so a journal opening with one is still recognized)."""
    if len(first_line) >= giant_line.limit():
        return giant_line.condensed_start(first_line) or first_line
    data = os.pread(fd, HEAD_BYTES, 0)
    cut = data.rfind(b"\n")
    return data[:cut] if cut >= len(first_line) else first_line


def bytes_before(fd: int, cursor: int) -> bytes:
    size = min(cursor, ANCHOR_BYTES)
    return os.pread(fd, size, cursor - size) if size else b""


def _tail(window: bytes, data: bytes) -> bytes:
    """The ANCHOR_BYTES that end with ``data``, reaching back into ``window`` if needed."""
    if len(data) >= ANCHOR_BYTES:
        return data[-ANCHOR_BYTES:]
    return (window + data)[-ANCHOR_BYTES:]


@dataclass(frozen=True)
class BytesBefore:
    """A journal's bytes before a pass that starts at ``start``: where a result's call, or the
    command a poll reads, lies when the pass did not see it (``extract.Before``)."""

    fd: int
    fmt: JournalFormat
    start: int

    def call(self, call_id: str, result_offset: int) -> CallSite | None:
        return lookback(self.fd, self.fmt, self.start, call_id, result_offset)

    def process(self, process: str, poll_offset: int) -> CallSite | None:
        return process_lookback(self.fd, self.fmt, self.start, process, poll_offset)


def read_blocks(fd: int, cursor: int) -> Iterator[Block]:
    """Blocks of complete lines from ``cursor`` on; the last one is marked final.

    A line longer than :func:`giant_line.limit` is a block of its own holding only its head
    and tail, kept as its bytes arrive (never the whole line in memory); the cursor stays at
    its start until its newline is seen, so a line still being written is never lost.
    """
    line_limit = giant_line.limit()
    window = bytes_before(fd, cursor)  # the bytes just before buffer_start
    buffer, buffer_start, position = b"", cursor, cursor
    giant: giant_line.GiantReader | None = None  # the long line being read
    pending: Block | None = None
    while chunk := os.pread(fd, CHUNK_BYTES, position):
        position += len(chunk)
        ready: list[Block] = []
        if giant is not None:
            newline = chunk.find(b"\n")
            piece = chunk if newline < 0 else chunk[:newline + 1]
            window = _tail(window, piece)
            if newline < 0:
                giant.add(piece)
                continue
            giant.add(piece[:-1])
            ready.append(Block(b"", buffer_start, buffer_start + giant.length + 1, 0, window, giant=giant.done()))
            buffer_start += giant.length + 1
            giant = None
            chunk = chunk[newline + 1:]
        buffer += chunk
        cut = buffer.rfind(b"\n") + 1
        if cut:
            data, buffer = buffer[:cut], buffer[cut:]
            for start, lines, long_line in _runs(data, buffer_start, line_limit):
                window = _tail(window, lines)
                if long_line:
                    ready.append(Block(b"", start, start + len(lines), 0, window,
                                       giant=giant_line.Giant.of(start, lines[:-1])))
                else:
                    ready.append(Block(lines, start, start + len(lines), 0, window))
            buffer_start += cut
        if len(buffer) > line_limit:
            window = _tail(window, buffer)
            giant = giant_line.GiantReader(buffer_start, buffer)
            buffer = b""
        for block in ready:
            if pending is not None:
                yield pending
            pending = block
    if giant is not None:  # the long line is unfinished: keep the cursor before it, look again later
        if pending is not None:
            yield pending
        return
    if pending is not None:
        pending.final = True
        yield pending
        return
    yield Block(b"", buffer_start, buffer_start, 0, window, final=True)


def _runs(data: bytes, start: int, line_limit: int) -> Iterator[tuple[int, bytes, bool]]:
    """(offset, bytes, long) for runs of complete lines: each line longer than ``line_limit``
    alone (long), the lines between together. Only data longer than the limit can hold one."""
    if len(data) <= line_limit:
        yield start, data, False
        return
    run_start = at = 0
    while at < len(data):
        newline = data.find(b"\n", at)
        if newline - at > line_limit:
            if at > run_start:
                yield start + run_start, data[run_start:at], False
            yield start + at, data[at:newline + 1], True
            run_start = newline + 1
        at = newline + 1
    if run_start < len(data):
        yield start + run_start, data[run_start:], False
