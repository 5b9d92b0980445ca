"""Index upkeep outside the commits that write rows: FTS merges in short steps of their own, WAL
checkpoints after the transaction that grew the WAL. What is searchable never changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from journal_index import indexer
from journal_index import store as store_module
from journal_index.indexer import discover, index_files
from journal_index.store import FTS_TABLES, Store, open_store
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


def test_workers_index_exactly_what_one_process_does(tmp_path: Path, sessions_root: Path) -> None:
    """Parsing and redaction in worker processes: the same rows and terms, the same report."""
    paths = discover([sessions_root])
    alone, pooled = open_store(str(tmp_path / "alone.db")), open_store(str(tmp_path / "pooled.db"))
    try:
        one = index_files(alone, paths, workers=0)
        two = index_files(pooled, paths, workers=2)
        assert (two.files, two.entries, two.bytes, two.skipped_lines, two.errors) == (
            one.files, one.entries, one.bytes, one.skipped_lines, one.errors)
        assert snapshot(pooled) == snapshot(alone)
        assert pooled.rows("SELECT path, cursor, size, mtime_ns, anchor_hash, entries, skipped, context_from "
                           "FROM files ORDER BY path") == alone.rows(
            "SELECT path, cursor, size, mtime_ns, anchor_hash, entries, skipped, context_from FROM files ORDER BY path")
        # A second pass finds nothing new, whoever parsed the first.
        again = index_files(pooled, paths, workers=2)
        assert again.entries == 0 and again.bytes == 0
    finally:
        alone.close()
        pooled.close()


def test_workers_resume_from_the_cursor(tmp_path: Path, sessions_root: Path) -> None:
    """Journals cut short, indexed, then grown back: workers start at each stored cursor and
    link results to calls made before it, as one process does."""
    paths = discover([sessions_root])
    full = {p: Path(p).read_bytes() for p in paths}
    for path, data in full.items():
        lines = data.split(b"\n")
        Path(path).write_bytes(b"\n".join(lines[: max(1, len(lines) // 2)]) + b"\n")
    alone, pooled = open_store(str(tmp_path / "alone.db")), open_store(str(tmp_path / "pooled.db"))
    try:
        index_files(alone, paths, workers=0)
        index_files(pooled, paths, workers=2)
        for path, data in full.items():
            Path(path).write_bytes(data)
        index_files(alone, paths, workers=0)
        index_files(pooled, paths, workers=2)
        assert snapshot(pooled) == snapshot(alone)
    finally:
        alone.close()
        pooled.close()


def test_workers_are_used_only_for_a_large_pass(store: Store, sessions_root: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    paths = discover([sessions_root])
    monkeypatch.delenv(indexer.WORKERS_ENV, raising=False)
    monkeypatch.setattr(indexer, "cores", lambda: 4)
    assert indexer.choose_workers(store, paths) == 0  # a few hundred KB: not worth a process
    monkeypatch.setattr(indexer, "WORKERS_MIN_BYTES", 1)
    assert indexer.choose_workers(store, paths) > 0
    index_files(store, paths, workers=0)
    assert indexer.choose_workers(store, paths) == 0  # all indexed: nothing to parse
    monkeypatch.setattr(indexer, "cores", lambda: 1)
    monkeypatch.setenv(indexer.WORKERS_ENV, "3")
    assert indexer.choose_workers(store, paths) == 3
