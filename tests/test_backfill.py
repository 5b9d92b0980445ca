"""Backfill: the lease (one backfiller at a time, takeover, loss), progress, vanished journals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from journal_index.data.store import open_store
from journal_index.indexing import backfill, indexer
from journal_index.indexing.status import backfill_progress
from tests.helpers import copy_journal_tree, scratch_rows
from tests.helpers import relative_rows as entry_rows

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "sessions"
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def root(tmp_path: Path) -> Path:
    target = tmp_path / "sessions"
    copy_journal_tree(FIXTURES, target)
    return target


RUNNER = r"""
import json, os, sys, time
from journal_index.indexing import backfill
from journal_index.data.store import open_store

db, root, own, go, delay = sys.argv[1:]
while not os.path.exists(go):
    time.sleep(0.002)
store = open_store(db)
indexed = []

def seen(result):
    indexed.append(result.path)
    time.sleep(float(delay))  # widen the window in which the other process is running

report = backfill.run(store, [root], serve=[own], on_result=seen)
store.close()
print(json.dumps({"ran": report.ran, "holder": report.holder, "indexed": indexed}))
"""


def test_two_backfills_at_once_one_holds_the_lease(tmp_path, root):
    db = tmp_path / "index.db"
    open_store(str(db)).close()  # the schema exists; this test is about the lease
    journals = indexer.discover([root])
    own = [journals[-1], next(p for p in journals if "scratch" in p and os.path.getsize(p) > 1e6)]
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen([sys.executable, "-c", RUNNER, str(db), str(root), own[i], str(go), "0.03"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for i in range(2)
    ]
    time.sleep(0.3)
    go.touch()
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        results.append(json.loads(out))

    assert sorted(r["ran"] for r in results) == [False, True]
    winner = next(i for i, r in enumerate(results) if r["ran"])
    loser = 1 - winner
    # The loser served its own journal only; the winner went through every journal.
    assert results[loser]["indexed"] == [own[loser]]
    assert results[loser]["holder"] is not None
    assert set(results[winner]["indexed"]) == set(journals)
    assert entry_rows(db, root) == scratch_rows(tmp_path, root)
    store = open_store(str(db))
    try:
        assert store.get_meta(backfill.LEASE_KEY) is None  # released at the end
        progress = backfill_progress(store)
        assert progress is not None
        assert progress["done"] == progress["total"] == len(journals)
        assert progress["finishedAt"] is not None
    finally:
        store.close()


def test_an_expired_lease_is_taken_over_and_a_live_one_is_not(tmp_path, root):
    store = open_store(str(tmp_path / "index.db"))
    try:
        store.set_meta(backfill.LEASE_KEY, f"ghost:1:abcd@{int(time.time()) + 600}")
        report = backfill.run(store, [root])
        assert not report.ran and report.holder == "ghost:1:abcd"
        assert store.value("SELECT count(*) FROM files") == 0

        store.set_meta(backfill.LEASE_KEY, f"ghost:1:abcd@{int(time.time()) - 1}")
        report = backfill.run(store, [root])
        assert report.ran and report.took_over == "ghost:1:abcd"
        assert report.done == report.total == len(indexer.discover([root]))
        assert store.get_meta(backfill.LEASE_KEY) is None
    finally:
        store.close()


def test_a_backfill_that_loses_its_lease_stops(tmp_path, root, monkeypatch):
    monkeypatch.setattr(backfill, "BATCH_JOURNALS", 1)  # the lease is checked after every batch
    db = str(tmp_path / "index.db")
    store = open_store(db)
    other = open_store(db)
    seen: list[str] = []
    progress_while_running: list[str | None] = []

    def on_result(result: indexer.FileResult) -> None:
        seen.append(result.path)
        progress_while_running.append(other.get_meta(backfill.PROGRESS_KEY))
        if len(seen) == 3:  # another process takes the lease (say ours had expired)
            other.set_meta(backfill.LEASE_KEY, f"thief:2:ffff@{int(time.time()) + 600}")

    try:
        lease = backfill.Lease(store)
        report = backfill.backfill(store, [root], lease, on_result=on_result)
        assert report.ran and report.lost and report.holder == "thief:2:ffff"
        assert report.done == 3 < report.total
        assert not lease.held
        assert store.value("SELECT count(*) FROM files") == 3
        # While running, progress is done/total with an empty finish time.
        assert progress_while_running[1] == f"1/{report.total}@"
        lease.release()  # not ours any more: left alone
        assert store.get_meta(backfill.LEASE_KEY) == other.get_meta(backfill.LEASE_KEY)
        assert (store.get_meta(backfill.LEASE_KEY) or "").startswith("thief:")
    finally:
        other.close()
        store.close()


def test_backfill_indexes_changes_and_forgets_vanished_journals(tmp_path, root):
    store = open_store(str(tmp_path / "index.db"))
    try:
        first = backfill.run(store, [root])
        assert first.changed == first.total
        again = backfill.run(store, [root])
        assert again.changed == 0 and again.report.entries == 0

        gone = Path(indexer.discover([root])[0])
        gone.unlink()
        grown = Path(indexer.discover([root])[-1])
        with grown.open("ab") as handle:
            handle.write(b'{"type":"message","id":"feedbeef","parentId":null,"timestamp":'
                         b'"2026-10-20T10:00:00.000Z","message":{"role":"user","content":"late line"}}\n')
        third = backfill.run(store, [root])
        assert third.removed == 1 and third.changed == 1 and third.report.entries == 1
        assert store.value("SELECT count(*) FROM files WHERE path = ?", (str(gone),)) == 0
    finally:
        store.close()
    assert entry_rows(tmp_path / "index.db", root) == scratch_rows(tmp_path, root)


def test_progress_of_a_dead_backfill_reads_as_interrupted(tmp_path) -> None:
    import time as _time

    from journal_index.data.store import open_store
    from journal_index.indexing.status import backfill_progress

    store = open_store(str(tmp_path / "p.db"))
    store.set_meta("backfill_progress", "3/10@")
    store.set_meta("backfill_lease", f"host:1:x@{_time.time() + 60}")
    assert (backfill_progress(store) or {})["state"] == "running"
    store.set_meta("backfill_lease", f"host:1:x@{_time.time() - 1}")
    assert (backfill_progress(store) or {})["state"] == "interrupted"
    store.set_meta("backfill_progress", "10/10@123")
    assert (backfill_progress(store) or {})["state"] == "finished"
    store.conn.close()


def test_batches_hold_a_bounded_amount_to_read(tmp_path, root, monkeypatch):
    """A backfill indexes in batches: every journal once, in order, each batch within its byte
    and journal limits (a single journal larger than the limit is a batch of its own)."""
    paths = indexer.discover([root])
    sizes = {p: os.path.getsize(p) for p in paths}
    limit = sorted(sizes.values())[len(sizes) // 2]  # the median journal's size
    monkeypatch.setattr(backfill, "BATCH_BYTES", limit)
    monkeypatch.setattr(backfill, "BATCH_JOURNALS", 5)
    store = open_store(str(tmp_path / "index.db"))
    try:
        cut = list(backfill.batches(store, paths))
        assert [p for batch in cut for p in batch] == paths
        assert len(cut) > 1
        for batch in cut:
            assert len(batch) <= 5
            assert len(batch) == 1 or sum(sizes[p] for p in batch) <= limit
        # Once indexed, nothing is pending: one batch of BATCH_JOURNALS at most per cut.
        backfill.backfill(store, [root], backfill.Lease(store))
        assert [len(b) for b in backfill.batches(store, paths)] == [5] * (len(paths) // 5) + (
            [len(paths) % 5] if len(paths) % 5 else [])
    finally:
        store.close()
