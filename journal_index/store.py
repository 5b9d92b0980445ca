"""The SQLite store: one apsw connection per process, migrations, recovery from a broken file.

The index is disposable (DESIGN invariant 2): a file that cannot be opened or fails the
quick check is moved aside as ``*.corrupt-<time>`` and a fresh one is built in its place.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw

BUSY_TIMEOUT_MS = 10_000
SQLITE_MAGIC = b"SQLite format 3\x00"
_MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


class StoreError(Exception):
    """The index could not be opened or used; the message says what to do."""


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def migrations_dir() -> Path:
    """Where the numbered SQL files are: inside the wheel, or at the top of a source checkout."""
    package = Path(__file__).resolve().parent
    packaged = package / "migrations"
    return packaged if packaged.is_dir() else package.parent / "migrations"


def load_migrations(directory: Path | None = None) -> list[Migration]:
    directory = directory or migrations_dir()
    found = []
    for path in sorted(directory.iterdir()):
        match = _MIGRATION_NAME.match(path.name)
        if match:
            found.append(Migration(int(match.group(1)), path.name, path.read_text("utf-8")))
    versions = [m.version for m in found]
    if versions != list(range(1, len(found) + 1)):
        raise StoreError(f"migrations in {directory} are not numbered 0001, 0002, … without gaps")
    return found


def _setup_connection(conn: apsw.Connection) -> None:
    """The connection settings every process uses (WAL, NORMAL sync, a busy wait, strict SQL)."""
    conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    conn.pragma("journal_mode", "wal")
    # The PyPI build defaults WAL to FULL; NORMAL is safe from corruption in WAL mode.
    conn.pragma("synchronous", "NORMAL")
    conn.config(apsw.SQLITE_DBCONFIG_DQS_DML, 0)
    conn.config(apsw.SQLITE_DBCONFIG_DQS_DDL, 0)
    # Every `with conn:` takes the write lock up front, so a read-then-write never hits
    # SQLITE_BUSY_SNAPSHOT and waits on the busy timeout instead.
    conn.transaction_mode = "IMMEDIATE"


class Store:
    """An open index database."""

    def __init__(self, conn: apsw.Connection, path: str) -> None:
        self.conn = conn
        self.path = path
        # Longest write transaction so far, in seconds (benchmarks and `watch` report it).
        self.longest_write = 0.0

    # -- small typed helpers -------------------------------------------------
    def one(self, sql: str, params: Any = ()) -> tuple[Any, ...] | None:
        for row in self.conn.execute(sql, params):
            return tuple(row)
        return None

    def value(self, sql: str, params: Any = (), default: Any = None) -> Any:
        row = self.one(sql, params)
        return default if row is None or row[0] is None else row[0]

    def rows(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self.conn.execute(sql, params)]

    def dicts(self, sql: str, params: Any = ()) -> list[dict[str, Any]]:
        cursor = self.conn.execute(sql, params)
        out: list[dict[str, Any]] = []
        names: list[str] | None = None
        for row in cursor:
            if names is None:
                names = [d[0] for d in cursor.get_description()]
            out.append(dict(zip(names, row, strict=True)))
        return out

    @contextmanager
    def write(self) -> Iterator[apsw.Connection]:
        """A short write transaction (BEGIN IMMEDIATE … COMMIT, rolled back on error)."""
        with self.conn:
            started = time.perf_counter()  # the lock is held from here (BEGIN IMMEDIATE done)
            yield self.conn
        self.longest_write = max(self.longest_write, time.perf_counter() - started)

    @contextmanager
    def time_limit(self, seconds: float) -> Iterator[None]:
        """Interrupt any statement still running after ``seconds`` (apsw.InterruptError).

        The agent's tool must answer, never hang, whatever a MATCH costs.
        """
        deadline = time.perf_counter() + seconds
        self.conn.set_progress_handler(lambda: time.perf_counter() > deadline, 1000)
        try:
            yield
        finally:
            self.conn.set_progress_handler(None)

    def get_meta(self, key: str) -> str | None:
        value = self.value("SELECT value FROM meta WHERE key = ?", (key,))
        return None if value is None else str(value)

    def set_meta(self, key: str, value: str | None) -> None:
        with self.write():
            if value is None:
                self.conn.execute("DELETE FROM meta WHERE key = ?", (key,))
            else:
                self.conn.execute(
                    "INSERT INTO meta(key, value) VALUES(?, ?) "
                    "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    (key, value),
                )

    @property
    def schema_version(self) -> int:
        return int(self.conn.pragma("user_version"))

    def close(self) -> None:
        try:
            self.conn.pragma("optimize")
        except apsw.Error:
            pass
        self.conn.close()


def migrate(conn: apsw.Connection, migrations: list[Migration] | None = None) -> int:
    """Apply the migrations the DB has not seen, each in the transaction that records it."""
    migrations = migrations if migrations is not None else load_migrations()
    applied = 0
    # Nothing to apply (every open but the first): no write lock taken, so a query never
    # waits behind an indexer just to learn that the schema is current.
    up_to_date = int(conn.pragma("user_version")) >= (migrations[-1].version if migrations else 0)
    for migration in [] if up_to_date else migrations:
        with conn:
            current = int(conn.pragma("user_version"))
            if migration.version <= current:
                continue
            if migration.version != current + 1:
                raise StoreError(f"index schema {current} cannot take migration {migration.name}")
            conn.execute(migration.sql)
            conn.execute(
                "INSERT INTO meta(key, value) VALUES('schema_version', ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (str(migration.version),),
            )
            conn.pragma("user_version", migration.version)
            applied += 1
    newest = migrations[-1].version if migrations else 0
    current = int(conn.pragma("user_version"))
    if current > newest:
        raise StoreError(
            f"the index was written by a newer journal-index (schema {current} > {newest}); "
            "upgrade journal-index or run `journal-index rebuild`"
        )
    return applied


def _looks_like_sqlite(path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(SQLITE_MAGIC))
    except FileNotFoundError:
        return True
    return head == b"" or head == SQLITE_MAGIC


def _quick_check(conn: apsw.Connection) -> None:
    """A cheap check that the file is a usable index: schema readable, tables present.

    A full ``PRAGMA quick_check`` is O(size) and would cost seconds on every CLI call of a
    large index. Corruption found later surfaces as apsw.CorruptError, and the command that
    met it moves the file aside and runs once more (see ``cli.with_app`` and :func:`recover`).
    """
    conn.execute("SELECT count(*) FROM sqlite_schema").fetchall()
    if int(conn.pragma("user_version")) > 0:
        conn.execute("SELECT key FROM meta LIMIT 1").fetchall()
        conn.execute("SELECT id FROM files LIMIT 1").fetchall()


def _open_raw(path: str) -> apsw.Connection:
    if path != ":memory:" and not _looks_like_sqlite(path):
        raise apsw.NotADBError("file is not a database")
    conn = apsw.Connection(path)
    try:
        _setup_connection(conn)
        _quick_check(conn)
        migrate(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def remove_db_files(path: str) -> None:
    for suffix in ("", "-wal", "-shm"):
        try:
            os.remove(path + suffix)
        except FileNotFoundError:
            pass


def move_aside(path: str, reason: str) -> str:
    """Keep a broken index for inspection and clear the way for a new one."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    target = f"{path}.corrupt-{stamp}"
    n = 1
    while os.path.exists(target):
        n += 1
        target = f"{path}.corrupt-{stamp}-{n}"
    os.replace(path, target)
    for suffix in ("-wal", "-shm"):
        try:
            os.replace(path + suffix, target + suffix)
        except FileNotFoundError:
            pass
    print(f"journal-index: warning: index {path} was unusable ({reason}); moved it to {target} "
          "and started a new one", file=sys.stderr)
    return target


