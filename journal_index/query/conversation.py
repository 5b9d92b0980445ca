"""An entry in its place, and a whole session: entries of one journal in order, as a conversation.

``read ID --context N`` shows the N entries before and after an entry; ``read --session ID``
pages through a session. Every text comes through the same verified re-read and redaction as
``read`` (:class:`journal_index.query.Reader`): a line that is not the entry the index names
makes its journal reindex once, and then shows as unavailable, never as another line's text.
Long entries are cut (the cut says how much more there is); ``read ID`` gives one whole.
"""

from __future__ import annotations

from typing import Any

from journal_index.data import read_sql
from journal_index.data.store import Store
from journal_index.query.find import PAGE_CHARS, UNAVAILABLE, Reader, Reindex, Roots, locate_entry, reindex_stale
from journal_index.query.hits import Hit, QueryError, iso
from journal_index.query.scope import Scope, SessionRef

CONTEXT_ENTRY_CHARS = 2_000  # a neighbour shown around an entry: enough to see what it was
SESSION_ENTRY_CHARS = 4_000  # one entry of a session page: a giant tool output does not fill pages
MAX_CONTEXT = 50
_PAGE_ROWS = 400  # rows fetched per session page (a page holds far fewer at PAGE_CHARS)


def _entry_json(hit: Hit, text: str | None, cut: int) -> dict[str, Any]:
    """One entry of a conversation: who said it when, and its text cut to ``cut`` characters."""
    shown = UNAVAILABLE if text is None else text[:cut]
    total = 0 if text is None else len(text)
    return {
        "entryId": hit.entry_id,
        "time": iso(hit.ts),
        "kind": hit.kind,
        "role": hit.role,
        "tool": hit.tool,
        "text": shown,
        "totalChars": total,
        "cut": text is not None and total > cut,
    }


def _session_json(hit: Hit) -> dict[str, Any]:
    return {"sessionId": hit.session_id, "agent": hit.format, "cwd": hit.cwd}


def _texts(store: Store, reader: Reader, hits: list[Hit]) -> list[str | None] | None:
    """The verified texts of ``hits``, or None when a line turned out not to be its entry and
    the journal was reindexed (the caller looks again, once)."""
    texts = [reader.verified_text(hit) for hit in hits]
    missing = {hit.path for hit, text in zip(hits, texts, strict=True) if text is None}
    if not missing:
        return texts
    if not reindex_stale(store, reader, missing):
        return texts  # nothing moved: those lines are unavailable
    return None


def _neighbours(store: Store, target: Hit, count: int) -> list[Hit]:
    """Up to ``count`` entries before and after ``target`` in its journal, target included, in order."""
    before, after = read_sql.neighbours(store, target.file_id, target.offset, count)
    return [*reversed(before), target, *after]


def read_context(store: Store, entry_id: str, scope: Scope, count: int, session: SessionRef | None = None,
                 roots: Roots = None, prefer: Scope | None = None, reindex: Reindex | None = None) -> dict[str, Any]:
    """The entry ``entry_id`` names (as :func:`query.read` finds it) with the ``count`` entries
    before and after it in its session, each cut to a few thousand characters (the entry
    itself to a read page)."""
    if not 0 <= count <= MAX_CONTEXT:
        raise QueryError(f"context must be 0 to {MAX_CONTEXT} entries")
    reader = Reader(store, roots, reindex)
    for _attempt in (0, 1):
        found = locate_entry(store, reader, entry_id, scope, session, prefer)
        if isinstance(found, dict):
            return found
        target, _ = found
        around = _neighbours(store, target, count)
        texts = _texts(store, reader, around)
        if texts is None:
            continue
        entries = []
        for hit, text in zip(around, texts, strict=True):
            is_target = hit.rowid == target.rowid
            entry = _entry_json(hit, text, PAGE_CHARS if is_target else CONTEXT_ENTRY_CHARS)
            entry["target"] = is_target
            entries.append(entry)
        return {"status": "ok", "entryId": target.entry_id, **_session_json(target), "context": count,
                "entries": entries}
    return {"status": "unavailable", "entryId": entry_id, "reason": "the journal changed while reading"}


def read_session(store: Store, session: SessionRef, offset: int = 0, page_chars: int = PAGE_CHARS,
                 roots: Roots = None, reindex: Reindex | None = None) -> dict[str, Any]:
    """A page of one session's entries in journal order, from the ``offset``-th entry on: as
    many as fit in ``page_chars`` characters (at least one), each cut to SESSION_ENTRY_CHARS."""
    if offset < 0:
        raise QueryError("offset must be 0 or more")
    reader = Reader(store, roots, reindex)
    for _attempt in (0, 1):
        total = read_sql.entry_count(store, session.file_id)
        if offset > 0 and offset >= total:
            raise QueryError(f"offset {offset} is past the end of the session ({total} entries)")
        rows = read_sql.journal_hits(store, session.file_id, offset, _PAGE_ROWS)
        entries: list[dict[str, Any]] = []
        used = 0
        rewritten = False
        for hit in rows:
            texts = _texts(store, reader, [hit])
            if texts is None:
                rewritten = True  # the journal was rewritten: page again from the new index
                break
            entry = _entry_json(hit, texts[0], SESSION_ENTRY_CHARS)
            if entries and used + len(entry["text"]) > page_chars:
                break
            entries.append(entry)
            used += len(entry["text"])
        if rewritten:
            continue
        end = offset + len(entries)
        return {"status": "ok", "sessionId": session.session_id, "agent": session.agent, "cwd": session.cwd,
                "entries": entries, "offset": offset, "nextOffset": end if end < total else None,
                "totalEntries": total}
    return {"status": "unavailable", "sessionId": session.session_id, "reason": "the journal changed while reading"}
