"""A Claude Code command run in the background: what it printed, read later by TaskOutput,
BashOutput, or a command or Read naming its output file, is found by the command that started
it, however the journal was split into passes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from journal_index.data.store import Store, open_store
from journal_index.formats import Entry, claude
from journal_index.indexing.indexer import index_file, index_files
from tests.helpers import line_offsets, lines_with, terms_after_a_resumed_pass
from tests.test_claude_format import assistant, user

PROJECT = "-home-dev-proj"
NAME = f"{PROJECT}/b4bfcc52-ce4c-440e-9fda-87887ce88c5e.jsonl"
OUTPUT_DIR = "/tmp/claude-1000/-home-dev-proj/tasks"


def _call(n: int, name: str, arguments: dict[str, Any]) -> bytes:
    return assistant({"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": arguments}, uuid=f"a-{n}")


def _result(n: int, text: str) -> bytes:
    return user([{"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": text}], uuid=f"u-{n}")


def _started(task: str) -> str:
    return f"Command running in background with ID: {task}. Output is being written to: {OUTPUT_DIR}/{task}.output"


LINES = [
    user("start the api and build the release", uuid="u-0"),
    _call(1, "Bash", {"command": "pnpm --filter api dev", "run_in_background": True}),
    _result(1, _started("b5f3e7a")),
    _call(2, "Bash", {"command": "cargo build --release", "run_in_background": True}),
    _result(2, _started("bq7k2m9x1")),
    _call(3, "TaskOutput", {"task_id": "b5f3e7a", "block": False}),
    _result(3, "Nest application successfully started"),
    _call(4, "Bash", {"command": f"grep -i listening {OUTPUT_DIR}/b5f3e7a.output | tail -1"}),
    _result(4, "Listening on port 3000"),
    _call(5, "Read", {"file_path": f"{OUTPUT_DIR}/bq7k2m9x1.output"}),
    _result(5, "Finished release profile [optimized]"),
    _call(6, "BashOutput", {"bash_id": "bq7k2m9x1"}),
    _result(6, "warning: unused variable"),
]


def _write(path: Path, lines: list[bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _index_whole(tmp_path: Path, store: Store, lines: list[bytes]) -> None:
    root = tmp_path / "whole" / ".claude" / "projects"
    assert index_file(store, _write(root / NAME, lines), [root]).error is None


def test_the_two_ends_are_marked() -> None:
    started = claude.parse_line(LINES[2], 0)
    assert isinstance(started, Entry) and started.started_process == "b5f3e7a"
    polls = {n: claude.parse_line(LINES[n], 0) for n in (5, 7, 9, 11)}
    assert {n: e.calls[0].reads_process for n, e in polls.items() if isinstance(e, Entry)} == {
        5: "b5f3e7a", 7: "b5f3e7a", 9: "bq7k2m9x1", 11: "bq7k2m9x1"}
    command = claude.parse_line(LINES[1], 0)
    assert isinstance(command, Entry) and command.calls[0].reads_process is None
    done = claude.parse_line(LINES[6], 0)
    assert isinstance(done, Entry) and done.started_process is None
    # a command that merely mentions a tasks folder, or a task id of the wrong shape, reads nothing
    for arguments in ({"command": "ls /tmp/tasks"}, {"command": "cat tasks/a b.output"}):
        other = claude.parse_line(_call(9, "Bash", arguments), 0)
        assert isinstance(other, Entry) and other.calls[0].reads_process is None
    odd = claude.parse_line(_call(9, "TaskOutput", {"task_id": "../../etc/passwd"}), 0)
    assert isinstance(odd, Entry) and odd.calls[0].reads_process is None


def test_later_output_is_found_by_the_command_that_started_it(tmp_path: Path, store: Store) -> None:
    _index_whole(tmp_path, store, LINES)
    offsets = line_offsets(LINES)
    # the start's call and result, and the results of both reads of b5f3e7a; not the other task's
    assert lines_with(store, "pnpm") == {offsets[1], offsets[2], offsets[6], offsets[8]}
    assert lines_with(store, "cargo") == {offsets[3], offsets[4], offsets[10], offsets[12]}


@pytest.mark.parametrize("split", range(2, len(LINES)))
def test_a_pass_that_resumes_mid_journal_files_them_alike(tmp_path: Path, store: Store, split: int) -> None:
    _index_whole(tmp_path, store, LINES)
    expected = {w: lines_with(store, w) for w in ("pnpm", "cargo")}
    resumed = terms_after_a_resumed_pass(tmp_path, f".claude/projects/{NAME}", LINES, split, ("pnpm", "cargo"),
                                         roots=(Path(".claude/projects"),))
    assert resumed == expected


def test_parallel_workers_file_them_alike(tmp_path: Path, store: Store) -> None:
    """The first pass over many journals parses them in worker processes: same terms."""
    _index_whole(tmp_path, store, LINES)
    expected = lines_with(store, "pnpm")
    assert line_offsets(LINES)[8] in expected
    root = tmp_path / "pooled" / ".claude" / "projects"
    path = _write(root / NAME, LINES)
    pooled = open_store(str(tmp_path / "pooled.db"))
    try:
        index_files(pooled, [str(path)], roots=[root], workers=2)
        assert lines_with(pooled, "pnpm") == expected
    finally:
        pooled.conn.close()
