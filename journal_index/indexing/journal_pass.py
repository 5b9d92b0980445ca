"""One pass over one journal, and the writer that commits the passes of many.

Per journal: stat; skip when size, mtime and ctime are unchanged and it is the same file
(device and inode); otherwise check that what was indexed is still there (the same file, size ≥
cursor, same header line, same bytes just before the cursor, no new ctime on an old size and
mtime) and start over from byte 0 when it is not. Then read blocks of complete lines (about 512 KiB)
and commit each block's rows, FTS terms and the new cursor in one short ``BEGIN IMMEDIATE``
transaction, so a crash at any moment leaves a state from which the next pass yields exactly
the from-scratch index.

The serial pass (:func:`index_serially`) and the worker pass (:mod:`journal_index.indexing.index_workers`)
both drive :class:`Journal` and :class:`Writer`; parsing and redaction
(:mod:`journal_index.indexing.extract`) are a pure function of a block, kept apart from the writes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from journal_index.data import index_sql
from journal_index.data.store import Store
from journal_index.formats import FORMATS, Header, JournalFormat, Root, choose_format, open_journal
from journal_index.indexing.extract import Extracted, Extractor
from journal_index.indexing.journal_blocks import (
    Block,
    BytesBefore,
    bytes_before,
    fingerprint,
    read_blocks,
    read_first_line,
    read_head,
)
from journal_index.indexing.turns import TurnLinks
from journal_index.text import giant_line

# One write transaction holds at most this much text (or one block), or this many rows or
# blocks, of one journal or of several small ones: fewer FTS segments to merge, and each
# transaction's CPU time about 20 ms (about 30 Mchar/s into the two FTS tables), so it stays
# under 50 ms even while other processes compete for the cores.
GROUP_CHARS = 512 * 1024
GROUP_ROWS = 4000
GROUP_ITEMS = 256



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


class Journal:
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
        self.turns = TurnLinks(store)  # each question's reply, kept current block by block

    def prepare(self) -> bool:
        """Stat, skip, register or reset. True when there may be new lines to read."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self.result.removed = index_sql.remove_file(self.store, self.path)
            return False
        known = index_sql.known_file(self.store, self.path)
        # Another file now has this path (renamed over it: a new inode), or the same size and
        # mtime came back with a new ctime (rewritten in place, its mtime put back): what was
        # indexed is not trusted, whatever its head and anchor say. A row from before these were
        # stored (NULL) is checked as for a change, and gets them recorded.
        replaced = restamped = False
        if known is not None:
            replaced = known.ino is not None and (known.dev, known.ino) != (st.st_dev, st.st_ino)
            same_stamp = (known.size, known.mtime_ns) == (st.st_size, st.st_mtime_ns)
            restamped = same_stamp and known.ctime_ns is not None and known.ctime_ns != st.st_ctime_ns
            if not self.rebuild and same_stamp and not replaced and known.ctime_ns == st.st_ctime_ns:
                self.result.unchanged = True
                return False
        handle = open_journal(self.path)  # kept open across blocks, closed by close()
        self.handle, self.stat = handle, st
        header_line = read_first_line(handle)
        if header_line is None:
            self.close()
            if known is not None and known.cursor > 0:
                # Cut back to (part of) its header line: nothing indexed from it is there any more.
                self.file_id = known.id
                self._reset(None, fingerprint(b""))
            return False  # the header is still being written
        head_hash = fingerprint(header_line)
        head = read_head(handle.fileno(), header_line)
        if known is not None and head_hash == known.head_hash and not replaced:
            fmt = FORMATS.get(known.format)
            if fmt is None:
                self.close()
                self.result.error = f"journal format {known.format!r} is not known to this version"
                return False
        else:
            # New, replaced, or rewritten from its first line on: what it is now decides (as from scratch).
            fmt = choose_format(self.path, head, self.roots)
            if fmt is None:
                self.close()
                self.result.ignored = True
                if known is not None:
                    index_sql.remove_file(self.store, self.path)
                return False
        self.fmt = fmt
        header = fmt.read_header(self.path, head)
        if known is None:
            # Registered by the first commit of its rows, not in a transaction of its own:
            # a first pass over thousands of journals would otherwise pay a commit for each.
            self.unregistered = (header, head_hash)
            self.turns.start_over()
        else:
            self.file_id, self.cursor = known.id, known.cursor
            self.pending_cursor = self.cursor
            anchor = fingerprint(bytes_before(handle.fileno(), self.cursor))
            if (self.rebuild or replaced or restamped or st.st_size < self.cursor or head_hash != known.head_hash
                    or anchor != known.anchor_hash):
                self._reset(header, head_hash)
            elif known.cwd is None and header is not None and header.cwd is not None:
                with self.store.write():  # the session's folder showed up in a later line
                    self._write_header(header, head_hash)
        self.pass_start = self.cursor
        # What the pass does not see (a result's call, a polled command's start) is looked for
        # in the bytes before where it starts, once the journal is known not to be rewritten.
        self.extractor = Extractor(fmt, BytesBefore(handle.fileno(), fmt, self.pass_start))
        return True

    def extract(self, block: Block) -> Extracted:
        assert self.extractor is not None
        return self.extractor.block(block.data, block.start)

    def extract_giant(self, giant: giant_line.Giant) -> Extracted:
        """The rows and terms of a line too long to hold whole, from its condensed form; a
        result finds its call in the bytes before it, as a pass starting there would."""
        line = giant_line.condensed_line(giant)
        if line is None or self.fmt is None or self.handle is None:
            return Extracted(skipped=1)
        extractor = Extractor(self.fmt, BytesBefore(self.handle.fileno(), self.fmt, giant.offset))
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
        file_id, cursor = index_sql.register_file(self.store, self.path, self.fmt.NAME, fingerprint(b""))
        if cursor != 0:
            return False
        self.file_id = file_id
        self._write_header(header, head_hash)
        return True

    def _write_header(self, header: Header | None, head_hash: str) -> None:
        index_sql.write_header(self.store, self.file_id, self.fmt.NAME if self.fmt else None,
                               header or Header(None, None, None, 1), head_hash)

    def _reset(self, header: Header | None, head_hash: str) -> None:
        """The journal was rewritten: drop everything indexed from it and start from byte 0."""
        with self.store.write():
            index_sql.reset_file(self.store, self.file_id, fingerprint(b""))
            self._write_header(header, head_hash)
        self.cursor = self.pending_cursor = 0
        self.turns.start_over()
        self.result.reset = True

    def blocks(self) -> Iterator[Block]:
        assert self.handle is not None
        return read_blocks(self.handle.fileno(), self.cursor)

    def apply(self, block: Block, extracted: Extracted) -> bool:
        """Write a block's rows, terms and new cursor inside the caller's transaction.

        False (and nothing written) when another process moved this journal's cursor.
        """
        if block.end == self.pending_cursor and not extracted.rows and not block.final:
            return True
        if self.unregistered is not None:
            if not self._register():
                return False
            self.registering, self.unregistered = self.unregistered, None
        if index_sql.file_cursor(self.store, self.file_id) != self.pending_cursor:
            return False
        opened = None
        if extracted.rows:
            first = index_sql.next_rowid(self.store)
            replies, opened = self.turns.link(self.file_id, extracted.rows, first)
            index_sql.insert_entries(self.store, self.file_id, first, extracted.rows, replies, extracted.terms,
                                     extracted.bulk)
        if extracted.compactions:
            self._mark_context(extracted.compactions[-1])
        skipped = extracted.skipped + block.skipped
        assert self.stat is not None
        # dev and ino: the file the rows up to the cursor came from (a new inode starts over).
        index_sql.advance(self.store, self.file_id, block.end, fingerprint(block.anchor), len(extracted.rows), skipped,
                          extracted.name, extracted.last_ts, int(time.time() * 1000), self.stat.st_dev,
                          self.stat.st_ino, opened)
        if block.final:
            index_sql.record_stat(self.store, self.file_id, self.stat.st_size, self.stat.st_mtime_ns,
                                  self.stat.st_ctime_ns)
        self.applied.append((len(extracted.rows), skipped))
        self.pending_cursor = block.end
        return True

    def _mark_context(self, compaction: tuple[int, str | None]) -> None:
        """Where the agent's context starts after the latest compaction: at its first kept entry
        (an earlier line of this journal), else at the compaction itself."""
        offset, kept = compaction
        if kept is not None:
            found = index_sql.first_offset_of(self.store, self.file_id, kept)
            if found is not None and found < offset:
                offset = found
        index_sql.set_context_from(self.store, self.file_id, offset)

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
            self.turns.forget()  # the links written were rolled back with the rows
            if self.registering is not None:  # the row that registered it was rolled back too
                self.unregistered, self.file_id = self.registering, 0
                self.turns.start_over()
        self.registering = None
        self.applied.clear()


