"""A call refused "busy" at once (SQLite did not run its busy wait) is tried once more; a lock
held throughout is reported, after one retry, not waited on forever."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import apsw
import pytest

from journal_index.agent import tool as tool_module
from journal_index.agent.tool import MemoryTool
from journal_index.data.store import open_store
from journal_index.indexing.backfill import Lease
from tests.test_tool import BE_SESSION, append_user, journal_of, make_tool


def _hold_write_lock(db_path: Path) -> apsw.Connection:
    blocker = apsw.Connection(str(db_path))
    blocker.execute("BEGIN IMMEDIATE")
    return blocker


def _refusing_at_once(db_path: Path, sessions_root: Path) -> MemoryTool:
    tool = make_tool(db_path, sessions_root)
    assert not tool.call({"action": "search", "query": "alembic"}).is_error  # opened and filled
    assert tool._store is not None
    tool._store.conn.set_busy_timeout(0)  # no busy wait: SQLite says BUSY at once, as in the cases retried
    append_user(journal_of(sessions_root, BE_SESSION), "the zeppelin migration is next", "feed0001")
    return tool  # the next call must write (the current journal grew)


def test_a_lock_freed_in_a_moment_is_tried_again(db_path: Path, sessions_root: Path) -> None:
    tool = _refusing_at_once(db_path, sessions_root)
    blocker = _hold_write_lock(db_path)
    freed = threading.Timer(0.05, lambda: blocker.execute("COMMIT"))
    freed.start()
    try:
        answer = tool.call({"action": "search", "query": "zeppelin"})
    finally:
        freed.join()
        blocker.close()
        tool.close()
    assert not answer.is_error, answer.text
    assert answer.index is not None and answer.index["currentJournal"]["newEntries"] == 1


def test_a_lock_held_throughout_is_reported_after_one_retry(db_path: Path, sessions_root: Path) -> None:
    tool = _refusing_at_once(db_path, sessions_root)
    blocker = _hold_write_lock(db_path)
    try:
        started = time.monotonic()
        answer = tool.call({"action": "search", "query": "zeppelin"})
        took = time.monotonic() - started
    finally:
        blocker.execute("COMMIT")
        blocker.close()
        tool.close()
    assert answer.error is not None and answer.error["code"] == "index_busy"
    assert took < 2.0


def test_a_write_waiting_for_the_lock_lets_the_thread_holding_it_finish(db_path: Path) -> None:
    """The MCP server writes from two threads (a call, the Freshener). A write that waits for
    the lock must let the other thread run, or the holder never commits and the wait ends BUSY."""
    waiting, holding = open_store(str(db_path)), open_store(str(db_path))
    waiting.conn.set_busy_timeout(3_000)
    locked, done = threading.Event(), threading.Event()

    def hold_then_commit() -> None:
        with holding.write() as conn:
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('holder', 'x')")
            locked.set()
            time.sleep(0.3)  # Python code inside the transaction: it needs the GIL to go on
        done.set()

    holder = threading.Thread(target=hold_then_commit)
    holder.start()
    try:
        assert locked.wait(5)
        started = time.monotonic()
        with waiting.write() as conn:
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('waiter', 'y')")
        took = time.monotonic() - started
    finally:
        holder.join()
        waiting.close()
        holding.close()
    assert done.is_set() and took < 2.0, took  # written once the holder committed, not after the timeout


def test_only_the_first_call_waits_for_the_first_pass(db_path: Path, sessions_root: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process holds the backfill lease and never finishes a pass: the first call waits
    for one (a while), the next ones answer without waiting again."""
    monkeypatch.setattr(tool_module, "FIRST_PASS_SECONDS", 3.0)
    monkeypatch.setattr(tool_module, "FILL_SECONDS", 0.5)
    other = open_store(str(db_path))
    assert Lease(other, owner="watch-elsewhere").acquire()
    tool = make_tool(db_path, sessions_root)
    tool.keep_fresh()
    try:
        took = []
        for _ in range(3):
            started = time.monotonic()
            answer = tool.call({"action": "search", "query": "alembic"})
            took.append(time.monotonic() - started)
            assert not answer.is_error, answer.text
    finally:
        tool.close()
        other.close()
    assert took[0] >= 3.0 and max(took[1:]) < 3.0, took
