"""What to tell a user whose index cannot be written: the disk is full, or the index is read-only.

Neither is fixed by rebuilding (a rebuild needs more room, and cannot write either), so the
advice names the cause and what does fix it. Everything else keeps the generic advice of its
caller. The causes are read from the error and, where SQLite's code is vague (an I/O error, a
file that cannot be opened), from the file system holding the index.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass

import apsw


@dataclass(frozen=True)
class IndexFailure:
    code: str  # "disk_full" | "read_only"
    message: str  # one line: what is wrong
    hint: str  # what to do about it

    def line(self) -> str:
        return f"{self.message}; {self.hint}"


def _folder(db_path: str) -> str:
    return os.path.dirname(os.path.abspath(db_path)) or "."


def _statvfs(db_path: str) -> os.statvfs_result | None:
    folder = _folder(db_path)
    while True:  # the index's folder may not exist yet: ask the nearest one that does
        try:
            return os.statvfs(folder)
        except FileNotFoundError:
            parent = os.path.dirname(folder)
            if parent == folder:
                return None
            folder = parent
        except OSError:
            return None


def _read_only_filesystem(db_path: str) -> bool:
    info = _statvfs(db_path)
    return info is not None and bool(info.f_flag & os.ST_RDONLY)


def _disk_nearly_full(db_path: str) -> bool:
    info = _statvfs(db_path)
    return info is not None and info.f_bavail * info.f_frsize < 1 << 20  # under 1 MiB left


def _not_writable(db_path: str) -> bool:
    return any(os.path.exists(p) and not os.access(p, os.W_OK)
               for p in (db_path, f"{db_path}-wal", f"{db_path}-shm", _folder(db_path)))


def _full(db_path: str) -> IndexFailure:
    return IndexFailure("disk_full", f"the disk holding the index is full ({_folder(db_path)})",
                        "free some space there (or give --db a path on another disk) and run the command "
                        "again; what was indexed so far is kept")


def _read_only(db_path: str) -> IndexFailure:
    where = ("its file system is mounted read-only" if _read_only_filesystem(db_path)
             else "the index file or its folder is not writable")
    return IndexFailure("read_only", f"the index {db_path} is read-only ({where})",
                        "make it writable, or give --db a path where it can be written")


def classify(exc: BaseException, db_path: str) -> IndexFailure | None:
    """The disk-full or read-only cause of ``exc`` met on the index at ``db_path``, else None."""
    if isinstance(exc, apsw.FullError):
        return _full(db_path)
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return _full(db_path)
    if isinstance(exc, apsw.ReadOnlyError):
        return _read_only(db_path)
    if isinstance(exc, OSError) and exc.errno == errno.EROFS:
        return _read_only(db_path)
    if isinstance(exc, apsw.IOError | apsw.CantOpenError):
        # SQLite names a failed write or open only vaguely: look at where the index lives.
        if _read_only_filesystem(db_path) or (isinstance(exc, apsw.CantOpenError) and _not_writable(db_path)):
            return _read_only(db_path)
        if _disk_nearly_full(db_path):
            return _full(db_path)
    return None
