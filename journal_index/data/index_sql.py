"""Every statement the index side runs: registering journals, writing their rows, terms and
cursors, forgetting them, and what a pass reads of ``files`` to decide what to read.

One of the three modules that hold SQL (with :mod:`journal_index.data.store`, the connection and
migrations, and :mod:`journal_index.data.read_sql`, the query side's reads). Statements here run
inside the caller's transaction unless they say otherwise; rows travel as named tuples.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from journal_index.data.store import Store, stored_id, stored_kind
from journal_index.formats import Header
from journal_index.indexing.extract import EntryRow

_INSERT_ENTRY = (
    "INSERT INTO entries(rowid, file_id, kind_role, names, id_num, id_text, ts, tool, chars, offset, "
    "length, tokens_before, link_offset, link_length, reply) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


class KnownFile(NamedTuple):
    """What the index recorded of a journal, to tell whether it changed."""

    id: int
    cursor: int
    size: int | None
    mtime_ns: int | None
    head_hash: str | None
    anchor_hash: str | None
    format: str
    cwd: str | None
    dev: int | None
    ino: int | None
    ctime_ns: int | None


class FileStamp(NamedTuple):
    """Enough of a journal's row to guess how much a pass would read, and to tell whether a pass
    would call it unchanged (journal_pass.prepare compares all of these but the cursor)."""

    cursor: int
    size: int | None
    mtime_ns: int | None
    dev: int | None
    ino: int | None
    ctime_ns: int | None = None


def known_file(store: Store, path: str) -> KnownFile | None:
    row = store.one(f"SELECT {', '.join(KnownFile._fields)} FROM files WHERE path = ?", (path,))
    return None if row is None else KnownFile(*row)


def file_stamps(store: Store) -> dict[str, FileStamp]:
    return {row[0]: FileStamp(*row[1:])
            for row in store.rows(f"SELECT path, {', '.join(FileStamp._fields)} FROM files")}


def known_paths(store: Store) -> list[str]:
    return [row[0] for row in store.rows("SELECT path FROM files ORDER BY path")]


def file_id_of(store: Store, path: str) -> int | None:
    value = store.value("SELECT id FROM files WHERE path = ?", (path,))
    return None if value is None else int(value)


def indexed_bytes(store: Store) -> int:
    """The sum of every journal's cursor: how much journal the index holds."""
    return int(store.value("SELECT sum(cursor) FROM files", default=0) or 0)


def register_file(store: Store, path: str, format_name: str, empty_anchor: str) -> tuple[int, int]:
    """Add a journal (unless another process just did); its (id, cursor) as it now stands."""
    store.conn.execute("INSERT INTO files(path, format, cursor, anchor_hash) VALUES(?, ?, 0, ?) "
                       "ON CONFLICT(path) DO NOTHING", (path, format_name, empty_anchor))
    row = store.one("SELECT id, cursor FROM files WHERE path = ?", (path,))
    assert row is not None
    return int(row[0]), int(row[1])


def write_header(store: Store, file_id: int, format_name: str | None, header: Header, head_hash: str) -> None:
    store.conn.execute(
        "UPDATE files SET format = coalesce(?, format), version = ?, session_id = ?, cwd = ?, started = ?, "
        "parent_session = ?, head_hash = ?, name = coalesce(name, ?) WHERE id = ?",
        (format_name, header.version, header.session_id, header.cwd, header.started, header.parent_session,
         head_hash, header.name, file_id),
    )


def reset_file(store: Store, file_id: int, empty_anchor: str) -> None:
    """Drop everything indexed from a journal and set it back to byte 0."""
    forget_file(store, file_id)
    store.conn.execute(
        "UPDATE files SET cursor = 0, anchor_hash = ?, entries = 0, skipped = 0, name = NULL, "
        "last_ts = NULL, size = NULL, mtime_ns = NULL, ctime_ns = NULL, dev = NULL, ino = NULL, "
        "context_from = NULL, open_turn = NULL WHERE id = ?",
        (empty_anchor, file_id),
    )


def file_cursor(store: Store, file_id: int) -> int | None:
    value = store.value("SELECT cursor FROM files WHERE id = ?", (file_id,))
    return None if value is None else int(value)


def next_rowid(store: Store) -> int:
    """The rowid the next entry gets (a block's rows take the ones after it, in order)."""
    return int(store.value("SELECT max(rowid) FROM entries", default=0) or 0) + 1


