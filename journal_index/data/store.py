"""The SQLite store: whether a file is ours, one apsw connection per process, migrations,
recovery from a broken file.

The index is disposable (DESIGN invariant 2): our index that cannot be opened or fails the
quick check is moved aside as ``*.corrupt-<time>`` and a fresh one is built in its place.
Whether a file is ours is decided here (:func:`identify`) before anything writes to it, and
nothing else is ever moved, rebuilt or written (invariant 10). Our index carries ``PRAGMA
application_id`` = :data:`APPLICATION_ID` (and a ``meta`` marker); an index made before the
marking is recognized by its schema and marked by migration 0003. What may happen to a path:

* nothing there, an empty file, or a SQLite file with no tables → a new index is made there;
* our index → opened (and, if it turns out broken, moved aside and rebuilt);
* a file whose header is destroyed → ours only when it sits at the default cache path,
  where nothing else would put it; elsewhere it is refused;
* anything else (text, another program's SQLite database, a device, a FIFO, a folder) →
  refused untouched, with one line naming the path and what it is.
"""

from __future__ import annotations

import os
import re
import stat
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw

from journal_index.config import cache_db_path
from journal_index.data.index_errors import IndexFailure, classify

# -- is this file ours? -----------------------------------------------------------------------

APPLICATION_ID = 0x4A494458  # "JIDX"
SQLITE_MAGIC = b"SQLite format 3\x00"
HEADER_BYTES = 100
OUR_TABLES = frozenset({"files", "entries", "entries_fts", "meta"})


@dataclass(frozen=True)
class Verdict:
    state: str  # "new" | "ours" | "broken" (ours, unusable) | "foreign"
    detail: str = ""

    @property
    def refusal(self) -> str | None:
        return self.detail if self.state == "foreign" else None


def _special_kind(mode: int) -> str | None:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if not stat.S_ISREG(mode):
        return "not a regular file"
    return None


def _at_cache_path(path: str) -> bool:
    try:
        return os.path.realpath(path) == os.path.realpath(cache_db_path())
    except OSError:
        return False


def _refuse(path: str, what: str) -> Verdict:
    return Verdict("foreign", f"{path} is {what}, not a journal-index index; refusing to touch it "
                              "(give --db a new file name, or delete it yourself)")


def _schema(path: str) -> tuple[int, set[str]]:
    """(application_id, table names) read through SQLite, read-only (a WAL may hold newer pages)."""
    conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        conn.set_busy_timeout(2000)
        app_id = int(conn.pragma("application_id"))
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
    finally:
        conn.close()
    return app_id, tables


