"""Each question linked to its turn's reply at index time (entries.reply, files.open_turn;
migration 0012): across blocks and passes, calls never taken for replies, rewrites, removal,
an index migrated in place, and the ranking reading the link."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from journal_index.data.store import Store, open_store
from journal_index.indexing import journal_blocks, journal_pass
from journal_index.indexing.indexer import discover, index_file, index_files
from journal_index.query import Filters, search
from journal_index.query.scope import resolve_scope
from tests.conftest import FIXTURES
from tests.helpers import entry_rows, scratch_snapshot

BE1 = "--home-dev-Apps-prjct-prjct-be--/2026-09-01T13-40-00-000Z_01a05d32-b780-77a8-84b6-ccc1caffba94.jsonl"
FIXTURE_ROOTS = ("sessions", "legacy", "agents/claude", "agents/codex", "eval-sessions", "heldout")


# -- what the index holds, and what it should hold ---------------------------------------------


def linked(store: Store) -> dict[tuple[str, int], int | None]:
    """(journal, question offset) -> the offset of the reply its row links to."""
    return {(path, offset): reply for path, offset, reply in store.rows(
        "SELECT f.path, q.offset, r.offset FROM entries q JOIN files f ON f.id = q.file_id "
        "LEFT JOIN entries r ON r.rowid = q.reply WHERE q.kind = 'user'")}


def by_definition(store: Store) -> dict[tuple[str, int], int | None]:
    """The same, read forward from each question over the whole journal: the last assistant
    entry before the next user entry that no entry of the journal links to."""
    out: dict[tuple[str, int], int | None] = {}
    for file_id, path in store.rows("SELECT id, path FROM files"):
        rows = store.rows("SELECT offset, kind, link_offset FROM entries WHERE file_id = ? ORDER BY offset", (file_id,))
        calls = {link for _, _, link in rows if link is not None}
        for i, (offset, kind, _) in enumerate(rows):
            if kind != "user":
                continue
            reply = None
            for later, later_kind, _ in rows[i + 1:]:
                if later_kind == "user":
                    break
                if later_kind == "assistant" and later not in calls:
                    reply = later
            out[(path, offset)] = reply
    return out


def replies(store: Store) -> dict[str, str | None]:
    """Question entry id -> its reply's entry id."""
    return dict(store.rows("SELECT q.entry_id, r.entry_id FROM entries q LEFT JOIN entries r ON r.rowid = q.reply "
                           "WHERE q.kind = 'user'"))


def open_turns(store: Store) -> dict[str, str | None]:
    """Journal -> the entry id of its last user entry, as files.open_turn names it."""
    return dict(store.rows("SELECT f.path, q.entry_id FROM files f LEFT JOIN entries q ON q.rowid = f.open_turn"))


def last_questions(store: Store) -> dict[str, str | None]:
    return dict(store.rows("SELECT f.path, (SELECT q.entry_id FROM entries q WHERE q.file_id = f.id "
                           "AND q.kind = 'user' ORDER BY q.offset DESC LIMIT 1) FROM files f"))


def assert_linked_as_defined(store: Store) -> None:
    assert linked(store) == by_definition(store)
    assert open_turns(store) == last_questions(store)


# -- small journals of each format ----------------------------------------------------------------

PI_HEADER = {"type": "session", "version": 3, "id": "5e5510a0-0000-4000-8000-000000000001",
             "timestamp": "2026-09-01T10:00:00.000Z", "cwd": "/home/dev/proj"}


def _line(obj: dict[str, Any]) -> bytes:
    return (json.dumps(obj) + "\n").encode()


def pi(n: int, role: str, text: str | None = None, call: str | None = None, answers: str | None = None) -> bytes:
    """A pi message line with id ``n`` (as eight hex digits): text, a tool call, or a tool result."""
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    message: dict[str, Any] = {"role": role, "content": content}
    if call is not None:
        content.append({"type": "toolCall", "id": call, "name": "bash", "arguments": {"command": f"ls {call}"}})
    if answers is not None:
        message.update(toolCallId=answers, toolName="bash", isError=False)
    return _line({"type": "message", "id": f"{n:08x}", "parentId": None,
                  "timestamp": f"2026-09-01T10:{n // 60 % 60:02d}:{n % 60:02d}.000Z", "message": message})


def pi_id(n: int) -> str:
    return f"{n:08x}"


