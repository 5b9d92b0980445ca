"""A push killed at any moment (kill -9), or a hub stopped under it, leaves the hub where the
next push yields exactly what one uninterrupted push yields."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.hub.conftest import Hub, new_hub
from tests.hub.hosts import HostHome, copy_pi_corpus
from tests.hub.pg_server import PgServer


def machine_for(tmp_path: Path, hub: Hub) -> HostHome:
    machine = HostHome(tmp_path / "laptop", "laptop", hub.url("alice"))
    copy_pi_corpus(machine.home)
    machine.env["JOURNAL_INDEX_HUB_BATCH"] = "5"  # many small transactions: kills land between and inside them
    machine.run("hub", "share", "/home/dev")
    machine.run("hub", "share", "/tmp")
    machine.run("index")
    return machine


def _wait_for_rows(hub: Hub, proc: subprocess.Popen[str], seconds: float = 60.0) -> None:
    """Until the hub holds some entry, or the push has ended (looked at every few milliseconds)."""
    deadline = time.monotonic() + seconds
    while proc.poll() is None and time.monotonic() < deadline:
        if hub.rows("SELECT count(*) FROM hub_entries")[0][0]:
            return
        time.sleep(0.002)


@pytest.mark.slow
def test_kill_9_at_random_moments_then_push_equals_one_push(tmp_path: Path, pg: PgServer) -> None:
    reference, killed = new_hub(pg), new_hub(pg)
    machine = machine_for(tmp_path, reference)
    started = time.perf_counter()
    machine.run("hub", "push")
    whole = time.perf_counter() - started
    expected = reference.snapshot()
    machine.env["JOURNAL_INDEX_HUB"] = killed.url("alice")
    chance = random.Random(24)
    partial = 0
    for attempt in range(8):
        proc = machine.popen("hub", "push")
        if attempt == 0:
            # Once as soon as the hub holds a first batch: a random moment can fall before the
            # first commit every time, or after the last, when the push is quick.
            _wait_for_rows(killed, proc)
        else:
            time.sleep(chance.uniform(0.2, whole))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        rows = killed.rows("SELECT count(*) FROM hub_entries")[0][0]
        partial += 0 < rows < len(expected[1])  # type: ignore[operator]
    machine.run("hub", "push")
    assert killed.snapshot() == expected
    assert partial >= 1  # some kill landed mid-push (else the test proved nothing)


@pytest.mark.slow
def test_a_hub_stopped_mid_push_then_push_equals_one_push(tmp_path: Path, pg: PgServer) -> None:
    reference, stopped = new_hub(pg), new_hub(pg)
    machine = machine_for(tmp_path, reference)
    machine.run("hub", "push")
    expected = reference.snapshot()
    machine.env["JOURNAL_INDEX_HUB"] = stopped.url("alice")
    proc = machine.popen("hub", "push")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not stopped.rows("SELECT count(*) FROM hub_entries")[0][0]:
        time.sleep(0.02)
    pg.stop("fast")
    try:
        _, err = proc.communicate(timeout=60)
    finally:
        pg.start()
    assert proc.returncode == 1, err
    assert len(err.strip().splitlines()) == 1 and "hub" in err
    assert 0 < stopped.rows("SELECT count(*) FROM hub_entries")[0][0] < len(expected[1])  # type: ignore[operator]
    machine.run("hub", "push")
    assert stopped.snapshot() == expected


def test_the_driver_s_own_warning_on_a_lost_connection_is_not_printed() -> None:
    """psycopg logs "error ignored terminating <psycopg.Pipeline [BAD]>" when the server goes
    away inside a pipeline; with no logging set up Python would print it beside our one line."""
    script = (
        "import logging\n"
        "from journal_index.hub import connection\n"
        "try:\n"
        "    connection.connect('postgresql://nobody@127.0.0.1:1/none')\n"
        "except connection.HubError:\n"
        "    pass\n"
        "logging.getLogger('psycopg').warning('error ignored terminating %s: %s', '<psycopg.Pipeline [BAD]>',\n"
        "                                     'the connection is lost')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
