"""`watch` pushes the shared projects as it indexes, and a hub that goes away never stops it."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import psycopg

from tests.hub.conftest import Hub
from tests.hub.hosts import HostHome, append_user_line, copy_pi_corpus

PRJCT = "/home/dev/Apps/prjct"


def wait_for(check: object, seconds: float = 60) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.2)
    return False


def test_watch_pushes_what_it_indexes(tmp_path: Path, hub: Hub) -> None:
    machine = HostHome(tmp_path / "laptop", "laptop", hub.url("alice"))
    copy_pi_corpus(machine.home)
    machine.run("hub", "share", PRJCT)
    machine.env["JOURNAL_INDEX_HUB_PUSH_SECONDS"] = "0"
    watch = machine.popen("watch", "--rescan", "1")
    try:
        assert wait_for(lambda: hub.rows("SELECT count(*) FROM hub_entries")[0][0])
        journal = sorted((machine.home / ".pi/agent/sessions/--home-dev-Apps-prjct-prjct-be--").glob("*.jsonl"))[0]
        append_user_line(journal, "abcd1234", "wombatfeather typed while watching")
        assert wait_for(lambda: hub.rows("SELECT count(*) FROM hub_entries WHERE entry_id = 'abcd1234'")[0][0])
        notes = sorted((machine.home / ".pi/agent/sessions/--home-dev-notes--").glob("*.jsonl"))[0]
        append_user_line(notes, "abcd5678", "not shared, never pushed")
        time.sleep(3)
        assert hub.rows("SELECT count(*) FROM hub_entries WHERE entry_id = 'abcd5678'")[0][0] == 0
        assert watch.poll() is None
    finally:
        watch.send_signal(signal.SIGTERM)
        _, err = watch.communicate(timeout=60)
    assert watch.returncode == 0, err
    assert "pushed" in err


def test_watch_goes_on_when_the_hub_is_down(tmp_path: Path, hub: Hub) -> None:
    machine = HostHome(tmp_path / "laptop", "laptop", hub.url("alice"))
    copy_pi_corpus(machine.home)
    machine.run("hub", "share", PRJCT)
    machine.env.update({"JOURNAL_INDEX_HUB_PUSH_SECONDS": "0",
                        "JOURNAL_INDEX_HUB": f"postgresql://alice@/x?host={tmp_path / 'nowhere'}&port=5999"})
    watch = machine.popen("watch", "--rescan", "1")
    try:
        time.sleep(4)  # a few rescans, each trying the hub
        assert watch.poll() is None
    finally:
        watch.send_signal(signal.SIGTERM)
        _, err = watch.communicate(timeout=60)
    assert watch.returncode == 0, err
    assert sum("cannot reach the hub" in line for line in err.splitlines()) == 1, err
    search = machine.run("search", "alembic", "--scope", "global", "--json")
    assert '"results": [' in search.stdout and "alembic" in search.stdout.lower()  # indexed all the same


def test_watch_pushes_after_another_push_of_its_host_and_stops_while_one_runs(tmp_path: Path, hub: Hub) -> None:
    """One push per host at a time: watch does not wait for the host's push lock (a manual push
    holding it), it pushes on a later pass; so it stops on SIGTERM at once while that push runs
    (waiting for the lock inside the server, it could not)."""
    machine = HostHome(tmp_path / "laptop", "laptop", hub.url("alice"))
    copy_pi_corpus(machine.home)
    machine.run("hub", "share", PRJCT)
    machine.env["JOURNAL_INDEX_HUB_PUSH_SECONDS"] = "0"
    lock = "SELECT pg_advisory_lock(hashtext('journal-index push ' || %s))"
    running = psycopg.connect(hub.url("alice"), autocommit=True)  # stands for a long `hub push` of laptop
    running.execute(lock, ("laptop",))
    watch = machine.popen("watch", "--rescan", "1")
    try:
        time.sleep(4)  # backfilled, and tried to push on several passes
        assert hub.rows("SELECT count(*) FROM hub_entries")[0][0] == 0
        running.close()  # that push ends: watch pushes on its next pass
        assert wait_for(lambda: hub.rows("SELECT count(*) FROM hub_entries")[0][0])
        running = psycopg.connect(hub.url("alice"), autocommit=True)  # another one starts
        running.execute(lock, ("laptop",))
        time.sleep(3)
        assert watch.poll() is None
    finally:
        watch.send_signal(signal.SIGTERM)
        try:
            _, err = watch.communicate(timeout=30)
        finally:
            if watch.poll() is None:
                watch.kill()
                watch.communicate()
            running.close()
    assert watch.returncode == 0, err
    assert err.count("another push from this host is running; watch pushes after it") == 2, err


def test_a_push_gives_its_hosts_lock_back_before_its_connection_closes(tmp_path: Path, hub: Hub) -> None:
    """watch pushes on a new connection every pass: the lock of the push before must be free
    then, not only once the server has closed that push's connection."""
    from journal_index.data.store import open_store
    from journal_index.hub.push import push

    store = open_store(str(tmp_path / "index.db"))
    pushing = psycopg.connect(hub.url("alice"))
    other = psycopg.connect(hub.url("alice"), autocommit=True)
    try:
        push(pushing, store, [], "laptop", wait=False)
        assert pushing.closed is False
        try_lock = "SELECT pg_try_advisory_lock(hashtext('journal-index push ' || %s))"
        row = other.execute(try_lock, ("laptop",)).fetchone()
        assert row is not None and row[0] is True
    finally:
        pushing.close()
        other.close()
        store.close()
