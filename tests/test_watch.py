"""`journal-index watch` as a real process: file events, new folders, rescans, the lease,
SIGTERM; and the service files that run it."""

from __future__ import annotations

import os
import plistlib
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import apsw
import orjson
import pytest

from journal_index.data.store import open_store
from journal_index.indexing import backfill, indexer
from tests.helpers import copy_journal_tree, scratch_rows
from tests.helpers import relative_rows as entry_rows

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "sessions"
REPO = Path(__file__).resolve().parent.parent
DEADLINE = 10.0

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    target = tmp_path / "sessions"
    copy_journal_tree(FIXTURES, target)
    return target


def user_line(entry_id: str, text: str) -> bytes:
    return orjson.dumps({
        "type": "message", "id": entry_id, "parentId": None, "timestamp": "2026-10-20T10:00:00.000Z",
        "message": {"role": "user", "content": [{"type": "text", "text": text}]},
    }) + b"\n"


def header_line(session_id: str, cwd: str) -> bytes:
    return orjson.dumps({"type": "session", "version": 3, "id": session_id,
                         "timestamp": "2026-10-20T09:59:00.000Z", "cwd": cwd}) + b"\n"


def matches(db: Path, word: str) -> int:
    if not db.exists():
        return 0
    conn = apsw.Connection(str(db))
    conn.set_busy_timeout(5000)
    try:
        count: Any = conn.execute("SELECT count(*) FROM entries_fts WHERE entries_fts MATCH ?",
                                  (f'"{word}"',)).fetchall()[0][0]
        return int(count)
    except apsw.SQLError:  # the schema is not there yet
        return 0
    finally:
        conn.close()


def wait_for(predicate, what: str, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        if predicate():
            return
        assert proc.poll() is None, f"watch exited early:\n{log.read_text()}"
        time.sleep(0.05)
    raise AssertionError(f"{what} not seen within {DEADLINE} s; watch log:\n{log.read_text()}")


def start_watch(db: Path, root: Path, log: Path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-m", "journal_index", "--db", str(db), "--sessions", str(root), "watch", *extra],
        stdout=subprocess.DEVNULL, stderr=log.open("wb"), env=env,
    )


def exit_code(proc: subprocess.Popen) -> int:
    """The process's exit code; killed (and the test failed) if it is still running at DEADLINE."""
    try:
        return proc.wait(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise


def stop(proc: subprocess.Popen, log: Path) -> None:
    proc.send_signal(signal.SIGTERM)
    assert exit_code(proc) == 0, log.read_text()



def assert_lease_released_and_intact(db: Path, log_text: str) -> None:
    """After a stop: no backfill lease left behind, and the index passes SQLite's own check."""
    store = open_store(str(db))
    try:
        assert store.get_meta(backfill.LEASE_KEY) is None, log_text
        assert store.value("PRAGMA integrity_check") == "ok"
    finally:
        store.close()

def test_watch_follows_appends_and_new_folders_and_stops_cleanly(tmp_path, root):
    db, log = tmp_path / "index.db", tmp_path / "watch.log"
    proc = start_watch(db, root, log, "--rescan", "600")  # events only: no rescan during the test
    try:
        wait_for(lambda: b"backfill:" in log.read_bytes(), "the backfill", proc, log)
        journal = Path(indexer.discover([root])[-1])  # the oldest journal
        with journal.open("ab") as handle:
            handle.write(user_line("aa000001", "zebrafrobnicate the gateway"))
        wait_for(lambda: matches(db, "zebrafrobnicate") == 1, "the appended line", proc, log)

        folder = root / "--home-dev-Apps-brandnew--"
        folder.mkdir()
        fresh = folder / "2026-10-20T09-59-00-000Z_01a1f000-0000-7000-8000-000000000001.jsonl"
        fresh.write_bytes(header_line("01a1f000-0000-7000-8000-000000000001", "/home/dev/Apps/brandnew")
                          + user_line("bb000001", "quuxblorpify the parser"))
        wait_for(lambda: matches(db, "quuxblorpify") == 1, "the new journal", proc, log)

        # A burst of appends to a live journal: each line lands, none twice.
        with fresh.open("ab") as handle:
            for i in range(40):
                handle.write(user_line(f"cc{i:06d}", f"burstword{i % 2} line {i}"))
                handle.flush()
                time.sleep(0.005)
        wait_for(lambda: matches(db, "burstword1") == 20 and matches(db, "burstword0") == 20,
                 "the burst", proc, log)
    finally:
        if proc.poll() is None:
            stop(proc, log)
    text = log.read_text()
    assert "longest write transaction" in text
    conn = apsw.Connection(str(db))
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()
    assert entry_rows(db, root) == scratch_rows(tmp_path, root)


def test_watch_without_events_finds_changes_by_rescanning(tmp_path, root):
    db, log = tmp_path / "index.db", tmp_path / "watch.log"
    proc = start_watch(db, root, log, "--no-events", "--rescan", "1")
    try:
        wait_for(lambda: b"backfill:" in log.read_bytes(), "the backfill", proc, log)
        journal = Path(indexer.discover([root])[0])
        with journal.open("ab") as handle:
            handle.write(user_line("dd000001", "rescanfoundme please"))
        wait_for(lambda: matches(db, "rescanfoundme") == 1, "the appended line", proc, log)
    finally:
        if proc.poll() is None:
            stop(proc, log)


def test_watch_serves_events_but_does_not_backfill_while_another_holds_the_lease(tmp_path, root):
    db, log = tmp_path / "index.db", tmp_path / "watch.log"
    store = open_store(str(db))
    store.set_meta(backfill.LEASE_KEY, f"elsewhere:42:beef@{int(time.time()) + 600}")
    store.close()
    proc = start_watch(db, root, log, "--rescan", "1")
    try:
        wait_for(lambda: b"held by elsewhere:42:beef" in log.read_bytes(), "the lease refusal", proc, log)
        journal = Path(indexer.discover([root])[3])
        with journal.open("ab") as handle:
            handle.write(user_line("ee000001", "servedwithoutlease now"))
        wait_for(lambda: matches(db, "servedwithoutlease") == 1, "the served journal", proc, log)
        time.sleep(1.5)  # at least one rescan: it must not backfill
        conn = apsw.Connection(str(db))
        try:
            paths = [p for (p,) in conn.execute("SELECT path FROM files")]
        finally:
            conn.close()
        assert paths == [str(journal)]
    finally:
        if proc.poll() is None:
            stop(proc, log)
    store = open_store(str(db))
    try:
        assert (store.get_meta(backfill.LEASE_KEY) or "").startswith("elsewhere:")  # not ours to release
    finally:
        store.close()


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "journal_index", *args], capture_output=True, text=True,
                          env=env, timeout=60)