def insert_entries(store: Store, file_id: int, first_rowid: int, rows: Sequence[EntryRow],
                   replies: Sequence[int | None], terms: Sequence[tuple[int, str]],
                   bulk: Sequence[tuple[int, str]]) -> None:
    """A block's rows, from rowid ``first_rowid`` on (``replies``: each row's entries.reply), and
    the terms of both FTS tables (``terms``/``bulk``: index into ``rows``, text)."""
    conn = store.conn
    conn.executemany(_INSERT_ENTRY, [
        (first_rowid + i, file_id, *stored_kind(row.kind, row.role), *stored_id(row.entry_id, row.offset), row.ts,
         row.tool, row.chars, row.offset, row.length, row.tokens_before, row.link_offset, row.link_length, reply)
        for i, (row, reply) in enumerate(zip(rows, replies, strict=True))])
    conn.executemany("INSERT INTO entries_fts(rowid, body) VALUES(?, ?)",
                     [(first_rowid + i, text) for i, text in terms])
    conn.executemany("INSERT INTO entries_bulk(rowid, body) VALUES(?, ?)",
                     [(first_rowid + i, text) for i, text in bulk])


def advance(store: Store, file_id: int, cursor: int, anchor_hash: str, rows: int, skipped: int, name: str | None,
            last_ts: int | None, indexed_at: int, dev: int, ino: int, open_turn: int | None) -> None:
    """Move a journal's cursor past a block, with the counts, the file it came from and its
    last user entry (``open_turn``; None: the block held none)."""
    store.conn.execute(
        "UPDATE files SET cursor = ?, anchor_hash = ?, entries = entries + ?, skipped = skipped + ?, "
        "name = coalesce(?, name), last_ts = max(coalesce(last_ts, 0), coalesce(?, 0)), "
        "indexed_at = ?, dev = ?, ino = ?, open_turn = coalesce(?, open_turn) WHERE id = ?",
        (cursor, anchor_hash, rows, skipped, name, last_ts, indexed_at, dev, ino, open_turn, file_id),
    )


def record_stat(store: Store, file_id: int, size: int, mtime_ns: int, ctime_ns: int) -> None:
    """The size and times a journal had when a pass read it to its end (the next pass's skip check)."""
    store.conn.execute("UPDATE files SET size = ?, mtime_ns = ?, ctime_ns = ? WHERE id = ?",
                       (size, mtime_ns, ctime_ns, file_id))


def first_offset_of(store: Store, file_id: int, entry_id: str) -> int | None:
    value = store.value("SELECT min(offset) FROM entries WHERE file_id = ? AND entry_id = ?", (file_id, entry_id))
    return None if value is None else int(value)


def set_context_from(store: Store, file_id: int, offset: int) -> None:
    store.conn.execute("UPDATE files SET context_from = ? WHERE id = ?", (offset, file_id))


# -- each question's reply (migration 0012; journal_index/indexing/turns.py) -------------------


class TurnStart(NamedTuple):
    """A user entry that opened a turn, and the reply its row holds."""

    question: int  # entries.rowid
    offset: int
    reply: int | None  # entries.rowid
    reply_offset: int | None


_TURN_START = ("SELECT q.rowid, q.offset, r.rowid, r.offset FROM entries q "
               "LEFT JOIN entries r ON r.rowid = q.reply WHERE ")


def open_turn(store: Store, file_id: int) -> TurnStart | None:
    """The journal's last user entry (files.open_turn): its turn lasts until the next one."""
    row = store.one(_TURN_START + "q.rowid = (SELECT open_turn FROM files WHERE id = ?)", (file_id,))
    return None if row is None else TurnStart(*row)


def turn_before(store: Store, file_id: int, offset: int) -> TurnStart | None:
    """The turn holding the entry at ``offset``: the last user entry before it."""
    row = store.one(_TURN_START + "q.file_id = ? AND q.offset < ? AND q.kind = 'user' ORDER BY q.offset DESC LIMIT 1",
                    (file_id, offset))
    return None if row is None else TurnStart(*row)


