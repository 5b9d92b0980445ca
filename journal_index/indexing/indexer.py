"""Incremental indexing of journals from their stored byte cursors: the passes.

This module runs passes: one journal (:func:`index_file`), or many (:func:`index_files`), in
this process or, for a large pass, with parsing and redaction in worker processes while this
process only checks journals and writes; and it finds the journals under the session roots.
What one journal's pass does — the checks that decide whether it is read from its cursor or
from byte 0, and the commits that keep the cursor with its rows — is
:mod:`journal_index.indexing.journal_pass`. FTS merges and WAL checkpoints run between write
transactions, never inside one (:mod:`journal_index.data.store`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from journal_index.data import index_sql
from journal_index.data.store import Store
from journal_index.formats import Root
from journal_index.indexing.folder_watch import FolderWatch
from journal_index.indexing.journal_pass import (
    FileResult,
    IndexReport,
    Journal,
    Writer,
    index_serially,
    never,
    start_journal,
)

__all__ = ["FileResult", "IndexReport", "as_roots", "choose_workers", "discover", "index_file", "index_files",
           "pending_bytes", "unread_bytes", "discover_stats", "redo_journal", "Listings"]

# Parsing and redaction run in worker processes when a pass has at least this much to read and
# the machine more than one core (the writer's SQLite work overlaps them); below it, starting
# the workers would cost more than they save. JOURNAL_INDEX_WORKERS sets their number (0: none).
WORKERS_MIN_BYTES = 16 << 20
WORKERS_ENV = "JOURNAL_INDEX_WORKERS"
# Two workers keep one writer busy (each parses ~30 MB/s of journal, the writer takes ~60), and
# each holds ~70 MB by the end of a long pass (mostly RE2's DFA cache), so the whole stays
# under 200 MB.
MAX_WORKERS = 2
# A pass that indexed this much, and at least 1/COMPACT_GROWTH of everything indexed, ends by
# merging the FTS tables to one segment each and giving free pages back (Store.compact): the
# smallest index, the fastest to query, and the whole rewrite is paid once per growth by 1/4.
COMPACT_MIN_BYTES = 16 << 20
COMPACT_GROWTH = 4


def index_file(store: Store, path: str | os.PathLike[str], roots: Iterable[Root | str | os.PathLike[str]] = (),
               rebuild: bool = False) -> FileResult:
    """Bring the index of one journal up to date. Never raises for a bad or vanished file.

    A journal already indexed keeps the format stored for it; a new one takes the format of
    the root it lies in (``roots``), else the format that recognizes it. ``rebuild`` drops
    what was indexed from the journal and indexes it from byte 0: a read found a line that no
    longer carries its entry id, so nothing indexed from it is trusted (a rewrite can keep the
    size, the mtime, the header and the tail).
    """
    journal, ready = start_journal(store, path, as_roots(roots), rebuild)
    if not ready:
        return journal.result
    writer = Writer(store)
    try:
        for block in journal.blocks():
            writer.add(journal, block, journal.extract(block))
            if journal.conflicted:
                break
        writer.flush()
    except OSError as exc:
        journal.result.error = exc.strerror or str(exc)
    finally:
        journal.close()
    return journal.result


def redo_journal(store: Store, path: str | os.PathLike[str]) -> bool:
    """Index ``path`` again from byte 0 (a read found a line that is not its entry: the journal
    was rewritten under the index). True when that moved anything."""
    result = index_file(store, path, rebuild=True)
    return bool(result.reset or result.removed or result.entries > 0)


def index_files(
    store: Store,
    paths: Iterable[str | os.PathLike[str]],
    progress: Callable[[FileResult], None] | None = None,
    roots: Iterable[Root | str | os.PathLike[str]] = (),
    workers: int | None = None,
    stop: Callable[[], bool] | None = None,
) -> IndexReport:
    """Index many journals, small ones sharing transactions.

    With ``workers`` (default: :func:`choose_workers`) journals are parsed and redacted in
    worker processes while this process checks them and writes: what is committed is the same.
    ``stop`` is asked between blocks: once it says True the pass ends, each journal started at
    the block it reached (committed with its cursor, so the next pass resumes there; its result
    counts what was indexed), the journals not started left alone (no result for them).
    A pass that grew the index by a quarter or more ends with :meth:`Store.compact`.
    """
    report = IndexReport()
    started = time.perf_counter()

    def done(journal: Journal) -> None:
        report.add(journal.result)
        if progress is not None:
            progress(journal.result)

    writer = Writer(store, done)
    listed = [os.fspath(p) for p in paths]
    rooted = as_roots(roots)
    count = choose_workers(store, listed) if workers is None else workers
    stop = stop or never
    try:
        if count > 0:
            from journal_index.indexing.index_workers import index_in_workers  # its imports cost a search ~15 ms

            index_in_workers(store, listed, rooted, writer, count, stop)
        else:
            index_serially(store, listed, rooted, writer, stop)
        writer.flush()
    finally:
        for journal in writer.finished:
            journal.close()
    if report.bytes >= COMPACT_MIN_BYTES and report.bytes * COMPACT_GROWTH >= index_sql.indexed_bytes(store):
        store.compact()
    report.seconds = time.perf_counter() - started
    return report


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS
        return os.cpu_count() or 1


def choose_workers(store: Store, paths: list[str]) -> int:
    """How many worker processes a pass over ``paths`` should use (0: parse in this process):
    JOURNAL_INDEX_WORKERS if set, else up to MAX_WORKERS when the machine has several cores and
    the pass WORKERS_MIN_BYTES to read."""
    given = os.environ.get(WORKERS_ENV, "").strip()
    if given:
        try:
            return max(0, int(given))
        except ValueError:
            pass
    n = cores()
    if n < 2 or os.name != "posix":  # workers talk over inherited pipe file descriptors
        return 0
    todo = 0
    for pending in pending_bytes(store, paths):
        todo += pending
        if todo >= WORKERS_MIN_BYTES:
            return min(n, MAX_WORKERS)
    return 0


NOT_INDEXED = index_sql.FileStamp(0, None, None, None, None)


def pending_bytes(store: Store, paths: list[str]) -> Iterator[int]:
    """For each path, about how many bytes a pass would read: none when size and mtime are as
    indexed, from the cursor when it grew, all of it when it shrank or is another file now
    (0 for a vanished file)."""
    known = index_sql.file_stamps(store)
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            yield 0
            continue
        yield unread_bytes(known.get(os.path.abspath(path), NOT_INDEXED), st)


def unread_bytes(stamp: index_sql.FileStamp, st: os.stat_result) -> int:
    """How many bytes of a journal (as ``st`` says it is now) a pass would read, given what the
    index recorded of it (:data:`NOT_INDEXED` for a journal it never saw)."""
    if stamp.ino is not None and (stamp.dev, stamp.ino) != (st.st_dev, st.st_ino):
        return st.st_size
    if stamp.size == st.st_size and stamp.mtime_ns == st.st_mtime_ns:
        return 0
    return st.st_size - stamp.cursor if st.st_size >= stamp.cursor else st.st_size


def as_roots(roots: Iterable[Root | str | os.PathLike[str]]) -> list[Root]:
    """Roots as given (plain folders mean "any format"), with absolute paths."""
    out = []
    for root in roots:
        if isinstance(root, Root):
            out.append(Root(Path(os.path.abspath(root.path)), root.format))
        else:
            out.append(Root(Path(os.path.abspath(os.fspath(root)))))
    return out


def _within(path: str, folders: list[str]) -> bool:
    return any(path == f or path.startswith(f.rstrip(os.sep) + os.sep) for f in folders)


def discover(roots: Iterable[Root | str | os.PathLike[str]]) -> list[str]:
    """Every ``*.jsonl`` under the roots, newest first (by mtime).

    Symlinks are followed only where their real path stays inside the roots (a link out,
    say to /etc/passwd, is never read), and one real file is listed once, under its own
    path when that is reachable, else under its first path in name order.
    """
    return [path for path, _ in discover_stats(roots)]


# A folder changed this recently may change again within the same tick of its mtime: its
# listing is not kept (as git treats an index entry as racy).
RACY_NS = 2_000_000_000

# One folder's entries that a walk looks at: (name, path, is a folder, is a symlink), in name order.
Listed = list[tuple[str, str, bool, bool]]


# A file as a walk saw it: (device, inode, size, mtime, ctime).
Signature = tuple[int, int, int, int, int]


@dataclass
class _Walk:
    """A whole walk whose every folder's listing was kept: enough to redo it with one stat per
    folder and per file, as long as no folder changed and no path names another file."""

    key: tuple[tuple[str, ...], tuple[str, ...]]  # the roots and their real paths
    folders: list[tuple[str, tuple[int, int, int, int]]]  # each folder walked, with its stamp
    paths: list[str]  # each file stat'ed, in walk order...
    signatures: list[Signature]  # ...as it was then
    found: list[int]  # those found (one name per real file), as indexes into ``paths``, in order
    stats: list[os.stat_result]  # each file's stat, as ``signatures`` sums it up
    # What the walk returns, made once and given again while nothing changed (each call of the
    # agent tool asks; the list of a few hundred journals was a tenth of a call's overhead).
    result: list[tuple[str, os.stat_result]] | None = None


class Listings:
    """Folder listings kept from one walk to the next (the agent tool walks the roots on every
    call). A folder whose device, inode, mtime and ctime are what they were when it was listed,
    and that had not changed for RACY_NS before that, holds the same names: only its journals are
    stat'ed again. A folder holding a symlink is listed afresh every time (where the link leads
    may change while the folder does not).

    When every folder's listing was kept, the whole walk is kept too (:meth:`again`): the next
    one only stats what it stat'ed, and ``unchanged`` says whether every file is as it was. Given
    a :class:`FolderWatch`, the next one stats nothing at all while the kernel reports nothing
    in the walk's folders since the last look."""

    def __init__(self, racy_ns: int = RACY_NS, watch: FolderWatch | None = None) -> None:
        self.racy_ns = racy_ns
        self.watch = watch
        self._ignored: frozenset[str] = frozenset()  # the writes the last look through the watch ignored
        self._kept: dict[str, tuple[tuple[int, int, int, int], Listed]] = {}
        self._next: dict[str, tuple[tuple[int, int, int, int], Listed]] = {}
        self._walk: _Walk | None = None
        self.unchanged = False  # the last walk found every file as the one before it

    @staticmethod
    def _stamp(st: os.stat_result) -> tuple[int, int, int, int]:
        return st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns

    def get(self, folder: str, st: os.stat_result) -> Listed | None:
        kept = self._kept.get(folder)
        if kept is None or kept[0] != self._stamp(st):
            return None
        self._next[folder] = kept
        return kept[1]

    def put(self, folder: str, st: os.stat_result, listed_at_ns: int, listed: Listed) -> bool:
        """Keep a folder's listing, unless it holds a symlink or changed too recently; whether kept."""
        if any(linked for *_, linked in listed):
            return False
        if max(st.st_mtime_ns, st.st_ctime_ns) > listed_at_ns - self.racy_ns:
            return False
        self._next[folder] = (self._stamp(st), listed)
        return True

    def walked(self, walk: _Walk | None = None) -> None:
        """A walk ended: keep what it saw (folders gone or changed drop out), and the walk itself
        when every folder's listing was kept."""
        self._kept, self._next = self._next, {}
        self._walk, self.unchanged = walk, False
        if walk is not None and self.watch is not None:
            self.watch.watch((folder, stamp[0], stamp[1]) for folder, stamp in walk.folders)

    def again(self, key: tuple[tuple[str, ...], tuple[str, ...]],
              ignore_writes: frozenset[str] = frozenset()) -> Sequence[tuple[str, os.stat_result]] | None:
        """The last walk's result as the files are now, or None when a walk must be made: no
        walk is kept for these roots, a folder changed (so its names may have), or a path names
        another file (a name may now be the first of its file, or the second). While the watch
        reports nothing since the last look (writes to ``ignore_writes`` aside: their stats are
        then the last ones), that is the last result itself."""
        walk = self._walk
        if walk is None or walk.key != key:
            return None
        if self.watch is not None:
            quiet = self.watch.quiet(ignore_writes)  # the events so far are consumed either way
            # A journal whose writes were ignored has the stat of before them: once it is no
            # longer ignored, it (and so every journal) is stat'ed again.
            same_ignored, self._ignored = ignore_writes == self._ignored, ignore_writes
            if quiet and same_ignored:
                self.unchanged = True
                if walk.result is None:
                    walk.result = [(walk.paths[i], walk.stats[i]) for i in walk.found]
                return walk.result
        for folder, stamp in walk.folders:
            try:
                if self._stamp(os.stat(folder)) != stamp:
                    return None
            except OSError:
                return None
        try:
            stats = list(map(os.stat, walk.paths))  # the loop in C: one stat is most of a file's cost
        except OSError:
            return None
        signatures = [(s.st_dev, s.st_ino, s.st_size, s.st_mtime_ns, s.st_ctime_ns) for s in stats]
        self.unchanged = signatures == walk.signatures
        if not self.unchanged:
            if any(now[:2] != then[:2] for now, then in zip(signatures, walk.signatures, strict=True)):
                return None
            walk.found.sort(key=lambda i: (-signatures[i][3], walk.paths[i]))  # as a walk orders them
            walk.signatures = signatures
        walk.stats = stats
        walk.result = [(walk.paths[i], stats[i]) for i in walk.found]
        return walk.result


