"""The store: migrations recorded and applied in order, broken files set aside and rebuilt."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path
from typing import Any

import apsw
import pytest

from journal_index.config import cache_db_path
from journal_index.data.store import (
    APPLICATION_ID,
    NotOurIndexError,
    StoreError,
    load_migrations,
    migrate,
    open_store,
    remove_db_files,
)
from journal_index.indexing.indexer import discover, index_files


def test_fresh_db_has_every_migration_recorded(db_path: Path) -> None:
    store = open_store(str(db_path))
    migrations = load_migrations()
    assert store.schema_version == migrations[-1].version
    assert store.get_meta("schema_version") == str(migrations[-1].version)
    assert store.conn.pragma("journal_mode") == "wal"
    assert store.conn.pragma("synchronous") == 1  # NORMAL
    sql = store.value("SELECT sql FROM sqlite_schema WHERE name = 'entries_fts'")
    assert "content = ''" in sql and "contentless_delete = 1" in sql
    store.conn.close()


def test_an_older_db_is_migrated_on_open(db_path: Path) -> None:
    conn = apsw.Connection(str(db_path))
    migrate(conn, load_migrations()[:1])
    conn.execute("INSERT INTO files(path, format) VALUES('/x.jsonl', 'pi')")
    conn.close()
    store = open_store(str(db_path))
    assert store.schema_version == load_migrations()[-1].version
    assert store.value("SELECT path FROM files") == "/x.jsonl"  # data kept across the migration
    store.conn.close()


def test_migrations_must_be_numbered_without_gaps(tmp_path: Path) -> None:
    (tmp_path / "0001_a.sql").write_text("CREATE TABLE a(x);")
    (tmp_path / "0003_c.sql").write_text("CREATE TABLE c(x);")
    with pytest.raises(StoreError, match="without gaps"):
        load_migrations(tmp_path)


def test_a_newer_schema_is_refused(db_path: Path) -> None:
    store = open_store(str(db_path))
    store.conn.pragma("user_version", 999)
    store.conn.close()
    with pytest.raises(StoreError, match="newer journal-index"):
        open_store(str(db_path))


@pytest.mark.parametrize("damage", ["garbage", "truncated_header", "overwritten_pages"])
def test_a_broken_db_is_moved_aside_and_rebuilt(damage: str, sessions_root: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    # At the default cache path a file is ours even when its header is gone.
    db_path = cache_db_path()
    store = open_store(str(db_path))
    index_files(store, discover([sessions_root]))
    store.conn.pragma("wal_checkpoint(TRUNCATE)")
    store.conn.close()
    data = bytearray(db_path.read_bytes())
    if damage == "garbage":
        data = bytearray(b"this is not a database at all" * 100)
    elif damage == "truncated_header":
        data = data[:50]
    else:
        for page in range(1, min(8, len(data) // 4096)):
            data[page * 4096 : page * 4096 + 4096] = os.urandom(4096)
    db_path.write_bytes(bytes(data))
    reopened = open_store(str(db_path))
    try:
        index_files(reopened, discover([sessions_root]))
        integrity = reopened.value("PRAGMA integrity_check")
        broken = integrity != "ok"
    except apsw.Error:
        broken = True
    if broken:  # damage deep in the file shows only when used: recovery happens then
        from journal_index.data.store import recover

        reopened = recover(reopened, "test")
        index_files(reopened, discover([sessions_root]))
        assert reopened.value("PRAGMA integrity_check") == "ok"
    assert reopened.value("SELECT count(*) FROM files") == 26
    reopened.conn.close()
    if damage != "overwritten_pages" or broken:
        assert list(db_path.parent.glob("index.db.corrupt-*"))
        assert "moved it to" in capsys.readouterr().err


def _tree(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` with its bytes: what "untouched" is checked against."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _foreign_sqlite(path: Path) -> None:
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE moz_places(id INTEGER PRIMARY KEY, url TEXT); "
                 "INSERT INTO moz_places(url) VALUES('https://example.org')")
    conn.close()


@pytest.mark.parametrize("what", ["text", "foreign_sqlite", "other_app_id", "destroyed_header", "binary"])
def test_a_file_that_is_not_ours_is_refused_untouched(what: str, tmp_path: Path) -> None:
    folder = tmp_path / "box"
    folder.mkdir()
    target = folder / "x"
    if what == "text":
        target.write_text("notes\n")
    elif what == "foreign_sqlite":
        _foreign_sqlite(target)
    elif what == "other_app_id":
        conn = apsw.Connection(str(target))
        conn.pragma("application_id", 1234)
        conn.execute("CREATE TABLE t(x)")
        conn.close()
    elif what == "destroyed_header":  # ours once, but nothing says so any more, away from the cache
        open_store(str(target)).close()
        data = bytearray(target.read_bytes())
        data[:100] = os.urandom(100)
        target.write_bytes(bytes(data))
    else:
        target.write_bytes(bytes(range(256)) * 4)
    before = _tree(folder)
    with pytest.raises(NotOurIndexError, match=f"^{target} is .*refusing to touch it"):
        open_store(str(target))
    with pytest.raises(NotOurIndexError):
        remove_db_files(str(target))
    assert _tree(folder) == before


@pytest.mark.parametrize("what", ["folder", "fifo", "device"])
def test_special_files_are_refused(what: str, tmp_path: Path) -> None:
    if what == "folder":
        target = tmp_path / "dir"
        target.mkdir()
        (target / "keep").write_text("x")
    elif what == "fifo":
        target = tmp_path / "fifo"
        os.mkfifo(target)
    else:
        target = Path("/dev/null")
    with pytest.raises(NotOurIndexError, match={"folder": "a folder", "fifo": "a FIFO", "device": "a device"}[what]):
        open_store(str(target))
    if what == "folder":
        assert [p.name for p in target.iterdir()] == ["keep"]
    elif what == "fifo":
        assert stat_kind(target) == "fifo"


def stat_kind(path: Path) -> str:
    import stat

    return "fifo" if stat.S_ISFIFO(os.stat(path).st_mode) else "other"


def test_a_newer_index_is_refused_and_not_moved(db_path: Path) -> None:
    store = open_store(str(db_path))
    store.conn.pragma("user_version", 999)
    store.conn.close()
    before = db_path.read_bytes()
    with pytest.raises(StoreError, match="newer journal-index"):
        open_store(str(db_path))
    assert db_path.read_bytes() == before
    assert not list(db_path.parent.glob("*.corrupt-*"))


@pytest.mark.parametrize("start", ["missing", "empty_file", "empty_sqlite"])
def test_nothing_there_becomes_a_new_marked_index(start: str, db_path: Path) -> None:
    if start == "empty_file":
        db_path.write_bytes(b"")
    elif start == "empty_sqlite":
        conn = apsw.Connection(str(db_path))
        conn.pragma("user_version", 0)
        conn.execute("CREATE TABLE t(x); DROP TABLE t")
        conn.close()
    store = open_store(str(db_path))
    assert store.conn.pragma("application_id") == APPLICATION_ID
    assert store.get_meta("application") == "journal-index"
    store.close()
    assert int.from_bytes(db_path.read_bytes()[68:72], "big") == APPLICATION_ID


def test_an_index_from_before_the_marker_is_recognized_and_marked(db_path: Path) -> None:
    conn = apsw.Connection(str(db_path))
    migrate(conn, load_migrations()[:2])  # the schema as it was before application_id
    conn.execute("INSERT INTO files(path, format) VALUES('/x.jsonl', 'pi')")
    assert conn.pragma("application_id") == 0
    conn.close()
    store = open_store(str(db_path))
    assert store.value("SELECT path FROM files") == "/x.jsonl"
    assert store.conn.pragma("application_id") == APPLICATION_ID
    store.close()


def test_a_broken_index_of_ours_away_from_the_cache_is_still_rebuilt(db_path: Path, sessions_root: Path) -> None:
    """Its header still says it is ours: damage deeper in is recovered as before."""
    store = open_store(str(db_path))
    index_files(store, discover([sessions_root]))
    store.conn.pragma("wal_checkpoint(TRUNCATE)")
    store.conn.close()
    data = bytearray(db_path.read_bytes())
    data[100:4096] = os.urandom(3996)  # page 1 after the header: the schema is gone
    db_path.write_bytes(bytes(data))
    reopened = open_store(str(db_path))
    assert reopened.value("SELECT count(*) FROM files") == 0
    reopened.close()
    assert list(db_path.parent.glob("index.db.corrupt-*"))


def _open_at_once(path: str, barrier: Any, results: Any) -> None:
    try:
        barrier.wait()
        store = open_store(path)
        with store.write():
            store.conn.execute("INSERT INTO meta(key, value) VALUES(?, 'x')", (f"pid{os.getpid()}",))
        store.close()
        results.put("ok")
    except Exception as exc:  # reported to the test, which names it
        results.put(f"{type(exc).__name__}: {exc}")


def test_processes_opening_a_fresh_index_at_the_same_moment_all_succeed(tmp_path: Path) -> None:
    """Schema setup waits and retries like any writer (a fresh file's switch to WAL is not
    covered by SQLite's busy handler)."""
    context = multiprocessing.get_context("fork")
    outcomes: list[str] = []
    for round_ in range(12):
        path = str(tmp_path / f"fresh{round_}.db")
        barrier, results = context.Barrier(3), context.Queue()
        workers = [context.Process(target=_open_at_once, args=(path, barrier, results)) for _ in range(3)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(60)
        outcomes += [results.get(timeout=5) for _ in workers]
    assert outcomes == ["ok"] * len(outcomes)
