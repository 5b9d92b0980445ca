"""The text an entry contributes: for the index, for excerpts and for reads alike.

Three rules every format shares:

* a tool result is introduced by its call — the tool's name and key arguments (the file
  path, the command, the pattern) — because that is how people remember tool output;
* our own answers are never searchable, however a host wraps them (DESIGN invariant 12):
  every answer we give is signed (:data:`ANSWER_START` … :data:`ANSWER_END`), and signed
  text is cut out wherever it turns up — inside a code-mode script's result, a subagent's
  report or any other wrapper;
* the parts of one entry are redacted joined, so a secret cut across two text blocks is
  still one secret.

Indexing composes through :func:`index_texts`, which gives the same texts as :func:`compose`
(and, for a giant entry, as :func:`searchable_text`) without redacting what the index does not
get (the middle of a giant entry).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from journal_index.formats import Entry, ToolCall
from journal_index.redact import redact, redact_region, secret_spans
from journal_index.text.text_forms import INDEX_HEAD_CHARS, INDEX_TAIL_CHARS

# How much of each end of a part is also scanned alone (widened while a secret found there
# reaches the window's inner edge).
EDGE_REACH = 512

# Plain ASCII brackets and words: they survive JSON escaping (even HTML-safe or ASCII-only
# encoders) when a host serializes our answer inside its own tool result.
ANSWER_START = "[journal-index answer]"
ANSWER_END = "[/journal-index answer]"
_SIGNED = re.compile(re.escape(ANSWER_START) + r".*?(?:" + re.escape(ANSWER_END) + r"|\Z)", re.S)

# The arguments that name what a tool looked at, most telling first.
_KEY_ARGUMENTS = ("path", "file_path", "filePath", "file", "filename", "notebook_path", "command", "cmd",
                  "pattern", "query", "url", "glob", "regex", "description", "prompt", "workdir")
_MAX_ARGUMENT_CHARS = 200
_MAX_CALL_CHARS = 300


# A hit's header as our answers show it to a model (render.hit_header): "… · entry ID · session ID".
# Text holding one quotes an answer of ours — a model pasted it into its reply, unsigned.
_QUOTED_HIT = re.compile(r"· entry [^\s·]+ · session [^\s·]+")


def quotes_our_answer(text: str) -> bool:
    """Whether ``text`` repeats a hit of one of our answers (its header line)."""
    return _QUOTED_HIT.search(text) is not None


def strip_our_answers(text: str) -> str:
    """``text`` without our signed answers (an unterminated one runs to the end: truncated)."""
    if ANSWER_START not in text:
        return text
    return _SIGNED.sub(" ", text)


def _short_strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if len(value) <= _MAX_ARGUMENT_CHARS else [value[:_MAX_ARGUMENT_CHARS]]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        joined = " ".join(value)
        return [joined[:_MAX_ARGUMENT_CHARS]]
    return []


def call_summary(call: ToolCall) -> str:
    """The tool's name and its key arguments, on one line of at most ~300 characters."""
    words = [call.name]
    arguments = call.arguments
    if isinstance(arguments, dict):
        keys = [k for k in _KEY_ARGUMENTS if k in arguments]
        keys += [k for k in arguments if k not in keys]
        for key in keys:
            value = arguments[key]
            if isinstance(value, str) and len(value) > _MAX_ARGUMENT_CHARS and key not in _KEY_ARGUMENTS:
                continue  # file contents, patches, long prompts: not what names the call
            words += _short_strings(value)
    elif isinstance(arguments, str):
        words.append(arguments.splitlines()[0][:_MAX_ARGUMENT_CHARS] if arguments.strip() else "")
    line = " ".join(w.replace("\n", " ") for w in words if w)
    return line[:_MAX_CALL_CHARS]


@dataclass(frozen=True)
class Texts:
    """An entry's text, redacted. ``full`` is what reads and excerpts show; ``light`` is what
    people and agents said and what names each tool call; ``bulky`` tells whether ``full``
    also holds tool output or call arguments (indexed apart, without positions)."""

    full: str
    light: str
    bulky: bool


# Where a segment of an entry goes: the text read back, the light index, or both.
BOTH, READ_ONLY, LIGHT_ONLY = "both", "read", "light"


def _summary(call: ToolCall, summaries: Mapping[int, str] | None) -> str:
    summary = summaries.get(id(call)) if summaries is not None else None
    return call_summary(call) if summary is None else summary


