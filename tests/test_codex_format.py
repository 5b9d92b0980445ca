"""The Codex CLI format (DESIGN §5c): inline lines for each rule (0.140–0.142 and 0.171 shapes),
the recorded 0.171 rollouts of fixtures/agents, and the real rollouts of the shared folder
indexed through the CLI from a temporary ~/.codex, counted against an independent count."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from journal_index.data.store import Store
from journal_index.formats import (
    AgentHints,
    Entry,
    Root,
    SessionName,
    Skip,
    ToolCall,
    choose_format,
    codex,
    synthetic_id,
)
from journal_index.indexing.extract import Extractor
from journal_index.indexing.indexer import index_file
from journal_index.query import Filters, search
from journal_index.query.scope import resolve_scope
from tests.agent_homes import (
    AGENT_FIXTURES,
    RealHome,
    assert_agent_status,
    assert_reads_and_finds,
    cli_json,
    index_real_home,
    place_codex,
    place_fixtures,
)
from tests.helpers import index_tokens, journal_in_index, vocabulary
from tests.shared_data import agent_journals

THREAD = "01a22c76-6998-7b11-95c7-4da2b38f04d5"
TS = "2026-11-30T12:38:07.658Z"
OWN_SOURCES = {"mcp_attribution": {"status": "complete", "sources": [
    {"server_name": "journal-index", "tool_name": "memory_context", "first_turn_id": "t"}]}}


def line(kind: str, payload: dict[str, Any], **extra: Any) -> bytes:
    return json.dumps({"timestamp": TS, "ordinal": 3, "type": kind, "payload": payload, **extra},
                      separators=(",", ":"), ensure_ascii=False).encode()


def item(payload: dict[str, Any], **extra: Any) -> bytes:
    return line("response_item", payload, **extra)


def event(payload: dict[str, Any]) -> bytes:
    return line("event_msg", payload)


def parse(raw: bytes, offset: int = 0) -> Any:
    return codex.parse_line(raw, offset)


def write_rollout(tmp_path: Path, day: str, *lines: bytes) -> Path:
    """A rollout of ``day`` (YYYY-MM-DD) in a Codex home under ``tmp_path``: session_meta, then ``lines``."""
    year, month, date = day.split("-")
    path = tmp_path / "sessions" / year / month / date / f"rollout-{day}T12-00-00-{THREAD}.jsonl"
    path.parent.mkdir(parents=True)
    meta = line("session_meta", {"id": THREAD, "cwd": "/tmp/proj", "timestamp": TS})
    path.write_bytes(b"\n".join([meta, *lines]) + b"\n")
    return path


# -- lines --------------------------------------------------------------------------------------


def test_the_humans_words_come_from_the_event_stream_once() -> None:
    older = parse(event({"type": "user_message", "message": "remove the trace plugin", "images": ["data:x"],
                         "local_images": [], "text_elements": []}), 40)
    assert isinstance(older, Entry) and (older.kind, older.role) == ("user", "user")
    assert older.text == "remove the trace plugin\n[image]" and older.ts == 1796042287658
    newer = parse(event({"type": "item_completed", "thread_id": THREAD, "turn_id": "t", "item": {
        "type": "UserMessage", "id": "u1", "content": [{"type": "text", "text": "look up the login fix",
                                                        "text_elements": []}]}}))
    assert isinstance(newer, Entry) and (newer.kind, newer.text) == ("user", "look up the login fix")
    # the same words as a model input are not indexed again, nor is injected context
    for role, text in (("user", "look up the login fix"), ("user", "<environment_context>…"),
                       ("developer", "<permissions instructions>")):
        assert parse(item({"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]})) \
            is Skip.NOT_INDEXED


def test_assistant_words_reasoning_summaries_and_their_repeats() -> None:
    said = parse(item({"type": "message", "role": "assistant", "content": [
        {"type": "output_text", "text": "The fix was a retry."}], "phase": "final"}))
    assert isinstance(said, Entry) and (said.kind, said.role, said.text) == ("assistant", "assistant",
                                                                            "The fix was a retry.")
    summary = parse(item({"type": "reasoning", "summary": [{"type": "summary_text", "text": "Checking tests"}],
                          "content": None, "encrypted_content": "gAAAAB-secret"}))
    assert isinstance(summary, Entry) and summary.text == "Checking tests"
    assert summary.thinking == ["Checking tests"] and said.thinking == []  # a view folds reasoning apart
    assert parse(item({"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "x"}],
                       "encrypted_content": "gAAAAB"})) is Skip.NOT_INDEXED
    assert parse(event({"type": "agent_message", "message": "The fix was a retry."})) is Skip.NOT_INDEXED
    assert parse(event({"type": "item_completed", "item": {"type": "AgentMessage", "content": [
        {"type": "Text", "text": "The fix was a retry."}]}})) is Skip.NOT_INDEXED


@pytest.mark.parametrize(("phase", "progress"), [("commentary", True), ("final_answer", False), (None, False)])
def test_a_note_between_steps_is_marked_as_progress(phase: str | None, progress: bool) -> None:
    """Codex marks the notes it writes between steps ``phase: "commentary"`` and the report that
    closes a turn ``final_answer``; older rollouts have no phase."""
    payload: dict[str, Any] = {"type": "message", "role": "assistant",
                               "content": [{"type": "output_text", "text": "I'll inspect the provider first."}]}
    if phase is not None:
        payload["phase"] = phase
    said = parse(item(payload))
    assert isinstance(said, Entry) and said.progress is progress


def test_calls_and_their_outputs() -> None:
    call = parse(item({"type": "function_call", "name": "exec_command", "arguments": '{"cmd":"gh issue list"}',
                       "call_id": "call_1"}))
    assert isinstance(call, Entry) and call.kind == "assistant"
    assert call.calls == [ToolCall("call_1", "exec_command", {"cmd": "gh issue list"})]
    assert call.text == "exec_command\ncmd: gh issue list"
    broken = parse(item({"type": "function_call", "name": "f", "arguments": "{not json", "call_id": "c"}))
    assert isinstance(broken, Entry) and broken.calls[0].arguments == "{not json"
    patch = parse(item({"type": "custom_tool_call", "name": "apply_patch", "input": "*** Begin Patch\n+x",
                        "call_id": "call_2", "status": "completed"}))
    assert isinstance(patch, Entry) and patch.text == "apply_patch\n*** Begin Patch\n+x"
    search = parse(item({"type": "web_search_call", "status": "completed",
                         "action": {"type": "search", "query": "fts5 contentless delete"}}))
    # a web search is a call (what was searched for is its argument), as Claude Code's WebSearch is
    assert isinstance(search, Entry) and search.parts == []
    assert search.text == "web_search\nquery: fts5 contentless delete"
    assert [(c.name, c.arguments) for c in search.calls] == [("web_search", {"query": "fts5 contentless delete"})]
    opened = parse(item({"type": "web_search_call", "action": {"type": "open_page", "url": "https://sqlite.org/f.html"}}))
    assert isinstance(opened, Entry) and opened.calls[0].arguments == {"url": "https://sqlite.org/f.html"}
    bare = parse(item({"type": "web_search_call", "status": "in_progress"}))  # no action yet: a call of nothing
    assert isinstance(bare, Entry) and bare.calls[0].arguments == {} and bare.text == "web_search"
    output = parse(item({"type": "function_call_output", "call_id": "call_1", "output": "#386 stale"}))
    assert isinstance(output, Entry)
    assert (output.kind, output.answers, output.text) == ("tool_result", "call_1", "#386 stale")
    listed = parse(item({"type": "custom_tool_call_output", "call_id": "call_2", "output": [
        {"type": "input_text", "text": "Wall time: 0.1 s"}, {"type": "input_text", "text": "Done"}]}))
    assert isinstance(listed, Entry) and listed.text == "Wall time: 0.1 s\nDone"
    # linked: the result is led by its call
    out = Extractor(codex).block(b"\n".join([
        item({"type": "function_call", "name": "exec_command", "arguments": '{"cmd":"gh issue list"}',
              "call_id": "call_1"}),
        item({"type": "function_call_output", "call_id": "call_1", "output": "#386 stale"})]) + b"\n", 0)
    assert [row[4] for row in out.rows] == [None, "exec_command"]
    assert out.terms[1][1].startswith("exec_command gh issue list")


@pytest.mark.parametrize("payload", [
    {"type": "function_call", "name": "memory_context", "namespace": "mcp__journal_index",
     "arguments": '{"query": "earlier search words"}', "call_id": "call_own"},
    {"type": "function_call", "name": "mcp__journal_index__memory_context",
     "arguments": '{"query": "earlier search words"}', "call_id": "call_own"},
])
def test_our_own_call_under_each_naming(payload: dict[str, Any]) -> None:
    entry = parse(item(payload))
    assert isinstance(entry, Entry) and entry.text == ""
    assert entry.calls[0].name == "mcp__journal_index__memory_context" and codex.is_own_tool(entry.calls[0].name)
    result = item({"type": "function_call_output", "call_id": "call_own", "output": "an earlier answer"})
    out = Extractor(codex).block(item(payload) + b"\n" + result + b"\n", 0)
    assert out.rows == [] and out.terms == [] and out.bulk == []  # no text to the call, no result of ours


def test_our_answers_inside_a_code_mode_script_are_not_indexed() -> None:
    script = "const r = await tools.mcp__journal_index__memory_context({query: \"earlier words\"});\ntext(r);"
    call = parse(item({"type": "custom_tool_call", "name": "exec", "input": script, "call_id": "call_exec"}))
    assert isinstance(call, Entry) and call.text == "" and call.calls[0].name == "exec"
    output = item({"type": "custom_tool_call_output", "call_id": "call_exec",
                   "output": [{"type": "input_text", "text": "an earlier answer"}]}, metadata=OWN_SOURCES)
    assert parse(output) is Skip.NOT_INDEXED
    other = {"mcp_attribution": {"status": "complete", "sources": [{"server_name": "gh", "tool_name": "issues"}]}}
    kept = parse(item({"type": "function_call_output", "call_id": "c", "output": "issue list"}, metadata=other))
    assert isinstance(kept, Entry) and kept.text == "issue list"
    plain = parse(item({"type": "custom_tool_call", "name": "exec", "input": "text(1 + 1);", "call_id": "c"}))
    assert isinstance(plain, Entry) and plain.text == "exec\ntext(1 + 1);"


def test_a_compaction_keeps_its_message_not_the_history() -> None:
    entry = parse(line("compacted", {"message": "Summary: issues triaged", "replacement_history": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "investigate issue 386"}]}],
        "window_number": 2}))
    assert isinstance(entry, Entry) and (entry.kind, entry.text) == ("compaction", "Summary: issues triaged")
    # Codex keeps a remote compaction's summary encrypted: the entry says so, never blank.
    remote = parse(line("compacted", {"message": "", "replacement_history": [
        {"type": "compaction", "encrypted_content": "REDACTED"}], "window_number": 2}))
    assert isinstance(remote, Entry) and remote.kind == "compaction"
    assert remote.text == "[summary encrypted by Codex] (context window 2)"
    bare = parse(line("compacted", {"message": ""}))
    assert isinstance(bare, Entry) and bare.text == "[no summary text]"
    assert parse(event({"type": "context_compacted"})) is Skip.NOT_INDEXED


def test_the_re_embedded_history_never_becomes_terms(tmp_path: Path, store: Store) -> None:
    path = write_rollout(tmp_path, "2026-11-30",
        event({"type": "user_message", "message": "first question"}),
        line("compacted", {"message": "summarywordkept", "replacement_history": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "historyonlyword"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "historyreply"}]}]}))
    assert index_file(store, path).entries == 2
    terms = vocabulary(store)
    assert index_tokens(store, "summarywordkept")[0] in terms
    assert not set(index_tokens(store, "historyonlyword historyreply")) & terms


WRAPPED = ("Command: /bin/zsh -lc 'git log --oneline'\nChunk ID: 924536\nWall time: 0.0123 seconds\n"
           "Process exited with code {code}\nOriginal token count: 67\nOutput:\nb3839c7 Optimize relations\n")


@pytest.mark.parametrize(("printed", "expected"), [
    # exec_command: the command stays, a zero exit code and the bookkeeping go
    (WRAPPED.format(code=0), "Command: /bin/zsh -lc 'git log --oneline'\nb3839c7 Optimize relations\n"),
    # a non-zero exit code says something: it stays
    (WRAPPED.format(code=1),
     "Command: /bin/zsh -lc 'git log --oneline'\nProcess exited with code 1\nb3839c7 Optimize relations\n"),
    ("Exit code: 0\nWall time: 0.3 seconds\nOutput:\nSuccess. Updated the following files:\nM a.py\n",
     "Success. Updated the following files:\nM a.py\n"),
    ("Chunk ID: e859d2\nWall time: 1.0022 seconds\nProcess running with session ID 41\nOriginal token count: 3\n"
     "Output:\nbuilding\n", "Process running with session ID 41\nbuilding\n"),
    ("Script running with cell ID 27\nWall time 11.0 seconds\nOutput:\nstep 1\n", "step 1\n"),
    # no wrapper line before it: an "Output:" line is what the command printed
    ("build log\nOutput:\nfoo\n", "build log\nOutput:\nfoo\n"),
    ("Output:\nfoo", "Output:\nfoo"),
    ("Wall time: 0.1 s and no Output line", "Wall time: 0.1 s and no Output line"),
    ("Chunk ID: 1\nOutput: 3 files", "Chunk ID: 1\nOutput: 3 files"),
])
def test_codex_s_wrapper_before_an_output_is_dropped(printed: str, expected: str) -> None:
    parsed = parse(item({"type": "function_call_output", "call_id": "call_1", "output": printed}))
    assert isinstance(parsed, Entry) and parsed.output == [expected]


def test_a_wrapper_alone_in_the_first_block_goes_with_it() -> None:
    parsed = parse(item({"type": "custom_tool_call_output", "call_id": "c", "output": [
        {"type": "input_text", "text": "Script completed\nWall time 3.1 seconds\nOutput:\n"},
        {"type": "input_text", "text": "page title: Leaderboard"}]}))
    assert isinstance(parsed, Entry) and parsed.output == ["page title: Leaderboard"]


def test_the_wrapper_is_read_for_a_process_left_running_before_it_goes() -> None:
    parsed = parse(item({"type": "function_call_output", "call_id": "c", "output":
                         "Chunk ID: e8\nWall time: 1.0 seconds\nProcess running with session ID 7\nOutput:\n"}))
    assert isinstance(parsed, Entry) and parsed.started_process == "7"


def test_the_wrapper_s_words_are_not_terms(tmp_path: Path, store: Store) -> None:
    path = write_rollout(tmp_path, "2026-11-30",
        item({"type": "function_call", "name": "exec_command", "arguments": '{"cmd":"git log"}', "call_id": "c1"}),
        item({"type": "function_call_output", "call_id": "c1", "output": WRAPPED.format(code=0)}))
    assert index_file(store, path).entries == 2
    terms = vocabulary(store)
    assert set(index_tokens(store, "b3839c7 Optimize relations git log")) <= terms
    assert not set(index_tokens(store, "Chunk Wall seconds Original token count exited")) & terms


# Codex 0.3x–0.4x wrote a result as a JSON string: its text is what was printed.
OLD_RESULT = '{"output":"error: cannot open .git/FETCH_HEAD\\nfatal: Operation not permitted\\n",' \
             '"metadata":{"exit_code":%d,"duration_seconds":0.4}}'


@pytest.mark.parametrize(("printed", "expected"), [
    (OLD_RESULT % 0, "error: cannot open .git/FETCH_HEAD\nfatal: Operation not permitted\n"),
    # a non-zero exit code says something: first, as later versions put it
    (OLD_RESULT % 128, "Exit code: 128\nerror: cannot open .git/FETCH_HEAD\nfatal: Operation not permitted\n"),
    ('{"output":"Success. Updated the following files:\\nM a.py\\n"}',
     "Success. Updated the following files:\nM a.py\n"),
    ('{"output":"","metadata":{"exit_code":0}}', ""),
    # JSON that a command printed is left as it is
    ('{"output":"a","status":"ok"}', '{"output":"a","status":"ok"}'),
    ('{"output": 3}', '{"output": 3}'),
    ('{"output":"a","metadata":"x"}', '{"output":"a","metadata":"x"}'),
    ('{"output":"cut short', '{"output":"cut short'),
])
def test_an_older_codex_result_written_as_json_is_read_as_its_text(printed: str, expected: str) -> None:
    for kind in ("function_call_output", "custom_tool_call_output"):
        parsed = parse(item({"type": kind, "call_id": "call_1", "output": printed}))
        assert isinstance(parsed, Entry) and parsed.output == [expected]


def test_an_older_codex_result_s_lines_are_terms_and_its_json_is_not(tmp_path: Path, store: Store) -> None:
    path = write_rollout(tmp_path, "2025-10-05",
        item({"type": "function_call", "name": "shell", "call_id": "c1",
              "arguments": '{"command":["bash","-lc","git fetch --all"]}'}),
        item({"type": "function_call_output", "call_id": "c1", "output": OLD_RESULT % 128}))
    assert index_file(store, path).entries == 2
    terms = vocabulary(store)
    assert set(index_tokens(store, "fatal Operation permitted FETCH_HEAD")) <= terms
    assert not set(index_tokens(store, "nfatal metadata duration_seconds")) & terms
    hits = search(store, "fatal operation not permitted", Filters(resolve_scope(store, "global", "/")), limit=5).hits
    assert hits and hits[0].kind == "tool_result"
    assert "Operation not permitted" in (hits[0].excerpt or "") and "metadata" not in (hits[0].excerpt or "")


REPORT = ("Message Type: FINAL_ANSWER\nTask name: /root\nSender: /root/provenance_review\nPayload:\n"
          "[P2] The wheel test only checks that BUILD_DIRTY is a boolean.")


def test_a_sub_agent_s_report_is_what_an_agent_said() -> None:
    parsed = parse(item({"type": "agent_message", "author": "/root/provenance_review", "recipient": "/root",
                         "content": [{"type": "input_text", "text": REPORT}]}))
    assert isinstance(parsed, Entry) and (parsed.kind, parsed.role) == ("assistant", "assistant")
    assert parsed.parts == ["Sender: /root/provenance_review\n[P2] The wheel test only checks that BUILD_DIRTY is a "
                            "boolean."]


@pytest.mark.parametrize(("text", "expected"), [
    ("Payload:\nno header before it", "Payload:\nno header before it"),  # not a header: left whole
    ("Message Type: NOTE\nthe payload line is missing", "Message Type: NOTE\nthe payload line is missing"),
])
def test_an_agent_message_without_its_header_is_kept_whole(text: str, expected: str) -> None:
    parsed = parse(item({"type": "agent_message", "content": [{"type": "input_text", "text": text}]}))
    assert isinstance(parsed, Entry) and parsed.parts == [expected]


def test_a_sub_agent_s_report_is_found_and_its_header_is_not_terms(tmp_path: Path, store: Store) -> None:
    path = write_rollout(tmp_path, "2026-08-16",
        event({"type": "thread_name_updated", "thread_id": THREAD, "thread_name": "Build provenance"}),
        item({"type": "agent_message", "author": "/root/provenance_review", "recipient": "/root",
              "content": [{"type": "input_text", "text": REPORT}]}))
    assert index_file(store, path).entries == 1
    assert store.rows("SELECT name FROM files") == [("Build provenance",)]
    assert not set(index_tokens(store, "FINAL_ANSWER Payload")) & vocabulary(store)
    hits = search(store, "wheel test BUILD_DIRTY boolean", Filters(resolve_scope(store, "global", "/")), limit=5).hits
    assert [h.kind for h in hits] == ["assistant"] and "BUILD_DIRTY" in (hits[0].excerpt or "")


def test_a_renamed_thread_names_the_session() -> None:
    assert parse(event({"type": "thread_name_updated", "thread_id": THREAD, "thread_name": "Fix issue 6"})) == \
        SessionName("Fix issue 6")


@pytest.mark.parametrize("raw", [
    line("session_meta", {"id": THREAD, "cwd": "/x"}),
    line("turn_context", {"cwd": "/x", "model": "m"}),
    line("world_state", {"full": True, "state": {}}),
    line("token_usage_record", {"usage": {}}),
    event({"type": "token_count", "info": None}),
    event({"type": "task_started", "turn_id": "t"}),
    event({"type": "task_complete", "last_agent_message": "done"}),
    event({"type": "thread_settings_applied"}),
    event({"type": "item_completed", "item": {"type": "McpToolCall", "tool": "memory_context",
                                              "result": {"content": [{"type": "text", "text": "answer"}]}}}),
    event({"type": "item_completed", "item": {"type": "CollabAgentToolCall", "tool": "wait"}}),
    item({"type": "additional_tools", "tools": []}),
    item({"type": "tool_search_call", "call_id": "c", "arguments": {"query": "memory"}}),
    item({"type": "tool_search_output", "call_id": "c", "tools": []}),
    line("inter_agent_communication_metadata", {"trigger_turn": False}),
    event({"type": "sub_agent_activity", "agent_path": "/root/review", "kind": "started"}),
    event({"type": "entered_review_mode", "target": {"type": "uncommittedChanges"}}),
    event({"type": "exited_review_mode", "review_output": {"findings": []}}),
    event({"type": "thread_name_updated", "thread_name": "  "}),
    # a task given to a sub-agent whose payload Codex encrypted
    item({"type": "agent_message", "author": "/root", "recipient": "/root/review", "content": [
        {"type": "input_text", "text": "Message Type: NEW_TASK\nTask name: /root/review\nSender: /root\nPayload:\n"},
        {"type": "encrypted_content", "encrypted_content": "gAAAA"}]}),
])
def test_lines_that_say_nothing_new(raw: bytes) -> None:
    assert parse(raw) is Skip.NOT_INDEXED


@pytest.mark.parametrize("raw, expected", [
    (line("hologram", {"x": 1}), Skip.UNKNOWN),
    (event({"type": "hologram_event"}), Skip.UNKNOWN),
    (item({"type": "hologram_item"}), Skip.UNKNOWN),
    (b'{"timestamp":"t","type":"response_item"}', Skip.MALFORMED),
    (b"{not json", Skip.MALFORMED),
    (event({"type": "user_message", "message": 42}), Skip.MALFORMED),
    (item({"type": "message", "role": "assistant", "content": 7}), Skip.MALFORMED),
])
def test_bad_and_unknown_lines(raw: bytes, expected: Skip) -> None:
    assert parse(raw) is expected


def test_ids_are_synthetic_and_stable() -> None:
    raw = event({"type": "user_message", "message": "please push"})
    first, again, elsewhere = parse(raw, 900), parse(raw, 900), parse(raw, 12)
    assert isinstance(first, Entry) and isinstance(again, Entry) and isinstance(elsewhere, Entry)
    assert first.entry_id == again.entry_id == synthetic_id(900, raw) != elsewhere.entry_id
    changed = parse(raw.replace(b"push", b"pull"), 900)
    assert isinstance(changed, Entry) and changed.entry_id != first.entry_id


# -- the session --------------------------------------------------------------------------------


def test_sniff_header_and_names(tmp_path: Path) -> None:
    meta = line("session_meta", {"id": THREAD, "timestamp": "2026-11-30T12:38:07.522Z", "cwd": "/tmp/proj",
                                 "originator": "codex_exec", "cli_version": "0.171.0", "source": "exec"})
    assert codex.sniff(meta + b"\n" + event({"type": "task_started"}))
    assert not codex.sniff(event({"type": "task_started"}))
    assert not codex.sniff(b'{"type":"session","version":3,"id":"x","timestamp":"t","cwd":"/"}')
    assert not codex.sniff(b'{"parentUuid":null,"type":"user","sessionId":"s","uuid":"u","message":{}}')
    header = codex.read_header("/s/rollout-x.jsonl", meta)
    assert header is not None
    assert (header.session_id, header.cwd, header.started, header.parent_session) == (
        THREAD, "/tmp/proj", 1796042287522, None)
    spawned = codex.read_header("/s/rollout-y.jsonl", line("session_meta", {
        "id": "child", "cwd": "/tmp/proj", "source": {"subagent": {"thread_spawn": {"parent_thread_id": THREAD,
                                                                                    "depth": 1}}}}))
    assert spawned is not None and spawned.parent_session == THREAD
    flat = codex.read_header("/s/rollout-z.jsonl", line("session_meta", {"id": "c", "parent_thread_id": THREAD}))
    assert flat is not None and flat.parent_session == THREAD
    assert codex.read_header("/s/rollout-w.jsonl", event({"type": "task_started"})) is None
    assert codex.owns("/h/.codex/sessions/2026/11/30/rollout-2026-11-30T12-38-07-x.jsonl")
    assert not codex.owns("/h/.codex/sessions/history.jsonl")
    path = tmp_path / "sessions" / "2026" / "11" / "30" / f"rollout-2026-11-30T12-38-07-{THREAD}.jsonl"
    assert choose_format(str(path), meta) is codex
    assert choose_format(str(path), meta, [Root(tmp_path / "sessions", "codex")]) is codex


def test_roots_and_host() -> None:
    assert codex.default_roots({}, Path("/home/u")) == [Path("/home/u/.codex/sessions")]
    assert codex.default_roots({"CODEX_HOME": "/ch"}, Path("/home/u")) == [Path("/ch/sessions")]
    assert codex.env_vars() == ("CODEX_HOME",)
    for view in ("codex_exec_mcp_view.json", "codex_tui_mcp_view.json"):  # exec, and the TUI's app-server daemon
        data = json.loads((AGENT_FIXTURES / "examples" / view).read_text())
        assert codex.is_host(data["startup"]["parent_chain"][0]["cmdline"])
    assert codex.is_host(["node", "/usr/lib/node_modules/@openai/codex/bin/codex.js", "exec"])
    assert not codex.is_host(["/usr/local/bin/claude", "-p"])
    assert not codex.is_host(["python3", "codex.py"])


# -- the journal being written now --------------------------------------------------------------


def _rollout(root: Path, day: str, thread: str, cwd: str, mtime: int) -> Path:
    folder = root / day
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"rollout-{day.replace('/', '-')}T10-00-00-{thread}.jsonl"
    path.write_bytes(line("session_meta", {"id": thread, "cwd": cwd, "timestamp": TS}) + b"\n")
    os.utime(path, (mtime, mtime))
    return path


def test_the_thread_id_names_the_rollout(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    mine = _rollout(root, "2026/11/29", THREAD, "/tmp/proj", 1_000)
    newer = _rollout(root, "2026/11/30", "01a22c7e-4a0c-7430-9c98-13817d887ec4", "/tmp/proj", 2_000)
    view = json.loads((AGENT_FIXTURES / "examples" / "codex_exec_mcp_view.json").read_text())
    meta = view["tools_call"]["_meta"]
    assert meta["threadId"] == THREAD
    assert codex.current_journals([root], "/tmp/proj", AgentHints({}, (), meta)) == [str(mine)]
    turn_only = {"x-codex-turn-metadata": meta["x-codex-turn-metadata"]}
    assert codex.current_journals([root], "/tmp/proj", AgentHints({}, (), turn_only)) == [str(mine)]
    # without _meta: the newest rollouts that started in this cwd
    other = _rollout(root, "2026/11/30", "01a22c7f-0000-7000-8000-000000000000", "/tmp/elsewhere", 3_000)
    assert codex.current_journals([root], "/tmp/proj", AgentHints()) == [str(newer), str(mine)]
    assert str(other) not in codex.current_journals([root], "/tmp/proj", AgentHints({}, (), {"threadId": "*"}))


def test_a_thread_id_tells_its_day_folder() -> None:
    """Thread ids are UUIDv7: the rollout's folder is looked up first by the id's own time."""
    days = codex._days_of(THREAD)
    assert "2026/11/30" in days and len(days) == 3
    assert codex._days_of("019ed836-b1da-78f1-8a0c-e598363d10f4")[0] == "2026/06/18"  # a real rollout's day
    assert codex._days_of("4fec7ea0-3335-43ec-a178-d4ab47d5aef3") == []  # not a UUIDv7


def test_only_the_newest_day_folders_are_searched_without_a_thread_id(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    old = _rollout(root, "2026/01/01", "01a00000-0000-7000-8000-000000000001", "/tmp/proj", 5_000)
    for day in ("2026/11/28", "2026/11/29", "2026/11/30"):
        _rollout(root, day, f"01a22c00-0000-7000-8000-0000000{day[-2:]}", "/tmp/other", 1_000)
    assert codex.current_journals([root], "/tmp/proj", AgentHints()) == []
    assert codex.current_journals([root], "/tmp/proj", AgentHints({}, (), {"threadId": old.stem[-36:]})) == [
        str(old)]


# -- the recorded 0.171 rollouts ----------------------------------------------------------------


def test_recorded_rollouts_keep_only_conversation(tmp_path: Path, store: Store) -> None:
    home = tmp_path / "home"
    place_fixtures(home)
    root = home / ".codex" / "sessions"
    for path in sorted(root.rglob("*.jsonl")):
        assert index_file(store, path, [Root(root, "codex")]).error is None
    by_session: dict[str, Counter[str]] = {sid: Counter() for (sid,) in store.rows("SELECT session_id FROM files")}
    for sid, kind in store.rows("SELECT f.session_id, e.kind FROM entries e JOIN files f ON f.id = e.file_id"):
        by_session[sid][kind] += 1
    # each: the prompt once (item_completed), "let me check" and the final text; our call (no
    # text) and our answer are not there, whether called directly, after tool search or from code
    one_call = Counter({"user": 1, "assistant": 2})
    assert by_session == {
        "01a22c77-4e35-7f02-8dc5-cb02ce7976f7": one_call,  # code mode (exec)
        "01a22c77-a9d2-7b60-abdc-d0b0ee518879": one_call,  # tool search, then the namespace call
        "01a22c7f-d1b4-7b03-bad4-230cb97f4075": one_call,  # the subagent
        "01a22c7f-d0fc-7f10-aaa1-aa7d289f27ff": Counter({"user": 1, "assistant": 3, "tool_result": 2}),  # its parent
    }
    parents = dict(store.rows("SELECT session_id, parent_session FROM files"))
    assert parents["01a22c7f-d1b4-7b03-bad4-230cb97f4075"] == "01a22c7f-d0fc-7f10-aaa1-aa7d289f27ff"
    texts = " ".join(json.dumps(r) for r in store.rows("SELECT tool FROM entries WHERE kind = 'tool_result'"))
    assert "memory_context" not in texts and "exec" not in texts
    # the call words of the code-mode script are not indexed either
    assert not set(index_tokens(store, "tools.mcp__journal_index__memory_context")) <= vocabulary(store)


def test_the_example_lines_of_each_call_mode(tmp_path: Path, store: Store) -> None:
    """examples/: direct namespace call, tool search then call, code mode; laid out as rollouts."""
    root = tmp_path / "sessions" / "2026" / "11" / "30"
    root.mkdir(parents=True)
    for n, name in enumerate(("codex_direct_namespace_call", "codex_gpt55_tool_search_call",
                              "codex_code_mode_exec_call")):
        path = root / f"rollout-2026-11-30T12-00-0{n}-0000000{n}-0000-7000-8000-000000000000.jsonl"
        shutil.copy(AGENT_FIXTURES / "examples" / f"{name}.jsonl", path)
        assert index_file(store, path, [Root(tmp_path / "sessions", "codex")]).error is None
    kinds = Counter(kind for (kind,) in store.rows("SELECT kind FROM entries"))
    assert kinds == Counter()  # the three calls of ours have no text, their results are not ours to index
    assert "jidx" not in vocabulary(store)


# -- the real rollouts ---------------------------------------------------------------------------


def expected_codex_counts(path: Path) -> Counter[str]:
    """Entries per kind by DESIGN §5c, with json alone: complete lines only; outputs of our own
    tool (by name or by Codex's MCP attribution) left out."""
    counts: Counter[str] = Counter()
    data = path.read_bytes()
    own_calls: set[str] = set()
    for raw in data[: data.rfind(b"\n") + 1].splitlines():
        if not raw.strip():
            continue
        obj = json.loads(raw)
        kind, payload = obj["type"], obj["payload"]
        sub = payload.get("type")
        if kind == "compacted":
            counts["compaction"] += 1
        elif kind == "event_msg" and (sub == "user_message" or (
                sub == "item_completed" and payload["item"].get("type") == "UserMessage")):
            counts["user"] += 1
        elif kind == "response_item":
            said = sub == "message" and payload["role"] == "assistant"
            summarized = sub == "reasoning" and any(s.get("text", "").strip() for s in payload.get("summary") or [])
            if said or summarized:
                counts["assistant"] += 1
            elif sub in ("function_call", "custom_tool_call", "web_search_call", "local_shell_call"):
                counts["assistant"] += 1
                if str(payload.get("name", "")).endswith("memory_context"):
                    own_calls.add(payload["call_id"])
            elif sub in ("function_call_output", "custom_tool_call_output"):
                sources = ((obj.get("metadata") or {}).get("mcp_attribution") or {}).get("sources") or []
                ours = any(str(s.get("tool_name", "")).endswith("memory_context") for s in sources)
                if not ours and payload["call_id"] not in own_calls:
                    counts["tool_result"] += 1
    return counts


KNOWN_PHRASES = {
    "agentv__00-34f597b72d-1_full.jsonl": "vscode related are stale",
    "agentv__a3-92ff332928-0_full.jsonl": "agentv-claude-trace plugin",
    "agentv__dc-1f1cb2cbdc-0_full.jsonl": "save this as entireio checkpoint",
}


@pytest.fixture(scope="module")
def real_home(tmp_path_factory: pytest.TempPathFactory) -> RealHome:
    return index_real_home(tmp_path_factory.mktemp("codex-real"), place_codex, agent_journals("codex"))


def _session_of(source: Path) -> str:
    return str(json.loads(source.read_bytes().split(b"\n", 1)[0])["payload"]["id"])


def test_real_rollouts_index_exactly_the_expected_entries(real_home: RealHome) -> None:
    _home, env, placed = real_home
    for source, path in placed.items():
        got, (fmt, session, cwd) = journal_in_index(env["JOURNAL_INDEX_DB"], path)
        assert got == expected_codex_counts(source), source.name
        assert (fmt, session, cwd) == ("codex", _session_of(source), "/home/entity/projects/EntityProcess/agentv")
    assert sum(sum(expected_codex_counts(s).values()) for s in placed) == 649


def test_real_rollouts_read_back_and_are_found(real_home: RealHome, monkeypatch: pytest.MonkeyPatch) -> None:
    home, env, placed = real_home
    for key in ("CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HOME", str(home))
    sessions_by_name = {source.name: _session_of(source) for source in placed}
    assert_reads_and_finds(env, "codex", {phrase: sessions_by_name[name] for name, phrase in KNOWN_PHRASES.items()})


def test_real_rollouts_per_agent_status(real_home: RealHome) -> None:
    _home, env, placed = real_home
    assert_agent_status(env, "codex", len(placed), sum(sum(expected_codex_counts(s).values()) for s in placed))


def test_the_human_words_are_indexed_once(real_home: RealHome) -> None:
    """0.14x writes a prompt as a user message item and as a user_message event: one entry."""
    from journal_index.data.store import open_store

    _home, env, _placed = real_home
    store = open_store(env["JOURNAL_INDEX_DB"])
    try:
        rows = store.rows("SELECT count(*) FROM entries_fts JOIN entries e ON e.rowid = entries_fts.rowid "
                          "WHERE entries_fts MATCH '\"please\" \"push\" \"to\" \"PR\" \"from\" \"worktree\"' "
                          "AND e.kind = 'user'")
        assert rows == [(1,)]
    finally:
        store.close()


def test_real_encrypted_compactions_are_listed_as_such_and_counted_as_listed(real_home: RealHome) -> None:
    """The shared rollout holds two compactions whose summary Codex encrypted (message ""): both
    are listed, each saying so, and status counts the two it lists."""
    _home, env, _placed = real_home
    listed = cli_json(env, "summaries", "--scope", "global")["results"]
    assert [hit["excerpt"] for hit in listed] == ["[summary encrypted by Codex] (context window 2)",
                                                  "[summary encrypted by Codex] (context window 1)"]
    assert cli_json(env, "status")["summaries"] == len(listed)
    text = subprocess.run([sys.executable, "-m", "journal_index", "summaries", "--scope", "global"], env=env,
                          capture_output=True, text=True, timeout=60, cwd=env["HOME"]).stdout
    assert text.count("[summary encrypted by Codex]") == 2
