"""A call refused "busy" at once (SQLite did not run its busy wait) is tried once more; a lock
held throughout is reported, after one retry, not waited on forever."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import apsw

from journal_index.agent.tool import MemoryTool
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
