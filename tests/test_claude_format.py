"""The Claude Code format (DESIGN §5b): inline lines for each rule, the recorded 2.1.332
journals of fixtures/agents, and the real transcripts of the shared folder indexed through the
CLI from a temporary ~/.claude, counted against an independent count."""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from journal_index.data.store import Store
from journal_index.formats import AgentHints, Entry, Root, SessionName, Skip, ToolCall, choose_format, claude
from journal_index.indexing.extract import Extractor
from journal_index.indexing.indexer import index_file
from journal_index.text.entry_text import entry_text, thinking_apart
from tests.agent_homes import (
    AGENT_FIXTURES,
    RealHome,
    assert_agent_status,
    assert_reads_and_finds,
    index_real_home,
    place_claude,
    place_fixtures,
)
from tests.helpers import journal_in_index
from tests.shared_data import agent_journals

SESSION = "b4bfcc52-ce4c-440e-9fda-87887ce88c5e"
COMMON = {"isSidechain": False, "userType": "external", "cwd": "/home/dev/proj", "sessionId": SESSION,
          "version": "2.1.332", "gitBranch": "main", "timestamp": "2026-11-30T12:37:01.904Z"}


def line(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def user(content: Any, uuid: str = "u-1", **extra: Any) -> bytes:
    return line({"parentUuid": "p-0", **COMMON, "type": "user", "message": {"role": "user", "content": content},
                 "uuid": uuid, **extra})


def assistant(*blocks: dict[str, Any], uuid: str = "a-1") -> bytes:
    return line({"parentUuid": "p-0", **COMMON, "message": {"id": "msg_1", "type": "message", "role": "assistant",
                                                            "content": list(blocks)},
                 "type": "assistant", "uuid": uuid})


def parse(raw: bytes) -> Any:
    return claude.parse_line(raw, 0)


# -- lines --------------------------------------------------------------------------------------


def test_a_prompt_is_the_users_words() -> None:
    entry = parse(user("how did we fix the flaky login test"))
    assert isinstance(entry, Entry)
    assert (entry.kind, entry.role, entry.entry_id, entry.parent_id) == ("user", "user", "u-1", "p-0")
    assert entry.text == "how did we fix the flaky login test" and entry.ts == 1796042221904
    blocks = parse(user([{"type": "text", "text": "look"}, {"type": "image", "source": {"data": "iVBORw0KGgo"}}]))
    assert isinstance(blocks, Entry) and blocks.text == "look\n[image]"


def test_a_tool_result_is_never_the_users_words() -> None:
    raw = user([{"type": "tool_result", "tool_use_id": "toolu_1", "content": "file body one"},
                {"type": "tool_result", "tool_use_id": "toolu_2",
                 "content": [{"type": "text", "text": "file body two"}, {"type": "image", "source": {}}]}],
               toolUseResult={"stdout": "file body one"}, sourceToolAssistantUUID="a-0")
    entry = parse(raw)
    assert isinstance(entry, Entry)
    assert entry.kind == "tool_result" and entry.role == "user" and entry.answers == "toolu_1"
    assert entry.text == "file body one\nfile body two\n[image]"
    # led by its call where the call is known
    assert entry_text(entry, ToolCall("toolu_1", "Read", {"file_path": "/src/app.py"})).startswith(
        "Read /src/app.py\nfile body one")


def test_injected_lines_and_the_compaction() -> None:
    assert parse(user("<local-command-caveat>Caveat: …</local-command-caveat>", isMeta=True)) is Skip.NOT_INDEXED
    summary = parse(user("This session is being continued from a previous conversation. Goal: ship it.",
                         isCompactSummary=True, isVisibleInTranscriptOnly=True))
    assert isinstance(summary, Entry) and summary.kind == "compaction" and "ship it" in summary.text
    boundary = line({"parentUuid": None, "logicalParentUuid": "x", **COMMON, "type": "system",
                     "subtype": "compact_boundary", "content": "Conversation compacted", "uuid": "s-1",
                     "compactMetadata": {"trigger": "auto", "preTokens": 155000}})
    assert parse(boundary) is Skip.NOT_INDEXED


def test_assistant_blocks_each_their_own_entry() -> None:
    text = parse(assistant({"type": "text", "text": "Here is the plan."}))
    assert isinstance(text, Entry) and (text.kind, text.role, text.text) == ("assistant", "assistant",
                                                                            "Here is the plan.")
    thinking = parse(assistant({"type": "thinking", "thinking": "weigh the options", "signature": "EqQBsig"}))
    assert isinstance(thinking, Entry) and thinking.text == "weigh the options"
    assert parse(assistant({"type": "redacted_thinking", "data": "opaque"})) is Skip.NOT_INDEXED
    assert parse(assistant({"type": "thinking", "thinking": "", "signature": "EqQBsig"})) is Skip.NOT_INDEXED
    call = parse(assistant({"type": "tool_use", "id": "toolu_9", "name": "Bash", "input": {"command": "ls -la"}}))
    assert isinstance(call, Entry) and call.calls == [ToolCall("toolu_9", "Bash", {"command": "ls -la"})]
    assert call.text == "Bash\ncommand: ls -la"


@pytest.mark.parametrize("name", ["mcp__journal-index__memory_context", "mcp__plugin_x_journal_index__memory_context"])
def test_our_own_call_is_remembered_but_its_words_are_not_indexed(name: str) -> None:
    entry = parse(assistant({"type": "tool_use", "id": "toolu_own", "name": name,
                             "input": {"query": "earlier search words"}}))
    assert isinstance(entry, Entry) and entry.text == "" and entry.calls[0].name == name
    assert claude.is_own_tool(name)


def test_our_own_result_is_dropped_by_its_call() -> None:
    """The result line does not name the tool: it is dropped through its link to the call."""
    call = assistant({"type": "tool_use", "id": "toolu_own", "name": "mcp__journal-index__memory_context",
                      "input": {"query": "earlier"}})
    result = user([{"type": "tool_result", "tool_use_id": "toolu_own",
                    "content": [{"type": "text", "text": "an earlier answer"}]}], uuid="u-2")
    out = Extractor(claude).block(call + b"\n" + result + b"\n", 0)
    assert out.rows == [] and out.terms == [] and out.bulk == []  # the call has no text; the result is gone


def test_titles_name_the_session() -> None:
    assert parse(line({"type": "custom-title", "customTitle": "login fix", "sessionId": SESSION})) == SessionName(
        "login fix")
    assert parse(line({"type": "ai-title", "aiTitle": "Fix flaky login", "sessionId": SESSION})) == SessionName(
        "Fix flaky login")
    assert parse(line({"type": "summary", "summary": "Login test fixed", "leafUuid": "x"})) == SessionName(
        "Login test fixed")


@pytest.mark.parametrize("obj", [
    {**COMMON, "type": "progress", "data": {"type": "hook_progress", "hookEvent": "Stop"}, "uuid": "p"},
    {**COMMON, "type": "system", "subtype": "turn_duration", "durationMs": 5, "uuid": "s"},
    {"parentUuid": None, "isSidechain": False, "attachment": {"type": "prompt_snapshot", "content": "x"},
     "type": "attachment", **COMMON, "uuid": "at"},
    {"type": "file-history-snapshot", "messageId": "m", "snapshot": {}, "isSnapshotUpdate": False},
    {"type": "queue-operation", "operation": "enqueue", "content": "typed ahead", "sessionId": SESSION},
    {"type": "last-prompt", "lastPrompt": "a prompt", "leafUuid": "x", "sessionId": SESSION},
    {"type": "pr-link", "url": "https://example.test/pr/1", "sessionId": SESSION},
    # a copy of a request: its message can hold tool results; it is never conversation
    {"type": "api-request-blob", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t", "content": "x"}]}, "sessionId": SESSION},
    {"type": "tools-used", "tools": ["ToolSearch"], "sessionId": SESSION},
])
def test_lines_that_are_not_conversation(obj: dict[str, Any]) -> None:
    assert parse(line(obj)) is Skip.NOT_INDEXED


@pytest.mark.parametrize("raw, expected", [
    (line({"type": "hologram", "sessionId": SESSION}), Skip.UNKNOWN),
    (b"{not json", Skip.MALFORMED),
    (line({**COMMON, "type": "user", "message": {"role": "user", "content": "x"}}), Skip.MALFORMED),  # no uuid
    (line({**COMMON, "type": "user", "uuid": "u", "message": "not an object"}), Skip.MALFORMED),
    (user(42), Skip.MALFORMED),
])
def test_bad_and_unknown_lines(raw: bytes, expected: Skip) -> None:
    assert parse(raw) is expected


def test_progress_lines_are_skipped_without_a_parse_but_never_an_entry() -> None:
    progress = line({"parentUuid": "p", "isSidechain": False, "cwd": "/x", "sessionId": SESSION, "type": "progress",
                     "data": {"type": "bash_progress", "output": "compiling…"}, "toolUseID": "t"})
    assert claude.is_progress_line(progress)
    # the words "type":"progress" in an entry's own text are escaped in the line: parsed as text
    said = user('the log said {"type":"progress"} twice')
    assert not claude.is_progress_line(said)
    assert isinstance(parse(said), Entry)
    # "type":"progress" inside a nested object before the line's own type: parsed
    nested = line({"parentUuid": "p", "message": {"role": "user", "content": [
        {"type": "progress"}, {"type": "text", "text": "nested"}]}, "type": "user", "uuid": "u-9", **COMMON})
    assert not claude.is_progress_line(nested)
    entry = parse(nested)
    assert isinstance(entry, Entry) and entry.text == "nested"
    # a lost newline: a progress line and an entry on one line; the salvage finds the entry
    joined = progress + user("words after a lost newline", uuid="u-joined")
    assert not claude.is_progress_line(joined)
    out = Extractor(claude).block(joined + b"\n", 0)
    assert [(row[0], row[3]) for row in out.rows] == [("u-joined", "user")]


def test_the_progress_shortcut_agrees_with_a_parse_on_every_real_line() -> None:
    paths = agent_journals("claude-code") + sorted((AGENT_FIXTURES / "claude").rglob("*.jsonl"))
    checked = 0
    for path in paths:
        for raw in path.read_bytes().splitlines():
            if claude.is_progress_line(raw):
                assert json.loads(raw)["type"] == "progress"
                checked += 1
    assert checked >= 25


# -- the session --------------------------------------------------------------------------------


def test_sniff_knows_claude_lines_and_no_others() -> None:
    mode = line({"type": "mode", "mode": "normal", "sessionId": SESSION})
    assert claude.sniff(mode + b"\n" + user("hi"))
    assert claude.sniff(line({"type": "summary", "summary": "t", "leafUuid": "x"}))
    snapshot = line({"type": "file-history-snapshot", "messageId": "m", "snapshot": {}, "isSnapshotUpdate": False})
    assert claude.sniff(snapshot + b"\n" + user("hi"))
    assert claude.sniff(b"{broken\n" + user("hi"))
    assert not claude.sniff(line({"type": "session", "version": 3, "id": "x", "timestamp": "t", "cwd": "/"}))
    assert not claude.sniff(line({"type": "message", "id": "a1b2c3d4", "parentId": None,
                                  "message": {"role": "user", "content": "x"}}))
    assert not claude.sniff(line({"timestamp": "t", "type": "session_meta", "payload": {"id": "x"}}))
    assert not claude.sniff(line({"timestamp": "t", "type": "response_item", "payload": {"sessionId": "x"}}))
    assert not claude.sniff(b"")


def test_the_header_comes_from_the_path_and_the_first_lines(tmp_path: Path) -> None:
    path = tmp_path / "-home-dev-proj" / f"{SESSION}.jsonl"
    head = b"\n".join([line({"type": "mode", "mode": "normal", "sessionId": SESSION}),
                       line({"type": "ai-title", "aiTitle": "Flaky login", "sessionId": SESSION}),
                       user("hi"), line({**COMMON, "cwd": "/elsewhere", "type": "user", "uuid": "u2",
                                         "message": {"role": "user", "content": "x"}})])
    header = claude.read_header(str(path), head)
    assert header is not None
    assert (header.session_id, header.cwd, header.started, header.name, header.parent_session) == (
        SESSION, "/home/dev/proj", 1796042221904, "Flaky login", None)


def test_a_subagent_is_a_session_of_its_own_linked_to_its_parent() -> None:
    sub = f"/p/-x/{SESSION}/subagents/agent-a0fd6df6a3286b723.jsonl"
    header = claude.read_header(sub, user("task", isSidechain=True, agentId="a0fd6df6a3286b723"))
    assert header is not None and (header.session_id, header.parent_session) == ("agent-a0fd6df6a3286b723", SESSION)
    older = claude.read_header("/p/-x/agent-1234abcd.jsonl", user("task", isSidechain=True))
    assert older is not None and (older.session_id, older.parent_session) == ("agent-1234abcd", SESSION)
    forked = claude.read_header("/p/-x/new-id.jsonl", user("x", forkedFrom={"sessionId": SESSION, "messageUuid": "m"}))
    assert forked is not None and forked.parent_session == SESSION


def test_roots_folder_names_and_host() -> None:
    assert claude.default_roots({}, Path("/home/u")) == [Path("/home/u/.claude/projects")]
    assert claude.default_roots({"CLAUDE_CONFIG_DIR": "/cfg"}, Path("/home/u")) == [Path("/cfg/projects")]
    assert claude.env_vars() == ("CLAUDE_CONFIG_DIR",)
    # observed: /tmp/hosts/run-claude-path/my_proj.v2 x → -tmp-hosts-run-claude-path-my-proj-v2-x
    assert claude.project_folder("/tmp/hosts/run-claude-path/my_proj.v2 x") == "-tmp-hosts-run-claude-path-my-proj-v2-x"
    view = json.loads((AGENT_FIXTURES / "examples" / "claude_mcp_view.json").read_text())
    assert claude.is_host(view["startup"]["parent_chain"][0]["cmdline"])
    assert claude.is_host(["node", "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js"])
    assert claude.is_host(["/usr/local/bin/claude", "--mcp-config", "x"])
    assert not claude.is_host(["/usr/bin/python3", "claude.py"])
    assert not claude.is_host(["codex", "exec"])


def test_a_journal_under_claudes_root_is_claudes(tmp_path: Path) -> None:
    path = tmp_path / "projects" / "-x" / "s.jsonl"
    head = user("hi")
    assert choose_format(str(path), head, [Root(tmp_path / "projects", "claude")]) is claude
    assert choose_format(str(path), head) is claude  # outside any root: by its lines


# -- the journal being written now --------------------------------------------------------------


def _project(root: Path, cwd: str) -> Path:
    folder = root / claude.project_folder(cwd)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_the_tool_use_id_names_the_journal_even_before_it_is_written(tmp_path: Path) -> None:
    root, cwd = tmp_path / "projects", "/home/dev/my_proj.v2"
    folder = _project(root, cwd)
    (folder / "older.jsonl").write_bytes(user("old session") + b"\n")
    late = folder / "b4bfcc52-late.jsonl"

    def flush_later() -> None:  # Claude Code flushes ~100 ms after it sent the call
        time.sleep(0.25)
        late.write_bytes(assistant({"type": "tool_use", "id": "toolu_146c55595f604fa7b29350a7",
                                    "name": "mcp__journal-index__memory_context", "input": {}}) + b"\n")

    writer = threading.Thread(target=flush_later)
    writer.start()
    try:
        hints = AgentHints({"CLAUDE_CODE_SESSION_ID": "older"}, (),
                           {"claudecode/toolUseId": "toolu_146c55595f604fa7b29350a7"})
        started = time.monotonic()
        found = claude.current_journals([root], cwd, hints)
        waited = time.monotonic() - started
    finally:
        writer.join()
    assert found == [str(late)]
    assert 0.2 < waited < 1.5


def test_a_subagents_call_names_the_subagents_transcript(tmp_path: Path) -> None:
    root = tmp_path / "claude" / "projects"
    root.parent.mkdir()
    shutil.copytree(AGENT_FIXTURES / "claude" / "projects", root)
    cwd = "/tmp/hosts/run-claude-sub/proj"
    sub_call = "toolu_77d60cad0a8c4acbbc8ecd16"  # in the subagent's transcript (examples/claude_subagent_lines)
    hints = AgentHints({"CLAUDE_CODE_SESSION_ID": "7896b4ed-559e-455b-9291-3ffb45111ecc"}, (),
                       {"claudecode/toolUseId": sub_call})
    found = claude.current_journals([root], cwd, hints)
    assert len(found) == 1 and found[0].endswith("subagents/agent-a0fd6df6a3286b723.jsonl")
    # without _meta: the session the server was started for
    env_only = claude.current_journals([root], cwd, AgentHints({"CLAUDE_CODE_SESSION_ID":
                                                                "7896b4ed-559e-455b-9291-3ffb45111ecc"}))
    assert [Path(p).name for p in env_only] == ["7896b4ed-559e-455b-9291-3ffb45111ecc.jsonl"]


def test_after_clear_the_call_wins_over_the_stale_session_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    """/clear starts a new file while the server keeps the first CLAUDE_CODE_SESSION_ID."""
    root, cwd = tmp_path / "projects", "/home/dev/proj"
    folder = _project(root, cwd)
    first, second = folder / "827d8ea9.jsonl", folder / "63eb0672.jsonl"
    first.write_bytes(assistant({"type": "tool_use", "id": "toolu_first", "name": "Bash", "input": {}}) + b"\n")
    second.write_bytes(assistant({"type": "tool_use", "id": "toolu_second", "name": "Bash", "input": {}}) + b"\n")
    env = {"CLAUDE_CODE_SESSION_ID": "827d8ea9"}
    assert claude.current_journals([root], cwd, AgentHints(env, (), {"claudecode/toolUseId": "toolu_second"})) == [
        str(second)]
    # a call that never shows up: after the poll, the session id, then the newest journal
    monkeypatch.setattr(claude, "POLL_SECONDS", 0.2)
    started = time.monotonic()
    assert claude.current_journals([root], cwd, AgentHints(env, (), {"claudecode/toolUseId": "toolu_never"})) == [
        str(first)]
    assert 0.2 <= time.monotonic() - started < 1.0
    newest = claude.current_journals([root], cwd, AgentHints({}))
    assert set(newest) == {str(first), str(second)}
    # ids that could be glob patterns or paths are not used
    assert claude.current_journals([root], cwd, AgentHints({"CLAUDE_CODE_SESSION_ID": "../x"}, (),
                                                           {"claudecode/toolUseId": "*"})) == newest


def test_the_project_dir_variable_finds_the_folder_from_a_subfolder(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    folder = _project(root, "/home/dev/proj")
    (folder / "s.jsonl").write_bytes(user("x") + b"\n")
    hints = AgentHints({"CLAUDE_PROJECT_DIR": "/home/dev/proj"})
    assert claude.current_journals([root], "/home/dev/proj/sub", hints) == [str(folder / "s.jsonl")]


# -- the recorded 2.1.332 journals --------------------------------------------------------------


def test_recorded_journals_keep_only_conversation(tmp_path: Path, store: Store) -> None:
    home = tmp_path / "home"
    place_fixtures(home)
    root = home / ".claude" / "projects"
    for path in sorted(root.rglob("*.jsonl")):
        assert index_file(store, path, [root]).error is None
    files = dict(store.rows("SELECT session_id, parent_session FROM files"))
    assert files == {"7896b4ed-559e-455b-9291-3ffb45111ecc": None,
                     "agent-a0fd6df6a3286b723": "7896b4ed-559e-455b-9291-3ffb45111ecc"}
    kinds = Counter(kind for (kind,) in store.rows("SELECT kind FROM entries"))
    # parent: prompt, Agent call, its result, final text; subagent: task, ToolSearch call and result,
    # text, final text — our call (no text), our result and the api-request-blob copies are not there
    assert kinds == Counter({"user": 2, "assistant": 5, "tool_result": 2})
    marker_results = store.rows("SELECT e.entry_id FROM entries e WHERE e.kind = 'tool_result' AND e.tool LIKE "
                                "'%memory_context'")
    assert marker_results == []
    # the subagent's own answer from our tool is not searchable; only quotes of it (unsigned
    # stand-in answers) in the reports are
    sub_result = store.rows("SELECT count(*) FROM entries e JOIN files f ON f.id = e.file_id "
                            "WHERE f.session_id LIKE 'agent-%' AND e.kind = 'tool_result'")
    assert sub_result == [(1,)]  # ToolSearch's result only


# -- the real transcripts ------------------------------------------------------------------------


def expected_claude_counts(path: Path) -> Counter[str]:
    """Entries per kind by DESIGN §5b, with json alone: complete lines only (the indexer waits
    for a line's newline); results of our own tool left out."""
    counts: Counter[str] = Counter()
    data = path.read_bytes()
    complete = data[: data.rfind(b"\n") + 1]
    names: dict[str, str] = {}
    for raw in complete.splitlines():
        if not raw.strip():
            continue
        obj = json.loads(raw)
        message = obj.get("message") if isinstance(obj.get("message"), dict) else {}
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        if obj.get("type") == "assistant":
            for b in blocks:
                if b.get("type") == "tool_use":
                    names[b["id"]] = b["name"]
            if any(b.get("type") == "tool_use" or (b.get("type") == "text" and b["text"].strip())
                   or (b.get("type") == "thinking" and b["thinking"].strip()) for b in blocks):
                counts["assistant"] += 1
        elif obj.get("type") == "user":
            results = [b for b in blocks if b.get("type") == "tool_result"]
            if obj.get("isCompactSummary"):
                counts["compaction"] += 1
            elif results:
                if not names.get(results[0]["tool_use_id"], "").endswith("memory_context"):
                    counts["tool_result"] += 1
            elif not obj.get("isMeta"):
                counts["user"] += 1
    return counts


# Words each real transcript holds (from its prompts and results).
KNOWN_PHRASES = {
    "entire-cli__9f-d2fc39aa5f-0_full.jsonl": "ENTIRE_TELEMETRY_OPTOUT flame graph",
    "entire-cli__aa-778e725b89-0_full.jsonl": "calculatePromptAttributionAtStart empty result",
    "entire-cli__e1-2c3e2b3f2a-0_full.jsonl": "continued from a previous conversation",
}


@pytest.fixture(scope="module")
def real_home(tmp_path_factory: pytest.TempPathFactory) -> RealHome:
    return index_real_home(tmp_path_factory.mktemp("claude-real"), place_claude, agent_journals("claude-code"))


def test_real_transcripts_index_exactly_the_expected_entries(real_home: RealHome) -> None:
    _home, env, placed = real_home
    for source, path in placed.items():
        got, (fmt, session, cwd) = journal_in_index(env["JOURNAL_INDEX_DB"], path)
        assert got == expected_claude_counts(source), source.name
        assert (fmt, session) == ("claude", path.stem) and cwd
    assert sum(sum(expected_claude_counts(s).values()) for s in placed) == 313


def test_real_transcripts_read_back_and_are_found(real_home: RealHome, monkeypatch: pytest.MonkeyPatch) -> None:
    home, env, _placed = real_home
    for key in ("CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HOME", str(home))
    assert_reads_and_finds(env, "claude", {phrase: Path(name).stem for name, phrase in KNOWN_PHRASES.items()})


def test_real_transcripts_per_agent_status(real_home: RealHome) -> None:
    _home, env, placed = real_home
    assert_agent_status(env, "claude", len(placed), sum(sum(expected_claude_counts(s).values()) for s in placed))



def test_thinking_stays_among_the_parts_and_a_view_can_set_it_apart() -> None:
    entry = parse(assistant({"type": "text", "text": "First this."},
                            {"type": "thinking", "thinking": "weigh the options", "signature": "EqQBsig"},
                            {"type": "text", "text": "Then that."}))
    assert isinstance(entry, Entry)
    # What is indexed and searched is as before: every part in block order, thinking included.
    assert entry.parts == ["First this.", "weigh the options", "Then that."]
    assert entry_text(entry, None) == "First this.\nweigh the options\nThen that."
    assert entry.thinking_at == [1] and entry.thinking == ["weigh the options"]
    assert thinking_apart(entry, None) == ("First this.\nThen that.", ["weigh the options"])
    plain = parse(assistant({"type": "text", "text": "Only words."}))
    assert isinstance(plain, Entry) and thinking_apart(plain, None) == ("Only words.", [])