def test_service_files_run_watch(tmp_path):
    unit = run_cli("--db", str(tmp_path / "i.db"), "service", "--print", "systemd")
    assert unit.returncode == 0, unit.stderr
    exec_start = next(line for line in unit.stdout.splitlines() if line.startswith("ExecStart="))
    command = exec_start.removeprefix("ExecStart=").split()
    assert os.path.isabs(command[0]) and command[-1] == "watch"
    assert str(tmp_path / "i.db") in command
    assert "Restart=on-failure" in unit.stdout and "WantedBy=default.target" in unit.stdout

    plist = run_cli("service", "--print", "launchd")
    assert plist.returncode == 0, plist.stderr
    agent = plistlib.loads(plist.stdout.encode())
    assert agent["Label"] == "dev.journal-index.watch"
    assert agent["KeepAlive"] is True and agent["RunAtLoad"] is True
    assert os.path.isabs(agent["ProgramArguments"][0]) and agent["ProgramArguments"][-1] == "watch"

    bad = run_cli("service", "--print", "upstart")
    assert bad.returncode == 2
    assert bad.stderr.strip().count("\n") == 0
    assert "systemd" in bad.stderr and "launchd" in bad.stderr


@pytest.mark.parametrize("gap", [0.0, 0.05, 0.3])
def test_a_second_ctrl_c_stops_at_once_and_still_gives_the_lease_back(tmp_path, gap):
    """Ctrl-C twice: no 'Aborted!', no traceback, exit 130, and the backfill lease is released
    (the next watch must not wait 120 s for it)."""
    root = tmp_path / "sessions"
    folder = root / "--home-dev-big--"
    folder.mkdir(parents=True)
    # One large journal: the first Ctrl-C ends the pass after the block being indexed, so the
    # second one lands in the middle of that, or just after the clean stop.
    words = " ".join(f"word{n}" for n in range(400))
    with open(folder / "big.jsonl", "wb") as handle:
        handle.write(header_line("big-session", "/home/dev/big"))
        for n in range(12_000):
            handle.write(user_line(f"b{n:07d}", f"{words} line{n}"))
    db, log = tmp_path / "index.db", tmp_path / "watch.log"
    proc = start_watch(db, root, log)
    wait_for(lambda: b"took the backfill lease" in log.read_bytes(), "the lease taken", proc, log)
    time.sleep(0.2)  # well inside the backfill
    proc.send_signal(signal.SIGINT)
    time.sleep(gap)
    proc.send_signal(signal.SIGINT)
    code = exit_code(proc)
    text = log.read_text()
    assert code in (0, 130), text  # 130 when the second one cut the journal short
    assert "Aborted" not in text and "Traceback" not in text, text
    assert_lease_released_and_intact(db, text)