def grow(store: Store, path: Path, *parts: bytes) -> None:
    """Append to the journal and index it: one pass per call."""
    with path.open("ab") as handle:
        handle.write(b"".join(parts))
    assert index_file(store, path).error is None


def assert_as_from_scratch(store: Store, path: Path) -> None:
    assert entry_rows(store) == scratch_snapshot([path])[0]  # entry_rows compares each reply's offset


# -- the tests ------------------------------------------------------------------------------------


def test_every_question_of_every_fixture_journal_links_its_turns_last_reply(store: Store, tmp_path: Path) -> None:
    report = index_files(store, discover([FIXTURES / root for root in FIXTURE_ROOTS]))
    assert report.errors == []
    assert_linked_as_defined(store)
    with_reply = dict(store.rows("SELECT f.format, count(*) FROM entries q JOIN files f ON f.id = q.file_id "
                                 "WHERE q.kind = 'user' AND q.reply IS NOT NULL GROUP BY f.format"))
    assert set(with_reply) == {"pi", "claude", "codex"}


def test_the_reply_arriving_in_a_later_pass_replaces_what_the_first_linked(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "grows.jsonl"
    grow(store, path, _line(PI_HEADER), pi(1, "user", "where is the zorblax config?"),
         pi(2, "assistant", "let me look", call="c1"))
    assert replies(store) == {pi_id(1): pi_id(2)}  # no result yet: nothing says it is a call
    grow(store, path, pi(3, "toolResult", "etc/zorblax.toml", answers="c1"))
    assert replies(store) == {pi_id(1): None}  # a call, then: no reply so far
    grow(store, path, pi(4, "assistant", "It is in etc/zorblax.toml."))
    assert replies(store) == {pi_id(1): pi_id(4)}
    grow(store, path, pi(5, "assistant", "Shall I change it?"))  # later in the same turn: the last one
    assert replies(store) == {pi_id(1): pi_id(5)}
    grow(store, path, pi(6, "user", "yes, please"), pi(7, "assistant", "Done."))
    assert replies(store) == {pi_id(1): pi_id(5), pi_id(6): pi_id(7)}
    assert open_turns(store) == {str(path): pi_id(6)}
    assert_linked_as_defined(store)
    assert_as_from_scratch(store, path)


@pytest.mark.parametrize("passes", ["one", "several"])
def test_a_call_answered_after_the_next_question_is_no_reply(store: Store, tmp_path: Path, passes: str) -> None:
    path = tmp_path / "late.jsonl"
    first = [_line(PI_HEADER), pi(1, "user", "run the suite?"), pi(2, "assistant", "running it"),
             pi(3, "assistant", "and the linter", call="c1")]
    then = [pi(4, "user", "and the docs?"), pi(5, "toolResult", "lint ok", answers="c1")]  # answers the turn before
    if passes == "one":
        grow(store, path, *first, *then)
    else:
        grow(store, path, *first)
        grow(store, path, then[0])
        assert replies(store) == {pi_id(1): pi_id(3), pi_id(4): None}
        grow(store, path, then[1])
    assert replies(store) == {pi_id(1): pi_id(2), pi_id(4): None}
    assert_linked_as_defined(store)
    assert_as_from_scratch(store, path)


def claude(n: int, kind: str, content: Any) -> bytes:
    return _line({"parentUuid": None, "isSidechain": False, "cwd": "/home/dev/proj",
                  "sessionId": "5e55a0b1-0000-4000-8000-00000000c1a0", "type": kind,
                  "uuid": f"c1a0de00-0000-4000-8000-{n:012x}", "timestamp": f"2026-09-01T10:00:{n:02d}.000Z",
                  "message": {"role": kind, "content": content}})


def claude_id(n: int) -> str:
    return f"c1a0de00-0000-4000-8000-{n:012x}"


@pytest.mark.parametrize("passes", ["one", "line by line"])
def test_a_turn_whose_last_assistant_entry_is_a_call_links_the_one_before(store: Store, tmp_path: Path,
                                                                           passes: str) -> None:
    folder = tmp_path / "claude" / "projects" / "-home-dev-proj"
    folder.mkdir(parents=True)
    path = folder / "5e55a0b1-0000-4000-8000-00000000c1a0.jsonl"
    lines = [
        claude(1, "user", "why does the build fail?"),
        claude(2, "assistant", [{"type": "text", "text": "Checking the log."}]),
        claude(3, "assistant", [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "make"}}]),
        claude(4, "user", [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "error: missing zlib"}]),
    ]
    for chunk in ([b"".join(lines)] if passes == "one" else lines):
        grow(store, path, chunk)
    assert replies(store) == {claude_id(1): claude_id(2)}
    assert_linked_as_defined(store)
    assert_as_from_scratch(store, path)


