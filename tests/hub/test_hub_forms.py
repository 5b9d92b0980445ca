"""The hub finds what the local index finds for identifiers, camelCase, CJK and a giant entry's
tail: the local query forms are applied before insert and before query on both sides."""

from __future__ import annotations

import json

import pytest

from tests.hub.conftest import new_hub
from tests.hub.hosts import HostHome, append_user_line
from tests.hub.pg_server import PgServer

CWD = "/srv/forms"
LINES = {
    "aa000001": "the maxRetryCount setting was too low for the flaky upstream",
    "aa000002": "数据库连接失败了，重试三次以后才恢复",
    "aa000003": "renamed session_manager.py to session_store.py and fixed imports",
    "aa000004": "filler " * 40_000 + "tailwordzebra closes this giant entry",
    "aa000005": "an unrelated line about lunch",
}


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory, pg: PgServer) -> HostHome:
    hub = new_hub(pg)  # one hub and one push for the whole module: the tests only read
    host = HostHome(tmp_path_factory.mktemp("forms") / "box", "box", hub.url("alice"))
    folder = host.home / ".pi" / "agent" / "sessions" / "--srv-forms--"
    folder.mkdir(parents=True)
    journal = folder / "2026-10-01T10-00-00-000Z_01a0f000-0000-7000-8000-000000000001.jsonl"
    journal.write_text(json.dumps({"type": "session", "version": 3, "id": "01a0f000-0000-7000-8000-000000000001",
                                   "timestamp": "2026-10-01T10:00:00.000Z", "cwd": CWD}) + "\n")
    for n, (entry_id, text) in enumerate(LINES.items()):
        append_user_line(journal, entry_id, text, ts=f"2026-10-01T10:0{n}:00.000Z")
    host.run("hub", "share", CWD)
    host.run("hub", "push")
    return host


@pytest.mark.parametrize("query, expected", [
    ("maxRetryCount", "aa000001"), ("RetryCount", "aa000001"), ("retry count", "aa000001"),
    ("连接", "aa000002"), ("重试", "aa000002"), ("session_manager.py", "aa000003"), ("tailwordzebra", "aa000004"),
])
def test_the_hub_finds_what_the_local_index_finds(machine: HostHome, query: str, expected: str) -> None:
    local = machine.quick_json("search", *query.split(), "--scope", "global")["results"]
    remote = machine.quick_json("search", *query.split(), "--hub", "--cwd", CWD)["results"]
    assert [h["entryId"] for h in local][:1] == [expected]
    assert [h["entryId"] for h in remote][:1] == [expected]
    assert remote[0]["excerpt"]  # shown around the match, cut from the redacted text


def test_a_giant_entry_reads_back_whole(machine: HostHome) -> None:
    page = machine.quick_json("read", "aa000004", "--hub")
    assert page["status"] == "ok" and page["totalChars"] == len(LINES["aa000004"])
    assert page["nextOffset"] == 16_000