def _segments(entry: Entry, call: ToolCall | None, summaries: Mapping[int, str] | None = None,
              started_by: ToolCall | None = None) -> list[tuple[str, str]]:
    """(text, where) for each piece of an entry, in reading order: a result's call first, what
    was said, each call (its summary indexed with what was said, its full text read back),
    then the output. ``summaries``: call summaries already made, by id() of a live call object
    (an indexing pass sees each call twice: where it is made and where its result comes).
    ``started_by``: for a poll's result, the command that started the process (indexed only:
    a read shows the line and its own call)."""
    segments: list[tuple[str, str]] = []
    if entry.kind == "tool_result":
        lead = _summary(call, summaries) if call is not None else entry.tool
        if lead:
            segments.append((lead, BOTH))
        if started_by is not None and started_by.shown:
            segments.append((_summary(started_by, summaries), LIGHT_ONLY))
    segments += [(p, BOTH) for p in entry.parts]
    for made in entry.calls:
        if made.shown:
            segments += [(_summary(made, summaries), LIGHT_ONLY), (made.text(), READ_ONLY)]
    segments += [(p, READ_ONLY) for p in entry.output]
    return segments


def compose(entry: Entry, call: ToolCall | None) -> Texts:
    """The entry's texts: our own answers cut out, then redacted across the joins of its parts."""
    segments = [(strip_our_answers(text), where) for text, where in _segments(entry, call)]
    redacted = _redact_each(segments)
    full = "\n".join(t for t, (_, where) in zip(redacted, segments, strict=True) if where != LIGHT_ONLY)
    light = "\n".join(t for t, (_, where) in zip(redacted, segments, strict=True) if where != READ_ONLY)
    return Texts(full, light, any(where == READ_ONLY and text for text, where in segments))


@dataclass(frozen=True, slots=True)
class IndexTexts:
    """What an entry gives the index: ``chars`` (the length of its full text), ``light`` (as
    :class:`Texts`) and ``bulk``: the part of the full text that holds terms (:func:`searchable_text`),
    when the entry has tool output or call arguments, else None. All redacted."""

    chars: int
    light: str
    bulk: str | None


def _blank(text: str) -> bool:
    return not text or text.isspace()


def index_texts(entry: Entry, call: ToolCall | None, summaries: Mapping[int, str] | None = None,
                started_by: ToolCall | None = None) -> IndexTexts | None:
    """The entry's texts for the index, or None when its full text is blank.

    The same texts as ``compose`` (light) and ``searchable_text`` (bulk), computed redacting
    only what the index gets: a giant entry's middle, which holds no terms, is never scanned.
    """
    segments = [(strip_our_answers(text), where) for text, where in _segments(entry, call, summaries, started_by)]
    bulky = any(where == READ_ONLY and text for text, where in segments)
    shown = [text for text, where in segments if where != LIGHT_ONLY]
    raw_chars = sum(map(len, shown)) + max(len(shown) - 1, 0)
    if raw_chars <= INDEX_HEAD_CHARS + INDEX_TAIL_CHARS:
        redacted = _redact_each(segments)
        full = "\n".join(t for t, (_, where) in zip(redacted, segments, strict=True) if where != LIGHT_ONLY)
        if _blank(full):
            return None
        light = "\n".join(t for t, (_, where) in zip(redacted, segments, strict=True) if where != READ_ONLY)
        return IndexTexts(len(full), light, full if bulky else None)
    # A giant: the light text from its own (short) segments, the bulk as searchable_text gives
    # it (head and tail), the middle never redacted.
    light = "\n".join(_redact_each([(t, where) for t, where in segments if where != READ_ONLY]))
    return IndexTexts(raw_chars, light, _head_and_tail("\n".join(shown)) if bulky else None)


def entry_text(entry: Entry, call: ToolCall | None) -> str:
    """What reads and excerpts show: the parts (a tool result led by its call), without our own
    answers, redacted."""
    return compose(entry, call).full


def thinking_apart(entry: Entry, call: ToolCall | None) -> tuple[str, list[str]]:
    """What reads show with the thinking set apart: :func:`entry_text` without the thinking
    parts, and each thinking part. All of it redacted together, as ``entry_text`` is."""
    if not entry.thinking_at:
        return entry_text(entry, call), []
    segments = [(strip_our_answers(text), where) for text, where in _segments(entry, call)]
    redacted = _redact_each(segments)
    lead = len(segments) - len(entry.parts) - 2 * sum(1 for c in entry.calls if c.shown) - len(entry.output)
    thinking = {lead + i for i in entry.thinking_at}
    text = "\n".join(t for i, (t, (_, where)) in enumerate(zip(redacted, segments, strict=True))
                     if where != LIGHT_ONLY and i not in thinking)
    return text, [redacted[i] for i in sorted(thinking)]