def _listing(folder: str) -> Listed:
    with os.scandir(folder) as listing:
        entries = sorted(listing, key=lambda e: e.name)
    out: Listed = []
    for entry in entries:
        try:
            is_dir = entry.is_dir()
        except OSError:
            is_dir = False
        if is_dir or entry.name.endswith(".jsonl"):
            out.append((entry.name, entry.path, is_dir, entry.is_symlink()))  # path: joined in C
    return out


def discover_stats(roots: Iterable[Root | str | os.PathLike[str]], listings: Listings | None = None,
                   ignore_writes: frozenset[str] = frozenset()) -> Sequence[tuple[str, os.stat_result]]:
    """:func:`discover`, with each file's ``stat`` as it was seen (so that a caller comparing
    sizes with the index need not stat every journal a second time).

    The agent tool runs this on every call, so it avoids ``realpath`` per file (the real path of
    an entry that is not a symlink is its folder's real path joined with its name) and, given
    ``listings``, lists again only the folders that changed since its last walk. Writes to
    ``ignore_writes`` (journals the caller leaves aside) do not count as a change: their stats
    may then be those of the last walk.
    """
    rooted = [r for r in as_roots(roots) if r.path.is_dir()]
    real_roots = [os.path.realpath(r.path) for r in rooted]
    key = (tuple(os.fspath(r.path) for r in rooted), tuple(real_roots))
    if listings is not None:
        again = listings.again(key, ignore_writes)
        if again is not None:
            return again
    by_file: dict[tuple[int, int], tuple[int, str, os.stat_result, int]] = {}
    seen_dirs: set[tuple[int, int]] = set()
    # What a walk saw, kept to redo it cheaply (Listings.again) while every listing is kept.
    whole = listings is not None
    folders_seen: list[tuple[str, tuple[int, int, int, int]]] = []
    files_seen: list[str] = []
    signatures: list[Signature] = []
    stats_seen: list[os.stat_result] = []
    for root in rooted:
        folder = os.fspath(root.path)
        stack = [(folder, os.path.realpath(folder))]  # depth first, folders in name order, as os.walk
        while stack:
            dirpath, real_dir = stack.pop()
            try:
                st = os.stat(dirpath)
            except OSError:
                whole = False
                continue
            dir_key = (st.st_dev, st.st_ino)
            if dir_key in seen_dirs or not _within(real_dir, real_roots):
                whole = False
                continue  # a loop, a second way to one folder, or a link out of the roots
            seen_dirs.add(dir_key)
            folders_seen.append((dirpath, (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)))
            listed = listings.get(dirpath, st) if listings is not None else None
            if listed is None:
                listed_at = time.time_ns()
                try:
                    listed = _listing(dirpath)
                except OSError:
                    whole = False
                    continue
                if listings is not None:
                    whole = listings.put(dirpath, st, listed_at, listed) and whole
            folders = []
            real_prefix = real_dir.rstrip(os.sep) + os.sep
            for name, full, is_dir, linked in listed:
                if is_dir:
                    folders.append((full, os.path.realpath(full) if linked else real_prefix + name))
                    continue
                real = None
                if linked:
                    real = os.path.realpath(full)
                    if not _within(real, real_roots):
                        continue
                try:
                    fst = os.stat(full)
                except OSError:
                    whole = False
                    continue
                files_seen.append(full)
                signatures.append((fst.st_dev, fst.st_ino, fst.st_size, fst.st_mtime_ns, fst.st_ctime_ns))
                stats_seen.append(fst)
                file_key = (fst.st_dev, fst.st_ino)
                kept = by_file.get(file_key)
                # The first name of a file, unless its own (real) path comes later; the real path
                # of a plain entry is made only when a second name is seen.
                if kept is None or (kept[1] != (real := real or real_prefix + name) and full == real):
                    by_file[file_key] = (fst.st_mtime_ns, full, fst, len(files_seen) - 1)
            stack.extend(reversed(folders))
    found = sorted(by_file.values(), key=lambda item: (-item[0], item[1]))
    if listings is not None:
        listings.walked(_Walk(key, folders_seen, files_seen, signatures, [i for *_, i in found], stats_seen)
                        if whole else None)
    return [(path, st) for _, path, st, _ in found]
