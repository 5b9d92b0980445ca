"""A Codex command that outlives its call: its later output, in ``write_stdin`` results naming
only the process, is found by the command that started it, however the journal was split
into passes."""

from __future__ import annotations

from pathlib import Path

import pytest

from journal_index.data.store import Store, open_store
from journal_index.formats import Entry, codex
from journal_index.indexing.indexer import index_file, index_files
from journal_index.query import Filters, Reader, search
from journal_index.query.scope import resolve_scope
from tests.helpers import line_offsets, lines_with, terms_after_a_resumed_pass
from tests.test_codex_format import THREAD, TS, item, line

COMMAND = "jq -r .type /tmp/snapfile.ndjson | sort | uniq -c"


def _call(call_id: str, name: str, arguments: str) -> bytes:
    return item({"type": "function_call", "name": name, "arguments": arguments, "call_id": call_id})


def _output(call_id: str, text: str) -> bytes:
    return item({"type": "function_call_output", "call_id": call_id, "output": text})


def _running(process: int) -> str:
    return f"Chunk ID: e859d2\nWall time: 1.0022 seconds\nProcess running with session ID {process}\nOutput:\n"


def _poll(call_id: str, process: int) -> bytes:
    return _call(call_id, "write_stdin", f'{{"session_id":{process},"chars":"","yield_time_ms":1000}}')


LINES = [
    line("session_meta", {"id": THREAD, "cwd": "/tmp/proj", "timestamp": TS}),
    _call("call_start", "exec_command", f'{{"cmd":"{COMMAND}"}}'),
    _output("call_start", _running(22173)),
    _call("call_other", "exec_command", '{"cmd":"cargo build --release"}'),
    _output("call_other", _running(515)),
    _poll("call_poll1", 22173),
    _output("call_poll1", _running(22173)),  # still running: the start is further back
    _poll("call_poll2", 22173),
    _output("call_poll2", "Chunk ID: 2f72b4\nProcess exited with code 0\nOutput:\n 760 file\n179914 relation\n"),
    _poll("call_poll3", 515),
    _output("call_poll3", "Process exited with code 0\nOutput:\nFinished release profile\n"),
]
NAME = "rollout-2026-11-30T12-38-07-poll.jsonl"


def test_the_two_ends_are_marked() -> None:
    poll = codex.parse_line(LINES[5], 0)
    assert isinstance(poll, Entry) and poll.calls[0].reads_process == "22173"
    started = codex.parse_line(LINES[2], 0)
    assert isinstance(started, Entry) and started.started_process == "22173"
    done = codex.parse_line(LINES[8], 0)
    assert isinstance(done, Entry) and done.started_process is None
    command = codex.parse_line(LINES[1], 0)
    assert isinstance(command, Entry) and command.calls[0].reads_process is None


def test_poll_outputs_are_found_by_the_command_that_started_them(tmp_path: Path, store: Store) -> None:
    path = tmp_path / NAME
    path.write_bytes(b"\n".join(LINES) + b"\n")
    index_file(store, path)
    offsets = line_offsets(LINES)
    # the start's own result, both polls of 22173 (the first still running); not the other process's
    assert lines_with(store, "snapfile") == {offsets[1], offsets[2], offsets[6], offsets[8]}
    assert lines_with(store, "cargo") == {offsets[3], offsets[4], offsets[10]}


@pytest.mark.parametrize("split", range(2, len(LINES)))
def test_a_pass_that_resumes_mid_journal_files_them_alike(tmp_path: Path, store: Store, split: int) -> None:
    whole = tmp_path / "whole" / NAME
    whole.parent.mkdir()
    whole.write_bytes(b"\n".join(LINES) + b"\n")
    index_file(store, whole)
    expected = {w: lines_with(store, w) for w in ("snapfile", "cargo")}
    assert terms_after_a_resumed_pass(tmp_path, NAME, LINES, split, ("snapfile", "cargo")) == expected


def test_parallel_workers_file_them_alike(tmp_path: Path, store: Store) -> None:
    """The first pass over many journals parses them in worker processes: same terms."""
    path = tmp_path / NAME
    path.write_bytes(b"\n".join(LINES) + b"\n")
    index_file(store, path)
    expected = lines_with(store, "snapfile")
    assert line_offsets(LINES)[8] in expected
    pooled = open_store(str(tmp_path / "pooled.db"))
    try:
        index_files(pooled, [str(path)], workers=2)
        assert lines_with(pooled, "snapfile") == expected
    finally:
        pooled.conn.close()


def test_a_start_far_before_the_pass_is_found_once(tmp_path: Path, store: Store) -> None:
    """The start lies beyond the first, small read before the pass (the whole window is read),
    with lines naming the process number between: the resumed pass still files the poll."""
    filler = [_call("call_big", "exec_command", '{"cmd":"cat big.log"}'),
              _output("call_big", "22173 " + "x" * 100_000)]  # names the number, starts nothing
    lines = [*LINES[:5], *filler, *LINES[5:]]
    split = 5 + len(filler)
    whole = tmp_path / "whole" / NAME
    whole.parent.mkdir()
    whole.write_bytes(b"\n".join(lines) + b"\n")
    index_file(store, whole)
    expected = lines_with(store, "snapfile")
    assert len(expected) == 4
    assert terms_after_a_resumed_pass(tmp_path, NAME, lines, split, ("snapfile",)) == {"snapfile": expected}


def test_the_reranker_reads_a_poll_led_by_its_command(tmp_path: Path, store: Store) -> None:
    """A poll was found by its command's words; re-ranking reads them there too (proximity and
    pairs), not only the poll's own ``write_stdin`` call. The other process's poll is not led
    by this command."""
    path = tmp_path / NAME
    path.write_bytes(b"\n".join(LINES) + b"\n")
    index_file(store, path)
    offsets = line_offsets(LINES)
    hits = search(store, "sort uniq snapfile", Filters(resolve_scope(store, "global", "/")), limit=10).hits
    poll = next(h for h in hits if h.offset == offsets[8])
    assert poll.explain.get("proximity", 0) > 0 and poll.explain.get("pairs", 0) > 0
    reader = Reader(store)
    assert COMMAND in (reader.scoring_text(poll) or "")
    other = next(h for h in search(store, "release profile", Filters(resolve_scope(store, "global", "/"))).hits
                 if h.offset == offsets[10])
    led = reader.scoring_text(other) or ""
    assert "cargo build --release" in led and "snapfile" not in led
    # what a read shows is unchanged: the line and its own call
    assert COMMAND not in (reader.verified_text(poll) or "")
