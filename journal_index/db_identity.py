"""Is the file at the index path ours? The one place that decides (DESIGN invariant 10).

Our index carries ``PRAGMA application_id`` = :data:`APPLICATION_ID` (and a ``meta`` marker);
an index made before the marking is recognized by its schema and marked by migration 0003.
What may happen to a path:

* nothing there, an empty file, or a SQLite file with no tables → a new index is made there;
* our index → opened (and, if it turns out broken, moved aside and rebuilt);
* a file whose header is destroyed → ours only when it sits at the default cache path,
  where nothing else would put it; elsewhere it is refused;
* anything else (text, another program's SQLite database, a device, a FIFO, a folder) →
  refused untouched, with one line naming the path and what it is.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

import apsw

from journal_index.config import cache_db_path

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
