"""Small journals of every format, all telling the same short session (for the format contract).

The session: a header (if the format has one), the user's words, an assistant reply that calls
a file-reading tool, that tool's result, a call of OUR tool (named the way that agent names
it) and our answer, a compaction, and a later user message. Each writer lays the journal out
where its agent keeps it under ``root`` and returns a :class:`Sample` that says which words
went where, so a test can check what became searchable without parsing the journal itself.

The words are made-up tokens that no other text contains.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

USER_WORDS = "quokkaflux harbormaster"
ASSISTANT_WORDS = "lanternfish reticulate"
CALL_KEY = "src/zymurgy_module.py"
RESULT_WORDS = "zymurgyplanet output"
OWN_QUERY = "ownquerywombat"
OWN_ANSWER = "ownanswerxyzzy plughfrob"
COMPACTION_WORDS = "compactaurora summary"
LATER_WORDS = "afterwardsnarwhal question"
# Same length as USER_WORDS: what a rewrite in place puts there.
REWRITTEN_WORDS = "pangolinzap wharfmaster"
assert len(REWRITTEN_WORDS) == len(USER_WORDS)
CWD = "/home/dev/contract-proj"
READ_TOOL = "read"


@dataclass
class Sample:
    fmt: str  # the format's NAME
    path: Path
    lines: list[bytes]
    user_id: str | None  # the user entry's id as written in its line (None: synthetic ids)
    call_name: str = READ_TOOL  # the tool whose result is linked to its call
    extra: dict[str, Any] = field(default_factory=dict)

    def write(self, count: int | None = None, tail: bytes = b"") -> None:
        """Write the first ``count`` lines (all: None), each with its newline, then ``tail``."""
        chosen = self.lines if count is None else self.lines[:count]
        self.path.write_bytes(b"".join(line + b"\n" for line in chosen) + tail)

    @property
    def user_line(self) -> int:
        return next(i for i, line in enumerate(self.lines) if USER_WORDS.encode() in line)


def _dump(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def _ts(second: int) -> str:
    return f"2026-09-01T10:00:{second:02d}.000Z"


# -- pi -----------------------------------------------------------------------------------------


def write_pi(root: Path) -> Sample:
    folder = root / "--home-dev-contract-proj--"
    folder.mkdir(parents=True, exist_ok=True)
    ids = [f"{n:08x}" for n in range(0xA1000001, 0xA1000009)]

    def entry(i: int, body: dict[str, Any]) -> bytes:
        return _dump({**body, "id": ids[i], "parentId": ids[i - 1] if i else None, "timestamp": _ts(i)})

    def message(i: int, role: str, **fields: Any) -> bytes:
        return entry(i, {"type": "message", "message": {"role": role, **fields}})

    lines = [
        _dump({"type": "session", "version": 3, "id": str(uuid.UUID(int=1)), "timestamp": _ts(0), "cwd": CWD}),
        message(0, "user", content=[{"type": "text", "text": USER_WORDS}]),
        message(1, "assistant", content=[{"type": "text", "text": ASSISTANT_WORDS},
                                         {"type": "toolCall", "id": "call_read_1", "name": READ_TOOL,
                                          "arguments": {"path": CALL_KEY}}]),
        message(2, "toolResult", toolCallId="call_read_1", toolName=READ_TOOL,
                content=[{"type": "text", "text": RESULT_WORDS}], isError=False),
        message(3, "assistant", content=[{"type": "toolCall", "id": "call_own_1",
                                          "name": "mcp__journal_index__memory_context",
                                          "arguments": {"query": OWN_QUERY}}]),
        message(4, "toolResult", toolCallId="call_own_1", toolName="mcp__journal_index__memory_context",
                content=[{"type": "text", "text": OWN_ANSWER}], isError=False),
        entry(5, {"type": "compaction", "summary": COMPACTION_WORDS, "firstKeptEntryId": ids[5],
                  "tokensBefore": 1234}),
        message(6, "user", content=[{"type": "text", "text": LATER_WORDS}]),
    ]
    path = folder / "2026-09-01T10-00-00-000Z_00000000-0000-0000-0000-000000000001.jsonl"
    return Sample("pi", path, lines, user_id=ids[0])


# -- Claude Code --------------------------------------------------------------------------------


def write_claude(root: Path) -> Sample:
    folder = root / "-home-dev-contract-proj"
    folder.mkdir(parents=True, exist_ok=True)
    session = "5e55a0b1-0000-4000-8000-000000000001"
    uuids = [f"c1a0de00-0000-4000-8000-{n:012x}" for n in range(1, 12)]
    common = {"isSidechain": False, "userType": "external", "cwd": CWD, "sessionId": session,
              "version": "2.1.332", "gitBranch": "main"}

    def line(i: int, kind: str, message: dict[str, Any], **extra: Any) -> bytes:
        return _dump({"parentUuid": uuids[i - 1] if i else None, **common, "type": kind, "message": message,
                      "uuid": uuids[i], "timestamp": _ts(i), **extra})

    def assistant(i: int, block: dict[str, Any]) -> bytes:
        return line(i, "assistant", {"id": f"msg_{i}", "type": "message", "role": "assistant",
                                     "model": "claude-x", "content": [block]})

    def results(i: int, call_id: str, text: str) -> bytes:
        return line(i, "user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id,
                                                             "content": [{"type": "text", "text": text}]}]},
                    toolUseResult={"stdout": text})

    lines = [
        _dump({"type": "mode", "mode": "normal", "sessionId": session}),
        line(0, "user", {"role": "user", "content": USER_WORDS}),
        assistant(1, {"type": "text", "text": ASSISTANT_WORDS}),
        assistant(2, {"type": "tool_use", "id": "toolu_read_1", "name": "Read", "input": {"file_path": CALL_KEY}}),
        results(3, "toolu_read_1", RESULT_WORDS),
        _dump({"parentUuid": uuids[3], **common, "type": "progress", "data": {"type": "hook_progress"},
               "toolUseID": "toolu_read_1", "uuid": "p1", "timestamp": _ts(4)}),
        assistant(4, {"type": "tool_use", "id": "toolu_own_1", "name": "mcp__journal-index__memory_context",
                      "input": {"query": OWN_QUERY}}),
        results(5, "toolu_own_1", OWN_ANSWER),
        _dump({"parentUuid": None, "logicalParentUuid": uuids[5], **common, "type": "system",
               "subtype": "compact_boundary", "content": "Conversation compacted", "uuid": uuids[6],
               "timestamp": _ts(6), "compactMetadata": {"trigger": "manual", "preTokens": 1234}}),
        line(7, "user", {"role": "user", "content": COMPACTION_WORDS}, isCompactSummary=True,
             isVisibleInTranscriptOnly=True),
        line(8, "user", {"role": "user", "content": LATER_WORDS}),
        _dump({"type": "custom-title", "customTitle": "contract session", "sessionId": session}),
    ]
    return Sample("claude", folder / f"{session}.jsonl", lines, user_id=uuids[0], call_name="Read")


# -- Codex CLI ----------------------------------------------------------------------------------


def write_codex(root: Path) -> Sample:
    thread = "01a22c00-0000-7000-8000-000000000001"
    folder = root / "2026" / "09" / "01"
    folder.mkdir(parents=True, exist_ok=True)

    def env(i: int, kind: str, payload: dict[str, Any], **extra: Any) -> bytes:
        return _dump({"timestamp": _ts(i), "ordinal": i, "type": kind, "payload": payload, **extra})

    attribution = {"mcp_attribution": {"status": "complete", "sources": [
        {"server_name": "journal-index", "tool_name": "memory_context"}]}}
    lines = [
        env(0, "session_meta", {"id": thread, "timestamp": _ts(0), "cwd": CWD, "originator": "codex_exec",
                                "cli_version": "0.171.0", "source": "exec"}),
        env(1, "response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": f"<environment_context><cwd>{CWD}</cwd></environment_context>"}]}),
        env(2, "response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": USER_WORDS}]}),
        env(3, "event_msg", {"type": "item_completed", "thread_id": thread, "item": {
            "type": "UserMessage", "id": "u1", "content": [{"type": "text", "text": USER_WORDS}]}}),
        env(4, "response_item", {"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": ASSISTANT_WORDS}]}),
        env(5, "response_item", {"type": "function_call", "name": READ_TOOL,
                                 "arguments": json.dumps({"path": CALL_KEY}), "call_id": "call_read_1"}),
        env(6, "response_item", {"type": "function_call_output", "call_id": "call_read_1",
                                 "output": RESULT_WORDS}),
        env(7, "response_item", {"type": "function_call", "name": "memory_context", "namespace": "mcp__journal_index",
                                 "arguments": json.dumps({"query": OWN_QUERY}), "call_id": "call_own_1"}),
        env(8, "event_msg", {"type": "item_completed", "thread_id": thread, "item": {
            "type": "McpToolCall", "id": "call_own_1", "server": "journal-index", "tool": "memory_context",
            "arguments": {"query": OWN_QUERY}, "result": {"content": [{"type": "text", "text": OWN_ANSWER}]}}}),
        env(9, "response_item", {"type": "function_call_output", "call_id": "call_own_1",
                                 "output": [{"type": "input_text", "text": OWN_ANSWER}]}, metadata=attribution),
        env(10, "event_msg", {"type": "token_count", "info": None}),
        env(11, "compacted", {"message": COMPACTION_WORDS, "replacement_history": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": USER_WORDS}]}]}),
        env(12, "event_msg", {"type": "context_compacted"}),
        env(13, "event_msg", {"type": "user_message", "message": LATER_WORDS, "images": [], "local_images": []}),
    ]
    return Sample("codex", folder / f"rollout-2026-09-01T10-00-00-{thread}.jsonl", lines, user_id=None)


# -- the toy format of the contract suite (its parser lives in tests/test_format_contract.py) --

TOY_SUFFIX = ".toy.jsonl"


def write_toy(root: Path) -> Sample:
    root.mkdir(parents=True, exist_ok=True)

    def toy(i: int, kind: str, **fields: Any) -> bytes:
        return _dump({"toy": kind, "id": f"t{i:03d}", "at": _ts(i), **fields})

    lines = [
        _dump({"toy": "header", "session": "toy-session-1", "cwd": CWD, "at": _ts(0)}),
        toy(1, "user", text=USER_WORDS),
        toy(2, "assistant", text=ASSISTANT_WORDS, call={"id": "c1", "name": READ_TOOL, "args": {"path": CALL_KEY}}),
        toy(3, "result", answers="c1", text=RESULT_WORDS),
        toy(4, "assistant", text="", call={"id": "c2", "name": "toy.memory_context", "args": {"query": OWN_QUERY}}),
        toy(5, "result", answers="c2", text=OWN_ANSWER),
        toy(6, "compaction", text=COMPACTION_WORDS),
        toy(7, "user", text=LATER_WORDS),
    ]
    return Sample("toy", root / f"session-1{TOY_SUFFIX}", lines, user_id="t001")


WRITERS: dict[str, Callable[[Path], Sample]] = {
    "pi": write_pi, "claude": write_claude, "codex": write_codex, "toy": write_toy,
}
