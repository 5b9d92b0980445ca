"""A journal line too long to hold whole is indexed by its head and tail, and read the same way.

The default run lowers the limit (JOURNAL_INDEX_GIANT_LINE_BYTES, or the module constant in
process) so a few-MB line is a giant; the slow test writes a real 200 MB line and bounds the
peak memory of the indexer and its workers.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from journal_index import query
from journal_index.data.store import Store, open_store
from journal_index.formats import Entry, get_format
from journal_index.indexing import indexer, journal_blocks
from journal_index.indexing.indexer import index_file
from journal_index.query.scope import Scope
from journal_index.text import giant_line
from tests.helpers import scratch_snapshot, secret_is_searchable, snapshot
from tests.reliability_helpers import run_cli

CWD = "/home/dev/Apps/giant"
NOTE = "\n\n[… journal-index: this journal line is "
SECRET_HEAD = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
SECRET_TAIL = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
FILLER = " ".join(f"fill{n % 997}" for n in range(5000))  # ~40 KB of words found nowhere else


def dump(obj: dict[str, Any]) -> bytes:
    return orjson.dumps(obj) + b"\n"


def big_output(megabytes: float) -> str:
    """Tool output: head words and a secret, a long middle, a middle word, tail words and a secret."""
    middle = []
    size = 0
    while size < megabytes * 1e6 / 2:
        middle.append(FILLER)
        size += len(FILLER) + 1
    return (f"giantheadword {SECRET_HEAD} begins\n" + "\n".join(middle) + "\nonlyinthemiddle\n"
            + "\n".join(middle) + f"\nclosing {SECRET_TAIL} gianttailword")


def pi_journal(path: Path, output: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    ts = "2026-09-01T10:00:00.000Z"
    path.write_bytes(
        dump({"type": "session", "version": 3, "id": "giant-pi", "timestamp": ts, "cwd": CWD})
        + dump({"type": "message", "id": "aaaa0001", "parentId": None, "timestamp": ts,
                "message": {"role": "assistant", "content": [
                    {"type": "toolCall", "id": "call-1", "name": "bash", "arguments": {"command": "cat huge.log"}}]}})
        + dump({"type": "message", "id": "aaaa0002", "parentId": "aaaa0001", "timestamp": ts,
                "message": {"role": "toolResult", "toolCallId": "call-1", "toolName": "bash",
                            "content": [{"type": "text", "text": output}], "isError": False}})
        + dump({"type": "message", "id": "aaaa0003", "parentId": "aaaa0002", "timestamp": ts,
                "message": {"role": "user", "content": "afterthegiant question"}}))


def claude_journal(path: Path, output: str) -> None:
    """Claude Code keeps a result twice on its line: in the message and in toolUseResult."""
    path.parent.mkdir(parents=True, exist_ok=True)
    common = {"isSidechain": False, "userType": "external", "cwd": CWD,
              "sessionId": "5e55a0b1-0000-4000-8000-0000000000aa", "version": "2.1.332"}
    ids = [f"c1a0de00-0000-4000-8000-{n:012x}" for n in range(4)]
    path.write_bytes(
        dump({"parentUuid": None, **common, "type": "user", "uuid": ids[0], "timestamp": "2026-09-01T10:00:00.000Z",
              "message": {"role": "user", "content": "show me the log"}})
        + dump({"parentUuid": ids[0], **common, "type": "assistant", "uuid": ids[1],
                "timestamp": "2026-09-01T10:00:01.000Z",
                "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x", "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "cat huge.log"}}]}})
        + dump({"parentUuid": ids[1], **common, "type": "user", "uuid": ids[2], "timestamp": "2026-09-01T10:00:02.000Z",
                "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                                         "content": [{"type": "text", "text": output}]}]},
                "toolUseResult": {"stdout": output, "stderr": "", "interrupted": False}})
        + dump({"parentUuid": ids[2], **common, "type": "user", "uuid": ids[3], "timestamp": "2026-09-01T10:00:03.000Z",
                "message": {"role": "user", "content": "afterthegiant question"}}))


AGENTS = {
    "pi": (lambda root: root / "--home-dev-Apps-giant--" / "giant.jsonl", pi_journal, "aaaa0002"),
    "claude": (lambda root: root / "-home-dev-Apps-giant" / "5e55a0b1-0000-4000-8000-0000000000aa.jsonl",
               claude_journal, "c1a0de00-0000-4000-8000-000000000002"),
}


def cli(db: Path, root: Path, *args: str, env: dict[str, str]) -> Any:
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        run = run_cli(db, root, *args, "--json", timeout=600)
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    assert run.clean(), run.stderr
    for secret in (SECRET_HEAD, SECRET_TAIL):
        assert secret not in run.stdout and secret not in run.stderr
    return json.loads(run.stdout), run.peak_rss_mb


@pytest.mark.parametrize("workers", ["0", "2"])
@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_a_giant_line_is_found_by_its_head_and_tail_and_read_marked(tmp_path: Path, agent: str, workers: str) -> None:
    where, write, giant_id = AGENTS[agent]
    root = tmp_path / "sessions"
    journal = where(root)
    write(journal, big_output(3))
    assert max(len(line) for line in journal.read_bytes().split(b"\n")) > 3_000_000
    db = tmp_path / "index.db"
    env = {giant_line.GIANT_LINE_ENV: "1000000", indexer.WORKERS_ENV: workers}

    report, _ = cli(db, root, "index", env=env)
    assert report["skippedLines"] == 0 and report["errors"] == []

    def ids(query: str) -> list[str]:
        found, _ = cli(db, root, "search", query, "--scope", "global", env=env)
        return [r["entryId"] for r in found["results"]]

    assert ids("giantheadword") == [giant_id]
    assert ids("gianttailword") == [giant_id]
    assert ids("onlyinthemiddle") == []  # the middle is never read, so it has no terms
    assert ids("afterthegiant") != []
    page, _ = cli(db, root, "read", giant_id, "--scope", "global", env=env)
    assert page["status"] == "ok" and "giantheadword" in page["text"][:200]
    if agent == "pi":
        assert page["text"].startswith("bash cat huge.log\n")  # the result is led by its call, as any is
    last, _ = cli(db, root, "read", giant_id, "--scope", "global", "--offset", str(page["totalChars"] - 100),
                  env=env)
    assert last["text"].endswith("gianttailword") and last["nextOffset"] is None

    store = open_store(str(db))
    try:
        for secret in (SECRET_HEAD, SECRET_TAIL):
            assert secret_is_searchable(store, secret) is None
        assert store.value("SELECT length FROM entries WHERE entry_id = ?", (giant_id,)) > 3_000_000
        os.environ[giant_line.GIANT_LINE_ENV] = env[giant_line.GIANT_LINE_ENV]
        try:
            whole = query.read(store, giant_id, Scope("global"), page_chars=10**8)
        finally:
            del os.environ[giant_line.GIANT_LINE_ENV]
    finally:
        store.close()
    text = whole["text"]
    assert text.count(NOTE) == 1 and "its middle is left out here" in text
    assert text.index("giantheadword") < text.index(NOTE) < text.index("gianttailword")
    assert text.endswith("gianttailword") and "onlyinthemiddle" not in text
    assert text.count("[REDACTED") >= 2  # both secrets, each printed nowhere (checked in cli())


def test_a_giant_read_in_many_pieces_or_resumed_indexes_as_from_scratch(
        store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(giant_line, "GIANT_LINE_BYTES", 200_000)
    journal = tmp_path / "sessions" / "--home-dev-Apps-giant--" / "giant.jsonl"
    pi_journal(journal, big_output(0.6))
    whole = journal.read_bytes()
    giant_end = whole.index(b"\n", whole.index(b"aaaa0002")) + 1

    # Written up to the middle of the giant: the cursor waits before it.
    journal.write_bytes(whole[:giant_end - 1000])
    monkeypatch.setattr(journal_blocks, "CHUNK_BYTES", 4096)  # the giant arrives over many reads
    first = index_file(store, journal)
    assert first.entries == 1 and first.skipped == 0
    assert store.value("SELECT cursor FROM files") == whole.index(b'{"type":"message","id":"aaaa0002"')
    journal.write_bytes(whole)
    second = index_file(store, journal)
    assert second.entries == 2 and second.skipped == 0
    assert store.value("SELECT cursor FROM files") == len(whole)

    monkeypatch.setattr(journal_blocks, "CHUNK_BYTES", 1 << 20)  # the giant inside one read
    assert snapshot(store) == scratch_snapshot([journal])


def test_lines_the_head_cannot_be_cut_into_are_skipped_and_counted(
        store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(giant_line, "GIANT_LINE_BYTES", 10_000)
    journal = tmp_path / "sessions" / "--home-dev-Apps-giant--" / "odd.jsonl"
    pi_journal(journal, "short")
    with journal.open("ab") as out:
        out.write(b"x" * 50_000 + b"\n")  # not JSON
        out.write(b'{"type":"message","id":"bbbb0001","n":[' + b"1," * 30_000 + b"1]}\n")  # no string to cut
        out.write(dump({"type": "message", "id": "bbbb0002", "parentId": None,
                        "message": {"role": "user", "content": "x" * 30_000 + " lastword"}}))
    result = index_file(store, journal)
    assert result.skipped == 2
    assert store.value("SELECT count(*) FROM entries WHERE entry_id = 'bbbb0002'") == 1


_TEXT = st.text(alphabet=st.characters(codec="utf-8"), min_size=200, max_size=3000)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(text=_TEXT, head=st.integers(0, 4000), tail=st.integers(0, 4000))
def test_a_condensed_line_is_json_made_of_the_texts_start_and_end(text: str, head: int, tail: int) -> None:
    line = dump({"type": "message", "id": "cccc0001", "parentId": None, "timestamp": "2026-09-01T10:00:00.000Z",
                 "message": {"role": "toolResult", "toolCallId": "c", "toolName": "bash",
                             "content": [{"type": "text", "text": text}], "isError": False}})[:-1]
    # As for a real giant: the windows do not overlap, and the tail lies within the long text.
    tail = min(tail, len(line) - (line.index(b'"text":"') + 8))
    head = min(head, len(line) - tail)
    condensed = giant_line.condensed_line(giant_line.Giant(0, len(line), line[:head], line[len(line) - tail:]))
    if condensed is None:
        return
    orjson.loads(condensed)  # always JSON
    parsed = get_format("pi").parse_line(condensed, 0)
    if not isinstance(parsed, Entry) or not parsed.output:
        return  # cut before the text began: what the head holds is not an entry yet
    assert parsed.entry_id == "cccc0001"
    shown = parsed.output[0]
    start, note, end = shown.partition(NOTE)
    assert note and text.startswith(start) and text.endswith(end.split("…]", 1)[1].removeprefix("\n\n"))


@pytest.mark.slow
def test_a_200_mb_line_is_indexed_within_the_memory_bound(tmp_path: Path) -> None:
    from benchmarks.giant_line import write_journal

    root = tmp_path / "sessions"
    folder = root / "--home-dev-Apps-giant--"
    folder.mkdir(parents=True)
    write_journal(folder / "giant.jsonl", 200)
    db = tmp_path / "index.db"
    report, peak = cli(db, root, "index", env={})
    assert report["entries"] == 3 and report["skippedLines"] == 0
    assert peak < 200, f"peak RSS {peak:.0f} MB"  # before: the line skipped at 220 MB
    for word in ("giantheadword", "gianttailword"):
        found, peak = cli(db, root, "search", word, "--scope", "global", env={})
        assert [r["entryId"] for r in found["results"]] == ["giant001"] and peak < 100
    page, peak = cli(db, root, "read", "giant001", "--scope", "global", env={})
    assert page["status"] == "ok" and "giantheadword" in page["text"][:100] and peak < 100
    last, _ = cli(db, root, "read", "giant001", "--scope", "global", "--offset", str(page["totalChars"] - 100),
                  env={})
    assert last["text"].endswith("gianttailword")


def test_no_token_is_shown_cut_short_at_either_cut(tmp_path: Path) -> None:
    """A secret the head ends in, or the tail starts in, would no longer look like one: the
    cuts move to a space nearby, so no piece of it is shown."""
    text = "words " * 2000 + SECRET_HEAD + " middle " * 3000 + SECRET_TAIL + " the end" * 100
    line = dump({"type": "message", "id": "dddd0001", "parentId": None, "timestamp": "2026-09-01T10:00:00.000Z",
                 "message": {"role": "user", "content": text}})[:-1]
    in_head = line.index(SECRET_HEAD.encode()) + 12
    in_tail = line.index(SECRET_TAIL.encode()) - 40  # the tail's text starts 64 bytes in: 24 into it
    condensed = giant_line.condensed_line(giant_line.Giant(0, len(line), line[:in_head], line[in_tail:]))
    assert condensed is not None
    parsed = get_format("pi").parse_line(condensed, 0)
    assert isinstance(parsed, Entry) and parsed.entry_id == "dddd0001"
    shown = parsed.parts[0]
    assert shown.startswith("words words") and shown.endswith(" the end") and NOTE in shown
    for secret in (SECRET_HEAD, SECRET_TAIL):
        assert secret[:6] not in shown and secret[12:20] not in shown


def test_a_journal_opening_with_a_giant_line_is_still_recognized(tmp_path: Path) -> None:
    """Claude Code has no header line: its session and folder are read from the first lines,
    and a giant can be the first of them."""
    root = tmp_path / "sessions"
    journal = AGENTS["claude"][0](root)
    claude_journal(journal, big_output(2))
    lines = journal.read_bytes().split(b"\n")
    journal.write_bytes(b"\n".join([lines[2], lines[0], lines[1], lines[3]]) + b"\n")  # the giant first
    db = tmp_path / "index.db"
    env = {giant_line.GIANT_LINE_ENV: "1000000"}
    report, _ = cli(db, root, "index", env=env)
    assert report["ignoredFiles"] == 0 and report["entries"] == 4
    found, _ = cli(db, root, "search", "gianttailword", "--scope", "global", env=env)
    assert [r["cwd"] for r in found["results"]] == [CWD]  # its session was read from the giant
