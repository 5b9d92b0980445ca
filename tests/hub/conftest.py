"""The hub's fixtures: one real PostgreSQL server for the session, a fresh database per test,
member roles in teams, and homes of hosts that push."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from journal_index.hub.schema import migrate
from tests.hub.pg_server import PgServer, start_server

# Members and their teams (roles are the server's, made once; memberships per database).
MEMBERS = {"alice": ("team-a",), "bob": ("team-b",), "carol": ("team-a",), "dave": ("team-a", "team-b")}
_numbers = itertools.count()


@pytest.fixture(scope="session")
def pg() -> Iterator[PgServer]:
    server = start_server()
    try:
        with psycopg.connect(server.url(), autocommit=True) as conn:
            conn.execute("CREATE ROLE journal_hub_member NOLOGIN")
            for member in MEMBERS:
                conn.execute(f"CREATE ROLE {member} LOGIN IN ROLE journal_hub_member")
        yield server
    finally:
        server.stop("immediate")
        server.remove()


class Hub:
    """One hub database: its name, the owner's URL, and each member's."""

    def __init__(self, pg: PgServer, name: str) -> None:
        self.pg, self.name = pg, name

    def url(self, member: str | None = None) -> str:
        return self.pg.url(member or "hubadmin", self.name)

    def rows(self, sql: str, params: tuple[object, ...] = (), member: str | None = None) -> list[tuple[object, ...]]:
        with psycopg.connect(self.url(member)) as conn:
            return [tuple(r) for r in conn.execute(sql, params or None).fetchall()]

    def snapshot(self) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
        """Every row of the hub but push times, in a stable order (to compare two pushes)."""
        journals = self.rows("SELECT host, journal, team, project, agent, session_id, path, cwd, name, started, "
                             "last_ts, head_hash, pushed_offset, pushed_entries, digest "
                             "FROM hub_journals ORDER BY 1, 2")
        entries = self.rows('SELECT host, journal, "offset", team, project, entry_id, ts, kind, role, tool, '
                            'call_name, text, chars, digest, terms::text FROM hub_entries ORDER BY 1, 2, 3')
        return journals, entries


def new_hub(pg: PgServer) -> Hub:
    name = f"hub_{next(_numbers)}"
    with psycopg.connect(pg.url(), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    hub = Hub(pg, name)
    with psycopg.connect(hub.url()) as conn:
        migrate(conn)
        with conn.cursor() as cur:
            for member, teams in MEMBERS.items():
                for team in teams:
                    cur.execute("INSERT INTO hub_team_members (team, member) VALUES (%s, %s)", (team, member))
        conn.commit()
    return hub


@pytest.fixture
def hub(pg: PgServer) -> Hub:
    return new_hub(pg)


@pytest.fixture(autouse=True)
def private_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The share list of a test is its own (never the user's ~/.config)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("JOURNAL_INDEX_HUB", raising=False)
    monkeypatch.delenv("JOURNAL_INDEX_HOST", raising=False)