def test_parallel_calls_answered_in_a_later_pass_are_no_replies(store: Store, tmp_path: Path) -> None:
    folder = tmp_path / "claude" / "projects" / "-home-dev-proj"
    folder.mkdir(parents=True)
    path = folder / "5e55a0b1-0000-4000-8000-00000000c1a0.jsonl"
    grow(store, path, claude(1, "user", "which tests are slow?"),
         claude(2, "assistant", [{"type": "text", "text": "Timing both suites."}]),
         claude(3, "assistant", [{"type": "tool_use", "id": "toolu_a", "name": "Bash", "input": {"command": "a"}}]),
         claude(4, "assistant", [{"type": "tool_use", "id": "toolu_b", "name": "Bash", "input": {"command": "b"}}]))
    assert replies(store) == {claude_id(1): claude_id(4)}
    grow(store, path, claude(5, "user", [{"type": "tool_result", "tool_use_id": "toolu_a", "content": "12 s"}]),
         claude(6, "user", [{"type": "tool_result", "tool_use_id": "toolu_b", "content": "40 s"}]))
    assert replies(store) == {claude_id(1): claude_id(2)}
    assert_linked_as_defined(store)
    assert_as_from_scratch(store, path)


def codex(n: int, kind: str, payload: dict[str, Any]) -> bytes:
    return _line({"timestamp": f"2026-09-01T10:00:{n:02d}.000Z", "type": kind, "payload": payload})


def test_a_codex_turn_growing_across_passes_links_its_final_message(store: Store, tmp_path: Path) -> None:
    folder = tmp_path / "codex" / "sessions" / "2026" / "09" / "01"
    folder.mkdir(parents=True)
    thread = "01a22c00-0000-7000-8000-0000000c0de0"
    path = folder / f"rollout-2026-09-01T10-00-00-{thread}.jsonl"
    grow(store, path, codex(0, "session_meta", {"id": thread, "timestamp": "2026-09-01T10:00:00.000Z",
                                                 "cwd": "/home/dev/proj"}),
         codex(1, "event_msg", {"type": "user_message", "message": "which port does the server use?"}),
         codex(2, "response_item", {"type": "function_call", "name": "shell", "call_id": "call_1",
                                    "arguments": json.dumps({"command": ["grep", "port", "server.toml"]})}))
    grow(store, path, codex(3, "response_item", {"type": "function_call_output", "call_id": "call_1",
                                                 "output": "port = 8443"}))
    assert list(replies(store).values()) == [None]  # the call is no reply
    grow(store, path, codex(4, "response_item", {"type": "message", "role": "assistant",
                                                 "content": [{"type": "output_text", "text": "Port 8443."}]}))
    final = store.value("SELECT entry_id FROM entries WHERE kind = 'assistant' ORDER BY offset DESC LIMIT 1")
    assert list(replies(store).values()) == [final]
    assert_linked_as_defined(store)
    assert_as_from_scratch(store, path)


