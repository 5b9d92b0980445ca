"""A journal line too long to hold whole: kept as its first and last bytes, read as one line.

A tool that printed 200 MB writes a 200 MB line. Only an entry's head and tail get terms
(:func:`journal_index.text.text_forms.indexed_part`), so only they are kept: the indexer streams the
line, keeping its first :data:`HEAD_BYTES` and a rolling window of its last :data:`TAIL_BYTES`,
and reads make the same two reads with ``pread``. Both sides then parse the same *condensed
line*: the head, cut inside the long string it ends in, continued by a note saying what is left
out and by the end of the string the tail starts in, then closed as JSON. The format parses it
like any line (entry id, kind, the call it answers), so a giant is searchable, verified on
read by its entry id, and shown with its middle clearly marked as left out.

What the head cannot be cut into (no string value in it, or not JSON at all) is skipped and
counted, as a malformed line is.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

import orjson

# Lines longer than this are read as head and tail (JOURNAL_INDEX_GIANT_LINE_BYTES overrides it,
# for tests). Below it a line is parsed whole: an 8 MB line costs a worker some 60 MB at most.
GIANT_LINE_BYTES = 8 << 20
GIANT_LINE_ENV = "JOURNAL_INDEX_GIANT_LINE_BYTES"
# At most this much of a giant's start and end is kept: well over the 48K + 16K characters
# that get terms, even for text that JSON escapes 6 bytes to a character.
HEAD_BYTES = 1 << 20
TAIL_BYTES = 256 << 10
# The tail's first bytes may continue an escape or a character begun before it: the text
# taken from the tail starts at most this far in, where neither can be.
_TAIL_SLACK = 64

# One JSON token: a whole string, a structural character, a bare scalar, or white space.
_TOKEN = re.compile(rb'"(?:[^"\\]++|\\.)*+"|[{}\[\]:,]|[^{}\[\]:,"\s]++|\s++', re.S)
# The longest run of whole characters and escapes inside a string.
_STRING_BODY = re.compile(rb'(?:[^"\\]++|\\u[0-9a-fA-F]{4}|\\[^u])*+')
_HIGH_SURROGATE_END = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}\Z")
_CLOSER_OF = {b"{": b"}", b"[": b"]"}
# A space, or a line break or tab as JSON escapes them; looked for this far from a cut.
_SPACE = re.compile(rb" |\\[nrt]")
_SPACE_REACH = 1024


def limit() -> int:
    """Lines longer than this many bytes are giants."""
    given = os.environ.get(GIANT_LINE_ENV, "").strip()
    if given:
        try:
            return max(1024, int(given))
        except ValueError:
            pass
    return GIANT_LINE_BYTES


def window_sizes(line_limit: int) -> tuple[int, int]:
    """(head, tail) bytes kept of a giant under ``line_limit`` (smaller limits, smaller windows)."""
    return min(HEAD_BYTES, line_limit // 2), min(TAIL_BYTES, line_limit // 4)


@dataclass(slots=True)
class Giant:
    """A long line at ``offset`` of ``length`` bytes (its newline excluded): its first and last bytes."""

    offset: int
    length: int
    head: bytes
    tail: bytes

    @classmethod
    def of(cls, offset: int, line: bytes) -> Giant:
        head_size, tail_size = window_sizes(limit())
        return cls(offset, len(line), line[:head_size], line[-tail_size:])


class GiantReader:
    """A giant's bytes as they arrive: the head kept, the tail a rolling window."""

    def __init__(self, offset: int, first: bytes) -> None:
        self.offset = offset
        self.length = 0
        self.head_size, self.tail_size = window_sizes(limit())
        self.head = b""
        self.tail = b""
        self.add(first)

    def add(self, data: bytes) -> None:
        self.length += len(data)
        if len(self.head) < self.head_size:
            self.head += data[: self.head_size - len(self.head)]
        self.tail = data[-self.tail_size:] if len(data) >= self.tail_size else (self.tail + data)[-self.tail_size:]

    def done(self) -> Giant:
        return Giant(self.offset, self.length, self.head, self.tail)


def read_giant(fd: int, offset: int, length: int) -> Giant | None:
    """The giant at (offset, length) as the indexer kept it, or None when no line ends there now."""
    head_size, tail_size = window_sizes(limit())
    head = os.pread(fd, head_size, offset)
    tail = os.pread(fd, tail_size + 1, offset + length - tail_size)
    if len(head) < head_size or len(tail) != tail_size + 1 or not tail.endswith(b"\n"):
        return None
    return Giant(offset, length, head, tail[:-1])


def condensed_line(giant: Giant) -> bytes | None:
    """One JSON line standing for the giant (see the module's docstring), or None."""
    cut = _head_cut(giant.head)
    if cut is None:
        return None
    text_start, position, closers = cut
    # Cut at a space or line break where one is near, so no token (a secret) is shown cut short,
    # where redaction would no longer recognize it.
    space = _last_space(giant.head, max(text_start, position - _SPACE_REACH), position)
    position = space if space is not None else position
    tail_text = _tail_text(giant.tail)
    size = f"{giant.length / 1e6:.1f} MB"
    if tail_text:
        note = (f"\n\n[… journal-index: this journal line is {size}, too long to read whole; its middle is "
                f"left out here: the text before this note is its start, the text after it is its end …]\n\n")
    else:
        note = f"\n\n[… journal-index: this journal line is {size}, too long to read whole; the rest is left out …]"
    return giant.head[:position] + orjson.dumps(note + tail_text)[1:-1] + b'"' + closers


