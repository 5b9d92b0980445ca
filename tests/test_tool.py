"""The memory_context contract: in-process through MemoryTool, and as `journal-index tool`."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import apsw
import pytest

from journal_index import query
from journal_index.agent.host import Host
from journal_index.agent.tool import EXCERPT_CHARS, MemoryTool
from journal_index.agent.tool_args import DESCRIPTION, INPUT_SCHEMA, SEARCH_LIMIT, TOOL_NAME
from journal_index.config import cache_db_path
from journal_index.text.entry_text import ANSWER_END, ANSWER_START
from tests.conftest import FIXTURES
from tests.helpers import copy_journal_tree, load_secrets

BE_CWD = "/home/dev/Apps/prjct/prjct-be"
BE_SESSION = "01a08ad4-d880-7548-b534-0b41e2f8cfb5"  # prjct-be: alembic heads
FLUENTY_SESSION = "01a0c368-7d00-70d3-a243-7f8a8ad189d8"
FLUENTY_ENTRY = "c670e76f"  # a user entry of the fluenty project (not in any prjct session)
NOW = "2026-10-15T00:00:00Z"


@pytest.fixture(autouse=True)
def fixed_now(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOURNAL_INDEX_NOW", NOW)


def journal_of(root: Path, session_id: str) -> Path:
    (path,) = root.glob(f"*/*_{session_id}.jsonl")
    return path


def append_user(path: Path, text: str, entry_id: str) -> None:
    line = {"type": "message", "id": entry_id, "parentId": None, "timestamp": "2026-10-14T12:00:00.000Z",
            "message": {"role": "user", "content": text, "timestamp": 1791979200000}}
    with open(path, "ab") as handle:
        handle.write(json.dumps(line).encode() + b"\n")


def make_tool(db_path: Path, root: Path, **kwargs: Any) -> MemoryTool:
    kwargs.setdefault("cwd", BE_CWD)
    kwargs.setdefault("host", Host(None))  # no agent among the test's parents
    return MemoryTool(str(db_path), [root], **kwargs)


def body(text: str) -> str:
    """The answer inside its signature (every answer is signed, so no host can get it indexed)."""
    lines = text.splitlines()
    assert lines[0] == ANSWER_START and lines[-1] == ANSWER_END, text
    return "\n".join(lines[1:-1])


def append_compaction(path: Path, entry_id: str, kept: str) -> None:
    line = {"type": "compaction", "id": entry_id, "parentId": kept, "timestamp": "2026-10-14T12:30:00.000Z",
            "summary": "## Goal\nsummary of the earlier turns", "firstKeptEntryId": kept, "tokensBefore": 90000}
    with open(path, "ab") as handle:
        handle.write(json.dumps(line).encode() + b"\n")


@pytest.fixture
def tool(db_path: Path, sessions_root: Path):
    opened = make_tool(db_path, sessions_root)
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def shared_tool(tmp_path_factory: pytest.TempPathFactory):
    """One tool over one index for read-only tests (the journals are not touched)."""
    base = tmp_path_factory.mktemp("shared")
    copy_journal_tree(FIXTURES / "sessions", base / "sessions")
    opened = make_tool(base / "index.db", base / "sessions", max_scope="project")
    yield opened
    opened.close()


# -- the contract ----------------------------------------------------------------------

def test_description_rides_every_request_so_it_stays_short():
    assert TOOL_NAME == "memory_context"
    assert 0 < len(DESCRIPTION) < 200


def test_schema_is_closed_and_typed():
    assert INPUT_SCHEMA["type"] == "object"
    assert INPUT_SCHEMA["additionalProperties"] is False
    assert INPUT_SCHEMA["required"] == ["action"]
    props = INPUT_SCHEMA["properties"]
    assert set(props) == {"action", "query", "entryId", "sessionId", "since", "until", "scope", "kind",
                          "offset"}
    assert props["action"]["enum"] == ["search", "read", "summaries"]
    assert props["scope"]["enum"] == ["session", "project", "global", "team"]
    assert props["offset"]["type"] == "integer"
    assert all(p.get("description") for p in props.values())


def test_search_answer_is_compact_and_says_how_to_read_more(tool: MemoryTool):
    answer = tool.call({"action": "search", "query": "alembic heads"})
    assert answer.error is None
    result = answer.result
    assert result is not None
    assert set(result) >= {"match", "hint", "scope", "results"}
    assert result["scope"] == {"kind": "project", "root": "/home/dev/Apps/prjct"}
    assert 0 < len(result["results"]) <= SEARCH_LIMIT
    assert len(answer.text) < 8000
    first = result["results"][0]
    text = body(answer.text)
    assert f"entry {first['entryId']}" in next(line for line in text.splitlines() if line.startswith("[1] "))
    assert f'read more: {{"action":"read","entryId":"{first["entryId"]}"' in text
    assert text.splitlines()[-1].startswith("index: 26 sessions")
    assert answer.index is not None and answer.index["sessions"] == 26


def test_search_pages_with_offset(tool: MemoryTool):
    first = tool.call({"action": "search", "query": "token"})
    assert first.result is not None and first.result["nextOffset"] == SEARCH_LIMIT
    second = tool.call({"action": "search", "query": "token", "offset": SEARCH_LIMIT})
    assert second.result is not None
    ids_one = {r["entryId"] for r in first.result["results"]}
    ids_two = {r["entryId"] for r in second.result["results"]}
    assert ids_two and not ids_one & ids_two
    assert "results 9–" in second.text


def test_read_returns_the_verified_entry(tool: MemoryTool):
    hit = tool.call({"action": "search", "query": "alembic heads"}).result["results"][0]  # type: ignore[index]
    answer = tool.call({"action": "read", "entryId": hit["entryId"], "sessionId": hit["sessionId"]})
    assert answer.error is None and answer.result is not None
    assert answer.result["status"] == "ok"
    assert answer.result["entryId"] == hit["entryId"]
    assert "alembic" in answer.result["text"].lower()
    assert answer.result["text"] in answer.text


def test_summaries(tool: MemoryTool):
    answer = tool.call({"action": "summaries"})
    assert answer.result is not None
    kinds = {r["kind"] for r in answer.result["results"]}
    assert kinds and kinds <= {"compaction", "branch_summary"}
    assert body(answer.text).startswith("summaries: results 1–")


# -- freshness: the current journal is indexed before every call --------------------

def test_current_journal_is_indexed_first_and_its_live_context_left_out(tool: MemoryTool, sessions_root: Path):
    """DESIGN invariant 12: the agent is not told what it already knows."""
    assert tool.call({"action": "search", "query": "zeppelin"}).result["results"] == []  # type: ignore[index]
    path = journal_of(sessions_root, BE_SESSION)  # written just now: the journal in use
    append_user(path, "the zeppelin migration is next", "feed0001")
    answer = tool.call({"action": "search", "query": "zeppelin"})
    assert answer.index["currentJournal"]["sessionId"] == BE_SESSION  # type: ignore[index]
    assert answer.index["currentJournal"]["newEntries"] == 1  # type: ignore[index]
    assert answer.result["results"] == []  # type: ignore[index]  # still in the agent's context
    assert "(+1 new)" in answer.text and "left out" in answer.text
    # Earlier entries of the same session are in its context too (it never compacted).
    assert not [r for r in tool.call({"action": "search", "query": "alembic heads", "scope": "session"})
                .result["results"]]  # type: ignore[index]


def test_what_compaction_removed_from_the_context_stays_findable(tool: MemoryTool, sessions_root: Path):
    path = journal_of(sessions_root, BE_SESSION)
    append_user(path, "a quokka in the logs", "feed0002")
    append_user(path, "the platypus deploy", "feed0003")
    append_compaction(path, "feed0004", kept="feed0003")
    found = tool.call({"action": "search", "query": "quokka"})
    assert [r["entryId"] for r in found.result["results"]] == ["feed0002"]  # type: ignore[index]
    kept = tool.call({"action": "search", "query": "platypus"})
    assert kept.result["results"] == []  # type: ignore[index]  # after the kept point: in context
    earlier = tool.call({"action": "search", "query": "alembic heads", "scope": "session"})
    assert BE_SESSION in {r["sessionId"] for r in earlier.result["results"]}  # type: ignore[index]


def test_session_scope_defaults_to_the_current_session(tool: MemoryTool, sessions_root: Path):
    path = journal_of(sessions_root, BE_SESSION)
    append_user(path, "the axolotl rollout", "feed0005")
    append_compaction(path, "feed0006", kept="feed0006")
    answer = tool.call({"action": "search", "query": "axolotl", "scope": "session"})
    assert answer.error is None, answer.text
    assert answer.result["scope"]["kind"] == "session"  # type: ignore[index]
    assert [r["entryId"] for r in answer.result["results"]] == ["feed0005"]  # type: ignore[index]
    # A prefix of a session id is enough.
    other = tool.call({"action": "search", "scope": "session", "sessionId": "01a05d32-b780"})
    assert other.error is None and other.result["results"], other.text  # type: ignore[index]


def test_session_file_is_the_current_session(db_path: Path, sessions_root: Path):
    path = journal_of(sessions_root, BE_SESSION)
    tool = make_tool(db_path, sessions_root, session_file=str(path), max_scope="session")
    try:
        tool.call({"action": "search"})
        append_user(path, "platypus", "feed0003")
        append_compaction(path, "feed0007", kept="feed0007")
        answer = tool.call({"action": "search", "query": "platypus"})
        assert answer.result["scope"]["kind"] == "session"  # type: ignore[index]
        assert [r["entryId"] for r in answer.result["results"]] == ["feed0003"]  # type: ignore[index]
        other = tool.call({"action": "search", "sessionId": "01a05d32-b780-77a8-84b6-ccc1caffba94"})
        assert other.error is not None and other.error["code"] == "scope_not_allowed"
    finally:
        tool.close()


# -- scope is a boundary ------------------------------------------------------------------

def test_default_max_scope_refuses_global_and_hides_other_projects(tool: MemoryTool):
    refused = tool.call({"action": "search", "query": "tts", "scope": "global"})
    assert refused.error is not None and refused.error["code"] == "scope_not_allowed"
    assert "'project'" in refused.error["message"]
    assert refused.result is None

    outside = tool.call({"action": "read", "entryId": FLUENTY_ENTRY})
    missing = tool.call({"action": "read", "entryId": "00000000"})
    # Not found is an error to the model, as it is to the CLI (exit 1), and says no more than that.
    assert outside.is_error and outside.error["code"] == "not_found"  # type: ignore[index]
    assert outside.text.replace(FLUENTY_ENTRY, "ID") == missing.text.replace("00000000", "ID")
    # Naming the other project's session does not open it either.
    by_session = tool.call({"action": "read", "entryId": FLUENTY_ENTRY, "sessionId": FLUENTY_SESSION})
    assert by_session.is_error and by_session.error["code"] in ("not_found", "session_not_found")  # type: ignore[index]
    scoped = tool.call({"action": "search", "scope": "session", "sessionId": FLUENTY_SESSION})
    unknown = tool.call({"action": "search", "scope": "session",
                         "sessionId": "01a00000-0000-0000-0000-000000000000"})
    assert scoped.error is not None and scoped.error["code"] == "session_not_found"
    assert unknown.error is not None and unknown.error["code"] == "session_not_found"


def test_max_scope_global_allows_both(db_path: Path, sessions_root: Path):
    tool = make_tool(db_path, sessions_root, max_scope="global")
    try:
        found = tool.call({"action": "search", "query": "openai tts", "scope": "global"})
        assert found.error is None
        assert any(r["sessionId"] == FLUENTY_SESSION for r in found.result["results"])  # type: ignore[index]
        read = tool.call({"action": "read", "entryId": FLUENTY_ENTRY, "scope": "global"})
        assert read.result is not None and read.result["status"] == "ok"
    finally:
        tool.close()


def test_max_scope_from_env(monkeypatch: pytest.MonkeyPatch, db_path: Path, sessions_root: Path):
    monkeypatch.setenv("JOURNAL_INDEX_MAX_SCOPE", "session")
    tool = make_tool(db_path, sessions_root)
    try:
        answer = tool.call({"action": "search", "scope": "project"})
        assert answer.error is not None and answer.error["code"] == "scope_not_allowed"
        no_session = tool.call({"action": "search"})  # the default narrows to 'session': whose is not known
        assert no_session.error is not None and no_session.error["code"] == "missing_argument"
    finally:
        tool.close()


# -- never raises ---------------------------------------------------------------------

@pytest.mark.parametrize("arguments, code", [
    ({"action": "forget"}, "bad_argument"),
    ({}, "missing_argument"),
    ([1, 2], "bad_argument"),
    ("search", "bad_argument"),
    ({"action": "search", "query": 5}, "bad_argument"),
    ({"action": "search", "offset": "8"}, "bad_argument"),
    ({"action": "search", "offset": True}, "bad_argument"),
    ({"action": "search", "offset": -1}, "bad_argument"),
    ({"action": "search", "offset": 10**12}, "bad_argument"),
    ({"action": "read", "entryId": "b3318842", "offset": 10**12}, "bad_argument"),
    ({"action": "read", "entryId": "b3318842", "sessionId": "01a05d32-b780-77a8-84b6-ccc1caffba94",
      "offset": 10**6}, "bad_argument"),
    ({"action": "search", "since": "last tuesday"}, "bad_argument"),
    ({"action": "search", "until": "2026-13-45"}, "bad_argument"),
    ({"action": "search", "since": "2026-10-02", "until": "2026-10-01"}, "bad_argument"),
    ({"action": "search", "kind": "thought"}, "bad_argument"),
    ({"action": "search", "scope": "universe"}, "bad_argument"),
    ({"action": "search", "sessionId": "../../etc/*"}, "bad_argument"),
    ({"action": "search", "limit": 3}, "bad_argument"),
    ({"action": "read"}, "missing_argument"),
    ({"action": "search", "query": "x" * 5000}, "bad_argument"),
])
def test_malformed_arguments_are_error_answers(shared_tool: MemoryTool, arguments: Any, code: str):
    tool = shared_tool
    answer = tool.call(arguments)
    assert answer.error is not None
    assert answer.error["code"] == code
    assert answer.error["message"] and answer.error["hint"]
    assert body(answer.text).startswith(f"error ({code}): ")
    assert "hint: " in answer.text
    assert answer.as_json()["error"] == answer.error
    assert tool.call({"action": "search", "query": "alembic"}).error is None  # still serving


def test_a_broken_index_file_is_set_aside_not_fatal(sessions_root: Path, capsys: pytest.CaptureFixture[str]):
    db_path = cache_db_path()  # where a file with a destroyed header is still ours
    db_path.parent.mkdir(parents=True)
    db_path.write_bytes(b"this is not a database" * 100)
    tool = make_tool(db_path, sessions_root)
    try:
        answer = tool.call({"action": "search", "query": "alembic"})
        assert answer.error is None and answer.result["results"]  # type: ignore[index]
        assert list(db_path.parent.glob("index.db.corrupt-*"))
    finally:
        tool.close()


def test_a_file_that_is_not_our_index_is_an_error_answer_and_untouched(db_path: Path, sessions_root: Path):
    db_path.write_bytes(b"my notes, not a database\n" * 100)
    tool = make_tool(db_path, sessions_root)
    try:
        answer = tool.call({"action": "search", "query": "alembic"})
        assert answer.error is not None and answer.error["code"] == "index_unavailable"
        assert "not a journal-index index" in answer.error["message"]
    finally:
        tool.close()
    assert db_path.read_bytes() == b"my notes, not a database\n" * 100
    assert sorted(p.name for p in db_path.parent.iterdir() if p.name.startswith("index.db")) == ["index.db"]


def test_corruption_found_mid_call_sets_the_index_aside_and_the_next_call_rebuilds(
        db_path: Path, sessions_root: Path, monkeypatch: pytest.MonkeyPatch):
    tool = make_tool(db_path, sessions_root)
    try:
        assert tool.call({"action": "search", "query": "alembic"}).error is None
        real_search = query.search

        def corrupt_once(*args: Any, **kwargs: Any) -> Any:
            monkeypatch.setattr(query, "search", real_search)
            raise apsw.CorruptError("database disk image is malformed")

        monkeypatch.setattr(query, "search", corrupt_once)  # fault injection: the file went bad mid-query
        broken = tool.call({"action": "search", "query": "alembic"})
        assert broken.error is not None and broken.error["code"] == "index_unavailable"
        assert "rebuilding; retry" in broken.error["message"]
        assert list(db_path.parent.glob("index.db.corrupt-*"))
        again = tool.call({"action": "search", "query": "alembic"})
        assert again.error is None and again.result["results"]  # type: ignore[index]
    finally:
        tool.close()


def test_an_unusable_index_path_is_an_error_answer(tmp_path: Path, sessions_root: Path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    tool = MemoryTool(str(blocker / "index.db"), [sessions_root], cwd=BE_CWD)
    answer = tool.call({"action": "search", "query": "alembic"})
    assert answer.error is not None and answer.error["code"] == "index_unavailable"


def test_missing_session_roots_answer_nothing_found(tmp_path: Path, db_path: Path):
    tool = MemoryTool(str(db_path), [tmp_path / "nowhere"], cwd=BE_CWD)
    try:
        answer = tool.call({"action": "search", "query": "alembic"})
        assert answer.error is None and answer.result["results"] == []  # type: ignore[index]
        assert "index: 0 sessions, current session not found" in answer.text
    finally:
        tool.close()


# -- redaction -------------------------------------------------------------------------

def test_no_planted_secret_leaves_the_tool(db_path: Path, sessions_root: Path):
    secrets = load_secrets(FIXTURES)
    data = json.loads((FIXTURES / "SECRETS.json").read_text())
    tool = make_tool(db_path, sessions_root, max_scope="global")
    answers = []
    try:
        for secret in data["secrets"]:
            answers.append(tool.call({"action": "search", "query": secret["value"][:60], "scope": "global"}))
            answers.append(tool.call({"action": "search", "query": secret["kind"].replace("_", " "),
                                      "scope": "global"}))
            for occurrence in secret["occurrences"]:
                offset: int | None = 0
                while offset is not None:
                    page = tool.call({"action": "read", "entryId": occurrence["entryId"], "scope": "global",
                                      "sessionId": occurrence["sessionId"], "offset": offset})
                    answers.append(page)
                    assert page.result is not None and page.result["status"] == "ok", page.text
                    offset = page.result["nextOffset"]
        answers.append(tool.call({"action": "summaries", "scope": "global"}))
    finally:
        tool.close()
    dumped = "\n".join(json.dumps(a.as_json(), ensure_ascii=False) for a in answers)
    for secret in secrets:
        assert secret not in dumped


# -- journal-index tool ------------------------------------------------------------------

def run_tool(db_path: Path, root: Path, *args: str,
             stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "JOURNAL_INDEX_NOW": NOW}
    return subprocess.run(
        [sys.executable, "-m", "journal_index", "--db", str(db_path), "--sessions", str(root), "tool",
         "--cwd", BE_CWD, *args],
        input=stdin, capture_output=True, text=True, env=env, timeout=60)


def test_tool_command_answers_and_indexes_the_current_journal(db_path: Path, sessions_root: Path):
    first = run_tool(db_path, sessions_root, '{"action": "search", "query": "alembic heads"}')
    assert first.returncode == 0, first.stderr
    answer = json.loads(first.stdout)
    assert set(answer) == {"text", "result", "index"}
    assert answer["result"]["results"]
    path = journal_of(sessions_root, BE_SESSION)
    append_user(path, "wombat deploy checklist", "feed0004")
    append_compaction(path, "feed0008", kept="feed0008")
    second = run_tool(db_path, sessions_root, stdin=json.dumps({"action": "search", "query": "wombat"}))
    assert second.returncode == 0, second.stderr
    again = json.loads(second.stdout)
    assert again["index"]["currentJournal"]["newEntries"] == 2
    assert [r["entryId"] for r in again["result"]["results"]] == ["feed0004"]


def test_tool_command_exit_codes(db_path: Path, sessions_root: Path):
    bad_json = run_tool(db_path, sessions_root, "{action: search")
    assert bad_json.returncode == 2
    assert bad_json.stdout == ""
    assert len(bad_json.stderr.strip().splitlines()) == 1
    not_object = run_tool(db_path, sessions_root, "[1]")
    assert not_object.returncode == 2
    error_answer = run_tool(db_path, sessions_root, '{"action": "search", "scope": "global"}')
    assert error_answer.returncode == 0, error_answer.stderr
    answer = json.loads(error_answer.stdout)
    assert answer["error"]["code"] == "scope_not_allowed"
    assert body(answer["text"]).startswith("error (scope_not_allowed)")
    allowed = run_tool(db_path, sessions_root, '{"action": "search", "scope": "global"}',
                       "--max-scope", "global")
    assert allowed.returncode == 0 and "result" in json.loads(allowed.stdout)


def test_a_query_over_its_time_limit_is_an_error_answer_not_a_hang(tmp_path, monkeypatch) -> None:
    from journal_index.agent import tool as tool_module
    from journal_index.agent.tool import MemoryTool

    sessions = tmp_path / "sessions"
    copy_journal_tree(FIXTURES / "sessions", sessions)
    monkeypatch.setattr(tool_module, "QUERY_SECONDS", 0.0)
    memory = MemoryTool(str(tmp_path / "t.db"), [sessions], cwd="/home/dev/Apps/prjct/prjct-be", host=Host(None))
    try:
        answer = memory.call({"action": "search", "query": "token"}).as_json()
        assert answer["error"]["code"] == "query_timeout"
        monkeypatch.setattr(tool_module, "QUERY_SECONDS", 5.0)
        assert "result" in memory.call({"action": "search", "query": "token"}).as_json()
    finally:
        memory.close()


def test_a_session_file_that_is_a_fifo_is_not_waited_on(tmp_path) -> None:
    from journal_index.formats.pi import header_cwd

    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    assert header_cwd(fifo) is None  # returns at once instead of blocking on the open


def test_a_partial_match_note_counts_the_results_it_shows(tool: MemoryTool):
    """The tool fetches one hit beyond the page to know whether another exists; the note on how
    many hold every term is about the hits shown, never that extra one."""
    answer = tool.call({"action": "search", "query": "600 requests minute bursts"})
    assert answer.result is not None
    shown = answer.result["results"]
    assert len(shown) == SEARCH_LIMIT and answer.result["nextOffset"] == SEARCH_LIMIT  # a full page, more after
    note = next(line for line in body(answer.text).splitlines() if line.startswith("note: "))
    whole, of = (int(n) for n in note.split()[1:5:3])  # "note: N of these M results hold every term; …"
    assert of == len(shown) and 0 < whole < of, note
    assert answer.result["hint"] == note.removeprefix("note: ")


def test_eight_hits_on_real_journals_fit_in_an_answer_the_model_reads_whole(tmp_path: Path):
    """Hosts show the model the whole text (issue 20.1): 8 hits in at most 3,500 characters, signed,
    with no journal path in it, on real Claude Code, Codex and pi journals."""
    from tests.shared_data import shared_dir

    roots = []
    for name in ("agent-journals-real", "pi-journals-real"):
        roots.append(copy_journal_tree(shared_dir() / name, tmp_path / name))
    opened = MemoryTool(str(tmp_path / "index.db"), roots, cwd=str(tmp_path), host=Host(None), max_scope="global")
    try:
        sizes, shortened = {}, {}
        for words in ("git commit", "checkpoint", "compaction summary", "config file", "session"):
            answer = opened.call({"action": "search", "query": words, "scope": "global"})
            assert not answer.is_error, answer.text
            assert answer.result is not None and len(answer.result["results"]) == SEARCH_LIMIT
            body(answer.text)
            assert str(tmp_path) not in answer.text  # no journal path (nor anything else of ours)
            sizes[words] = len(answer.text)
            # The JSON keeps the excerpts as the search gave them (EXCERPT_CHARS at most), however
            # much the text had to shorten its own; it is made (and redacted) when first asked for.
            excerpts = [r["excerpt"] for r in answer.result["results"]]
            assert all(len(e) <= EXCERPT_CHARS for e in excerpts)
            shortened[words] = sum(1 for e in excerpts if e not in answer.text)
        assert max(sizes.values()) <= 3_500, sizes
        assert any(shortened.values()), shortened  # some answer had to shorten its excerpts
    finally:
        opened.close()


def test_a_session_scoped_answer_names_the_session_it_searched(tool: MemoryTool, sessions_root: Path,
                                                               db_path: Path):
    path = journal_of(sessions_root, BE_SESSION)
    own = make_tool(db_path, sessions_root, session_file=str(path))
    try:
        mine = own.call({"action": "search", "query": "alembic", "scope": "session"})
        assert mine.error is None, mine.text
        assert mine.result is not None and mine.result["scope"] == {
            "kind": "session", "root": None, "sessionId": BE_SESSION, "agent": "pi", "file": str(path),
            "cwd": BE_CWD}
    finally:
        own.close()
    other_id = "01a05d32-b780-77a8-84b6-ccc1caffba94"
    other = tool.call({"action": "search", "scope": "session", "sessionId": other_id[:13]})
    assert other.error is None and other.result is not None, other.text
    assert other.result["scope"]["sessionId"] == other_id
    assert other.result["scope"]["file"] == str(journal_of(sessions_root, other_id))
    assert other.result["scope"]["agent"] == "pi"


def append_reply(path: Path, text: str, entry_id: str) -> None:
    line = {"type": "message", "id": entry_id, "parentId": None, "timestamp": "2026-10-14T12:00:05.000Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": text}], "api": "openai-completions",
                        "provider": "scripted", "model": "scripted", "stopReason": "stop",
                        "timestamp": 1791979205000}}
    with open(path, "ab") as handle:
        handle.write(json.dumps(line).encode() + b"\n")


def test_a_reply_that_pastes_an_answer_ranks_below_the_entries_it_copies(db_path: Path, sessions_root: Path):
    """Models paste what they found into their replies: a later session's search must still lead
    with the entries themselves, not with the newer copy (whose recency would lift it above them)."""
    arguments = {"action": "search", "query": "rate limit per token"}
    replying = journal_of(sessions_root, BE_SESSION)
    with contextlib.closing(make_tool(db_path, sessions_root, session_file=str(replying))) as tool:
        first = body(tool.call(arguments).text).splitlines()
    copied = [line.split(" · entry ", 1)[1].split(" ", 1)[0] for line in first if line.startswith("[")]
    assert len(copied) >= 3
    append_reply(replying, "Here is what the history says:\n" + "\n".join(first[1:-1]), "feedc0de")
    later = journal_of(sessions_root, FLUENTY_SESSION)  # another session searches the project later
    with contextlib.closing(make_tool(db_path, sessions_root, session_file=str(later))) as tool:
        again = body(tool.call(arguments).text).splitlines()
    order = [line.split(" · entry ", 1)[1].split(" ", 1)[0] for line in again if line.startswith("[")]
    originals = [n for n, entry in enumerate(order) if entry in copied]
    assert originals, again
    assert order[0] in copied, "\n".join(again)
    if "feedc0de" in order:  # the copy may follow the entries it copies, or fall off the page
        assert order.index("feedc0de") > max(originals), "\n".join(again)


def _long_hits(lengths: list[int]) -> list[query.Hit]:
    words = "the migration ran twice because the lock was not held " * 40
    return [query.Hit(n, f"e{n:07d}", 1791979200000 + n, "assistant", "assistant", None, 0, 0, "/j.jsonl",
                      "s1", BE_CWD, "pi", excerpt=words[:size]) for n, size in enumerate(lengths)]


@pytest.mark.parametrize("lengths", [[480] * 10, [480, 30, 480, 200, 479, 5, 480, 480, 300, 480], [480] * 3,
                                     [100] * 10, [480] * 8 + [2, 1], [480, 480] + [50] * 8])
def test_an_answer_fitted_by_counting_is_the_one_fitted_by_rendering_every_step(lengths: list[int]) -> None:
    """_fitted counts the text's length as excerpts shorten and renders once; the answer (and the
    excerpts left in the hits) are those of rendering after every step. A rendering that shows an
    excerpt twice makes the count come out wrong: then it is done the long way, with the same result."""
    from journal_index.agent.tool import IndexState, _fitted, _fitted_by_rendering
    from journal_index.query.hits import SearchResult
    from journal_index.query.scope import Scope
    from journal_index.text import render

    state = IndexState()

    def text_of(hits: list[query.Hit], twice: bool) -> str:
        page = render.search_text(SearchResult("all", None, Scope("project", root=BE_CWD), hits), render.MODEL)
        return page + ("\n" + "\n".join(h.excerpt for h in hits) if twice else "")

    for twice in (False, True):
        counted, rendered = _long_hits(lengths), _long_hits(lengths)
        expected = _fitted_by_rendering(
            functools.partial(lambda hits, twice: render.signed(text_of(hits, twice) + "\n" + state.text()),
                              rendered, twice), rendered)
        assert _fitted(functools.partial(text_of, counted, twice), counted, state) == expected
        assert [h.excerpt for h in counted] == [h.excerpt for h in rendered]
        assert len(expected) <= 3_500 or min(len(h.excerpt) for h in rendered) <= 160