def test_small_blocks_and_transactions_link_as_one_block_does(store: Store, sessions_root: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(journal_blocks, "CHUNK_BYTES", 512)
    monkeypatch.setattr(journal_pass, "GROUP_CHARS", 256)
    path = sessions_root / BE1
    index_file(store, path)
    assert store.value("SELECT count(*) FROM entries WHERE reply IS NOT NULL") > 5
    assert_linked_as_defined(store)
    assert_as_from_scratch(store, path)


def test_a_rewritten_journal_links_only_its_new_turns(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "rewritten.jsonl"
    grow(store, path, _line(PI_HEADER), pi(1, "user", "first question?"), pi(2, "assistant", "first answer"),
         pi(3, "user", "second question?"), pi(4, "assistant", "second answer"))
    path.write_bytes(_line({**PI_HEADER, "id": "5e5510a0-0000-4000-8000-000000000002"})
                     + pi(11, "user", "another question?") + pi(12, "assistant", "another answer", call="c9"))
    assert index_file(store, path).reset
    assert replies(store) == {pi_id(11): pi_id(12)}
    assert open_turns(store) == {str(path): pi_id(11)}
    grow(store, path, pi(13, "toolResult", "out", answers="c9"))
    assert replies(store) == {pi_id(11): None}
    assert_as_from_scratch(store, path)


def test_a_removed_journal_takes_its_links_with_it(indexed_store: Store, sessions_root: Path) -> None:
    path = sessions_root / BE1
    assert store_questions(indexed_store, path) > 0
    path.unlink()
    assert index_file(indexed_store, path).removed
    assert store_questions(indexed_store, path) == 0
    dangling = indexed_store.value("SELECT count(*) FROM entries q WHERE q.reply IS NOT NULL AND NOT EXISTS "
                                   "(SELECT 1 FROM entries r WHERE r.rowid = q.reply AND r.file_id = q.file_id)")
    assert dangling == 0
    assert_linked_as_defined(indexed_store)


def store_questions(store: Store, path: Path) -> int:
    return int(store.value("SELECT count(*) FROM entries q JOIN files f ON f.id = q.file_id "
                           "WHERE f.path = ? AND q.reply IS NOT NULL", (str(path),), default=0))


def test_an_index_from_before_the_links_is_linked_in_place(tmp_path: Path) -> None:
    db = tmp_path / "older.db"
    store = open_store(str(db))
    index_files(store, discover([FIXTURES / root for root in FIXTURE_ROOTS]))
    expected = (entry_rows(store), open_turns(store))
    # the index as schema 11 left it: no links (a test may set user_version back; DESIGN §4)
    store.conn.execute("ALTER TABLE entries DROP COLUMN reply; ALTER TABLE files DROP COLUMN open_turn; "
                       "PRAGMA user_version = 11")
    store.conn.close()
    store = open_store(str(db))
    try:
        assert store.schema_version >= 12
        assert (entry_rows(store), open_turns(store)) == expected
        assert_linked_as_defined(store)
    finally:
        store.close()


def test_a_question_whose_reply_comes_after_a_long_run_of_calls_hands_it_its_score(store: Store,
                                                                                    tmp_path: Path) -> None:
    """The reply is found however long the turn (a look through the entries after the question
    stopped after 60)."""
    path = tmp_path / "long-turn.jsonl"
    lines = [_line(PI_HEADER), pi(1, "user", "where does the quillfeather daemon keep its spool?")]
    for n in range(2, 2 + 2 * 40, 2):
        lines += [pi(n, "assistant", None, call=f"c{n}"),
                  pi(n + 1, "toolResult", f"nothing in dir{n}", answers=f"c{n}")]
    lines.append(pi(200, "assistant", "Found it: under /var/lib/qf."))
    grow(store, path, *lines)
    assert replies(store)[pi_id(1)] == pi_id(200)
    hits = search(store, "which folder holds the spool of quillfeather?",
                  Filters(resolve_scope(store, "global")), limit=5).hits
    reply = next((h for h in hits if h.entry_id == pi_id(200)), None)
    assert reply is not None and "reply_link" in reply.explain


@pytest.mark.parametrize("fail_at", [2, 5])
def test_a_pass_that_crashed_midway_is_linked_by_the_next_as_from_scratch(store: Store, sessions_root: Path,
                                                                         monkeypatch: pytest.MonkeyPatch,
                                                                         fail_at: int) -> None:
    path = sessions_root / BE1
    monkeypatch.setattr(journal_blocks, "CHUNK_BYTES", 4096)
    monkeypatch.setattr(journal_pass, "GROUP_CHARS", 2048)
    real_advance = journal_pass.index_sql.advance
    calls = {"n": 0}

    def crashing_advance(*args: Any, **kwargs: Any) -> None:  # the block's links are written by then
        calls["n"] += 1
        if calls["n"] == fail_at:
            raise KeyboardInterrupt("simulated crash")
        real_advance(*args, **kwargs)

    monkeypatch.setattr(journal_pass.index_sql, "advance", crashing_advance)
    with pytest.raises(KeyboardInterrupt):
        index_file(store, path)
    assert store.value("SELECT count(*) FROM entries") > 0
    monkeypatch.setattr(journal_pass.index_sql, "advance", real_advance)
    index_file(store, path)
    assert_linked_as_defined(store)
    assert_as_from_scratch(store, path)