def test_watch_follows_every_agents_default_folders_even_those_created_later(tmp_path):
    """No --sessions: watch follows pi's, Claude Code's and Codex's folders. Claude's exists at
    start; Codex's is created while watch runs (its first session), as on a new machine."""
    from tests.agent_homes import AGENT_FIXTURES, home_env

    home, db, log = tmp_path / "home", tmp_path / "index.db", tmp_path / "watch.log"
    (home / ".claude" / "projects").mkdir(parents=True)
    env = {**home_env(home, db), "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "journal_index", "watch", "--rescan", "1"],
                            stdout=subprocess.DEVNULL, stderr=log.open("wb"), env=env, cwd=home)

    def formats() -> dict[str, int]:
        if not db.exists():
            return {}
        conn = apsw.Connection(str(db))
        conn.set_busy_timeout(5000)
        try:
            return dict(conn.execute("SELECT f.format, count(e.rowid) FROM files f "
                                     "LEFT JOIN entries e ON e.file_id = f.id GROUP BY f.format"))
        except apsw.SQLError:  # the schema is not there yet
            return {}
        finally:
            conn.close()

    try:
        wait_for(lambda: b"backfill:" in log.read_bytes(), "the backfill", proc, log)
        assert formats() == {}
        claude = sorted((AGENT_FIXTURES / "claude" / "projects").glob("*/*.jsonl"))[0]
        project = home / ".claude" / "projects" / claude.parent.name
        project.mkdir()
        shutil.copy(claude, project / claude.name)
        wait_for(lambda: formats().get("claude", 0) > 0, "the Claude Code transcript", proc, log)

        codex = sorted((AGENT_FIXTURES / "codex" / "sessions").rglob("rollout-*.jsonl"))[0]
        day = home / ".codex" / codex.parent.relative_to(AGENT_FIXTURES / "codex")
        day.mkdir(parents=True)  # ~/.codex/sessions did not exist when watch started
        shutil.copy(codex, day / codex.name)
        wait_for(lambda: formats().get("codex", 0) > 0, "the Codex rollout", proc, log)
        assert set(formats()) == {"claude", "codex"}
    finally:
        if proc.poll() is None:
            stop(proc, log)
    # What watch stored is what a fresh index of the same files stores.
    fresh = tmp_path / "fresh.db"
    done = subprocess.run([sys.executable, "-m", "journal_index", "--db", str(fresh), "index"],
                          env={**env, "JOURNAL_INDEX_DB": str(fresh)}, cwd=home, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert formats() == _counts(fresh)


def _counts(db: Path) -> dict[str, int]:
    conn = apsw.Connection(str(db))
    try:
        return dict(conn.execute("SELECT f.format, count(e.rowid) FROM files f "
                                 "LEFT JOIN entries e ON e.file_id = f.id GROUP BY f.format"))
    finally:
        conn.close()


def test_a_journal_failing_the_same_way_on_every_rescan_is_logged_once(tmp_path, root):
    """A FIFO named like a journal fails every rescan: its error is logged once, again only
    after it changed (here: it became a readable journal, then a FIFO again)."""
    folder = root / "--home-dev-Apps-fifo--"
    folder.mkdir()
    fifo = folder / "2026-10-20T09-59-00-000Z_0f1f0000-0000-7000-8000-000000000001.jsonl"
    os.mkfifo(fifo)
    db, log = tmp_path / "index.db", tmp_path / "watch.log"
    proc = start_watch(db, root, log, "--verbose", "--rescan", "1")

    def errors() -> int:
        return sum(1 for line in log.read_text().splitlines() if "error:" in line and str(fifo) in line)

    def rescans() -> int:
        return log.read_text().count("journal-index watch: rescan:")

    try:
        wait_for(lambda: rescans() >= 2, "two rescans", proc, log)
        assert errors() == 1, log.read_text()

        fifo.unlink()  # it becomes a journal: indexed, and its error forgotten
        fifo.write_bytes(header_line("0f1f0000-0000-7000-8000-000000000001", "/home/dev/Apps/fifo")
                         + user_line("ff000001", "fifoturnedjournal today"))
        wait_for(lambda: matches(db, "fifoturnedjournal") == 1, "the journal in the FIFO's place", proc, log)
        fifo.unlink()
        os.mkfifo(fifo)  # failing again is news
        wait_for(lambda: errors() == 2, "the second error", proc, log)
        seen = rescans()
        wait_for(lambda: rescans() >= seen + 2, "two more rescans", proc, log)
        assert errors() == 2, log.read_text()
    finally:
        if proc.poll() is None:
            stop(proc, log)


def _long_journals(root: Path, count: int, megabytes: int) -> Path:
    """``count`` journals of about ``megabytes`` each: a fixture header, then the ordinary lines
    (under 16 KB: no giant tool output, whose middle is never indexed) of every fixture journal,
    repeated. Enough to read for worker processes (indexer.WORKERS_MIN_BYTES), and a backfill
    of them lasts seconds, so a signal sent once the workers run lands in it."""
    journals = sorted(FIXTURES.rglob("*.jsonl"))
    header = journals[0].read_bytes().splitlines(keepends=True)[0]
    lines = b"".join(line for path in journals for line in path.read_bytes().splitlines(keepends=True)[1:]
                     if len(line) < 16_000)
    for n in range(count):
        folder = root / f"--home-dev-long{n}--"
        folder.mkdir(parents=True)
        with open(folder / f"long-{n}.jsonl", "wb") as handle:
            handle.write(header)
            for _ in range(megabytes * 1_000_000 // len(lines) + 1):
                handle.write(lines)
    return root


def _children(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads a process's children from /proc")
@pytest.mark.parametrize(("to", "signals", "workers"), [
    ("group", 1, 2),  # one Ctrl-C typed in a terminal: the workers get it too
    ("group", 2, 2),
    ("process", 2, 2),
    ("group", 2, 0),  # the same without workers, for comparison
])
def test_ctrl_c_during_a_backfill_with_workers(tmp_path, to, signals, workers):
    """SIGINT during a backfill that runs in worker processes stops watch within 2 s: one
    cleanly (exit 0, at the next block), a second one at once (exit 130), whether it reaches the
    workers too (the whole process group, as from a terminal) or only watch; never a traceback,
    no worker left, and the lease is given back."""
    root = _long_journals(tmp_path / "sessions", count=6, megabytes=4)
    db, log = tmp_path / "index.db", tmp_path / "watch.log"
    env = {**os.environ, "PYTHONPATH": str(REPO), indexer.WORKERS_ENV: str(workers)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "journal_index", "--db", str(db), "--sessions", str(root), "watch"],
        stdout=subprocess.DEVNULL, stderr=log.open("wb"), env=env, start_new_session=True)

    def send() -> None:
        if to == "group":
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGINT)

    try:
        wait_for(lambda: b"took the backfill lease" in log.read_bytes(), "the lease taken", proc, log)
        if workers:
            wait_for(lambda: len(_children(proc.pid)) == workers, "the worker processes", proc, log)
        else:
            time.sleep(0.3)  # well inside the backfill
        assert b"backfill:" not in log.read_bytes(), "the backfill ended before the signal"
        send()
        if signals == 2:
            wait_for(lambda: b"got SIGINT" in log.read_bytes(), "the first signal handled", proc, log)
            send()
        sent = time.monotonic()
        code = exit_code(proc)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = log.read_text()
    assert "Traceback" not in text and "Error" not in text and "Aborted" not in text, text
    assert took < 2.0, f"exit {took:.1f} s after the last SIGINT\n{text}"
    if signals == 2:
        assert code in (0, 130), text  # 0 when the first one's stop was done before the second
    else:
        assert code == 0, text
        assert "stopped;" in text
    assert _children(proc.pid) == []
    assert_lease_released_and_intact(db, text)


def test_a_second_ctrl_c_after_the_clean_stop_does_not_change_the_exit(tmp_path, root):
    """A quick Ctrl-C pair on an idle watch: the first one's stop is done before the second
    lands. The process is exiting by then: exit 0, no "Aborted!", no death by SIGINT."""
    db, log = tmp_path / "index.db", tmp_path / "watch.log"
    proc = start_watch(db, root, log)
    wait_for(lambda: b"backfill:" in log.read_bytes(), "the backfill", proc, log)
    proc.send_signal(signal.SIGINT)
    deadline = time.monotonic() + DEADLINE
    while b"stopped;" not in log.read_bytes() and time.monotonic() < deadline:
        time.sleep(0.001)
    proc.send_signal(signal.SIGINT)
    code = exit_code(proc)
    text = log.read_text()
    assert code == 0, text
    assert "Aborted" not in text and "Traceback" not in text, text
