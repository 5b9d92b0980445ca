"""gc: find junk journals, show them, and delete exactly what was shown once confirmed.

A journal is junk when it never compacted AND it ran under a temporary folder, or it got no
user/team/extension message (no ``user`` or ``custom`` entry), or two replies or fewer
(``assistant`` entries ≤ 2). Never candidates: a journal touched in the last 24 hours, the
current one (``--current``), the newest journal of the process's folder, anything whose index
is not up to date, anything that is not a plain file inside the session roots, and the
journals of an agent whose format does not allow it (another agent's resume reads them).

``preview`` records what identifies each candidate (device, inode, size, mtime, ctime and a hash
of its first bytes); ``confirm`` deletes only those files, only while all of it is unchanged
(DESIGN invariant 1), forgets their rows and terms, and clears the preview. A file put in a
listed one's place (renamed over it) is another file and is kept. Journals are the source of
truth: this is the only code that deletes one.
"""

from __future__ import annotations

import os
import secrets
import stat
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from journal_index.config import now_ms
from journal_index.data import index_sql
from journal_index.data.store import Store
from journal_index.formats import FORMATS, RootLike
from journal_index.indexing import backfill, indexer, journal_blocks
from journal_index.text.counts import count

QUIET_HOURS = 24
# How much of a journal's start the preview hashes (its header and first entries).
HEAD_HASH_BYTES = 64 * 1024
TEMP_DIRS = ("/tmp", "/var/tmp", "/private/tmp", "/private/var/folders")
REASONS = {
    "temp-cwd": "ran under a temporary folder",
    "no-user-message": "no user, team or extension message",
    "few-replies": "two replies or fewer",
}


@dataclass
class Candidate:
    path: str
    size: int
    mtime_ns: int
    age_hours: float
    reasons: list[str]

    def as_json(self) -> dict[str, Any]:
        return {"path": self.path, "size": self.size, "ageHours": round(self.age_hours, 1),
                "reasons": self.reasons}


@dataclass(frozen=True)
class FileIdentity:
    """What tells one file from another put at its path: a journal renamed over a listed one
    has another inode; one rewritten in place with its size and mtime put back has another
    ctime, and most likely another head."""

    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int
    head_hash: str

    def difference(self, other: FileIdentity) -> str | None:
        """Why ``other`` is not this file as it was, or None when nothing differs."""
        if (self.dev, self.ino) != (other.dev, other.ino):
            return "replaced by another file since the preview"
        if self != other:
            return "changed since the preview"
        return None


def _open_plain(path: str) -> int:
    """A read-only descriptor of ``path`` itself (never through a symlink, never blocking on a FIFO)."""
    return os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))


def identity_of(fd: int) -> FileIdentity:
    st = os.fstat(fd)
    head = os.pread(fd, HEAD_HASH_BYTES, 0)
    return FileIdentity(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns,
                        journal_blocks.fingerprint(head))


def identity_at(path: str) -> FileIdentity:
    fd = _open_plain(path)
    try:
        return identity_of(fd)
    finally:
        os.close(fd)


@dataclass
class ConfirmResult:
    had_preview: bool = True
    deleted: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"deleted": self.deleted,
                "skipped": [{"path": p, "reason": r} for p, r in self.skipped]}


def temp_dirs() -> list[str]:
    dirs = {*TEMP_DIRS, tempfile.gettempdir(), os.path.realpath(tempfile.gettempdir())}
    return sorted(d.rstrip("/") or "/" for d in dirs)


def is_temporary(cwd: str | None) -> bool:
    if not cwd:
        return False
    return any(cwd == d or cwd.startswith(d + "/") for d in temp_dirs())


def _inside(path: str, root: str) -> bool:
    return path.startswith(root.rstrip(os.sep) + os.sep)


def unsafe_reason(path: str, roots: Iterable[RootLike]) -> str | None:
    """Why ``path`` must not be deleted, or None when it is a plain journal inside a root.

    The path as recorded and its fully resolved form must both lie inside the same root (also
    resolved), so a symlinked file or folder pointing out of the roots is refused, as is ``..``.
    """
    if ".." in path.split(os.sep) or not os.path.isabs(path):
        return "not a plain absolute path"
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return "no longer exists"
    except OSError as exc:
        return exc.strerror or str(exc)
    if stat.S_ISLNK(st.st_mode):
        return "a symlink"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    real = os.path.realpath(path)
    for root in indexer.as_roots(roots):
        root_abs = str(root.path)
        if _inside(path, root_abs) and _inside(real, os.path.realpath(root_abs)):
            return None
    return "outside the session roots"


def refresh(store: Store, roots: Iterable[RootLike]) -> None:
    """Bring the rows gc judges by up to date (unchanged journals cost one stat each)."""
    rooted = [r for r in indexer.as_roots(roots) if r.path.is_dir()]
    backfill.forget_vanished(store, rooted)
    for path in indexer.discover(rooted):
        indexer.index_file(store, path, rooted)


