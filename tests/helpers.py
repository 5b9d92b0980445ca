"""Test helpers that inspect an index without using the indexer's own code paths."""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from journal_index.data.store import Store
from journal_index.query.hits import Hit
from journal_index.service import Caller, ReadRequest, Request, Service

FTS_TABLES = ("entries_fts", "entries_bulk")

# A journal without any timestamp is dated here (before every fixture session).
UNDATED = datetime.fromisoformat("2026-01-01T00:00:00+00:00").timestamp()


def strings_in(value: Any, skip: frozenset[str] = frozenset()) -> Iterator[str]:
    """Every string in a JSON value, leaving out the values of the keys in ``skip``."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from strings_in(item, skip)
    elif isinstance(value, dict):
        for key, item in value.items():
            if key not in skip:
                yield from strings_in(item, skip)


def copy_journal_tree(source: Path, target: Path) -> Path:
    """Copy a folder of fixture journals, each dated (mtime) by its own last timestamp.

    A checkout gives every file the time of the clone: minutes old, so any journal could pass
    for the session an agent is writing now, and "newest first" would follow checkout order.
    Dating each journal by its content makes both the same on every machine.
    """
    shutil.copytree(source, target)
    for path in sorted(target.rglob("*.jsonl")):
        stamp = _last_timestamp(path)
        os.utime(path, (stamp, stamp))
    return target


def _last_timestamp(path: Path) -> float:
    for line in reversed(path.read_bytes().splitlines()):
        try:
            value = json.loads(line).get("timestamp")
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except (ValueError, AttributeError, TypeError):
            continue
    return UNDATED


def vocabulary(store: Store) -> set[str]:
    """Every term in both FTS tables, read through fts5vocab tables."""
    terms: set[str] = set()
    for table in FTS_TABLES:
        store.conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab_row_{table} USING fts5vocab(main, {table}, row)")
        terms |= {row[0] for row in store.conn.execute(f"SELECT term FROM temp.vocab_row_{table}")}
    return terms


def term_instances(store: Store) -> list[tuple[str, str, str, int, int | None]]:
    """(table, term, journal path, line offset, token position) for every indexed token: rowid-free
    (the bulk table keeps no positions)."""
    rows = []
    for table in FTS_TABLES:
        store.conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab_inst_{table} USING fts5vocab(main, {table}, instance)")
        rows += [(table, *r) for r in store.rows(
            f"SELECT v.term, f.path, e.offset, v.offset FROM temp.vocab_inst_{table} v "
            "JOIN entries e ON e.rowid = v.doc JOIN files f ON f.id = e.file_id")]
    return sorted(rows, key=lambda r: (r[0], r[1], r[2], r[3], -1 if r[4] is None else r[4]))


# An entry's turn reply (migration 0012) by its offset, comparable between two indexes.
REPLY_OFFSET = "(SELECT r.offset FROM entries r WHERE r.rowid = e.reply)"


def entry_rows(store: Store) -> list[tuple[Any, ...]]:
    """The entries table without rowids (a question's reply by its offset), in a stable order."""
    return sorted(store.rows(
        "SELECT f.path, e.entry_id, e.ts, e.kind, e.role, e.tool, e.chars, e.offset, "
        f"e.length, e.tokens_before, coalesce({REPLY_OFFSET}, -1) FROM entries e JOIN files f ON f.id = e.file_id"))


def snapshot(store: Store) -> tuple[list[tuple[Any, ...]], list[tuple[str, str, str, int, int | None]]]:
    return entry_rows(store), term_instances(store)


def fts_ids(store: Store, term: str) -> set[str]:
    """Entry ids whose terms match a literal term (straight SQL, no query layer)."""
    quoted = '"' + term.replace('"', '""') + '"'
    return {r[0] for table in FTS_TABLES for r in store.rows(
        f"SELECT e.entry_id FROM {table} JOIN entries e ON e.rowid = {table}.rowid WHERE {table} MATCH ?", (quoted,))}


def expected_kind_counts(paths: list[Path]) -> dict[str, int]:
    """Entry counts per kind by DESIGN §5, computed with json (not the indexer's parser)."""
    role_kind = {"user": "user", "assistant": "assistant", "toolResult": "tool_result",
                 "bashExecution": "bash", "custom": "custom"}
    counts: dict[str, int] = {}
    for path in paths:
        for raw in path.read_bytes().splitlines():
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            kind = None
            t = obj.get("type")
            if t == "message":
                message = obj["message"]
                kind = role_kind.get(message.get("role"))
                if message.get("role") == "toolResult" and str(message.get("toolName", "")).endswith(
                        "memory_context"):
                    kind = None
                if message.get("role") == "assistant" and _only_our_calls(message.get("content")):
                    kind = None  # no text a search could find: not a row
            elif t in ("compaction", "branch_summary"):
                kind = t
            elif t == "custom_message":
                kind = "custom"
            elif t == "context_edit" and obj.get("replacement") is not None:
                kind = "context_edit"
            if kind:
                counts[kind] = counts.get(kind, 0) + 1
    return counts


def _only_our_calls(content: Any) -> bool:
    """An assistant message whose only blocks are calls of our own tool."""
    if not isinstance(content, list) or not content:
        return False
    return all(isinstance(b, dict) and b.get("type") == "toolCall" and str(b.get("name", "")).endswith(
        "memory_context") for b in content)


def load_secrets(fixtures: Path) -> list[str]:
    data = json.loads((fixtures / "SECRETS.json").read_text())
    values = []
    for secret in data["secrets"]:
        values.append(secret["value"])
        if secret.get("probe"):
            values.append(secret["probe"])
    return values


def index_tokens(store: Store, text: str) -> list[str]:
    """The terms the index would hold for ``text`` (same text forms, same tokenizer)."""
    import apsw

    from journal_index.text.text_forms import index_form

    tokenizer = store.conn.fts5_tokenizer("porter", ["unicode61", "remove_diacritics", "2"])
    return [str(t[0]) for t in tokenizer(index_form(text).encode(), apsw.FTS5_TOKENIZE_DOCUMENT, None,
                                    include_offsets=False)]


def secret_is_searchable(store: Store, secret: str) -> str | None:
    """A distinctive term of the secret found in the index (or the secret as a phrase), else None."""
    terms = vocabulary(store)
    tokens = index_tokens(store, secret)
    for token in tokens:
        if len(token) >= 8 and token in terms:
            return token
    if tokens:
        phrase = '"' + " ".join(tokens).replace('"', '""') + '"'
        if store.rows("SELECT rowid FROM entries_fts WHERE entries_fts MATCH ? ORDER BY rowid LIMIT 1", (phrase,)):
            return "the whole secret as a phrase"
        every = " AND ".join('"' + t.replace('"', '""') + '"' for t in dict.fromkeys(tokens))
        if store.rows("SELECT rowid FROM entries_bulk WHERE entries_bulk MATCH ? ORDER BY rowid LIMIT 1", (every,)):
            return "every token of the secret in one tool output"
    return None


def scratch_snapshot(paths: list[str] | list[Path]) -> tuple[list[tuple[Any, ...]],
                                                            list[tuple[str, str, str, int, int | None]]]:
    """The snapshot of a brand-new in-memory index of ``paths`` (what a rebuild would give)."""
    from journal_index.data.store import open_store
    from journal_index.indexing.indexer import index_file

    fresh = open_store(":memory:")
    try:
        for path in paths:
            index_file(fresh, path)
        return snapshot(fresh)
    finally:
        fresh.conn.close()


def relative_rows(db: str | Path, root: Path) -> list[tuple[Any, ...]]:
    """Every entry of the index file ``db`` as (journal relative to root, entry id, offset, length,
    kind, its reply's offset or -1), duplicates kept, plus the FTS row count: comparable across
    folders and processes."""
    import os

    import apsw

    conn = apsw.Connection(str(db))
    try:
        rows = conn.execute(f"SELECT f.path, e.entry_id, e.offset, e.length, e.kind, coalesce({REPLY_OFFSET}, -1) "
                            "FROM entries e JOIN files f ON f.id = e.file_id").fetchall()
        counts: list[Any] = [conn.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0] for table in FTS_TABLES]
        terms = sum(counts)
    finally:
        conn.close()
    return [*sorted((os.path.relpath(str(p), root), *rest) for p, *rest in rows), ("fts-rows", terms)]


