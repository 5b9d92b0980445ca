"""Reading the hub in journal order against a real PostgreSQL server: an entry in its place
(``read ENTRY --hub --context N``) and a whole session a page at a time, in the local answers'
shapes plus the host; row-level security deciding who may read them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.hub.conftest import Hub
from tests.hub.hosts import PI_SESSIONS, HostHome, place_pi

PRJCT = "/home/dev/Apps/prjct"
# 113 lines, entries long enough to be cut around an entry and to fill several session pages.
JOURNAL = next((PI_SESSIONS / "--home-dev-Apps-prjct-prjct-be--").glob("*_01a066a0-*.jsonl"))


@pytest.fixture
def laptop(tmp_path: Path, hub: Hub) -> HostHome:
    """alice's machine (team-a): one journal of the project, shared and pushed."""
    machine = HostHome(tmp_path / "laptop", "laptop", hub.url("alice"))
    place_pi(machine.home, JOURNAL)
    machine.run("hub", "share", PRJCT)
    machine.run("hub", "push")
    return machine


def whole_session(machine: HostHome, *args: str) -> list[dict[str, Any]]:
    """Every page of the session ``read --session … [--hub]`` gives, following nextOffset."""
    pages, offset = [], 0
    while True:
        page = machine.quick_json("read", *args, "--offset", str(offset))
        pages.append(page)
        if page["nextOffset"] is None:
            return pages
        assert page["nextOffset"] > offset
        offset = page["nextOffset"]


def without_hub_fields(answer: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in answer.items() if k not in ("host", "project")}


def test_an_entry_in_its_place_reads_from_the_hub_as_locally(laptop: HostHome, tmp_path: Path, hub: Hub) -> None:
    pages = whole_session(laptop, "--session", "01a066a0")
    ids = [e["entryId"] for page in pages for e in page["entries"]]
    assert len(ids) == pages[0]["totalEntries"] > 20
    desk = HostHome(tmp_path / "desk", "desk", hub.url("carol"))  # team-a, no journals of its own
    for place in (0, 1, len(ids) // 2, len(ids) - 1):  # the first, the second, the middle, the last
        local = laptop.quick_json("read", ids[place], "--context", "3")
        on_hub = desk.quick_json("read", ids[place], "--context", "3", "--hub")
        assert on_hub["host"] == "laptop" and on_hub["project"] == PRJCT
        assert without_hub_fields(on_hub) == local, place
        shown = [e["entryId"] for e in on_hub["entries"]]
        first = max(0, place - 3)
        assert shown == ids[first:place + 4] and on_hub["offset"] == first
        assert on_hub["totalEntries"] == len(ids)
        assert [e["target"] for e in on_hub["entries"]].count(True) == 1
    # Some neighbour was long enough to be cut, as locally (the equality above checked how).
    around = [desk.quick_json("read", i, "--context", "3", "--hub") for i in ids[::7]]
    assert any(e["cut"] and not e["target"] for a in around for e in a["entries"])
    text = desk.run("read", ids[5][:8], "--hub", "--context", "1").stdout
    assert "◀ this entry" in text and "laptop:" in text and text.count("── ") == 3


def test_a_whole_session_pages_from_the_hub_as_locally(laptop: HostHome) -> None:
    local = whole_session(laptop, "--session", "01a066a0")
    on_hub = whole_session(laptop, "--session", "01a066a0", "--hub")
    assert len(on_hub) == len(local) > 2
    assert [without_hub_fields(p) for p in on_hub] == local
    assert {p["host"] for p in on_hub} == {"laptop"}
    text = laptop.run("read", "--session", "laptop:pi:01a066a0", "--hub").stdout
    assert f"[continue with --offset {on_hub[0]['nextOffset']}]" in text
    # A cut entry's note names the hub command that reads it whole, and that command does.
    page = next(p for p in on_hub if any(e["cut"] for e in p["entries"]))
    text = laptop.run("read", "--session", "01a066a0", "--hub", "--offset", str(page["offset"])).stdout
    note = re.search(r"more characters: journal-index read (.+)\]", text)
    assert note is not None and note.group(1).endswith("--session laptop:pi:01a066a0 --hub"), text
    whole = laptop.quick_json("read", *note.group(1).split())
    cut = next(e for e in page["entries"] if e["cut"])
    assert whole["status"] == "ok" and whole["entryId"] == cut["entryId"] and whole["totalChars"] == cut["totalChars"]


def test_an_entry_of_another_team_reads_exactly_like_a_missing_one(laptop: HostHome, tmp_path: Path,
                                                                   hub: Hub) -> None:
    entry_id = laptop.quick_json("read", "--session", "01a066a0")["entries"][4]["entryId"]
    missing = "f" * len(entry_id) if not entry_id.startswith("f") else "e" * len(entry_id)
    bob = HostHome(tmp_path / "bob", "bobs", hub.url("bob"))  # team-b only
    for extra in ((), ("--json",)):
        seen = bob.run("read", entry_id, "--hub", "--context", "2", *extra, check=False)
        none = bob.run("read", missing, "--hub", "--context", "2", *extra, check=False)
        assert seen.returncode == none.returncode == 1
        assert seen.stdout.replace(entry_id, missing) == none.stdout and seen.stderr == none.stderr == ""
    assert json.loads(seen.stdout)["status"] == "not_found"
    assert bob.run("read", "--session", "01a066a0", "--hub", check=False).returncode == 1  # nor its session
    dave = HostHome(tmp_path / "dave", "daves", hub.url("dave"))  # team-a and team-b
    assert dave.quick_json("read", entry_id, "--context", "2", "--hub")["status"] == "ok"


def test_a_read_the_hub_cannot_answer_is_one_line_and_not_zero(laptop: HostHome, tmp_path: Path) -> None:
    entry_id = laptop.quick_json("read", "--session", "01a066a0")["entries"][4]["entryId"]
    cases = {
        ("read", entry_id, "--hub", "--context", "2", "--offset", "5"): (2, "--context N shows an entry"),
        ("read", "--hub"): (2, "needs an ENTRY_ID, or --session ID"),
        ("read", "--hub", "--session", "01a066a0", "--offset", "100000"): (1, "past the end of the session"),
        ("read", "--hub", "--session", "nosuchsession"): (1, "no session 'nosuchsession' is on the hub"),
    }
    for args, (code, words) in cases.items():
        done = laptop.run(*args, check=False)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == code and len(lines) == 1 and words in lines[0], (args, done.stderr)
    laptop.env["JOURNAL_INDEX_HUB"] = f"postgresql://alice@/x?host={tmp_path / 'nowhere'}&port=5999"
    done = laptop.run("read", entry_id, "--hub", "--context", "2", check=False)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1 and "cannot reach the hub" in lines[0], done.stderr