def find_candidates(store: Store, roots: Iterable[RootLike], current: str | None = None,
                    cwd: str | None = None, now: int | None = None) -> list[Candidate]:
    roots = list(roots)
    now = now_ms() if now is None else now
    cwd = os.getcwd() if cwd is None else cwd
    rows = index_sql.gc_files(store)
    exempt = set()
    if current:
        exempt.add(os.path.realpath(current))
    here = [(r.mtime_ns or 0, r.path) for r in rows if r.cwd and os.path.realpath(r.cwd) == os.path.realpath(cwd)]
    if here:
        exempt.add(os.path.realpath(max(here)[1]))
    found = []
    for path, file_cwd, size, mtime_ns, fmt, compactions, users, replies in rows:
        if compactions or os.path.realpath(path) in exempt or unsafe_reason(path, roots):
            continue
        if fmt not in FORMATS or not FORMATS[fmt].COLLECTABLE:
            continue  # another agent's transcripts are its own to keep (its resume reads them)
        try:
            st = os.stat(path)
        except OSError:
            continue
        if st.st_size != size or st.st_mtime_ns != mtime_ns:
            continue  # the index is behind this journal: judge it on the next run
        age_hours = (now - st.st_mtime_ns / 1e6) / 3_600_000
        if age_hours < QUIET_HOURS:
            continue
        reasons = [code for code, hit in (("temp-cwd", is_temporary(file_cwd)),
                                          ("no-user-message", users == 0),
                                          ("few-replies", replies <= 2)) if hit]
        if reasons:
            found.append(Candidate(path, size, mtime_ns, age_hours, reasons))
    return found


def preview(store: Store, roots: Iterable[RootLike], current: str | None = None,
            cwd: str | None = None) -> list[Candidate]:
    """Index the roots, list the candidates, and remember exactly that list for ``confirm``."""
    roots = list(roots)
    refresh(store, roots)
    shown: list[tuple[Candidate, FileIdentity]] = []
    for candidate in find_candidates(store, roots, current, cwd):
        try:
            identity = identity_at(candidate.path)
        except OSError:
            continue  # gone or unreadable since it was judged
        if (identity.size, identity.mtime_ns) == (candidate.size, candidate.mtime_ns):
            shown.append((candidate, identity))
    stamp = now_ms()
    with store.write():
        index_sql.replace_preview(store, [(c.path, i.size, i.mtime_ns, ",".join(c.reasons), stamp, i.dev, i.ino,
                                           i.ctime_ns, i.head_hash) for c, i in shown])
    return [c for c, _ in shown]


def confirm(store: Store, roots: Iterable[RootLike],
            current: str | None = None) -> ConfirmResult:
    """Delete the journals the last preview listed that are unchanged since; clear the preview."""
    roots = list(roots)
    listed = index_sql.previewed(store)
    result = ConfirmResult(had_preview=bool(listed))
    current_real = os.path.realpath(current) if current else None
    for path, size, mtime_ns, dev, ino, ctime_ns, head_hash in listed:
        reason = unsafe_reason(path, roots)
        if reason is None and current_real == os.path.realpath(path):
            reason = "the current session"
        if reason is None and (dev is None or ino is None or ctime_ns is None or head_hash is None):
            reason = "listed by an older journal-index; run `journal-index gc` again to see it"
        if reason is None:
            assert dev is not None and ino is not None and ctime_ns is not None and head_hash is not None
            try:
                reason = delete_if_same(path, FileIdentity(dev, ino, size, mtime_ns, ctime_ns, head_hash))
            except OSError as exc:
                reason = exc.strerror or str(exc)
        if reason is not None:
            result.skipped.append((path, reason))
            continue
        index_sql.remove_file(store, path)
        result.deleted.append(path)
    with store.write():
        index_sql.clear_preview(store)
    return result


def delete_if_same(path: str, shown: FileIdentity) -> str | None:
    """Delete ``path`` if it is still the file the preview showed; else say why it is kept.

    A path names whatever file is there at the moment, so checking and then deleting by name
    could delete a file put there in between. The listed file is checked through a descriptor
    held open (its inode cannot be reused meanwhile), then moved to a hidden name of its own in
    the same folder; only what that name then holds, if it is still that inode, is deleted.
    """
    fd = _open_plain(path)
    try:
        differs = shown.difference(identity_of(fd))
        if differs is not None:
            return differs
        folder, name = os.path.split(path)
        aside = os.path.join(folder, f".{name}.gc-{secrets.token_hex(6)}")
        os.rename(path, aside)
        st = os.lstat(aside)
        if (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) != (shown.dev, shown.ino, shown.size, shown.mtime_ns):
            return _put_back(aside, path)  # replaced, or written to, in the last instant
        os.remove(aside)
        return None
    finally:
        os.close(fd)


def _put_back(aside: str, path: str) -> str:
    """Give a file moved aside its name again, never over a file that took the name since."""
    try:
        os.link(aside, path)
    except OSError:
        return f"changed while being deleted; kept as {aside}"
    os.remove(aside)
    return "changed while being deleted"


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    value = n / 1024
    for unit in ("KB", "MB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


def _age(hours: float) -> str:
    return f"{hours:.0f} h" if hours < 48 else f"{hours / 24:.0f} d"


def preview_text(candidates: list[Candidate]) -> str:
    if not candidates:
        return "no junk journals (never compacted and temporary, empty or with ≤ 2 replies)"
    lines = []
    for c in candidates:
        why = "; ".join(REASONS[r] for r in c.reasons)
        lines.append(f"{_size(c.size):>9}  {_age(c.age_hours):>5}  {c.path}\n{'':18}{why}")
    total = sum(c.size for c in candidates)
    lines.append(f"{count(len(candidates), 'junk journal')}, {_size(total)}; delete "
                 f"{'it' if len(candidates) == 1 else 'them'} with "
                 "`journal-index gc --confirm` (files changed meanwhile are kept)")
    return "\n".join(lines)


def confirm_text(result: ConfirmResult) -> str:
    if not result.had_preview:
        return "nothing to delete: run `journal-index gc` first to see the candidates"
    lines = [f"deleted {p}" for p in result.deleted]
    lines += [f"kept {p}: {reason}" for p, reason in result.skipped]
    lines.append(f"deleted {count(len(result.deleted), 'journal')}, kept {len(result.skipped)}")
    return "\n".join(lines)