def journal_in_index(db: str | Path, path: Path) -> tuple[Counter[str], tuple[Any, ...]]:
    """One journal as the index file ``db`` holds it: its entries per kind, and its (format,
    session id, cwd)."""
    import apsw

    conn = apsw.Connection(str(db))
    try:
        kinds: list[Any] = conn.execute(
            "SELECT e.kind, count(*) FROM entries e JOIN files f ON f.id = e.file_id WHERE f.path = ? "
            "GROUP BY e.kind", (str(path),)).fetchall()
        header = conn.execute("SELECT format, session_id, cwd FROM files WHERE path = ?", (str(path),)).fetchall()
    finally:
        conn.close()
    return Counter(dict(kinds)), tuple(header[0])


def scratch_rows(tmp_path: Path, root: Path) -> list[tuple[Any, ...]]:
    """relative_rows of a from-scratch index of every journal under ``root``."""
    from journal_index.data.store import open_store
    from journal_index.indexing import indexer

    db = tmp_path / "scratch.db"
    store = open_store(str(db))
    try:
        indexer.index_files(store, indexer.discover([root]))
    finally:
        store.close()
    return relative_rows(db, root)


def served_hits(store: Store, words: str, limit: int = 10) -> list[Hit]:
    """A global search as every front end makes it: through the service layer, which has a
    journal found rewritten under the index indexed again."""
    return Service(store).search(Request(words, scope="global", limit=limit), Caller(cwd="/")).result.hits