def searchable_text(entry: Entry, call: ToolCall | None) -> str:
    """The part of the full text that holds terms (head and tail of a giant entry), redacted;
    a giant entry is not redacted whole for one excerpt."""
    raw = "\n".join(strip_our_answers(t) for t, where in _segments(entry, call) if where != LIGHT_ONLY)
    if len(raw) <= INDEX_HEAD_CHARS + INDEX_TAIL_CHARS:
        return compose(entry, call).full
    return _head_and_tail(raw)


def _head_and_tail(raw: str) -> str:
    """A giant text's head and tail, each redacted as a region grown to safe cut points."""
    return (redact_region(raw, 0, INDEX_HEAD_CHARS) + "\n"
            + redact_region(raw, len(raw) - INDEX_TAIL_CHARS, len(raw)))


def _redact_each(segments: list[tuple[str, str]]) -> list[str]:
    parts = [text for text, _ in segments]
    if sum(1 for p in parts if p) > 1:
        return _redact_joined(parts)
    return [redact(p) if p else p for p in parts]


def redact_parts(parts: list[str]) -> str:
    """The parts redacted one by one and across their joins, then joined by newlines."""
    return "\n".join(_redact_each([(p, BOTH) for p in parts]))


def _alone_spans(part: str, head: bool, tail: bool) -> list[tuple[int, int, str]]:
    """The secrets at the start (``head``) and end (``tail``) of ``part`` read alone: a part's
    start and end are a text's start and end, which its neighbours hide in the joined text.
    A short part is scanned whole; a long one in a window at each end, widened while a secret
    found reaches the window's inner edge."""
    if len(part) <= 2 * EDGE_REACH:
        return secret_spans(part)
    found: list[tuple[int, int, str]] = []
    if head:
        width = EDGE_REACH
        while True:
            window = part[:width]
            spans = secret_spans(window)
            if width >= len(part) or not any(e == len(window) for _, e, _ in spans):
                break
            width *= 8
        found += spans
    if tail:
        width = EDGE_REACH
        while True:
            lo = max(0, len(part) - width)
            line = part.rfind("\n", max(0, lo - width), lo)  # begin at a line start where one is near
            lo = line + 1 if line >= 0 else lo
            spans = secret_spans(part[lo:])
            if lo == 0 or not any(s == 0 for s, _, _ in spans):
                break
            width *= 8
        found += [(lo + s, lo + e, kind) for s, e, kind in spans]
    return found


def _redact_joined(parts: list[str]) -> list[str]:
    """Each part redacted, a secret cut across parts included: the parts are scanned once as one
    string (joined without a separator, so a token split in two is whole again), and the ends
    of each part once more on their own (what the part alone shows there; inside a part the two
    readings agree).
    Where a secret lies in several parts, the part it starts in gets the marker and the others
    lose their piece of it."""
    starts = []
    position = 0
    for part in parts:
        starts.append(position)
        position += len(part)
    spans = secret_spans("".join(parts))
    last = max(i for i, part in enumerate(parts) if part)
    for index, part in enumerate(parts):
        if part:
            head, tail = starts[index] > 0, index < last
            if head or tail:
                spans += [(starts[index] + s, starts[index] + e, kind) for s, e, kind in _alone_spans(part, head, tail)]
    if not spans:
        return parts
    spans.sort()
    merged: list[list[Any]] = []
    for s, e, kind in spans:
        if merged and s < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)  # overlapping views of one secret: masked as one
        else:
            merged.append([s, e, kind])
    pieces: dict[int, list[tuple[int, int, str]]] = {}
    for start, end, kind in merged:
        first = _part_at(starts, start)
        last = _part_at(starts, max(start, end - 1))
        for index in range(first, last + 1):
            lo = max(start, starts[index]) - starts[index]
            hi = min(end, starts[index] + len(parts[index])) - starts[index]
            if hi > lo or index == first:
                pieces.setdefault(index, []).append((lo, hi, kind if index == first else ""))
    out = list(parts)
    for index, found in pieces.items():
        text = parts[index]
        chunks: list[str] = []
        last_end = 0
        for lo, hi, kind in found:  # sorted and disjoint
            chunks += (text[last_end:lo], f"[REDACTED:{kind}]" if kind else "")
            last_end = hi
        chunks.append(text[last_end:])
        out[index] = "".join(chunks)
    return out


def _part_at(starts: list[int], position: int) -> int:
    lo, hi = 0, len(starts) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if starts[mid] <= position:
            lo = mid
        else:
            hi = mid - 1
    return lo