class Writer:
    """Commits blocks, of one journal or many, in transactions of about GROUP_CHARS of text.

    Every commit writes an FTS segment that later merges cost again, so a first pass over
    thousands of small journals groups them; a transaction still stays in the tens of ms.
    """

    def __init__(self, store: Store, done: Callable[[Journal], None] | None = None) -> None:
        self.store = store
        self.done = done
        self.items: list[tuple[Journal, Block, Extracted]] = []
        self.finished: list[Journal] = []
        self.chars = 0
        self.rows = 0

    def add(self, journal: Journal, block: Block, extracted: Extracted) -> None:
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

    def finish(self, journal: Journal) -> None:
        """The journal has no more blocks; it is reported once its last items are committed."""
        self.finished.append(journal)
        if not any(item[0] is journal for item in self.items):
            self._report()

    def flush(self) -> None:
        items, self.items, chars, self.chars, self.rows = self.items, [], self.chars, 0, 0
        touched: dict[int, Journal] = {}
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


def start_journal(store: Store, path: str | os.PathLike[str], roots: list[Root],
                   rebuild: bool) -> tuple[Journal, bool]:
    journal = Journal(store, os.path.abspath(os.fspath(path)), roots, rebuild)
    try:
        return journal, journal.prepare()
    except OSError as exc:
        journal.close()
        journal.result.error = exc.strerror or str(exc)
        return journal, False


def never() -> bool:
    return False


def index_serially(store: Store, paths: list[str], roots: list[Root], writer: Writer,
                    stop: Callable[[], bool] = never) -> None:
    for path in paths:
        if stop():
            return
        journal, ready = start_journal(store, path, roots, False)
        if ready:
            try:
                for block in journal.blocks():
                    writer.add(journal, block, journal.extract(block))
                    if journal.conflicted or stop():
                        break
            except OSError as exc:
                journal.result.error = exc.strerror or str(exc)
        writer.finish(journal)
