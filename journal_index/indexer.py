"""Incremental indexing of one journal from its stored byte cursor.

Per file: stat; skip when size and mtime are unchanged; otherwise check that what was indexed
is still there (size ≥ cursor, same header line, same bytes just before the cursor) and start
over from byte 0 when it is not. Then read complete lines in 1 MiB chunks and commit rows, FTS
terms and the new cursor together in short ``BEGIN IMMEDIATE`` transactions, so a crash at any
moment leaves a state from which the next pass yields exactly the from-scratch index.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from journal_index.formats import Entry, Header, JournalFormat, SessionName, Skip, get_format
from journal_index.redact import redact
from journal_index.store import Store
from journal_index.text_forms import index_form, indexed_part

CHUNK_BYTES = 1 << 20
ANCHOR_BYTES = 4096
# A batch is committed when it holds this many rows or this much text; each transaction
# then stays within a few tens of milliseconds (measured by the benchmark), so readers and
# the agent's tool never wait long, while FTS segments stay few.
BATCH_ROWS = 2000
BATCH_CHARS = 2 * 1024 * 1024
# A line longer than this is skipped without being held in memory whole.
MAX_LINE_BYTES = 64 << 20

_INSERT_ENTRY = (
    "INSERT INTO entries(rowid, file_id, entry_id, parent_id, ts, kind, role, tool, chars, offset, "
    "length, tokens_before) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_TERMS = "INSERT INTO entries_fts(rowid, body) VALUES(?, ?)"


def fingerprint(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=12).hexdigest()


class CursorMoved(Exception):
    """Another process advanced or reset this file's cursor while we were reading it."""


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
class _Batch:
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    terms: list[tuple[int, str]] = field(default_factory=list)  # (row index, text) before rowids
    chars: int = 0
    skipped: int = 0
    name: str | None = None
    last_ts: int | None = None

    def full(self) -> bool:
        return len(self.rows) >= BATCH_ROWS or self.chars >= BATCH_CHARS


def _read_first_line(handle: Any) -> bytes | None:
    """The header line, or None while it is still being written (no newline yet)."""
    handle.seek(0)
    parts: list[bytes] = []
    total = 0
    while total <= MAX_LINE_BYTES:
        chunk = handle.read(64 * 1024)
        if not chunk:
            return None
        newline = chunk.find(b"\n")
        if newline >= 0:
            parts.append(chunk[:newline])
            return b"".join(parts)
        parts.append(chunk)
        total += len(chunk)
    return b"".join(parts)[:MAX_LINE_BYTES]


def _bytes_before(fd: int, cursor: int) -> bytes:
    size = min(cursor, ANCHOR_BYTES)
    return os.pread(fd, size, cursor - size) if size else b""


def forget_file(store: Store, file_id: int) -> None:
    """Drop a file's rows and terms (the file is gone, or it is being reindexed)."""
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


