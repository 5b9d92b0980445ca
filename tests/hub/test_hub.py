"""The team hub against a real PostgreSQL server: sharing, pushing, redaction, access, search."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from journal_index.hub.identity import normalize_remote, project_identity
from tests.hub.conftest import Hub
from tests.hub.hosts import HostHome, append_user_line, copy_pi_corpus, git_checkout, secrets

PRJCT = "/home/dev/Apps/prjct"


def corpus_host(tmp_path: Path, hub: Hub, member: str = "alice", host: str = "laptop") -> HostHome:
    machine = HostHome(tmp_path / host, host, hub.url(member))
    copy_pi_corpus(machine.home)
    return machine


def text_columns(hub: Hub) -> list[str]:
    """Every text-like value of every hub table, read as the owner (RLS does not hide them)."""
    tables = [r[0] for r in hub.rows("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
    values: list[str] = []
    for table in tables:
        for row in hub.rows(f"SELECT * FROM {table}"):
            values.extend(str(v) for v in row if v is not None)
    return values


def test_remotes_of_one_repository_are_one_project(tmp_path: Path) -> None:
    assert normalize_remote("git@GitHub.com:acme/api.git") == "github.com/acme/api"
    assert normalize_remote("https://user:pw@github.com/acme/api/") == "github.com/acme/api"
    assert normalize_remote("ssh://git@github.com:22/acme/api.git") == "github.com/acme/api"
    one = git_checkout(tmp_path / "a" / "api", "git@github.com:acme/api.git")
    two = git_checkout(tmp_path / "elsewhere" / "checkout", "https://github.com/acme/api")
    (two / "services" / "web").mkdir(parents=True)
    assert project_identity(str(one)) == project_identity(str(two)) == "github.com/acme/api"
    assert project_identity(str(two / "services" / "web")) == "github.com/acme/api/services/web"
    plain = tmp_path / "no-remote"
    plain.mkdir()
    assert project_identity(str(plain)) == str(plain)


def test_secrets_never_reach_the_hub(tmp_path: Path, hub: Hub) -> None:
    machine = corpus_host(tmp_path, hub)
    machine.run("hub", "share", "/home/dev")
    machine.run("hub", "share", "/tmp")
    report = machine.json("hub", "push")
    assert report["entries"] > 100
    values = text_columns(hub)
    assert any("[REDACTED:" in v for v in values)  # the secrets' entries were pushed, masked
    leaked = [s for s in secrets() if any(s in v for v in values)]
    assert leaked == []


def test_a_team_b_member_cannot_read_or_write_team_a_rows(tmp_path: Path, hub: Hub) -> None:
    machine = corpus_host(tmp_path, hub)
    machine.run("hub", "share", PRJCT)
    machine.run("hub", "push")
    total = hub.rows("SELECT count(*) FROM hub_entries")[0][0]
    assert isinstance(total, int) and total > 0
    assert hub.rows("SELECT count(*) FROM hub_entries", member="carol")[0][0] == total  # team-a reads them
    for table in ("hub_entries", "hub_journals", "hub_hosts", "hub_team_members"):
        seen = hub.rows(f"SELECT * FROM {table} WHERE team = 'team-a'" if table not in ("hub_hosts",)
                        else f"SELECT * FROM {table}", member="bob")
        assert seen == [], table
    with psycopg.connect(hub.url("bob")) as conn:
        # Hand-written writes: bob's rows cannot claim team-a, nor touch alice's host.
        assert conn.execute("UPDATE hub_entries SET text = 'x'").rowcount == 0
        assert conn.execute("DELETE FROM hub_journals").rowcount == 0
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("INSERT INTO hub_journals (host, journal, team, project, agent) "
                          "VALUES ('laptop', 'j', 'team-a', 'p', 'pi')")
        conn.rollback()
        conn.execute("INSERT INTO hub_hosts (host) VALUES ('bobs-box')")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("INSERT INTO hub_journals (host, journal, team, project, agent) "
                         "VALUES ('bobs-box', 'j', 'team-a', 'p', 'pi')")
    with psycopg.connect(hub.url("carol")) as conn:  # same team, not her host: reads, never writes
        assert conn.execute("UPDATE hub_entries SET text = 'x'").rowcount == 0
        assert conn.execute("DELETE FROM hub_entries").rowcount == 0
    assert hub.rows("SELECT count(*) FROM hub_entries WHERE text = 'x'")[0][0] == 0
    # Another member pushing as the same host name is refused in one line.
    other = HostHome(tmp_path / "other", "laptop", hub.url("carol"))
    copy_pi_corpus(other.home)
    other.run("hub", "share", PRJCT)
    done = other.run("hub", "push", check=False)
    assert done.returncode == 1 and "registered on the hub to another member" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_second_push_changes_nothing(tmp_path: Path, hub: Hub) -> None:
    machine = corpus_host(tmp_path, hub)
    machine.run("hub", "share", PRJCT)
    first = machine.json("hub", "push")
    once = hub.snapshot()
    again = machine.json("hub", "push")
    assert first["entries"] > 0 and again["entries"] == 0
    assert hub.snapshot() == once


def test_a_push_is_incremental(tmp_path: Path, hub: Hub) -> None:
    machine = corpus_host(tmp_path, hub)
    machine.run("hub", "share", PRJCT)
    machine.run("hub", "push")
    journal = sorted((machine.home / ".pi/agent/sessions/--home-dev-Apps-prjct-prjct-be--").glob("*.jsonl"))[0]
    append_user_line(journal, "feedc0de", "zanzibarquux appended later")
    report = machine.json("hub", "push")
    assert (report["entries"], report["journals"]) == (1, 1)
    texts = hub.rows("SELECT text FROM hub_entries WHERE entry_id = 'feedc0de'")
    assert texts == [("zanzibarquux appended later",)]


def test_a_rewritten_journal_replaces_its_rows(tmp_path: Path, hub: Hub, pg: object) -> None:
    from tests.hub.conftest import new_hub

    machine = corpus_host(tmp_path, hub)
    machine.run("hub", "share", PRJCT)
    machine.run("hub", "push")
    journal = sorted((machine.home / ".pi/agent/sessions/--home-dev-Apps-prjct-prjct-be--").glob("*.jsonl"))[0]
    lines = journal.read_bytes().splitlines(keepends=True)
    old_texts = hub.rows("SELECT count(*) FROM hub_entries WHERE text LIKE '%personal API tokens%'")[0][0]
    assert isinstance(old_texts, int) and old_texts > 0
    # pi rewrites in place: here the header stays, the body is replaced by other words.
    journal.write_bytes(lines[0])
    append_user_line(journal, "0badf00d", "quetzalcoatl rewrote this journal")
    report = machine.json("hub", "push")
    assert report["replaced"] == 1
    rewritten = hub.snapshot()
    # The same machine's state pushed once into an empty hub gives the same rows.
    fresh = new_hub(pg)  # type: ignore[arg-type]
    machine.env["JOURNAL_INDEX_HUB"] = fresh.url("alice")
    machine.run("hub", "push")
    assert fresh.snapshot() == rewritten
    keys = {r[1] for r in hub.rows("SELECT host, journal FROM hub_journals")}
    assert len(keys) == len(rewritten[0])
    assert hub.rows("SELECT count(*) FROM hub_entries WHERE text LIKE '%quetzalcoatl%'")[0][0] == 1


def test_a_hub_that_is_down_is_one_line_and_the_index_is_untouched(tmp_path: Path, hub: Hub) -> None:
    machine = corpus_host(tmp_path, hub)
    machine.run("hub", "share", PRJCT)
    machine.run("index")
    db = Path(machine.env["JOURNAL_INDEX_DB"])
    before = (db.read_bytes(), db.stat().st_mtime_ns)
    machine.env["JOURNAL_INDEX_HUB"] = f"postgresql://alice@/x?host={tmp_path / 'nowhere'}&port=5999"
    for args in (("hub", "push"), ("search", "alembic", "--hub"), ("sessions", "--hub")):
        done = machine.run(*args, check=False)
        assert done.returncode == 1, args
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "cannot reach the hub" in lines[0], done.stderr
    assert (db.read_bytes(), db.stat().st_mtime_ns) == before


def test_a_hub_newer_than_the_client_is_refused(tmp_path: Path, hub: Hub) -> None:
    machine = corpus_host(tmp_path, hub)
    machine.run("hub", "share", PRJCT)
    with psycopg.connect(hub.url()) as conn:
        conn.execute("INSERT INTO hub_schema (version) VALUES (99)")
    done = machine.run("hub", "push", check=False)
    assert done.returncode == 1
    assert "newer than this journal-index knows" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_search_read_and_sessions_on_the_hub(tmp_path: Path, hub: Hub) -> None:
    laptop = corpus_host(tmp_path, hub)
    laptop.run("hub", "share", PRJCT)
    laptop.run("hub", "push")
    # Another team-a member's machine with no journals of its own reads them.
    desk = HostHome(tmp_path / "desk", "desk", hub.url("carol"))
    found = desk.json("search", "alembic", "migration", "--hub", "--cwd", PRJCT + "/prjct-be")
    assert found["match"] == "all" and found["results"]
    best = found["results"][0]
    assert best["host"] == "laptop" and best["project"] == PRJCT and "alembic" in best["excerpt"].lower()
    camel = desk.json("search", "--hub", "--scope", "global", "mappedColumn")
    assert camel["results"] or camel["match"] == "none"
    page = desk.json("read", best["entryId"][:8], "--hub")
    assert page["status"] == "ok" and page["host"] == "laptop" and page["totalChars"] > 0
    listed = desk.json("sessions", "--hub", "--scope", "global", "--limit", "100")
    assert {s["host"] for s in listed["sessions"]} == {"laptop"}
    assert all(s["cwd"].startswith(PRJCT) for s in listed["sessions"])
    # bob (team-b) finds nothing of it.
    outsider = HostHome(tmp_path / "bob", "bobs", hub.url("bob"))
    assert outsider.json("search", "alembic", "--hub", "--scope", "global")["results"] == []
    text = desk.run("search", "alembic", "--hub", "--cwd", PRJCT).stdout
    assert "laptop:" in text and "--hub" in text


def test_shares_survive_a_rebuild(tmp_path: Path, hub: Hub) -> None:
    machine = corpus_host(tmp_path, hub)
    machine.run("hub", "share", PRJCT)
    machine.run("rebuild")
    status = machine.json("hub", "status")
    assert [s["folder"] for s in status["shares"]] == [PRJCT]
    assert status["shares"][0]["pending"] == status["shares"][0]["entries"] > 0
    machine.run("hub", "push")
    assert machine.json("hub", "status")["shares"][0]["pending"] == 0
    machine.run("hub", "unshare", PRJCT)
    assert machine.json("hub", "status")["shares"] == []
    nothing = machine.run("hub", "push", check=False)
    assert nothing.returncode == 1 and "nothing is shared" in nothing.stderr


def test_forget_a_project(tmp_path: Path, hub: Hub) -> None:
    machine = corpus_host(tmp_path, hub)
    machine.run("hub", "share", PRJCT)
    machine.run("hub", "share", "/home/dev/notes")
    machine.run("hub", "push")
    assert hub.rows("SELECT count(*) FROM hub_entries WHERE project = '/home/dev/notes'")[0][0] != 0
    machine.run("hub", "forget", "/home/dev/notes")
    assert hub.rows("SELECT count(*) FROM hub_entries WHERE project = '/home/dev/notes'")[0][0] == 0
    assert hub.rows("SELECT count(*) FROM hub_entries WHERE project = %s", (PRJCT,))[0][0] != 0
    machine.run("hub", "forget", "laptop")
    assert hub.rows("SELECT count(*) FROM hub_entries")[0][0] == 0


def test_copies_pushed_from_two_hosts_take_one_slot(tmp_path: Path, hub: Hub) -> None:
    laptop, desk = corpus_host(tmp_path, hub), corpus_host(tmp_path, hub, "carol", "desk")
    for machine in (laptop, desk):
        machine.run("hub", "share", PRJCT)
        machine.run("hub", "push")
    found = laptop.json("search", "alembic", "migration", "--hub", "--cwd", PRJCT, "--limit", "20")["results"]
    assert len(found) > 3
    assert len({(h["entryId"], h["kind"]) for h in found}) == len(found)
    assert all({h["host"], *h["alsoOn"]} == {"laptop", "desk"} for h in found)


def test_status_in_words_and_init_only_by_the_owner(tmp_path: Path, hub: Hub) -> None:
    machine = corpus_host(tmp_path, hub)
    machine.run("hub", "share", PRJCT)
    text = machine.run("hub", "status").stdout
    assert f"shared {PRJCT} as {PRJCT}" in text and "pending" in text and "last push: never" in text
    machine.run("hub", "push")
    after = machine.run("hub", "status").stdout
    assert ", 0 pending" in after and "last push: 20" in after
    refused = machine.run("hub", "init", check=False)  # alice owns nothing on the hub
    assert refused.returncode == 1 and len(refused.stderr.strip().splitlines()) == 1
    owner = machine.run("hub", "init", "--hub", hub.url())
    assert "schema version 2" in owner.stdout
