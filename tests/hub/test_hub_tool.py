"""The agent tool's scope ``team``: answered from a real hub when the operator's max scope is
``team``, refused (no hub contacted) otherwise, and one tool error when the hub is down."""

from __future__ import annotations

from pathlib import Path

import pytest

from journal_index.agent.host import Host
from journal_index.agent.tool import MemoryTool
from tests.hub.conftest import Hub
from tests.hub.hosts import HostHome, copy_pi_corpus

PRJCT = "/home/dev/Apps/prjct"
PRIVATE_WORD = "bindtextdomain"  # only in the fluenty project's journals, which are not shared
DOWN = "postgresql://alice@127.0.0.1:1/nohub"  # nothing listens on port 1


def desk_tool(tmp_path: Path, **kwargs: object) -> MemoryTool:
    """Another machine's tool, with no journals of its own beyond one empty folder."""
    (tmp_path / "desk-sessions").mkdir(exist_ok=True)
    return MemoryTool(str(tmp_path / "desk.db"), [tmp_path / "desk-sessions"], cwd=PRJCT + "/prjct-be",
                      host=Host(None), **kwargs)  # type: ignore[arg-type]


def test_team_search_finds_another_hosts_shared_entries_and_never_a_private_projects(
        tmp_path: Path, hub: Hub, monkeypatch: pytest.MonkeyPatch) -> None:
    laptop = HostHome(tmp_path / "laptop", "laptop", hub.url("alice"))
    copy_pi_corpus(laptop.home)
    laptop.run("hub", "share", PRJCT)
    laptop.run("hub", "push")
    assert laptop.json("search", PRIVATE_WORD, "--scope", "global")["results"]  # the laptop holds it, privately
    monkeypatch.setenv("JOURNAL_INDEX_HUB", hub.url("carol"))  # a team-a member on another machine
    monkeypatch.setenv("JOURNAL_INDEX_HOST", "desk")
    monkeypatch.setenv("JOURNAL_INDEX_MAX_SCOPE", "team")
    tool = desk_tool(tmp_path)
    try:
        found = tool.call({"action": "search", "query": "alembic migration", "scope": "team"})
        assert not found.is_error, found.text
        assert found.result is not None
        hits = found.result["results"]
        assert hits and found.result["match"] == "all" and found.result["scope"]["kind"] == "team"
        assert {h["host"] for h in hits} == {"laptop"}
        assert all(h["project"] == PRJCT for h in hits)
        assert "alembic" in hits[0]["excerpt"].lower()
        assert "laptop:" + PRJCT in found.text and '"scope":"team"' in found.text.replace(" ", "")
        private = tool.call({"action": "search", "query": PRIVATE_WORD, "scope": "team"})
        assert not private.is_error and private.result is not None and private.result["results"] == []
        newest = tool.call({"action": "search", "scope": "team"})
        assert newest.result is not None and newest.result["results"]
        assert all(h["project"] == PRJCT for h in newest.result["results"])
        assert found.result["nextOffset"] == len(hits)
        more = tool.call({"action": "search", "query": "alembic migration", "scope": "team", "offset": len(hits)})
        assert more.result is not None and more.result["offset"] == len(hits)
        assert {h["entryId"] for h in more.result["results"]}.isdisjoint(h["entryId"] for h in hits)
        summaries = tool.call({"action": "summaries", "scope": "team"})
        assert summaries.result is not None and summaries.result["results"]
        assert {h["kind"] for h in summaries.result["results"]} <= {"compaction", "branch_summary"}
        session = f"{hits[0]['agent']}:{hits[0]['sessionId']}"  # as the answer's "read more" names it
        page = tool.call({"action": "read", "entryId": hits[0]["entryId"], "sessionId": session, "scope": "team"})
        assert not page.is_error, page.text
        assert page.result is not None and page.result["status"] == "ok" and page.result["host"] == "laptop"
        assert "alembic" in page.result["text"].lower() and "laptop:" + PRJCT in page.text
        # The CLI's read --hub, whose host:cwd folders the tool's read text shares (hub.team.shown_read).
        assert "laptop:" + PRJCT in laptop.run("read", hits[0]["entryId"], "--hub").stdout
        # The desk's local index holds nothing of it: its local scopes are untouched by the hub.
        local = tool.call({"action": "search", "query": "alembic", "scope": "global"})
        assert local.result is not None and local.result["results"] == []
    finally:
        tool.close()


def test_team_is_refused_below_max_scope_team_and_the_hub_is_not_contacted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOURNAL_INDEX_HUB", DOWN)  # were it contacted, the error would be hub_unavailable
    monkeypatch.delenv("JOURNAL_INDEX_MAX_SCOPE", raising=False)
    for tool in (desk_tool(tmp_path), desk_tool(tmp_path, max_scope="global")):
        try:
            for action in ({"action": "search", "query": "alembic"}, {"action": "read", "entryId": "abcdef12"}):
                refused = tool.call({**action, "scope": "team"})
                assert refused.error is not None and refused.error["code"] == "scope_not_allowed", refused.text
                assert "'team'" in refused.error["message"] and "'project'" in refused.error["hint"]
        finally:
            tool.close()


@pytest.mark.parametrize("url", [DOWN, None])
def test_a_hub_down_or_unset_is_one_tool_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               url: str | None) -> None:
    if url is not None:
        monkeypatch.setenv("JOURNAL_INDEX_HUB", url)
    tool = desk_tool(tmp_path, max_scope="team")
    try:
        failed = tool.call({"action": "search", "query": "alembic", "scope": "team"})
        assert failed.error is not None and failed.error["code"] == "hub_unavailable", failed.text
        assert len(failed.error["message"].splitlines()) == 1
        assert ("cannot reach the hub" if url else "no hub is configured") in failed.error["message"]
        assert "hub_unavailable" in failed.text
        assert tool.call({"action": "search", "query": "alembic", "scope": "global"}).error is None
    finally:
        tool.close()
