"""Hub search on a hub larger than its recency window (hub migration 0002): members' searches
reach the terms index, a common word is ranked among the newest entries, a rare word is still
found wherever it is, and the view that serves members keeps to their teams."""

from __future__ import annotations

import json

import psycopg
import pytest

from journal_index.hub import search as hub_search
from journal_index.hub.search import HubFilters, HubScope, search
from tests.hub.conftest import Hub

ENTRIES = 300
HOUR_MS = 3_600_000
NOW = 1_800_000_000_000


def fill(hub: Hub, team: str, host: str, rare_at: int) -> None:
    """``ENTRIES`` entries of one journal, entry n n hours old; every one says "common" (the
    older than 50 say it ten times: ranked on their words alone they would come first), the
    entry ``rare_at`` also says "zebrafish"."""
    with psycopg.connect(hub.url()) as conn:
        conn.execute("INSERT INTO hub_hosts (host, owner) VALUES (%s, 'alice')", (host,))
        conn.execute("INSERT INTO hub_journals (host, journal, team, project, agent, session_id) "
                     "VALUES (%s, 'j', %s, 'proj', 'pi', 's')", (host, team))
        for n in range(ENTRIES):
            text = f"{'common ' * (10 if n >= 50 else 1)}words of entry {n}" + (" zebrafish" if n == rare_at else "")
            conn.execute("INSERT INTO hub_entries (host, journal, \"offset\", team, project, entry_id, ts, kind, "
                         "text, chars, digest, terms) VALUES (%s, 'j', %s, %s, 'proj', %s, %s, 'user', %s, %s, "
                         "md5(%s), to_tsvector('english', %s))",
                         (host, n, team, f"{host}{n:04d}", NOW - n * HOUR_MS, text, len(text), text, text))
        conn.commit()
        conn.execute("ANALYZE hub_entries")


def test_a_common_word_is_ranked_among_the_newest_entries_and_a_rare_one_found_anywhere(
        hub: Hub, monkeypatch: pytest.MonkeyPatch) -> None:
    fill(hub, "team-a", "laptop", rare_at=ENTRIES - 1)
    monkeypatch.setattr(hub_search, "RECENT_WINDOW", 50, raising=False)
    everything = HubFilters(HubScope("global"))
    with psycopg.connect(hub.url("alice")) as conn:
        common = search(conn, "common", everything, limit=10, now=NOW)
        rare = search(conn, "zebrafish", everything, limit=10, now=NOW)
    assert len(common.hits) == 10 and all(int(h.entry_id[-4:]) < 50 for h in common.hits)
    assert [h.entry_id for h in rare.hits] == [f"laptop{ENTRIES - 1:04d}"] and rare.match == "all"


def test_the_view_serving_members_keeps_to_their_teams(hub: Hub) -> None:
    fill(hub, "team-a", "laptop", rare_at=3)
    for member, expected in (("alice", 1), ("bob", 0), ("dave", 1)):
        with psycopg.connect(hub.url(member)) as conn:
            conn.execute("SELECT set_config('journal_index.match', 'zebrafish', false)")
            row = conn.execute("SELECT count(*) FROM hub_matches").fetchone()
            assert row is not None and row[0] == expected, member
            assert conn.execute("SELECT count(*) FROM hub_entries").fetchone() == (ENTRIES * expected,)
    with psycopg.connect(hub.url()) as conn:  # the hub's owner sees every row, as in the tables
        conn.execute("SELECT set_config('journal_index.match', 'zebrafish', false)")
        assert conn.execute("SELECT count(*) FROM hub_matches").fetchone() == (1,)


def _plan(conn: psycopg.Connection[tuple[object, ...]], sql: str) -> str:
    conn.execute("SET enable_seqscan = off")  # a tiny table would be read whole anyway
    conn.execute("SELECT set_config('journal_index.match', 'zebrafish', false)")
    row = conn.execute("EXPLAIN (FORMAT JSON) " + sql).fetchone()
    assert row is not None
    return json.dumps(row[0])


def test_a_members_match_uses_the_terms_index_only_through_the_view(hub: Hub) -> None:
    fill(hub, "team-a", "laptop", rare_at=3)
    with psycopg.connect(hub.url("alice")) as conn:
        # Row-level security runs a condition that is not leakproof (@@) after the policy:
        # read straight from the table, a member's match never uses the index.
        direct = _plan(conn, "SELECT \"offset\" FROM hub_entries WHERE terms @@ to_tsquery('english', 'zebrafish')")
        through_view = _plan(conn, "SELECT \"offset\" FROM hub_matches")
    assert "hub_entries_terms" not in direct
    assert "hub_entries_terms" in through_view
