"""Where a call lies in the bytes before a place in a journal, within :data:`LINK_WINDOW`.

Both sides need this: the indexer finds the call of a result (or the command a poll reads)
that lies before its pass, and the re-ranker reads a poll led by the command that started its
process, as the index searched it. Only lines holding the call's id (or the process number)
are parsed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from journal_index.formats import Entry, JournalFormat
from journal_index.text import giant_line
from journal_index.text.call_sites import CallSite, find_call, parse_salvaging

# A result links only to a call that starts at most this many bytes before it, so a pass that
# resumes mid-journal links exactly as one from byte 0 does.
LINK_WINDOW = 1 << 20
LOOKBACK_FIRST_BYTES = 64 * 1024


def _lines_before(fd: int, pass_start: int, needle: bytes, low: int) -> Iterator[tuple[int, bytes]]:
    """(offset, line) of each line holding ``needle`` between ``low`` and the pass start,
    newest first, each once; a line longer than a giant's limit is passed over (a pass does
    not keep what such a line says either)."""
    yielded_above = pass_start  # lines starting after this were given by the first, small read
    for size in (LOOKBACK_FIRST_BYTES, pass_start - low):
        start = max(low, pass_start - size)
        data = os.pread(fd, pass_start - start, start)
        at = data.rfind(needle)
        while at >= 0:
            line_start = data.rfind(b"\n", 0, at) + 1
            if line_start == 0 and start > 0:
                break  # the line begins before what was read: look further back, or give up
            line_end = data.find(b"\n", at)
            line_end = line_end if line_end >= 0 else len(data)
            if line_end - line_start <= giant_line.limit() and start + line_start <= yielded_above:
                yield start + line_start, data[line_start:line_end]
            at = data.rfind(needle, 0, line_start)
        if start == low:
            break
        yielded_above = start


def lookback(fd: int, fmt: JournalFormat, pass_start: int, call_id: str, result_offset: int) -> CallSite | None:
    """The call a result answers, in the bytes before the pass (within LINK_WINDOW)."""
    low = max(0, result_offset - LINK_WINDOW)
    if pass_start <= low:
        return None
    for offset, line in _lines_before(fd, pass_start, b'"' + call_id.encode() + b'"', low):
        site = find_call(fmt, call_id, line, offset)
        if site is not None:
            return site
    return None


def process_lookback(fd: int, fmt: JournalFormat, pass_start: int, process: str, poll_offset: int) -> CallSite | None:
    """The call that started ``process``, for a poll's result at ``poll_offset``: the newest
    result before the pass (within LINK_WINDOW) saying its command left that process running,
    and the call it answers (a poll's own result, still running, does not count)."""
    low = max(0, poll_offset - LINK_WINDOW)
    if pass_start <= low:
        return None
    for offset, line in _lines_before(fd, pass_start, process.encode(), low):
        for piece_offset, _piece, parsed in reversed(parse_salvaging(fmt, line, offset)):
            if not isinstance(parsed, Entry) or parsed.started_process != process or parsed.answers is None:
                continue
            site = lookback(fd, fmt, piece_offset, parsed.answers, piece_offset)
            # A poll saying the process still runs (or a result whose call is out of reach) is
            # passed over, as a pass remembers neither: the start is further back.
            if site is not None and site.call.reads_process is None:
                return site
    return None
