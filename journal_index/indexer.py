"""Incremental indexing of journals from their stored byte cursors.

Per journal: stat; skip when size and mtime are unchanged; otherwise check that what was
indexed is still there (size ≥ cursor, same header line, same bytes just before the cursor)
and start over from byte 0 when it is not. Then read blocks of complete lines (about 1 MiB)
and commit each block's rows, FTS terms and the new cursor in one short ``BEGIN IMMEDIATE``
transaction, so a crash at any moment leaves a state from which the next pass yields exactly
the from-scratch index.

Parsing and redaction (:mod:`journal_index.extract`) are a pure function of a block, kept
apart from the writes.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from journal_index.extract import Extracted, extract_block
from journal_index.formats import Header, JournalFormat, get_format
from journal_index.store import Store

CHUNK_BYTES = 1 << 20
ANCHOR_BYTES = 4096
# A line longer than this is skipped (and counted) without being held in memory whole.
MAX_LINE_BYTES = 64 << 20
# One write transaction holds about this much text (or rows, or blocks), of one journal or
# of several small ones: fewer FTS segments to merge, each transaction still short.
GROUP_CHARS = 1 << 20
GROUP_ROWS = 4000
GROUP_ITEMS = 256

_INSERT_ENTRY = (
    "INSERT INTO entries(rowid, file_id, entry_id, parent_id, ts, kind, role, tool, chars, offset, "
    "length, tokens_before) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_TERMS = "INSERT INTO entries_fts(rowid, body) VALUES(?, ?)"


def fingerprint(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=12).hexdigest()


@dataclass
class FileResult:
    path: str
    entries: int = 0
    bytes: int = 0
    skipped: int = 0
    reset: bool = False
    unchanged: bool = False
    removed: bool = False
    error: str | None = None


@dataclass
class IndexReport:
    files: int = 0
    entries: int = 0
    bytes: int = 0
    seconds: float = 0.0
    skipped_lines: int = 0
    reset_files: int = 0
    errors: list[str] = field(default_factory=list)

    def add(self, result: FileResult) -> None:
        self.files += 1
        self.entries += result.entries
        self.bytes += result.bytes
        self.skipped_lines += result.skipped
        self.reset_files += int(result.reset)
        if result.error:
            self.errors.append(f"{result.path}: {result.error}")

    def as_json(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "entries": self.entries,
            "bytes": self.bytes,
            "seconds": round(self.seconds, 3),
            "skippedLines": self.skipped_lines,
            "resetFiles": self.reset_files,
            "errors": self.errors,
        }


@dataclass
class Block:
    """Complete lines to index, and where the cursor stands once they are committed."""

    data: bytes
    start: int  # file offset of data[0]
    end: int  # the cursor after this block
    skipped: int  # over-long lines dropped just before this block
    anchor: bytes  # the ANCHOR_BYTES just before ``end``
    final: bool = False  # the last block of this pass: record size and mtime


def _read_first_line(handle: BinaryIO) -> bytes | None:
    """The header line, or None while it is still being written (no newline yet)."""
    parts: list[bytes] = []
    total, position = 0, 0
    while total <= MAX_LINE_BYTES:
        chunk = os.pread(handle.fileno(), 64 * 1024, position)
        if not chunk:
            return None
        position += len(chunk)
        newline = chunk.find(b"\n")
        if newline >= 0:
            parts.append(chunk[:newline])
            return b"".join(parts)
        parts.append(chunk)
        total += len(chunk)
    return b"".join(parts)[:MAX_LINE_BYTES]


def open_journal(path: str) -> BinaryIO:
    """Open a journal for reading; a FIFO, socket or device is refused instead of blocking on it."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _bytes_before(fd: int, cursor: int) -> bytes:
    size = min(cursor, ANCHOR_BYTES)
    return os.pread(fd, size, cursor - size) if size else b""


def _tail(window: bytes, data: bytes) -> bytes:
    """The ANCHOR_BYTES that end with ``data``, reaching back into ``window`` if needed."""
    if len(data) >= ANCHOR_BYTES:
        return data[-ANCHOR_BYTES:]
    return (window + data)[-ANCHOR_BYTES:]


def forget_file(store: Store, file_id: int) -> None:
    """Drop a journal's rows and terms (inside the caller's transaction)."""
    store.conn.execute(
        "DELETE FROM entries_fts WHERE rowid IN (SELECT rowid FROM entries WHERE file_id = ?)",
        (file_id,),
    )
    store.conn.execute("DELETE FROM entries WHERE file_id = ?", (file_id,))