def identify(path: str) -> Verdict:
    """What the file at ``path`` is, and so what may be done with it."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return Verdict("new")
    except OSError as exc:
        return Verdict("foreign", f"{path} cannot be examined ({exc.strerror}); refusing to touch it")
    special = _special_kind(st.st_mode)
    if special is not None:
        return _refuse(path, special)
    if st.st_size == 0:
        return Verdict("new")
    try:
        with open(path, "rb") as handle:
            head = handle.read(HEADER_BYTES)
    except OSError as exc:
        return Verdict("foreign", f"{path} cannot be read ({exc.strerror}); refusing to touch it")
    if len(head) < HEADER_BYTES or not head.startswith(SQLITE_MAGIC):
        if _at_cache_path(path):
            return Verdict("broken", "its header is destroyed")
        printable = head and all(32 <= b < 127 or b in b"\t\r\n" for b in head)
        return _refuse(path, "a text file" if printable else "not a SQLite database")
    if int.from_bytes(head[68:72], "big") == APPLICATION_ID:
        return Verdict("ours")
    try:
        app_id, tables = _schema(path)
    except apsw.BusyError:
        return Verdict("foreign", f"{path} is locked by another program; refusing to touch it")
    except apsw.Error as exc:
        if _at_cache_path(path):
            return Verdict("broken", type(exc).__name__)
        return _refuse(path, f"a damaged SQLite database ({type(exc).__name__})")
    if app_id == APPLICATION_ID or (app_id == 0 and tables >= OUR_TABLES):
        return Verdict("ours")
    if app_id == 0 and not {t for t in tables if not t.startswith("sqlite_")}:
        return Verdict("new")  # a SQLite file holding no table holds nothing to harm
    if app_id != 0:
        return _refuse(path, f"a SQLite database of another program (application_id {app_id:#x})")
    names = ", ".join(sorted(tables)[:4]) + (", …" if len(tables) > 4 else "")
    return _refuse(path, f"a SQLite database of another program (tables: {names})")


# -- the store ---------------------------------------------------------------------------------

BUSY_TIMEOUT_MS = 10_000
# The FTS tables (both contentless, rowid = entries.rowid).
FTS_TABLES = ("entries_fts", "entries_bulk")
# FTS5 merges segments only when asked (automerge is off, migration 0006): after a commit, in
# steps that each write about this many pages in a write transaction of their own (a few ms),
# so a merge never lengthens the commit that made it due.
MERGE_PAGES = 64
# The WAL is checkpointed once it holds this many pages (SQLite's default), right after the
# write transaction that grew it, outside it (PASSIVE: nobody waits for it).
WAL_CHECKPOINT_PAGES = 1000
# A writer looks for due merges once it has committed this much text, or this many times
# (the segments of other processes' commits count towards the levels too).
MERGE_AFTER_CHARS = 64 * 1024
MERGE_AFTER_COMMITS = 4
# Free pages given back to the file system per write transaction (Store.compact).
VACUUM_PAGES = 256
# The errors that mean "this index file is broken": the only ones that move it aside (and only
# once it is known to be ours). A SQL error is a bug to report, never a reason to rebuild.
BROKEN_INDEX: tuple[type[apsw.Error], ...] = (apsw.CorruptError, apsw.NotADBError)
_MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


# How an entry's kind, role and id are stored (migration 0007, which reads them back through
# generated columns): the (kind, role) pairs the formats write, by number ...
KIND_ROLES: dict[tuple[str, str | None], int] = {
    ("assistant", "assistant"): 0, ("tool_result", "toolResult"): 1, ("user", "user"): 2,
    ("tool_result", "user"): 3, ("tool_result", "tool"): 4, ("bash", "bashExecution"): 5,
    ("custom", "custom"): 6, ("custom", "hookMessage"): 7, ("compaction", None): 8,
    ("branch_summary", None): 9, ("context_edit", None): 10,
}
# ... and the id shapes kept as numbers or bytes.
_HEX_ID = re.compile(r"[0-9a-f]{8}\Z")
_SYNTHETIC_ID = re.compile(r"v1\.([0-9a-f]+)\.([0-9a-f]{8})\Z")
_UUID_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")


def stored_kind(kind: str, role: str | None) -> tuple[int | None, str | None]:
    """(entries.kind_role, entries.names) for an entry's kind and role."""
    code = KIND_ROLES.get((kind, role))
    return (code, None) if code is not None else (None, f"{kind}\x1f{role or ''}")


def stored_id(entry_id: str, offset: int) -> tuple[int | None, str | bytes | None]:
    """(entries.id_num, entries.id_text) for an entry id found at ``offset``: eight hex digits
    as their number, a synthetic id of this offset as its CRC (negative), a UUID as its bytes,
    else the text."""
    if len(entry_id) == 8 and _HEX_ID.match(entry_id):
        return int(entry_id, 16), None
    if entry_id.startswith("v1."):
        match = _SYNTHETIC_ID.match(entry_id)
        if match is not None and match.group(1) == f"{offset:x}":
            return -1 - int(match.group(2), 16), None
    if len(entry_id) == 36 and _UUID_ID.match(entry_id):
        return None, bytes.fromhex(entry_id.replace("-", ""))
    return None, entry_id


class StoreError(Exception):
    """The index could not be opened or used; the message says what to do."""


class NotOurIndexError(StoreError):
    """The index path holds something that is not our index; it was left untouched."""