def condensed_start(start: bytes) -> bytes | None:
    """A giant first line's start as one JSON line (for recognizing the journal and reading
    its session: its end is not known yet)."""
    head_size, _ = window_sizes(limit())
    return condensed_line(Giant(0, len(start), start[:head_size], b""))


def _last_space(data: bytes, start: int, end: int) -> int | None:
    """The position just after the last space or escaped line break or tab in data[start:end]."""
    found = None
    for found_match in _SPACE.finditer(data, start, end):
        found = found_match.end()
    return found


def _head_cut(head: bytes) -> tuple[int, int, bytes] | None:
    """Where the string value to cut begins and where to cut it in the head, and what closes
    the JSON after it.

    The head is cut where it ends if that is inside a string value, else just before the
    closing quote of the last string value it holds. None when it holds none, or is not the
    start of a JSON object.
    """
    stack: list[bytes] = []
    expect_key = False
    last_value: tuple[int, int, list[bytes]] | None = None  # (start, end of its text, containers open)
    position = 0
    while position < len(head):
        char = head[position : position + 1]
        token = _TOKEN.match(head, position)
        if token is None:  # an unterminated string: the head ends inside it
            if char != b'"' or expect_key or not stack:
                break
            end = _whole_characters(head, position + 1)
            return position + 1, end, _closers(stack)
        text = token.group()
        if not stack and text[:1] != b"{" and not text.isspace():
            return None  # not a JSON object
        if text[:1] == b'"':
            if not expect_key:
                last_value = (position + 1, token.end() - 1, list(stack))
        elif text in _CLOSER_OF:
            stack.append(text)
            expect_key = text == b"{"
        elif text in (b"}", b"]"):
            if not stack or _CLOSER_OF[stack.pop()] != text:
                return None
            if not stack:
                return None  # the object closed inside the head: not a giant line's start
        elif text == b":":
            expect_key = False
        elif text == b",":
            expect_key = stack[-1] == b"{"
        position = token.end()
    if last_value is None:
        return None
    return last_value[0], last_value[1], _closers(last_value[2])


def _closers(stack: list[bytes]) -> bytes:
    return b"".join(_CLOSER_OF[opener] for opener in reversed(stack))


def _whole_characters(data: bytes, start: int) -> int:
    """The end of the longest run of whole UTF-8 characters and whole escapes from ``start``."""
    end = _STRING_BODY.match(data, start).end()  # type: ignore[union-attr]  # (it matches empty text)
    for back in range(1, min(4, end - start) + 1):  # a character cut short at the end
        byte = data[end - back]
        if byte < 0x80:
            break
        if byte >= 0xC0:
            needed = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            if needed > back:
                end -= back
            break
    if _HIGH_SURROGATE_END.search(data, start, end):  # half of a pair
        end -= 6
    return end


def _outside_escapes(data: bytes, start: int) -> int:
    """The first position from ``start`` on that is neither inside a UTF-8 character nor inside
    an escape (``\\n``, ``\\uXXXX``), judged from the bytes before it."""
    while start < len(data):
        if 0x80 <= data[start] < 0xC0:
            start += 1
            continue
        # Only the nearest backslash within an escape's length can begin an escape around start
        # ('u' and hex digits are not backslashes); it does when it ends an odd run of them.
        nearest = data.rfind(b"\\", max(0, start - 5), start)
        if nearest < 0:
            return start
        run = 1
        while nearest - run >= 0 and data[nearest - run] == 0x5C:
            run += 1
        end = nearest + (6 if data[nearest + 1 : nearest + 2] == b"u" else 2)
        if run % 2 == 0 or start >= end:
            return start
        start = end
    return start


def _tail_text(tail: bytes) -> str:
    """The end of the string the tail starts inside (decoded), or "" when it starts outside any."""
    start = _outside_escapes(tail, _TAIL_SLACK)
    quotes = []
    for match in re.finditer(rb'"', tail[start:]):
        at = start + match.start()
        backslashes = 0
        while at - backslashes - 1 >= 0 and tail[at - backslashes - 1] == 0x5C:
            backslashes += 1
        if backslashes % 2 == 0:
            quotes.append(at)
    # The line ends outside any string: an odd number of real quotes after ``start`` means it
    # is inside one, closed by the first of them.
    if len(quotes) % 2 == 0:
        return ""
    if tail[quotes[0] + 1 :].lstrip()[:1] == b":":
        return ""  # it starts inside a key: the long string ended before the tail
    first_space = _SPACE.search(tail, start, min(quotes[0], start + _SPACE_REACH))
    fragment = tail[first_space.end() if first_space else start : quotes[0]]
    for skip in range(13):  # past a low surrogate whose high half lies before the tail
        try:
            text = orjson.loads(b'"' + fragment[skip:] + b'"')
        except orjson.JSONDecodeError:
            continue
        return text if isinstance(text, str) else ""
    return ""
