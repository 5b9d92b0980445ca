"""Index upkeep outside the commits that write rows: FTS merges in short steps of their own, WAL
checkpoints after the transaction that grew the WAL. What is searchable never changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from journal_index import store as store_module
from journal_index.indexer import discover, index_files
from journal_index.store import FTS_TABLES, Store
from tests.helpers import snapshot


def _segments(store: Store, table: str) -> int:
    # %_data holds the structure record and the averages row besides the segment leaves; its
    # row count falls as segments merge.
    return int(store.value(f"SELECT count(*) FROM {table}_data"))


def test_fts_tables_do_not_merge_inside_commits(store: Store) -> None:
    for table in FTS_TABLES:
        assert store.value(f"SELECT v FROM {table}_config WHERE k = 'automerge'") == 0


def test_merging_every_level_keeps_every_term(indexed_store: Store) -> None:
    before = snapshot(indexed_store)
    rows = {table: _segments(indexed_store, table) for table in FTS_TABLES}
    steps = indexed_store.merge_fts(-16)
    assert steps >= len(FTS_TABLES)
    assert snapshot(indexed_store) == before
    assert all(_segments(indexed_store, table) <= rows[table] for table in FTS_TABLES)
    # Merged down to one segment per table: nothing is due any more.
    assert indexed_store.merge_fts() == len(FTS_TABLES)
    assert indexed_store.conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]


def test_many_small_commits_leave_no_merge_undone(store: Store, sessions_root: Path) -> None:
    """One journal at a time (a commit each): the writer merges as it goes, so a level never
    fills up to FTS5's crisis merge, and what it wrote is what a single pass writes."""
    paths = discover([sessions_root])
    for path in paths:
        index_files(store, [path])
    assert store.merge_fts() == len(FTS_TABLES)  # nothing left that a writer should have merged
    for table in FTS_TABLES:
        store.conn.execute(f"INSERT INTO {table}({table}, rank) VALUES('integrity-check', 0)")


def test_the_wal_is_checkpointed_after_writes_not_inside_them(store: Store, sessions_root: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # SQLite's automatic checkpoint (run from inside the commit call) is replaced by our own.
    assert store.conn.pragma("wal_autocheckpoint") == 0
    monkeypatch.setattr(store_module, "WAL_CHECKPOINT_PAGES", 10)
    done: list[int] = []
    checkpoint = store.checkpoint

    def counted() -> None:
        done.append(store.wal_pages)
        checkpoint()

    monkeypatch.setattr(store, "checkpoint", counted)
    index_files(store, discover([sessions_root]))
    assert done and all(pages >= 10 for pages in done)