def served_read(store: Store, entry_id: str) -> dict[str, Any]:
    """``read`` of one entry anywhere, through the service layer (see :func:`served_hits`)."""
    return Service(store).read(ReadRequest(entry_id, scope="global"), Caller(cwd="/"))


def line_offsets(lines: list[bytes]) -> list[int]:
    """The byte offset of each line of a journal written as ``b"\\n".join(lines) + b"\\n"``."""
    offsets, at = [], 0
    for raw in lines:
        offsets.append(at)
        at += len(raw) + 1
    return offsets


def lines_with(store: Store, word: str) -> set[int]:
    """Offsets of the journal lines whose terms hold ``word``."""
    term = index_tokens(store, word)[0]
    return {offset for _table, t, _path, offset, _pos in term_instances(store) if t == term}


def terms_after_a_resumed_pass(tmp_path: Path, relative: str, lines: list[bytes], split: int,
                               words: tuple[str, ...], roots: tuple[Path, ...] = ()) -> dict[str, set[int]]:
    """Which lines hold each word when the journal is indexed in two passes, the second starting
    at line ``split`` (``relative``: its path below ``tmp_path/resumed``; ``roots`` below it too)."""
    from journal_index.data.store import open_store
    from journal_index.indexing.indexer import index_file

    store = open_store(str(tmp_path / "resumed.db"))
    try:
        path = tmp_path / "resumed" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        found_in = [tmp_path / "resumed" / r for r in roots]
        path.write_bytes(b"\n".join(lines[:split]) + b"\n")
        index_file(store, path, found_in)
        with path.open("ab") as journal:
            journal.write(b"\n".join(lines[split:]) + b"\n")
        index_file(store, path, found_in)
        return {w: lines_with(store, w) for w in words}
    finally:
        store.conn.close()