RECOVERABLE = (apsw.CorruptError, apsw.NotADBError, apsw.CantOpenError, apsw.IOError, apsw.SQLError,
               apsw.SchemaChangeError)


def open_store(path: str) -> Store:
    """Open (creating, migrating or rebuilding as needed) the index at ``path``."""
    if path != ":memory:":
        parent = os.path.dirname(os.path.abspath(path))
        try:
            os.makedirs(parent, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the index folder {parent}: {exc.strerror}") from exc
    try:
        conn = _open_raw(path)
    except apsw.BusyError as exc:
        raise StoreError(f"the index {path} is locked by another process; retry in a moment") from exc
    except RECOVERABLE as exc:
        if path == ":memory:" or not os.path.exists(path):
            raise StoreError(f"cannot open the index {path}: {exc}") from exc
        if isinstance(exc, apsw.CantOpenError) and not os.access(path, os.R_OK | os.W_OK):
            raise StoreError(f"cannot open the index {path}: permission denied") from exc
        move_aside(path, type(exc).__name__)
        conn = _open_raw(path)
    return Store(conn, path)


def recover(store: Store, reason: str) -> Store:
    """Replace a store found broken mid-use by a fresh one (the journals rebuild it)."""
    path = store.path
    try:
        store.conn.close()
    except apsw.Error:
        pass
    if path != ":memory:" and os.path.exists(path):
        move_aside(path, reason)
    return open_store(path)