def last_reply_before(store: Store, file_id: int, after: int, before: int,
                      called: set[int]) -> tuple[int, int] | None:
    """(offset, rowid) of the last assistant entry between the offsets ``after`` and ``before``
    that is not a call: no entry of the journal links to it, nor one at the offsets ``called``
    (those of rows not written yet). Read from the journal's end back, the links of everything
    after an entry are known when it is reached."""
    called = set(called)
    for rowid, offset, kind, link_offset in store.conn.execute(
            "SELECT rowid, offset, kind, link_offset FROM entries WHERE file_id = ? AND offset > ? "
            "ORDER BY offset DESC", (file_id, after)):
        if link_offset is not None:
            called.add(link_offset)
        if offset < before and kind == "assistant" and offset not in called:
            return int(offset), int(rowid)
    return None


def set_reply(store: Store, question: int, reply: int | None) -> None:
    store.conn.execute("UPDATE entries SET reply = ? WHERE rowid = ?", (reply, question))


def forget_file(store: Store, file_id: int) -> None:
    """Drop a journal's rows and terms (inside the caller's transaction)."""
    for table in ("entries_fts", "entries_bulk"):
        store.conn.execute(f"DELETE FROM {table} WHERE rowid IN (SELECT rowid FROM entries WHERE file_id = ?)",
                           (file_id,))
    store.conn.execute("DELETE FROM entries WHERE file_id = ?", (file_id,))


def remove_file(store: Store, path: str) -> bool:
    """Forget a journal that no longer exists, in a transaction of its own. Whether it was known."""
    with store.write():
        file_id = file_id_of(store, path)
        if file_id is None:
            return False
        forget_file(store, file_id)
        store.conn.execute("DELETE FROM files WHERE id = ?", (file_id,))
    return True


# -- the backfill lease and progress (meta) ---------------------------------------------------


def put_meta(store: Store, key: str, value: str) -> None:
    store.conn.execute("INSERT INTO meta(key, value) VALUES(?, ?) "
                       "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, value))


def delete_meta(store: Store, key: str) -> None:
    store.conn.execute("DELETE FROM meta WHERE key = ?", (key,))


# -- gc ---------------------------------------------------------------------------------------


class GcFile(NamedTuple):
    """A journal as gc judges it: where, how big, which agent, how much of it was said."""

    path: str
    cwd: str | None
    size: int | None
    mtime_ns: int | None
    format: str
    compactions: int
    users: int  # entries a person wrote (user, custom)
    replies: int  # assistant entries


def gc_files(store: Store) -> list[GcFile]:
    return [GcFile(*row) for row in store.rows(
        "SELECT f.path, f.cwd, f.size, f.mtime_ns, f.format, "
        "count(e.rowid) FILTER (WHERE e.kind = 'compaction'), "
        "count(e.rowid) FILTER (WHERE e.kind IN ('user', 'custom')), "
        "count(e.rowid) FILTER (WHERE e.kind = 'assistant') "
        "FROM files f LEFT JOIN entries e ON e.file_id = f.id GROUP BY f.id ORDER BY f.path")]


class PreviewedFile(NamedTuple):
    """A file the last gc preview listed, as it was then."""

    path: str
    size: int
    mtime_ns: int
    dev: int | None
    ino: int | None
    ctime_ns: int | None
    head_hash: str | None


def replace_preview(store: Store, rows: Sequence[tuple[Any, ...]]) -> None:
    """The preview's list: (path, size, mtime_ns, reasons, previewed_at, dev, ino, ctime_ns, head_hash)."""
    store.conn.execute("DELETE FROM gc_preview")
    store.conn.executemany(
        "INSERT INTO gc_preview(path, size, mtime_ns, reasons, previewed_at, dev, ino, ctime_ns, head_hash) "
        "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)


def previewed(store: Store) -> list[PreviewedFile]:
    return [PreviewedFile(*row) for row in
            store.rows(f"SELECT {', '.join(PreviewedFile._fields)} FROM gc_preview ORDER BY path")]


def clear_preview(store: Store) -> None:
    store.conn.execute("DELETE FROM gc_preview")


def write_vectors(store: Store, vectors: Sequence[tuple[int, bytes | None]]) -> None:
    """The semantic layer's vectors (entry rowid, int8 bytes or None for "nothing to embed"),
    each written only while its entry is still there (a pass may have forgotten it meanwhile);
    inside the caller's transaction."""
    for rowid, vector in vectors:
        store.conn.execute("INSERT OR IGNORE INTO entry_vectors(entry, vector) SELECT rowid, ? FROM entries "
                           "WHERE rowid = ?", (vector, rowid))
