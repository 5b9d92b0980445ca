"""Whether anything happened in a set of folders since the last look (Linux inotify).

The agent tool looks at every journal under its roots on every call (one ``stat`` each) to say
what the index lacks. Where the kernel tells us that nothing in those folders changed since the
last look, the last look's stats still hold and none need be made again. This module only answers
"did anything happen?"; :class:`journal_index.indexing.indexer.Listings` decides what to redo.

It answers "something may have" whenever it cannot be sure: no inotify (not Linux, no libc, a
watch limit reached), a folder on a file system whose changes may come from elsewhere (NFS, FUSE,
SMB: only local disk file systems are trusted), a queue overflow, or a folder watched only since
the last look (what changed before its watch was armed is not known).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import struct
import sys
import weakref
from collections.abc import Iterable

# <sys/inotify.h>
IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF = 0x400, 0x800
IN_ONLYDIR, IN_DONT_FOLLOW = 0x01000000, 0x02000000
IN_NONBLOCK, IN_CLOEXEC = os.O_NONBLOCK, os.O_CLOEXEC
MASK = (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
        | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW)
# Writes to a file: harmless when the file is one the caller looks at another way.
WRITES = IN_MODIFY | IN_CLOSE_WRITE
EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of name

# statfs f_type of the local disk file systems whose changes all go through this kernel.
LOCAL_FILESYSTEMS = {
    0xEF53,  # ext2, ext3, ext4
    0x58465342,  # xfs
    0x9123683E,  # btrfs
    0x01021994,  # tmpfs
    0x794C7630,  # overlayfs
    0x2FC12FC1,  # zfs
    0xF2F52010,  # f2fs
    0xCA451A4E,  # bcachefs
}


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None
    if not all(hasattr(libc, name) for name in ("inotify_init1", "inotify_add_watch", "inotify_rm_watch", "statfs")):
        return None
    libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    libc.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
    libc.statfs.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    return libc


_LIBC = _libc()


def filesystem_type(folder: str) -> int | None:
    """statfs's f_type of ``folder`` (its first field, a native long on Linux), or None."""
    if _LIBC is None:
        return None
    buffer = ctypes.create_string_buffer(512)  # larger than struct statfs on every Linux ABI
    if _LIBC.statfs(os.fsencode(folder), buffer) != 0:
        return None
    return ctypes.c_ulong.from_buffer(buffer).value & 0xFFFFFFFF


class FolderWatch:
    """Watches folders; :meth:`quiet` says whether nothing happened in them since it last did."""

    def __init__(self) -> None:
        self._fd = -1 if _LIBC is None else _LIBC.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        self.usable = self._fd >= 0
        self._folders: dict[str, tuple[int, int, int]] = {}  # folder -> (device, inode) watched, its wd
        self._by_wd: dict[int, str] = {}
        self._armed_since_look = False
        # Closing the descriptor drops its watches, which count against the user's limit.
        self._close = weakref.finalize(self, os.close, self._fd) if self.usable else None

    def watch(self, folders: Iterable[tuple[str, int, int]]) -> None:
        """Watch exactly these (folder, device, inode): new ones are added, gone ones dropped."""
        if not self.usable or _LIBC is None:
            return
        wanted = {path: (dev, ino) for path, dev, ino in folders}
        for path, (dev, ino, wd) in list(self._folders.items()):
            if wanted.get(path) != (dev, ino):  # gone, or another folder under that name now
                del self._folders[path], self._by_wd[wd]
                _LIBC.inotify_rm_watch(self._fd, wd)  # fails harmlessly where the kernel dropped it
        for path, (dev, ino) in wanted.items():
            if path in self._folders:
                continue
            if filesystem_type(path) not in LOCAL_FILESYSTEMS:
                self._give_up()
                return
            wd = _LIBC.inotify_add_watch(self._fd, os.fsencode(path), MASK)
            if wd < 0:  # ENOSPC: the user's watch limit; ENOENT: gone meanwhile
                self._give_up()
                return
            self._folders[path] = (dev, ino, wd)
            self._by_wd[wd] = path
            self._armed_since_look = True

    def quiet(self, ignore: frozenset[str] = frozenset()) -> bool:
        """True when nothing happened in the watched folders since the last call, apart from
        writes to the files named in ``ignore``; every event so far is consumed either way."""
        if not self.usable or not self._folders:
            return False
        armed, self._armed_since_look = self._armed_since_look, False
        happened = False
        while True:
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                break
            except OSError:
                self._give_up()
                return False
            happened = happened or not self._only_ignored(data, ignore)
        return not armed and not happened

    def _only_ignored(self, data: bytes, ignore: frozenset[str]) -> bool:
        at = 0
        while at + EVENT.size <= len(data):
            wd, mask, _cookie, length = EVENT.unpack_from(data, at)
            name = data[at + EVENT.size:at + EVENT.size + length].rstrip(b"\0")
            at += EVENT.size + length
            folder = self._by_wd.get(wd)
            if folder is None or not name or mask & ~WRITES:
                return False
            if os.path.join(folder, os.fsdecode(name)) not in ignore:
                return False
        return True

    def _give_up(self) -> None:
        """From now on the answer is always "something may have happened"; the watches go."""
        self.usable = False
        self._folders.clear()
        self._by_wd.clear()
        if self._close is not None:
            self._close()
