"""Index upkeep outside the commits that write rows: FTS merges in short steps of their own, WAL
checkpoints after the transaction that grew the WAL. What is searchable never changes."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from journal_index.data import store as store_module
from journal_index.data.store import FTS_TABLES, Store, load_migrations, migrate, open_store
from journal_index.indexing import indexer
from journal_index.indexing.indexer import discover, index_files
from tests.helpers import scratch_snapshot, snapshot


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


def test_many_small_commits_merge_as_they_go(store: Store, sessions_root: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """One journal at a time (a commit each): the writer looks for due merges every few commits,
    so no level fills up to FTS5's crisis merge (run inside a commit), and what it wrote is what
    a single pass writes."""
    merges: list[int] = []
    merge_fts = store.merge_fts

    def counted(pages: int = store_module.MERGE_PAGES) -> int:
        merges.append(pages)
        return merge_fts(pages)

    monkeypatch.setattr(store, "merge_fts", counted)
    paths = discover([sessions_root])
    for path in paths:
        index_files(store, [path])
    assert len(merges) >= len(paths) // store_module.MERGE_AFTER_COMMITS
    # Since the last merge at most MERGE_AFTER_COMMITS - 1 commits wrote segments: whatever
    # became due (a big segment can be promoted onto a fuller level) is one step per table.
    assert merge_fts() <= 2 * len(FTS_TABLES)
    for table in FTS_TABLES:
        store.conn.execute(f"INSERT INTO {table}({table}, rank) VALUES('integrity-check', 0)")
    single = open_store(str(Path(store.path).with_name("single.db")))
    index_files(single, paths)
    assert snapshot(single) == snapshot(store)
    single.conn.close()


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


IDS = ["0a1b2c3d", "ffffffff", "00000000", "12345678", "0A1B2C3D", "0a1b2c3", "0a1b2c3d9",
       "v1.1f4.00c0ffee", "v1.1f4.00C0FFEE", "v1.01f4.00c0ffee", "v1.1f5.00c0ffee", "v1.1f4.c0ffee",
       "019ed836-b1da-78f1-8a0c-e598363d10f4", "019ED836-B1DA-78F1-8A0C-E598363D10F4",
       "019ed836b1da78f18a0ce598363d10f4", "msg_01AbC", "x", "12", "1e5", "ünïcode-id", " spaced "]
KIND_ROLE_PAIRS = [*store_module.KIND_ROLES, ("tool_result", None), ("future_kind", "someRole"),
                   ("user", "assistant"), ("future_kind", None)]


def test_entry_ids_kinds_and_roles_read_back_as_written(store: Store) -> None:
    """Whatever shape they are stored in (numbers, bytes, text), queries read them as given."""
    expected = []
    with store.write():
        store.conn.execute("INSERT INTO files(id, path, format) VALUES(1, '/j.jsonl', 'pi')")
        rowid = 0
        for entry_id in IDS:
            for kind, role in KIND_ROLE_PAIRS:
                rowid += 1
                offset = 0x1F4
                store.conn.execute(
                    "INSERT INTO entries(rowid, file_id, kind_role, names, id_num, id_text, chars, offset, length) "
                    "VALUES(?, 1, ?, ?, ?, ?, 0, ?, 1)",
                    (rowid, *store_module.stored_kind(kind, role), *store_module.stored_id(entry_id, offset), offset))
                expected.append((rowid, entry_id, kind, role))
    assert store.rows("SELECT rowid, entry_id, kind, role FROM entries ORDER BY rowid") == expected
    for entry_id in IDS:
        assert {r[0] for r in store.rows("SELECT entry_id FROM entries WHERE entry_id = ?", (entry_id,))} == {entry_id}
    plan = " ".join(r[3] for r in store.rows("EXPLAIN QUERY PLAN SELECT rowid FROM entries WHERE entry_id = ?", ("x",)))
    assert "entries_entry_id" in plan


def test_rows_indexed_before_migration_7_read_the_same_after(db_path: Path) -> None:
    conn = apsw.Connection(str(db_path))
    migrate(conn, load_migrations()[:6])
    rows = [(i + 1, entry_id, kind, role) for i, (entry_id, (kind, role)) in
            enumerate(zip(IDS * 2, KIND_ROLE_PAIRS * 4, strict=False))]
    with conn:
        conn.execute("INSERT INTO files(id, path, format) VALUES(1, '/j.jsonl', 'pi')")
        conn.executemany("INSERT INTO entries(rowid, file_id, entry_id, ts, kind, role, chars, offset, length) "
                         "VALUES(?, 1, ?, 5, ?, ?, 0, 500, 1)", rows)
    conn.close()
    store = open_store(str(db_path))
    try:
        assert store.rows("SELECT rowid, entry_id, kind, role FROM entries ORDER BY rowid") == rows
        indexes = {r[0] for r in store.rows("SELECT name FROM sqlite_schema WHERE type = 'index' "
                                            "AND tbl_name = 'entries'")}
        assert {"entries_entry_id", "entries_file", "entries_summaries"} <= indexes
        assert "entries_ts" not in indexes
    finally:
        store.close()


def test_a_large_pass_ends_compacted(store: Store, sessions_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """New indexes give freed pages back (auto_vacuum incremental); a pass that grew the index by
    a quarter or more ends merged to one segment per table with no free page left."""
    assert store.conn.pragma("auto_vacuum") == 2
    monkeypatch.setattr(indexer, "COMPACT_MIN_BYTES", 1)
    compacted: list[int] = []
    compact = store.compact
    monkeypatch.setattr(store, "compact", lambda: compacted.append(compact()))
    index_files(store, discover([sessions_root]))
    assert len(compacted) == 1
    assert store.conn.pragma("freelist_count") == 0
    assert store.merge_fts(-16) == len(FTS_TABLES)  # already one segment each: one idle step per table
    assert store.conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    index_files(store, discover([sessions_root]))  # nothing new: no compaction
    assert len(compacted) == 1


@pytest.mark.parametrize("workers", [0, 2])
def test_a_stopped_pass_ends_at_a_block_and_the_next_pass_resumes_there(
        tmp_path: Path, sessions_root: Path, workers: int) -> None:
    """``stop`` (a first Ctrl-C in `watch`) ends a pass between blocks, in worker processes or
    not: what was committed is a resumable state, and the next pass yields the from-scratch index."""
    paths = discover([sessions_root])
    total = sum(Path(p).stat().st_size for p in paths)
    asked = 0

    def stop() -> bool:
        nonlocal asked
        asked += 1
        return asked > 3

    store = open_store(str(tmp_path / "stopped.db"))
    try:
        first = index_files(store, paths, workers=workers, stop=stop)
        assert first.files < len(paths) and first.bytes < total
        index_files(store, paths, workers=workers)
        assert snapshot(store) == scratch_snapshot(paths)
        assert index_files(store, paths, workers=workers).bytes == 0
    finally:
        store.close()
