"""`read ID --context N` (an entry in its place) and `read --session ID` (a whole session, paged):
entries of one journal in order, verified and redacted like `read`. Real CLI subprocesses over
a real Claude Code transcript and over the fixture pi journals holding planted secrets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import apsw
import pytest
from click.testing import CliRunner, Result

from journal_index.cli import cli
from tests.agent_homes import cli_json
from tests.colliding_home import SHARED_ID, Home
from tests.conftest import FIXTURES
from tests.helpers import load_secrets


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Home:
    return Home(tmp_path_factory.mktemp("conversation"))


def _journal_order(db: str, path: Path) -> list[str]:
    conn = apsw.Connection(db)
    try:
        return [row[0] for row in conn.execute("SELECT e.entry_id FROM entries e JOIN files f ON f.id = e.file_id "
                                               "WHERE f.path = ? ORDER BY e.offset", (str(path),))]
    finally:
        conn.close()


def test_context_shows_the_entries_before_and_after_in_journal_order(home: Home):
    order = _journal_order(home.env["JOURNAL_INDEX_DB"], home.claude)
    middle = order[len(order) // 2]
    answer = cli_json(home.env, "read", middle[:8], "--context", "3")
    assert answer["status"] == "ok" and answer["entryId"] == middle and answer["agent"] == "claude"
    at = order.index(middle)
    assert [e["entryId"] for e in answer["entries"]] == order[at - 3: at + 4]
    assert [e["target"] for e in answer["entries"]] == [False] * 3 + [True] + [False] * 3
    for entry in answer["entries"]:  # each as `read` gives it (cut when long)
        whole = cli_json(home.env, "read", entry["entryId"])
        assert whole["text"].startswith(entry["text"]) and whole["totalChars"] == entry["totalChars"]
        assert entry["cut"] == (len(entry["text"]) < entry["totalChars"])
        assert entry["kind"] == whole["kind"] and entry["time"] == whole["time"]
    text = home.run("read", middle[:8], "--context", "3")
    assert text.returncode == 0
    lines = text.stdout.splitlines()
    assert lines[0].startswith(f"session claude:{SHARED_ID[:8]} · /home/dev/code/projA · entry {middle[:8]} ")
    headers = [line for line in lines if line.startswith("── ")]
    assert len(headers) == 7 and headers[3].endswith(f"{middle[:8]}  ◀ this entry")
    # At the start of a journal there is nothing before.
    first = cli_json(home.env, "read", order[0], "--context", "2")
    assert [e["entryId"] for e in first["entries"]] == order[:3]


def test_a_session_pages_through_every_entry_once_in_order(home: Home):
    order = _journal_order(home.env["JOURNAL_INDEX_DB"], home.claude)
    seen: list[str] = []
    offset: int | None = 0
    pages = 0
    while offset is not None:
        page = cli_json(home.env, "read", "--session", f"claude:{SHARED_ID}", "--offset", str(offset))
        assert page["status"] == "ok" and page["offset"] == offset and page["totalEntries"] == len(order)
        assert sum(len(e["text"]) for e in page["entries"]) <= 16_000 or len(page["entries"]) == 1
        seen += [e["entryId"] for e in page["entries"]]
        offset = page["nextOffset"]
        pages += 1
    assert seen == order and pages > 1
    text = home.run("read", "--session", f"claude:{SHARED_ID[:8]}")
    assert text.returncode == 0 and text.stdout.startswith(f"session claude:{SHARED_ID[:8]} ")
    assert "entries 1–" in text.stdout and "[continue with --offset " in text.stdout
    # Two agents' sessions carry this id: a bare id is refused, saying how to name one.
    bare = home.run("read", "--session", SHARED_ID)
    assert bare.returncode == 1 and "claude:" in bare.stderr and "codex:" in bare.stderr
    past = home.run("read", "--session", f"codex:{SHARED_ID}", "--offset", "100000")
    assert past.returncode == 1 and "past the end of the session" in past.stderr


def test_read_options_that_do_not_go_together_are_usage_errors(home: Home):
    for args in (["read"], ["read", "--context", "2"], ["read", "x1234567", "--context", "2", "--offset", "5"],
                 ["read", "x1234567", "--context", "51"]):
        done = home.run(*args)
        assert done.returncode == 2 and done.stdout == "", (args, done.stderr)
    outside = home.run("read", "--session", f"claude:{SHARED_ID}", "--scope", "project", "--cwd",
                       "/home/dev/code/projB")
    assert outside.returncode == 1 and "not in project /home/dev/code/projB" in outside.stderr


def _cli(base: list[str], *args: str) -> Result:
    """The CLI in this process (many calls: a subprocess each would make this test slow)."""
    return CliRunner().invoke(cli, [*base, *args], catch_exceptions=False)


def test_no_secret_is_printed_in_a_context_or_a_session_page(tmp_path: Path, sessions_root: Path):
    base = ["--db", str(tmp_path / "i.db"), "--sessions", str(sessions_root)]
    assert _cli(base, "index").exit_code == 0
    secrets = load_secrets(FIXTURES)
    data = json.loads((FIXTURES / "SECRETS.json").read_text())
    occurrences = [o for item in data["secrets"] for o in item["occurrences"]]
    shown: list[str] = []
    for occurrence in occurrences[:12]:
        session = occurrence["sessionId"]
        for args in (["read", occurrence["entryId"], "--session", session, "--context", "2"],
                     ["read", occurrence["entryId"], "--session", session, "--context", "2", "--json"]):
            done = _cli(base, *args)
            assert done.exit_code == 0, (args, done.output)
            shown.append(done.stdout)
    for session in sorted({o["sessionId"] for o in occurrences}):
        offset: int | None = 0
        while offset is not None:
            done = _cli(base, "read", "--session", session, "--offset", str(offset), "--json")
            assert done.exit_code == 0, done.output
            page: dict[str, Any] = json.loads(done.stdout)
            shown.append(done.stdout)
            shown.append(_cli(base, "read", "--session", session, "--offset", str(offset)).stdout)
            offset = page["nextOffset"]
    everything = "\n".join(shown)
    assert "[REDACTED:" in everything
    leaked = [secret for secret in secrets if secret in everything]
    assert leaked == []


def test_a_journal_rewritten_under_the_index_never_shows_another_lines_text(tmp_path: Path):
    home = Home(tmp_path)
    db = home.env["JOURNAL_INDEX_DB"]
    order = _journal_order(db, home.claude)
    middle = order[len(order) // 2]
    at = order.index(middle)
    before = {entry_id: cli_json(home.env, "read", entry_id)["text"] for entry_id in order[at - 4: at + 5]}
    # The transcript is rewritten after it was indexed (the lines just after the entry
    # reversed): the entry still reads at its place, but the index's offsets of its neighbours
    # now point into other lines, until it is reindexed.
    lines = home.claude.read_bytes().splitlines(keepends=True)
    line_at = next(n for n, line in enumerate(lines) if f'"uuid":"{middle}"'.encode() in line)
    lines[line_at + 1: line_at + 5] = reversed(lines[line_at + 1: line_at + 5])
    home.claude.write_bytes(b"".join(lines))
    answer = cli_json(home.env, "read", middle, "--context", "2")
    assert answer["status"] == "ok"
    now = _journal_order(db, home.claude)  # reindexed by the read: the new order
    assert now != order
    assert [e["entryId"] for e in answer["entries"]] == now[now.index(middle) - 2: now.index(middle) + 3]
    for entry in answer["entries"]:  # each shows its own words, never its old place's (a result
        # whose call now comes after it is no longer led by the call's summary)
        assert entry["text"][:500] in before[entry["entryId"]], entry["entryId"]