class UnwritableIndexError(StoreError):
    """The index cannot be written: its disk is full, or it is read-only (``failure`` says which)."""

    def __init__(self, failure: IndexFailure) -> None:
        super().__init__(failure.line())
        self.failure = failure


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def migrations_dir() -> Path:
    """Where the numbered SQL files are: inside the wheel, or at the top of a source checkout."""
    package = Path(__file__).resolve().parent.parent  # journal_index/
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
    # A `with conn:` (a savepoint aside) takes the write lock up front, so a read-then-write
    # never hits SQLITE_BUSY_SNAPSHOT and waits on the busy timeout instead (writes use immediate()).
    conn.transaction_mode = "IMMEDIATE"


@contextmanager
def immediate(conn: apsw.Connection) -> Iterator[apsw.Connection]:
    """A write transaction: BEGIN IMMEDIATE … COMMIT, rolled back on error (a savepoint when
    one is open already).

    Not apsw's ``with conn:``: its BEGIN keeps the GIL through the busy wait, so while it waits
    no other thread of the process runs — not even the one holding the lock, which then cannot
    commit, and the wait ends in BUSY after the whole timeout (apsw 3.54; tested). A statement
    run by ``execute`` lets the GIL go while SQLite waits.
    """
    if conn.in_transaction:
        with conn:
            yield conn
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


