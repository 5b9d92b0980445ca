"""The pi format on inline sample lines: what becomes text, of which kind, and what is skipped."""

from __future__ import annotations

import json
from typing import Any

import pytest

from journal_index.formats import Entry, SessionName, Skip, ToolCall, get_format, pi
from journal_index.text.entry_text import entry_text

BASE = {"id": "a1b2c3d4", "parentId": "00000000", "timestamp": "2026-09-01T10:00:00.000Z"}


def line(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode()


def message(role: str, **fields: Any) -> bytes:
    return line({"type": "message", **BASE, "message": {"role": role, **fields}})


def parse(raw: bytes, offset: int = 0) -> Any:
    return pi.parse_line(raw, offset)


def test_user_text_and_image() -> None:
    entry = parse(message("user", content=[{"type": "text", "text": "look at this"},
                                           {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}]))
    assert isinstance(entry, Entry)
    assert (entry.kind, entry.role, entry.entry_id, entry.parent_id) == ("user", "user", "a1b2c3d4", "00000000")
    assert entry.text == "look at this\n[image]"
    assert "iVBORw0KGgo" not in entry.text
    assert entry.ts == 1788256800000


def test_user_plain_string_content() -> None:
    entry = parse(message("user", content="plain words"))
    assert isinstance(entry, Entry) and entry.text == "plain words"


def test_assistant_text_thinking_and_tool_calls() -> None:
    entry = parse(message("assistant", content=[
        {"type": "thinking", "thinking": "weigh the options", "thinkingSignature": "EqQBsig"},
        {"type": "thinking", "thinking": "[Reasoning redacted]", "redacted": True, "thinkingSignature": "opaque"},
        {"type": "text", "text": "Here is the plan."},
        {"type": "toolCall", "id": "toolu_1", "name": "bash", "arguments": {"command": "ls -la"}},
        {"type": "toolCall", "id": "toolu_2", "name": "mcp__journal__memory_context",
         "arguments": {"query": "earlier search words"}},
    ]))
    assert isinstance(entry, Entry) and entry.kind == "assistant"
    assert "weigh the options" in entry.text
    assert "Reasoning redacted" not in entry.text and "opaque" not in entry.text and "EqQB" not in entry.text
    assert "Here is the plan." in entry.text
    assert "bash" in entry.text and "ls -la" in entry.text
    assert "earlier search words" not in entry.text and "memory_context" not in entry.text


def test_tool_result_and_our_own_tool_result() -> None:
    entry = parse(message("toolResult", toolCallId="toolu_1", toolName="read",
                          content=[{"type": "text", "text": "file body"}], isError=False))
    assert isinstance(entry, Entry)
    assert (entry.kind, entry.tool, entry.text, entry.answers) == ("tool_result", "read", "file body", "toolu_1")
    # the index and reads lead a result with its call (here unknown: the tool's name)
    assert entry_text(entry, None) == "read\nfile body"
    call = ToolCall("toolu_1", "read", {"path": "app/config.py", "offset": 10})
    assert entry_text(entry, call) == "read app/config.py\nfile body"
    own = parse(message("toolResult", toolCallId="t", toolName="memory_context",
                        content=[{"type": "text", "text": "an earlier answer"}], isError=False))
    assert own is Skip.NOT_INDEXED


def test_bash_execution_and_custom_role() -> None:
    bash = parse(message("bashExecution", command="df -h", output="97% used", exitCode=0))
    assert isinstance(bash, Entry) and (bash.kind, bash.text) == ("bash", "df -h\n97% used")
    custom = parse(message("custom", customType="deck", content="Deck stats", display=True))
    assert isinstance(custom, Entry) and (custom.kind, custom.text) == ("custom", "Deck stats")


def test_summaries_custom_message_and_context_edit() -> None:
    compaction = parse(line({"type": "compaction", **BASE, "summary": "## Goal\nx", "firstKeptEntryId": "b",
                             "tokensBefore": 50123}))
    assert isinstance(compaction, Entry)
    assert (compaction.kind, compaction.text, compaction.tokens_before) == ("compaction", "## Goal\nx", 50123)
    branch = parse(line({"type": "branch_summary", **BASE, "fromId": "b", "summary": "tried A"}))
    assert isinstance(branch, Entry) and (branch.kind, branch.text) == ("branch_summary", "tried A")
    custom = parse(line({"type": "custom_message", **BASE, "customType": "x",
                         "content": [{"type": "text", "text": "injected"}, {"type": "image", "data": "AAAA"}],
                         "display": False}))
    assert isinstance(custom, Entry) and (custom.kind, custom.text) == ("custom", "injected\n[image]")
    edit = parse(line({"type": "context_edit", **BASE, "targetId": "b",
                       "replacement": {"content": [{"type": "text", "text": "shorter"}]}}))
    assert isinstance(edit, Entry) and (edit.kind, edit.text) == ("context_edit", "shorter")
    removal = parse(line({"type": "context_edit", **BASE, "targetId": "b", "replacement": None}))
    assert removal is Skip.NOT_INDEXED


@pytest.mark.parametrize("obj", [
    {"type": "model_change", **BASE, "provider": "openai", "modelId": "gpt"},
    {"type": "thinking_level_change", **BASE, "thinkingLevel": "high"},
    {"type": "label", **BASE, "targetId": "b", "label": "x"},
    {"type": "custom", **BASE, "customType": "ext", "data": {"secret": "state"}},
    {"type": "usage", **BASE, "kind": "cache_warm"},
    {"type": "session", "version": 3, "id": "uuid", "timestamp": "2026-09-01T10:00:00.000Z", "cwd": "/x"},
    {"type": "message", **BASE, "message": {"role": "system", "content": "You are pi"}},
])
def test_not_indexed_lines(obj: dict[str, Any]) -> None:
    assert parse(line(obj)) is Skip.NOT_INDEXED


def test_session_info_names_the_session() -> None:
    assert parse(line({"type": "session_info", **BASE, "name": "rate limits"})) == SessionName("rate limits")


@pytest.mark.parametrize("raw, expected", [
    (b'{"type":"hologram","id":"a"}', Skip.UNKNOWN),
    (message("narrator", content="hi"), Skip.UNKNOWN),
    (b"{not json", Skip.MALFORMED),
    (b"[1, 2, 3]", Skip.MALFORMED),
    (b'"a string"', Skip.MALFORMED),
    (message("user", content=42), Skip.MALFORMED),
    (line({"type": "message", "id": ["a"], "message": {"role": "user", "content": "x"}}), Skip.MALFORMED),
    (line({"type": "message", "id": "a", "message": "not an object"}), Skip.MALFORMED),
    (line({"type": "compaction", "id": "a", "summary": 7}), Skip.MALFORMED),
    (b"[" * 10_000 + b"]" * 10_000, Skip.MALFORMED),
    (b"\x00\x01binary\x00", Skip.MALFORMED),
])
def test_bad_lines_are_skipped_and_classified(raw: bytes, expected: Skip) -> None:
    assert parse(raw) is expected


def test_version_1_lines_get_stable_offset_ids() -> None:
    raw = line({"type": "message", "timestamp": "2025-11-20T23:33:01.550Z",
                "message": {"role": "user", "content": [{"type": "text", "text": "/mode"}]}})
    first, again, elsewhere = parse(raw, 1234), parse(raw, 1234), parse(raw, 99)
    assert isinstance(first, Entry) and isinstance(again, Entry) and isinstance(elsewhere, Entry)
    assert first.entry_id == again.entry_id
    assert first.entry_id != elsewhere.entry_id
    changed = parse(raw.replace(b"/mode", b"/mood"), 1234)
    assert isinstance(changed, Entry) and changed.entry_id != first.entry_id


def test_headers_of_each_version() -> None:
    v3 = pi.read_header("/s.jsonl", line({"type": "session", "version": 3, "id": "s-3",
                                          "timestamp": "2026-09-01T10:00:00.000Z",
                                          "cwd": "/home/dev/x", "parentSession": "/p.jsonl"}))
    assert v3 is not None and (v3.version, v3.session_id, v3.cwd, v3.parent_session) == (3, "s-3", "/home/dev/x",
                                                                                        "/p.jsonl")
    v1 = pi.read_header("/s.jsonl", line({"type": "session", "id": "s-1", "timestamp": "2025-11-20T23:33:50.805Z",
                               "cwd": "/Users/x", "provider": "anthropic"}))
    assert v1 is not None and v1.version == 1
    assert pi.read_header("/s.jsonl", b'{"type":"message"}') is None
    assert pi.read_header("/s.jsonl", b"garbage") is None


def test_format_registry() -> None:
    assert get_format("pi").NAME == "pi"
    with pytest.raises(ValueError, match="unknown journal format"):
        get_format("hologram")


@pytest.mark.parametrize("raw, text", [
    # Node cuts a surrogate pair when it truncates: a lone escape must not cost the entry.
    (b'{"type":"message","id":"a","message":{"role":"user","content":"cut \\ud83d here"}}', "cut \ufffd here"),
    (b'{"type":"message","id":"a","message":{"role":"user","content":"low \\udc00 too"}}', "low \ufffd too"),
    (b'{"type":"message","id":"a","message":{"role":"user","content":"bytes \xff\xfe here"}}',
     "bytes \ufffd\ufffd here"),
])
def test_a_bad_character_is_replaced_not_the_entry_dropped(raw: bytes, text: str) -> None:
    entry = parse(raw)
    assert isinstance(entry, Entry) and entry.entry_id == "a" and entry.text == text


def test_an_assistant_line_with_only_an_error_message_indexes_the_message() -> None:
    entry = parse(message("assistant", content=[], stopReason="error",
                          errorMessage='529 {"type":"error","error":{"type":"overloaded_error"}}'))
    assert isinstance(entry, Entry) and entry.kind == "assistant" and "overloaded_error" in entry.text