def remove_file(store: Store, path: str) -> bool:
    """Forget a journal that no longer exists. Returns whether it was known."""
    with store.write():
        file_id = store.value("SELECT id FROM files WHERE path = ?", (path,))
        if file_id is None:
            return False
        forget_file(store, file_id)
        store.conn.execute("DELETE FROM files WHERE id = ?", (file_id,))
    return True


class _Journal:
    """One pass over one journal: checks, the blocks to read, and their commits."""

    def __init__(self, store: Store, path: str, fmt: JournalFormat, rebuild: bool = False) -> None:
        self.store = store
        self.path = path
        self.fmt = fmt
        self.rebuild = rebuild
        self.result = FileResult(path)
        self.file_id = 0
        self.cursor = 0
        self.handle: BinaryIO | None = None
        self.stat: os.stat_result | None = None
        self.pending_cursor = 0  # the cursor as written in the open transaction
        self.applied: list[tuple[int, int]] = []  # (rows, skipped) written in the open transaction
        self.conflicted = False
        # (header, head hash) of a journal not yet in ``files``; set while its first commit is open
        self.unregistered: tuple[Header | None, str] | None = None
        self.registering: tuple[Header | None, str] | None = None

    def prepare(self) -> bool:
        """Stat, skip, register or reset. True when there may be new lines to read."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self.result.removed = remove_file(self.store, self.path)
            return False
        known = self.store.one(
            "SELECT id, cursor, size, mtime_ns, head_hash, anchor_hash FROM files WHERE path = ?",
            (self.path,),
        )
        if not self.rebuild and known is not None and known[2] == st.st_size and known[3] == st.st_mtime_ns:
            self.result.unchanged = True
            return False
        handle = open_journal(self.path)  # kept open across blocks, closed by close()
        self.handle, self.stat = handle, st
        header_line = _read_first_line(handle)
        if header_line is None:
            self.close()
            if known is not None and known[1] > 0:
                # Cut back to (part of) its header line: nothing indexed from it is there any more.
                self.file_id = known[0]
                self._reset(None, fingerprint(b""))
            return False  # the header is still being written
        head_hash = fingerprint(header_line)
        header = self.fmt.parse_header(header_line)
        if known is None:
            # Registered by the first commit of its rows, not in a transaction of its own:
            # a first pass over thousands of journals would otherwise pay a commit for each.
            self.unregistered = (header, head_hash)
        else:
            self.file_id, self.cursor = known[0], known[1]
            self.pending_cursor = self.cursor
            anchor = fingerprint(_bytes_before(handle.fileno(), self.cursor))
            if self.rebuild or st.st_size < self.cursor or head_hash != known[4] or anchor != known[5]:
                self._reset(header, head_hash)
        return True

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None

    def _register(self) -> bool:
        """Add the journal to ``files`` (inside the caller's transaction). False if another
        process registered it meanwhile and has already indexed some of it."""
        assert self.unregistered is not None
        header, head_hash = self.unregistered
        self.store.conn.execute(
            "INSERT INTO files(path, format, cursor, anchor_hash) VALUES(?, ?, 0, ?) ON CONFLICT(path) DO NOTHING",
            (self.path, self.fmt.NAME, fingerprint(b"")),
        )
        row = self.store.one("SELECT id, cursor FROM files WHERE path = ?", (self.path,))
        assert row is not None
        if row[1] != 0:
            return False
        self.file_id = row[0]
        self._write_header(header, head_hash)
        return True

    def _write_header(self, header: Header | None, head_hash: str) -> None:
        h = header or Header(None, None, None, 1)
        self.store.conn.execute(
            "UPDATE files SET version = ?, session_id = ?, cwd = ?, started = ?, parent_session = ?, "
            "head_hash = ? WHERE id = ?",
            (h.version, h.session_id, h.cwd, h.started, h.parent_session, head_hash, self.file_id),
        )

    def _reset(self, header: Header | None, head_hash: str) -> None:
        """The journal was rewritten: drop everything indexed from it and start from byte 0."""
        with self.store.write():
            forget_file(self.store, self.file_id)
            self.store.conn.execute(
                "UPDATE files SET cursor = 0, anchor_hash = ?, entries = 0, skipped = 0, name = NULL, "
                "last_ts = NULL, size = NULL, mtime_ns = NULL WHERE id = ?",
                (fingerprint(b""), self.file_id),
            )
            self._write_header(header, head_hash)
        self.cursor = self.pending_cursor = 0
        self.result.reset = True

    def blocks(self) -> Iterator[Block]:
        """Blocks of complete lines from the cursor on; the last one is marked final.

        An over-long line is dropped as its bytes arrive; the cursor stays at its start until
        its newline is seen, so a line still being written is never lost.
        """
        assert self.handle is not None
        fd = self.handle.fileno()
        window = _bytes_before(fd, self.cursor)  # the bytes just before buffer_start
        buffer, buffer_start, position = b"", self.cursor, self.cursor
        skipping, skipped = False, 0
        pending: Block | None = None
        while chunk := os.pread(fd, CHUNK_BYTES, position):
            position += len(chunk)
            if skipping:
                newline = chunk.find(b"\n")
                consumed = len(chunk) if newline < 0 else newline + 1
                window = _tail(window, chunk[:consumed])
                buffer_start += consumed
                if newline < 0:
                    continue
                skipping, skipped = False, skipped + 1
                chunk = chunk[consumed:]
            buffer += chunk
            cut = buffer.rfind(b"\n") + 1
            if cut:
                data, buffer = buffer[:cut], buffer[cut:]
                window = _tail(window, data)
                if pending is not None:
                    yield pending
                pending = Block(data, buffer_start, buffer_start + cut, skipped, window)
                buffer_start += cut
                skipped = 0
            if len(buffer) > MAX_LINE_BYTES:
                window = _tail(window, buffer)
                buffer_start += len(buffer)
                buffer, skipping = b"", True
        if skipping:  # the long line is unfinished: keep the cursor before it, look again later
            if pending is not None:
                yield pending
            return
        if pending is not None and skipped == 0:
            pending.final = True
            yield pending
            return
        if pending is not None:
            yield pending
        yield Block(b"", buffer_start, buffer_start, skipped, window, final=True)

    def apply(self, block: Block, extracted: Extracted) -> bool:
        """Write a block's rows, terms and new cursor inside the caller's transaction.

        False (and nothing written) when another process moved this journal's cursor.
        """
        if block.end == self.pending_cursor and not extracted.rows and not block.final:
            return True
        conn = self.store.conn
        if self.unregistered is not None:
            if not self._register():
                return False
            self.registering, self.unregistered = self.unregistered, None
        stored = self.store.value("SELECT cursor FROM files WHERE id = ?", (self.file_id,))
        if stored != self.pending_cursor:
            return False
        if extracted.rows:
            base = int(self.store.value("SELECT max(rowid) FROM entries", default=0)) + 1
            conn.executemany(_INSERT_ENTRY, [(base + i, self.file_id, *row) for i, row in enumerate(extracted.rows)])
            conn.executemany(_INSERT_TERMS, [(base + i, text) for i, text in extracted.terms])
        skipped = extracted.skipped + block.skipped
        conn.execute(
            "UPDATE files SET cursor = ?, anchor_hash = ?, entries = entries + ?, skipped = skipped + ?, "
            "name = coalesce(?, name), last_ts = max(coalesce(last_ts, 0), coalesce(?, 0)), "
            "indexed_at = ? WHERE id = ?",
            (block.end, fingerprint(block.anchor), len(extracted.rows), skipped, extracted.name,
             extracted.last_ts, int(time.time() * 1000), self.file_id),
        )
        if block.final and self.stat is not None:
            conn.execute("UPDATE files SET size = ?, mtime_ns = ? WHERE id = ?",
                         (self.stat.st_size, self.stat.st_mtime_ns, self.file_id))
        self.applied.append((len(extracted.rows), skipped))
        self.pending_cursor = block.end
        return True

    def settle(self, committed: bool) -> None:
        """After the transaction: count what was committed, or forget what was rolled back."""
        if committed:
            for rows, skipped in self.applied:
                self.result.entries += rows
                self.result.skipped += skipped
            self.result.bytes += self.pending_cursor - self.cursor
            self.cursor = self.pending_cursor
        else:
            self.pending_cursor = self.cursor
            if self.registering is not None:  # the row that registered it was rolled back too
                self.unregistered, self.file_id = self.registering, 0
        self.registering = None
        self.applied.clear()


class _Writer:
    """Commits blocks, of one journal or many, in transactions of about GROUP_CHARS of text.

    Every commit writes an FTS segment that later merges cost again, so a first pass over
    thousands of small journals groups them; a transaction still stays in the tens of ms.
    """

    def __init__(self, store: Store, done: Callable[[_Journal], None] | None = None) -> None:
        self.store = store
        self.done = done
        self.items: list[tuple[_Journal, Block, Extracted]] = []
        self.finished: list[_Journal] = []
        self.chars = 0
        self.rows = 0

    def add(self, journal: _Journal, block: Block, extracted: Extracted) -> None:
        if journal.conflicted:
            return
        self.items.append((journal, block, extracted))
        self.chars += sum(len(text) for _, text in extracted.terms)
        self.rows += len(extracted.rows)
        if self.chars >= GROUP_CHARS or self.rows >= GROUP_ROWS or len(self.items) >= GROUP_ITEMS:
            self.flush()

    def finish(self, journal: _Journal) -> None:
        """The journal has no more blocks; it is reported once its last items are committed."""
        self.finished.append(journal)
        if not any(item[0] is journal for item in self.items):
            self._report()

    def flush(self) -> None:
        items, self.items, self.chars, self.rows = self.items, [], 0, 0
        touched: dict[int, _Journal] = {}
        if items:
            try:
                with self.store.write():
                    for journal, block, extracted in items:
                        if journal.conflicted:
                            continue
                        touched[id(journal)] = journal
                        if not journal.apply(block, extracted):
                            # Another process is indexing this journal; it owns the rest of this pass.
                            journal.conflicted = True
            except BaseException:
                for journal in touched.values():
                    journal.settle(committed=False)
                raise
            for journal in touched.values():
                journal.settle(committed=True)
        self._report()

    def _report(self) -> None:
        pending = {id(item[0]) for item in self.items}
        still = []
        for journal in self.finished:
            if id(journal) in pending:
                still.append(journal)
                continue
            journal.close()
            if self.done is not None:
                self.done(journal)
        self.finished = still


def _start_journal(store: Store, path: str | os.PathLike[str], fmt: str, rebuild: bool) -> tuple[_Journal, bool]:
    journal = _Journal(store, os.path.abspath(os.fspath(path)), get_format(fmt), rebuild)
    try:
        return journal, journal.prepare()
    except OSError as exc:
        journal.close()
        journal.result.error = exc.strerror or str(exc)
        return journal, False


def index_file(store: Store, path: str | os.PathLike[str], fmt: str = "pi", rebuild: bool = False) -> FileResult:
    """Bring the index of one journal up to date. Never raises for a bad or vanished file.

    ``rebuild`` drops what was indexed from the journal and indexes it from byte 0: a read
    found a line that no longer carries its entry id, so nothing indexed from it is trusted
    (a rewrite can keep the size, the mtime, the header and the tail).
    """
    journal, ready = _start_journal(store, path, fmt, rebuild)
    if not ready:
        return journal.result
    writer = _Writer(store)
    try:
        for block in journal.blocks():
            writer.add(journal, block, extract_block(fmt, block.data, block.start))
            if journal.conflicted:
                break
        writer.flush()
    except OSError as exc:
        journal.result.error = exc.strerror or str(exc)
    finally:
        journal.close()
    return journal.result


def index_files(
    store: Store,
    paths: Iterable[str | os.PathLike[str]],
    progress: Callable[[FileResult], None] | None = None,
) -> IndexReport:
    """Index many journals in one process, small ones sharing transactions.

    Parsing and redaction could run in worker processes (extract_block is pure), but on the
    2-vCPU machines this was measured on a process pool lost to one process: 17 against
    29 MB/s on a 200 MB corpus, the writer's SQLite work itself slowing down by ~70 % while
    workers ran. So one process it is, until a measurement says otherwise.
    """
    report = IndexReport()
    started = time.perf_counter()

    def done(journal: _Journal) -> None:
        report.add(journal.result)
        if progress is not None:
            progress(journal.result)

    writer = _Writer(store, done)
    try:
        _index_serially(store, [os.fspath(p) for p in paths], writer)
        writer.flush()
    finally:
        for journal in writer.finished:
            journal.close()
    report.seconds = time.perf_counter() - started
    return report


def _index_serially(store: Store, paths: list[str], writer: _Writer) -> None:
    for path in paths:
        journal, ready = _start_journal(store, path, "pi", False)
        if ready:
            try:
                for block in journal.blocks():
                    writer.add(journal, block, extract_block(journal.fmt.NAME, block.data, block.start))
                    if journal.conflicted:
                        break
            except OSError as exc:
                journal.result.error = exc.strerror or str(exc)
        writer.finish(journal)


def discover(roots: Iterable[str | os.PathLike[str]]) -> list[str]:
    """Every ``*.jsonl`` under the roots, newest first (by mtime), without following loops."""
    found: list[tuple[int, str]] = []
    seen_dirs: set[tuple[int, int]] = set()
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
            try:
                st = os.stat(dirpath)
            except OSError:
                dirnames[:] = []
                continue
            key = (st.st_dev, st.st_ino)
            if key in seen_dirs:  # a symlink loop or a second way to the same folder
                dirnames[:] = []
                continue
            seen_dirs.add(key)
            dirnames.sort()
            for name in filenames:
                if not name.endswith(".jsonl"):
                    continue
                full = os.path.abspath(os.path.join(dirpath, name))
                try:
                    mtime = os.stat(full).st_mtime_ns
                except OSError:
                    mtime = 0
                found.append((mtime, full))
    found.sort(key=lambda item: (-item[0], item[1]))
    return [path for _, path in found]