class Store:
    """An open index database."""

    def __init__(self, conn: apsw.Connection, path: str) -> None:
        self.conn = conn
        self.path = path
        # Longest write transaction so far, in seconds (benchmarks and `watch` report it).
        self.longest_write = 0.0
        # Pages in the WAL after our last commit. Our own hook replaces SQLite's automatic
        # checkpoint (which would run inside the commit call); write() checkpoints instead.
        self.wal_pages = 0
        conn.set_wal_hook(self._wal_hook)
        # Text and commits written since merges were last looked for.
        self._unmerged_chars = 0
        self._unmerged_commits = 0

    def _wal_hook(self, conn: apsw.Connection, name: str, pages: int) -> int:
        self.wal_pages = pages
        return apsw.SQLITE_OK

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
        with immediate(self.conn):
            started = time.perf_counter()  # the lock is held from here (BEGIN IMMEDIATE done)
            yield self.conn
        self.longest_write = max(self.longest_write, time.perf_counter() - started)
        if self.wal_pages >= WAL_CHECKPOINT_PAGES:
            self.checkpoint()

    def checkpoint(self) -> None:
        """Copy the WAL into the database as far as readers allow (PASSIVE: waits for nobody)."""
        self.wal_pages = 0
        try:
            self.conn.pragma("wal_checkpoint", "PASSIVE")
        except apsw.BusyError:
            pass  # another connection is checkpointing: it does the work

    def wrote_terms(self, chars: int) -> None:
        """A commit added ``chars`` of text to the FTS tables: merge what became due."""
        self._unmerged_chars += chars
        self._unmerged_commits += 1
        if self._unmerged_chars >= MERGE_AFTER_CHARS or self._unmerged_commits >= MERGE_AFTER_COMMITS:
            self._unmerged_chars = self._unmerged_commits = 0
            self.merge_fts()

    def compact(self, pages: int = VACUUM_PAGES) -> int:
        """Merge each FTS table down to one segment (smallest, fastest to query) and give the
        freed pages back to the file system, in short write transactions. Returns the steps."""
        steps = self.merge_fts(-MERGE_PAGES)
        if int(self.conn.pragma("auto_vacuum")) != 2:
            return steps  # an index made before auto_vacuum was set keeps its free pages for reuse
        free = int(self.conn.pragma("freelist_count"))
        for _ in range((free + pages - 1) // pages):  # as many steps as were due when it began
            with self.write():
                self.conn.pragma("incremental_vacuum", pages)
            steps += 1
        return steps

    def merge_fts(self, pages: int = MERGE_PAGES) -> int:
        """Merge the FTS tables' segments where a level holds enough of them (FTS5 usermerge),
        one step of about ``pages`` pages per write transaction, until none is due. A negative
        ``pages`` merges every level down to one segment (FTS5 'optimize', spread over short
        transactions). Returns the steps taken."""
        steps = 0
        for table in FTS_TABLES:
            size = pages
            while True:
                with self.write():
                    before = self.conn.total_changes()
                    self.conn.execute(f"INSERT INTO {table}({table}, rank) VALUES('merge', ?)", (size,))
                    done = self.conn.total_changes() - before < 2
                steps += 1
                size = abs(size)  # after a first negative step, FTS5 goes on with positive ones
                if done:
                    break
        return steps

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
        with immediate(conn):
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
    _refuse_newer(conn, migrations[-1].version if migrations else 0)
    return applied


def _refuse_newer(conn: apsw.Connection, newest: int) -> None:
    """A newer journal-index's index is neither migrated nor moved aside: it is not broken."""
    current = int(conn.pragma("user_version"))
    if current > newest:
        raise StoreError(
            f"the index was written by a newer journal-index (schema {current} > {newest}); "
            "upgrade journal-index, or give --db another file"
        )


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


def _open_raw(path: str, create: bool = False) -> apsw.Connection:
    conn = apsw.Connection(path)
    try:
        if create:
            conn.set_busy_timeout(BUSY_TIMEOUT_MS)
            # Pages freed by merging can be given back to the file system (Store.compact); only
            # settable while the file is still empty (it writes nothing itself).
            _retry_busy(lambda: conn.pragma("auto_vacuum", "incremental"))
            # Marked before anything else is written, so even a half-made index is recognizably ours.
            _retry_busy(lambda: conn.pragma("application_id", APPLICATION_ID))
        _retry_busy(lambda: _setup_connection(conn))
        _refuse_newer(conn, load_migrations()[-1].version)
        _quick_check(conn)
        _retry_busy(lambda: migrate(conn))
    except BaseException:
        conn.close()
        raise
    return conn


def _retry_busy(step: Callable[[], object], seconds: float = BUSY_TIMEOUT_MS / 1000) -> None:
    """Run a setup step that SQLite may refuse with BUSY without calling the busy handler
    (switching a brand-new file to WAL while another process opens it)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            step()
            return
        except apsw.BusyError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def remove_db_files(path: str) -> None:
    """Delete the index at ``path`` with its -wal and -shm; refused unless it is ours."""
    verdict = identify(path)
    if verdict.refusal is not None:
        raise NotOurIndexError(verdict.refusal)
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


def open_store(path: str) -> Store:
    """Open (creating, migrating or rebuilding as needed) the index at ``path``.

    Only a file that is recognizably ours is ever moved aside (DESIGN invariant 10); anything
    else at ``path`` raises :class:`NotOurIndexError` and is left untouched.
    """
    if path == ":memory:":
        return Store(_open_raw(path, create=True), path)
    parent = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create the index folder {parent}: {exc.strerror}") from exc
    verdict = identify(path)
    if verdict.refusal is not None:
        raise NotOurIndexError(verdict.refusal)
    if verdict.state == "broken":
        move_aside(path, verdict.detail)
    try:
        conn = _open_raw(path, create=verdict.state in ("new", "broken"))
    except apsw.BusyError as exc:
        raise StoreError(f"the index {path} is locked by another process; retry in a moment") from exc
    except BROKEN_INDEX as exc:
        # Ours by its header or schema, yet unusable: the index is disposable.
        move_aside(path, type(exc).__name__)
        conn = _open_raw(path, create=True)
    except (apsw.CantOpenError, apsw.IOError, apsw.FullError, apsw.ReadOnlyError) as exc:
        failure = classify(exc, path)  # a full disk or a read-only index: say which, not "rebuild"
        if failure is not None:
            raise UnwritableIndexError(failure) from exc
        if isinstance(exc, apsw.CantOpenError):
            raise StoreError(f"cannot open the index {path}: "
                             f"{'permission denied' if not os.access(path, os.R_OK | os.W_OK) else exc}") from exc
        if isinstance(exc, apsw.IOError):
            raise StoreError(f"cannot open the index {path}: input/output error ({exc})") from exc
        raise
    return Store(conn, path)


def recover(store: Store, reason: str) -> Store:
    """Replace a store found broken mid-use by a fresh one (the journals rebuild it).

    The store was opened as ours, so its file may be moved aside whatever its header says now.
    """
    path = store.path
    try:
        store.conn.close()
    except apsw.Error:
        pass
    if path != ":memory:" and os.path.exists(path):
        move_aside(path, reason)
    return open_store(path)
