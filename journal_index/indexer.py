"""Incremental indexing of journals from their stored byte cursors.

Per journal: stat; skip when size, mtime and ctime are unchanged and it is the same file
(device and inode); otherwise check that what was indexed is still there (the same file, size ≥
cursor, same header line, same bytes just before the cursor, no new ctime on an old size and
mtime) and start over from byte 0 when it is not. Then read blocks of complete lines (about 512 KiB)
and commit each block's rows, FTS terms and the new cursor in one short ``BEGIN IMMEDIATE``
transaction, so a crash at any moment leaves a state from which the next pass yields exactly
the from-scratch index.

Parsing and redaction (:mod:`journal_index.extract`) are a pure function of a block, kept
apart from the writes: a large pass runs them in worker processes (:func:`index_files`), this
process only checks journals and writes. FTS merges and WAL checkpoints run between write
transactions, never inside one (:mod:`journal_index.store`).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from journal_index import giant_line
from journal_index.extract import LINK_WINDOW, CallSite, Extracted, Extractor, find_call
from journal_index.formats import FORMATS, Header, JournalFormat, Root, choose_format, open_journal
from journal_index.store import Store, stored_id, stored_kind

CHUNK_BYTES = 512 * 1024
ANCHOR_BYTES = 4096
# A format reads its session from the first complete lines within this many bytes (Claude Code
# has no header line: the cwd is on its first conversational line).
HEAD_BYTES = 256 * 1024
LOOKBACK_FIRST_BYTES = 64 * 1024
# One write transaction holds at most this much text (or one block), or this many rows or
# blocks, of one journal or of several small ones: fewer FTS segments to merge, and each
# transaction's CPU time about 20 ms (about 30 Mchar/s into the two FTS tables), so it stays
# under 50 ms even while other processes compete for the cores.
GROUP_CHARS = 512 * 1024
GROUP_ROWS = 4000
GROUP_ITEMS = 256
# Parsing and redaction run in worker processes when a pass has at least this much to read and
# the machine more than one core (the writer's SQLite work overlaps them); below it, starting
# the workers would cost more than they save. JOURNAL_INDEX_WORKERS sets their number (0: none).
WORKERS_MIN_BYTES = 16 << 20
WORKERS_ENV = "JOURNAL_INDEX_WORKERS"
# Two workers keep one writer busy (each parses ~30 MB/s of journal, the writer takes ~60), and
# each holds ~70 MB by the end of a long pass (mostly RE2's DFA cache), so the whole stays
# under 200 MB.
MAX_WORKERS = 2
# Journals handed to each worker at a time.
JOURNALS_PER_WORKER = 2
# A pass that indexed this much, and at least 1/COMPACT_GROWTH of everything indexed, ends by
# merging the FTS tables to one segment each and giving free pages back (Store.compact): the
# smallest index, the fastest to query, and the whole rewrite is paid once per growth by 1/4.
COMPACT_MIN_BYTES = 16 << 20
COMPACT_GROWTH = 4

_INSERT_ENTRY = (
    "INSERT INTO entries(rowid, file_id, kind_role, names, id_num, id_text, ts, tool, chars, offset, "
    "length, tokens_before, link_offset, link_length) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_TERMS = "INSERT INTO entries_fts(rowid, body) VALUES(?, ?)"
_INSERT_BULK = "INSERT INTO entries_bulk(rowid, body) VALUES(?, ?)"


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
    ignored: bool = False  # no registered format recognizes it
    error: str | None = None


@dataclass
class IndexReport:
    files: int = 0
    entries: int = 0
    bytes: int = 0
    seconds: float = 0.0
    skipped_lines: int = 0
    reset_files: int = 0
    ignored_files: int = 0  # not a journal of any registered format
    errors: list[str] = field(default_factory=list)

    def add(self, result: FileResult) -> None:
        self.files += 1
        self.ignored_files += int(result.ignored)
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
            "ignoredFiles": self.ignored_files,
            "errors": self.errors,
        }


@dataclass
class Block:
    """Complete lines to index, and where the cursor stands once they are committed."""

    data: bytes
    start: int  # file offset of data[0]
    end: int  # the cursor after this block
    skipped: int  # lines dropped just before this block (none any more: a giant is a block)
    anchor: bytes  # the ANCHOR_BYTES just before ``end``
    final: bool = False  # the last block of this pass: record size and mtime
    # A block of one line too long to hold whole (``data`` is empty): its head and tail. The
    # writer parses it (a worker's parse of the block's data is empty).
    giant: giant_line.Giant | None = None


def _read_first_line(handle: BinaryIO) -> bytes | None:
    """The header line (a giant's first bytes), or None while it is still being written (no
    newline yet)."""
    parts: list[bytes] = []
    total, position = 0, 0
    line_limit = giant_line.limit()
    while total <= line_limit:
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
    return b"".join(parts)[:line_limit]


def _read_head(fd: int, first_line: bytes) -> bytes:
    """The complete lines within the first HEAD_BYTES (at least the first line; a giant first
    line as the JSON its start makes, so a journal opening with one is still recognized)."""
    if len(first_line) >= giant_line.limit():
        return giant_line.condensed_start(first_line) or first_line
    data = os.pread(fd, HEAD_BYTES, 0)
    cut = data.rfind(b"\n")
    return data[:cut] if cut >= len(first_line) else first_line


def _bytes_before(fd: int, cursor: int) -> bytes:
    size = min(cursor, ANCHOR_BYTES)
    return os.pread(fd, size, cursor - size) if size else b""


def _tail(window: bytes, data: bytes) -> bytes:
    """The ANCHOR_BYTES that end with ``data``, reaching back into ``window`` if needed."""
    if len(data) >= ANCHOR_BYTES:
        return data[-ANCHOR_BYTES:]
    return (window + data)[-ANCHOR_BYTES:]


def lookback(fd: int, fmt: JournalFormat, pass_start: int, call_id: str, result_offset: int) -> CallSite | None:
    """The call a result answers, in the bytes before the pass (within LINK_WINDOW)."""
    low = max(0, result_offset - LINK_WINDOW)
    if pass_start <= low:
        return None
    needle = b'"' + call_id.encode() + b'"'
    for size in (LOOKBACK_FIRST_BYTES, pass_start - low):
        start = max(low, pass_start - size)
        data = os.pread(fd, pass_start - start, start)
        at = data.rfind(needle)
        while at >= 0:
            line_start = data.rfind(b"\n", 0, at) + 1
            if line_start == 0 and start > 0:
                break  # the line begins before what was read: look further back, or give up
            line_end = data.find(b"\n", at)
            line_end = line_end if line_end >= 0 else len(data)
            # A giant line's calls are never linked (a pass does not remember them either).
            site = (find_call(fmt, call_id, data[line_start:line_end], start + line_start)
                    if line_end - line_start <= giant_line.limit() else None)
            if site is not None:
                return site
            at = data.rfind(needle, 0, line_start)
        if start == low:
            break
    return None


def read_blocks(fd: int, cursor: int) -> Iterator[Block]:
    """Blocks of complete lines from ``cursor`` on; the last one is marked final.

    A line longer than :func:`giant_line.limit` is a block of its own holding only its head
    and tail, kept as its bytes arrive (never the whole line in memory); the cursor stays at
    its start until its newline is seen, so a line still being written is never lost.
    """
    line_limit = giant_line.limit()
    window = _bytes_before(fd, cursor)  # the bytes just before buffer_start
    buffer, buffer_start, position = b"", cursor, cursor
    giant: giant_line.GiantReader | None = None  # the long line being read
    pending: Block | None = None
    while chunk := os.pread(fd, CHUNK_BYTES, position):
        position += len(chunk)
        ready: list[Block] = []
        if giant is not None:
            newline = chunk.find(b"\n")
            piece = chunk if newline < 0 else chunk[:newline + 1]
            window = _tail(window, piece)
            if newline < 0:
                giant.add(piece)
                continue
            giant.add(piece[:-1])
            ready.append(Block(b"", buffer_start, buffer_start + giant.length + 1, 0, window, giant=giant.done()))
            buffer_start += giant.length + 1
            giant = None
            chunk = chunk[newline + 1:]
        buffer += chunk
        cut = buffer.rfind(b"\n") + 1
        if cut:
            data, buffer = buffer[:cut], buffer[cut:]
            for start, lines, long_line in _runs(data, buffer_start, line_limit):
                window = _tail(window, lines)
                if long_line:
                    ready.append(Block(b"", start, start + len(lines), 0, window,
                                       giant=giant_line.Giant.of(start, lines[:-1])))
                else:
                    ready.append(Block(lines, start, start + len(lines), 0, window))
            buffer_start += cut
        if len(buffer) > line_limit:
            window = _tail(window, buffer)
            giant = giant_line.GiantReader(buffer_start, buffer)
            buffer = b""
        for block in ready:
            if pending is not None:
                yield pending
            pending = block
    if giant is not None:  # the long line is unfinished: keep the cursor before it, look again later
        if pending is not None:
            yield pending
        return
    if pending is not None:
        pending.final = True
        yield pending
        return
    yield Block(b"", buffer_start, buffer_start, 0, window, final=True)


def _runs(data: bytes, start: int, line_limit: int) -> Iterator[tuple[int, bytes, bool]]:
    """(offset, bytes, long) for runs of complete lines: each line longer than ``line_limit``
    alone (long), the lines between together. Only data longer than the limit can hold one."""
    if len(data) <= line_limit:
        yield start, data, False
        return
    run_start = at = 0
    while at < len(data):
        newline = data.find(b"\n", at)
        if newline - at > line_limit:
            if at > run_start:
                yield start + run_start, data[run_start:at], False
            yield start + at, data[at:newline + 1], True
            run_start = newline + 1
        at = newline + 1
    if run_start < len(data):
        yield start + run_start, data[run_start:], False


def forget_file(store: Store, file_id: int) -> None:
    """Drop a journal's rows and terms (inside the caller's transaction)."""
    for table in ("entries_fts", "entries_bulk"):
        store.conn.execute(f"DELETE FROM {table} WHERE rowid IN (SELECT rowid FROM entries WHERE file_id = ?)",
                           (file_id,))
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

    def __init__(self, store: Store, path: str, roots: list[Root], rebuild: bool = False) -> None:
        self.store = store
        self.path = path
        self.roots = roots
        self.fmt: JournalFormat | None = None
        self.extractor: Extractor | None = None
        self.rebuild = rebuild
        self.result = FileResult(path)
        self.file_id = 0
        self.cursor = 0
        self.handle: BinaryIO | None = None
        self.stat: os.stat_result | None = None
        self.pending_cursor = 0  # the cursor as written in the open transaction
        self.applied: list[tuple[int, int]] = []  # (rows, skipped) written in the open transaction
        self.pass_start = 0  # the cursor this pass started from
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
            "SELECT id, cursor, size, mtime_ns, head_hash, anchor_hash, format, cwd, dev, ino, ctime_ns "
            "FROM files WHERE path = ?",
            (self.path,),
        )
        # Another file now has this path (renamed over it: a new inode), or the same size and
        # mtime came back with a new ctime (rewritten in place, its mtime put back): what was
        # indexed is not trusted, whatever its head and anchor say. A row from before these were
        # stored (NULL) is checked as for a change, and gets them recorded.
        replaced = restamped = False
        if known is not None:
            replaced = known[9] is not None and (known[8], known[9]) != (st.st_dev, st.st_ino)
            same_stamp = (known[2], known[3]) == (st.st_size, st.st_mtime_ns)
            restamped = same_stamp and known[10] is not None and known[10] != st.st_ctime_ns
            if not self.rebuild and same_stamp and not replaced and known[10] == st.st_ctime_ns:
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
        head = _read_head(handle.fileno(), header_line)
        if known is not None and head_hash == known[4] and not replaced:
            fmt = FORMATS.get(known[6])
            if fmt is None:
                self.close()
                self.result.error = f"journal format {known[6]!r} is not known to this version"
                return False
        else:
            # New, replaced, or rewritten from its first line on: what it is now decides (as from scratch).
            fmt = choose_format(self.path, head, self.roots)
            if fmt is None:
                self.close()
                self.result.ignored = True
                if known is not None:
                    remove_file(self.store, self.path)
                return False
        self.fmt = fmt
        self.extractor = Extractor(fmt, self._lookback)
        header = fmt.read_header(self.path, head)
        if known is None:
            # Registered by the first commit of its rows, not in a transaction of its own:
            # a first pass over thousands of journals would otherwise pay a commit for each.
            self.unregistered = (header, head_hash)
        else:
            self.file_id, self.cursor = known[0], known[1]
            self.pending_cursor = self.cursor
            anchor = fingerprint(_bytes_before(handle.fileno(), self.cursor))
            if (self.rebuild or replaced or restamped or st.st_size < self.cursor or head_hash != known[4]
                    or anchor != known[5]):
                self._reset(header, head_hash)
            elif known[7] is None and header is not None and header.cwd is not None:
                with self.store.write():  # the session's folder showed up in a later line
                    self._write_header(header, head_hash)
        self.pass_start = self.cursor
        return True

    def _lookback(self, call_id: str, result_offset: int) -> CallSite | None:
        if self.handle is None or self.fmt is None:
            return None
        return lookback(self.handle.fileno(), self.fmt, self.pass_start, call_id, result_offset)

    def extract(self, block: Block) -> Extracted:
        assert self.extractor is not None
        return self.extractor.block(block.data, block.start)

    def extract_giant(self, giant: giant_line.Giant) -> Extracted:
        """The rows and terms of a line too long to hold whole, from its condensed form; a
        result finds its call in the bytes before it, as a pass starting there would."""
        line = giant_line.condensed_line(giant)
        if line is None or self.fmt is None or self.handle is None:
            return Extracted(skipped=1)
        fd, fmt = self.handle.fileno(), self.fmt
        extractor = Extractor(fmt, lambda call_id, at: lookback(fd, fmt, giant.offset, call_id, at))
        return extractor.line(line, giant.offset, giant.length)

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None

    def _register(self) -> bool:
        """Add the journal to ``files`` (inside the caller's transaction). False if another
        process registered it meanwhile and has already indexed some of it."""
        assert self.unregistered is not None
        header, head_hash = self.unregistered
        assert self.fmt is not None
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
            "UPDATE files SET format = coalesce(?, format), version = ?, session_id = ?, cwd = ?, started = ?, "
            "parent_session = ?, head_hash = ?, name = coalesce(name, ?) WHERE id = ?",
            (self.fmt.NAME if self.fmt else None, h.version, h.session_id, h.cwd, h.started, h.parent_session,
             head_hash, h.name, self.file_id),
        )

    def _reset(self, header: Header | None, head_hash: str) -> None:
        """The journal was rewritten: drop everything indexed from it and start from byte 0."""
        with self.store.write():
            forget_file(self.store, self.file_id)
            self.store.conn.execute(
                "UPDATE files SET cursor = 0, anchor_hash = ?, entries = 0, skipped = 0, name = NULL, "
                "last_ts = NULL, size = NULL, mtime_ns = NULL, ctime_ns = NULL, dev = NULL, ino = NULL, "
                "context_from = NULL WHERE id = ?",
                (fingerprint(b""), self.file_id),
            )
            self._write_header(header, head_hash)
        self.cursor = self.pending_cursor = 0
        self.result.reset = True
        if self.fmt is not None:
            self.extractor = Extractor(self.fmt, self._lookback)

    def blocks(self) -> Iterator[Block]:
        assert self.handle is not None
        return read_blocks(self.handle.fileno(), self.cursor)

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
            conn.executemany(_INSERT_ENTRY, [
                (base + i, self.file_id, *stored_kind(row[2], row[3]), *stored_id(row[0], row[6]), row[1], *row[4:])
                for i, row in enumerate(extracted.rows)])
            conn.executemany(_INSERT_TERMS, [(base + i, text) for i, text in extracted.terms])
            conn.executemany(_INSERT_BULK, [(base + i, text) for i, text in extracted.bulk])
        if extracted.compactions:
            self._mark_context(extracted.compactions[-1])
        skipped = extracted.skipped + block.skipped
        assert self.stat is not None
        # dev and ino: the file the rows up to the cursor came from (a new inode starts over).
        conn.execute(
            "UPDATE files SET cursor = ?, anchor_hash = ?, entries = entries + ?, skipped = skipped + ?, "
            "name = coalesce(?, name), last_ts = max(coalesce(last_ts, 0), coalesce(?, 0)), "
            "indexed_at = ?, dev = ?, ino = ? WHERE id = ?",
            (block.end, fingerprint(block.anchor), len(extracted.rows), skipped, extracted.name,
             extracted.last_ts, int(time.time() * 1000), self.stat.st_dev, self.stat.st_ino, self.file_id),
        )
        if block.final:
            conn.execute("UPDATE files SET size = ?, mtime_ns = ?, ctime_ns = ? WHERE id = ?",
                         (self.stat.st_size, self.stat.st_mtime_ns, self.stat.st_ctime_ns, self.file_id))
        self.applied.append((len(extracted.rows), skipped))
        self.pending_cursor = block.end
        return True

    def _mark_context(self, compaction: tuple[int, str | None]) -> None:
        """Where the agent's context starts after the latest compaction: at its first kept entry
        (an earlier line of this journal), else at the compaction itself."""
        offset, kept = compaction
        if kept is not None:
            found = self.store.value("SELECT min(offset) FROM entries WHERE file_id = ? AND entry_id = ?",
                                     (self.file_id, kept))
            if found is not None and found < offset:
                offset = found
        self.store.conn.execute("UPDATE files SET context_from = ? WHERE id = ?", (offset, self.file_id))

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
        if block.giant is not None:  # parsed here, outside any transaction, whoever read it
            extracted = journal.extract_giant(block.giant)
        chars = sum(len(text) for _, text in extracted.terms) + sum(len(text) for _, text in extracted.bulk)
        if self.items and self.chars + chars > GROUP_CHARS:
            self.flush()  # a transaction holds at most GROUP_CHARS of text, or one block
        self.items.append((journal, block, extracted))
        self.chars += chars
        self.rows += len(extracted.rows)
        if self.chars >= GROUP_CHARS or self.rows >= GROUP_ROWS or len(self.items) >= GROUP_ITEMS:
            self.flush()

    def finish(self, journal: _Journal) -> None:
        """The journal has no more blocks; it is reported once its last items are committed."""
        self.finished.append(journal)
        if not any(item[0] is journal for item in self.items):
            self._report()

    def flush(self) -> None:
        items, self.items, chars, self.chars, self.rows = self.items, [], self.chars, 0, 0
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
            if chars:
                self.store.wrote_terms(chars)
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


def _start_journal(store: Store, path: str | os.PathLike[str], roots: list[Root],
                   rebuild: bool) -> tuple[_Journal, bool]:
    journal = _Journal(store, os.path.abspath(os.fspath(path)), roots, rebuild)
    try:
        return journal, journal.prepare()
    except OSError as exc:
        journal.close()
        journal.result.error = exc.strerror or str(exc)
        return journal, False


def index_file(store: Store, path: str | os.PathLike[str], roots: Iterable[Root | str | os.PathLike[str]] = (),
               rebuild: bool = False) -> FileResult:
    """Bring the index of one journal up to date. Never raises for a bad or vanished file.

    A journal already indexed keeps the format stored for it; a new one takes the format of
    the root it lies in (``roots``), else the format that recognizes it. ``rebuild`` drops
    what was indexed from the journal and indexes it from byte 0: a read found a line that no
    longer carries its entry id, so nothing indexed from it is trusted (a rewrite can keep the
    size, the mtime, the header and the tail).
    """
    journal, ready = _start_journal(store, path, as_roots(roots), rebuild)
    if not ready:
        return journal.result
    writer = _Writer(store)
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

    def done(journal: _Journal) -> None:
        report.add(journal.result)
        if progress is not None:
            progress(journal.result)

    writer = _Writer(store, done)
    listed = [os.fspath(p) for p in paths]
    rooted = as_roots(roots)
    count = choose_workers(store, listed) if workers is None else workers
    stop = stop or _never
    try:
        if count > 0:
            from journal_index.index_workers import index_in_workers  # its imports cost a search ~15 ms

            index_in_workers(store, listed, rooted, writer, count, stop)
        else:
            _index_serially(store, listed, rooted, writer, stop)
        writer.flush()
    finally:
        for journal in writer.finished:
            journal.close()
    if report.bytes >= COMPACT_MIN_BYTES and report.bytes * COMPACT_GROWTH >= int(
            store.value("SELECT sum(cursor) FROM files", default=0)):
        store.compact()
    report.seconds = time.perf_counter() - started
    return report


def _never() -> bool:
    return False


def _index_serially(store: Store, paths: list[str], roots: list[Root], writer: _Writer,
                    stop: Callable[[], bool] = _never) -> None:
    for path in paths:
        if stop():
            return
        journal, ready = _start_journal(store, path, roots, False)
        if ready:
            try:
                for block in journal.blocks():
                    writer.add(journal, block, journal.extract(block))
                    if journal.conflicted or stop():
                        break
            except OSError as exc:
                journal.result.error = exc.strerror or str(exc)
        writer.finish(journal)


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


def pending_bytes(store: Store, paths: list[str]) -> Iterator[int]:
    """For each path, about how many bytes a pass would read: none when size and mtime are as
    indexed, from the cursor when it grew, all of it when it shrank or is another file now
    (0 for a vanished file)."""
    known = {row[0]: row[1:] for row in store.rows("SELECT path, cursor, size, mtime_ns, dev, ino FROM files")}
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            yield 0
            continue
        cursor, size, mtime_ns, dev, ino = known.get(os.path.abspath(path), (0, None, None, None, None))
        if ino is not None and (dev, ino) != (st.st_dev, st.st_ino):
            yield st.st_size
        elif size == st.st_size and mtime_ns == st.st_mtime_ns:
            yield 0
        else:
            yield st.st_size - cursor if st.st_size >= cursor else st.st_size


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
    rooted = [r for r in as_roots(roots) if r.path.is_dir()]
    real_roots = [os.path.realpath(r.path) for r in rooted]
    by_file: dict[tuple[int, int], tuple[int, str]] = {}
    seen_dirs: set[tuple[int, int]] = set()
    for root in rooted:
        for dirpath, dirnames, filenames in os.walk(root.path, followlinks=True):
            real_dir = os.path.realpath(dirpath)
            try:
                st = os.stat(dirpath)
            except OSError:
                dirnames[:] = []
                continue
            key = (st.st_dev, st.st_ino)
            if key in seen_dirs or not _within(real_dir, real_roots):
                dirnames[:] = []  # a loop, a second way to one folder, or a link out of the roots
                continue
            seen_dirs.add(key)
            dirnames.sort()
            for name in sorted(filenames):
                if not name.endswith(".jsonl"):
                    continue
                full = os.path.abspath(os.path.join(dirpath, name))
                real = os.path.realpath(full)
                if not _within(real, real_roots):
                    continue
                try:
                    fst = os.stat(full)
                except OSError:
                    continue
                file_key = (fst.st_dev, fst.st_ino)
                kept = by_file.get(file_key)
                if kept is None or (full == real and kept[1] != real):
                    by_file[file_key] = (fst.st_mtime_ns, full)
    found = sorted(by_file.values(), key=lambda item: (-item[0], item[1]))
    return [path for _, path in found]