class _FileIndexer:
    """One pass over one journal. Kept as an object so the loop's state has names."""

    def __init__(self, store: Store, path: str, fmt: JournalFormat, rebuild: bool = False) -> None:
        self.store = store
        self.rebuild = rebuild
        self.path = path
        self.fmt = fmt
        self.result = FileResult(path)
        self.file_id = 0
        self.cursor = 0

    def run(self) -> FileResult:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self.result.removed = remove_file(self.store, self.path)
            return self.result
        known = self.store.one(
            "SELECT id, cursor, size, mtime_ns, head_hash, anchor_hash FROM files WHERE path = ?",
            (self.path,),
        )
        if not self.rebuild and known is not None and known[2] == st.st_size and known[3] == st.st_mtime_ns:
            self.result.unchanged = True
            return self.result
        with open(self.path, "rb") as handle:
            header_line = _read_first_line(handle)
            if header_line is None:
                return self.result  # the header is still being written
            head_hash = fingerprint(header_line)
            header = self.fmt.parse_header(header_line)
            if known is None:
                self._register(header, head_hash)
            else:
                self.file_id, self.cursor = known[0], known[1]
                anchor = fingerprint(_bytes_before(handle.fileno(), self.cursor))
                if self.rebuild or st.st_size < self.cursor or head_hash != known[4] or anchor != known[5]:
                    self._reset(header, head_hash)
            self._index_from_cursor(handle, st)
        return self.result

    def _register(self, header: Header | None, head_hash: str) -> None:
        with self.store.write():
            self.store.conn.execute(
                "INSERT INTO files(path, format, cursor, anchor_hash) VALUES(?, ?, 0, ?) "
                "ON CONFLICT(path) DO NOTHING",
                (self.path, self.fmt.NAME, fingerprint(b"")),
            )
            row = self.store.one("SELECT id, cursor FROM files WHERE path = ?", (self.path,))
            assert row is not None
            self.file_id, self.cursor = row
            if self.cursor == 0:
                self._write_header(header, head_hash)

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
        self.cursor = 0
        self.result.reset = True

    def _index_from_cursor(self, handle: Any, st: os.stat_result) -> None:
        fd = handle.fileno()
        window = _bytes_before(fd, self.cursor)  # the bytes just before the buffer's start
        buffer = b""
        buffer_start = self.cursor
        read_pos = self.cursor
        skipping_long_line = False
        batch = _Batch()
        try:
            while True:
                chunk = os.pread(fd, CHUNK_BYTES, read_pos)
                if not chunk:
                    break
                read_pos += len(chunk)
                buffer += chunk
                start = 0
                while True:
                    newline = buffer.find(b"\n", start)
                    if newline < 0:
                        break
                    if skipping_long_line:
                        skipping_long_line = False
                        batch.skipped += 1
                    else:
                        self._add_line(batch, buffer, start, newline, buffer_start + start)
                    start = newline + 1
                    if batch.full():
                        self._commit(batch, buffer_start + start, _tail(window, buffer, start), None)
                        batch = _Batch()
                if not skipping_long_line and len(buffer) - start > MAX_LINE_BYTES:
                    # Commit up to the long line, then drop its bytes as they come: the cursor
                    # stays at its start until its newline is seen, so nothing is lost.
                    self._commit(batch, buffer_start + start, _tail(window, buffer, start), None)
                    batch = _Batch()
                    skipping_long_line = True
                if skipping_long_line:
                    start = len(buffer)
                window = _tail(window, buffer, start)
                buffer_start += start
                buffer = buffer[start:]
            if not skipping_long_line:
                self._commit(batch, buffer_start, window, st, final=True)
        except CursorMoved:
            # Another process is indexing this journal; it owns the rest of this pass.
            return

    def _add_line(self, batch: _Batch, buffer: bytes, start: int, end: int, offset: int) -> None:
        line = buffer[start:end]
        if not line.strip():
            return
        parsed = self.fmt.parse_line(line, offset)
        if isinstance(parsed, Entry):
            text = redact(parsed.text) if parsed.text else ""
            batch.rows.append((
                self.file_id, parsed.entry_id, parsed.parent_id, parsed.ts, parsed.kind, parsed.role,
                parsed.tool, len(text), offset, end - start, parsed.tokens_before,
            ))
            if text:
                batch.terms.append((len(batch.rows) - 1, index_form(indexed_part(text))))
                batch.chars += len(text)
            if parsed.ts is not None and (batch.last_ts is None or parsed.ts > batch.last_ts):
                batch.last_ts = parsed.ts
        elif isinstance(parsed, SessionName):
            batch.name = redact(parsed.name)
        elif parsed is not Skip.NOT_INDEXED:
            batch.skipped += 1

    def _commit(self, batch: _Batch, new_cursor: int, anchor_bytes: bytes,
                st: os.stat_result | None, final: bool = False) -> None:
        if new_cursor == self.cursor and not batch.rows and not final:
            return
        conn = self.store.conn
        with self.store.write():
            stored = self.store.value("SELECT cursor FROM files WHERE id = ?", (self.file_id,))
            if stored != self.cursor:
                raise CursorMoved()
            base = int(self.store.value("SELECT max(rowid) FROM entries", default=0)) + 1
            if batch.rows:
                conn.executemany(_INSERT_ENTRY, [(base + i, *row) for i, row in enumerate(batch.rows)])
            if batch.terms:
                conn.executemany(_INSERT_TERMS, [(base + i, text) for i, text in batch.terms])
            conn.execute(
                "UPDATE files SET cursor = ?, anchor_hash = ?, entries = entries + ?, skipped = skipped + ?, "
                "name = coalesce(?, name), last_ts = max(coalesce(last_ts, 0), coalesce(?, 0)), "
                "indexed_at = ? WHERE id = ?",
                (new_cursor, fingerprint(anchor_bytes), len(batch.rows), batch.skipped, batch.name,
                 batch.last_ts, int(time.time() * 1000), self.file_id),
            )
            if final and st is not None:
                conn.execute("UPDATE files SET size = ?, mtime_ns = ? WHERE id = ?",
                             (st.st_size, st.st_mtime_ns, self.file_id))
        self.result.entries += len(batch.rows)
        self.result.skipped += batch.skipped
        self.result.bytes += new_cursor - self.cursor
        self.cursor = new_cursor


def _tail(window: bytes, buffer: bytes, end: int) -> bytes:
    """The ANCHOR_BYTES bytes just before ``buffer[end]``, reaching back into ``window``."""
    if end >= ANCHOR_BYTES:
        return buffer[end - ANCHOR_BYTES : end]
    return (window + buffer[:end])[-ANCHOR_BYTES:]


def index_file(store: Store, path: str | os.PathLike[str], fmt: str = "pi", rebuild: bool = False) -> FileResult:
    """Bring the index of one journal up to date. Never raises for a bad or vanished file.

    ``rebuild`` drops what was indexed from the journal and indexes it from byte 0: a read
    found a line that no longer carries its entry id, so nothing indexed from it is trusted
    (a rewrite can keep the size, the mtime, the header and the tail).
    """
    absolute = os.path.abspath(os.fspath(path))
    try:
        return _FileIndexer(store, absolute, get_format(fmt), rebuild).run()
    except OSError as exc:
        return FileResult(absolute, error=exc.strerror or str(exc))


def index_files(
    store: Store,
    paths: Iterable[str | os.PathLike[str]],
    progress: Callable[[FileResult], None] | None = None,
) -> IndexReport:
    report = IndexReport()
    started = time.perf_counter()
    for path in paths:
        result = index_file(store, path)
        report.add(result)
        if progress is not None:
            progress(result)
    report.seconds = time.perf_counter() - started
    return report


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
