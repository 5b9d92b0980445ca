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


Shown = tuple[str, list[str]]  # an entry's redacted text, and its thinking when set apart


def _entry_json(hit: Hit, shown: Shown | None, cut: int, apart: bool = False) -> dict[str, Any]:
    """One entry of a conversation: who said it when, and its text cut to ``cut`` characters
    (``apart``: its thinking apart, under ``thinking``, each part cut alike)."""
    text = None if shown is None else shown[0]
    total = 0 if text is None else len(text)
    out: dict[str, Any] = {
        "entryId": hit.entry_id,
        "time": iso(hit.ts),
        "kind": hit.kind,
        "role": hit.role,
        "tool": hit.tool,
        "text": UNAVAILABLE if text is None else text[:cut],
        "totalChars": total,
        "cut": text is not None and total > cut,
    }
    if apart:
        out["thinking"] = [] if shown is None else [t[:cut] for t in shown[1]]
    return out


def _session_json(hit: Hit) -> dict[str, Any]:
    return {"sessionId": hit.session_id, "agent": hit.format, "cwd": hit.cwd}


def _texts(store: Store, reader: Reader, hits: list[Hit], apart: bool = False) -> list[Shown | None] | None:
    """The verified texts of ``hits`` (``apart``: with their thinking apart), or None when a line
    turned out not to be its entry and the journal was reindexed (the caller looks again, once)."""
    texts: list[Shown | None] = []
    for hit in hits:
        if apart:
            texts.append(reader.verified_apart(hit))
        else:
            text = reader.verified_text(hit)
            texts.append(None if text is None else (text, []))
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
                 roots: Roots = None, prefer: Scope | None = None, reindex: Reindex | None = None,
                 apart: bool = False) -> dict[str, Any]:
    """The entry ``entry_id`` names (as :func:`query.read` finds it) with the ``count`` entries
    before and after it in its session, each cut to a few thousand characters (the entry
    itself to a read page). ``apart``: each entry's thinking apart (the web view folds it).
    ``offset`` is the place in the session of the first entry shown, ``totalEntries`` the
    session's count: where the entries around lie, for a page before and after."""
    if not 0 <= count <= MAX_CONTEXT:
        raise QueryError(f"context must be 0 to {MAX_CONTEXT} entries")
    with Reader(store, roots, reindex) as reader:
        for _attempt in (0, 1):
            found = locate_entry(store, reader, entry_id, scope, session, prefer)
            if isinstance(found, dict):
                return found
            target, _ = found
            around = _neighbours(store, target, count)
            texts = _texts(store, reader, around, apart)
            if texts is None:
                continue
            entries = []
            for hit, text in zip(around, texts, strict=True):
                is_target = hit.rowid == target.rowid
                entry = _entry_json(hit, text, PAGE_CHARS if is_target else CONTEXT_ENTRY_CHARS, apart)
                entry["target"] = is_target
                entries.append(entry)
            return {"status": "ok", "entryId": target.entry_id, **_session_json(target), "context": count,
                    "entries": entries, "offset": read_sql.entries_before(store, target.file_id, around[0].offset),
                    "totalEntries": read_sql.entry_count(store, target.file_id)}
    return {"status": "unavailable", "entryId": entry_id, "reason": "the journal changed while reading"}


def _page(store: Store, reader: Reader, rows: list[Hit], page_chars: int, apart: bool) -> list[dict[str, Any]] | None:
    """The entries of ``rows``, in their order, while they fit in ``page_chars`` (at least one);
    None when the journal was rewritten (page again from the new index)."""
    entries: list[dict[str, Any]] = []
    used = 0
    for hit in rows:
        texts = _texts(store, reader, [hit], apart)
        if texts is None:
            return None
        entry = _entry_json(hit, texts[0], SESSION_ENTRY_CHARS, apart)
        size = len(entry["text"]) + sum(map(len, entry.get("thinking", ())))
        if entries and used + size > page_chars:
            break
        entries.append(entry)
        used += size
    return entries


def read_session(store: Store, session: SessionRef, offset: int = 0, page_chars: int = PAGE_CHARS,
                 roots: Roots = None, reindex: Reindex | None = None, before: int | None = None,
                 apart: bool = False) -> dict[str, Any]:
    """A page of one session's entries in journal order, from the ``offset``-th entry on: as
    many as fit in ``page_chars`` characters (at least one), each cut to SESSION_ENTRY_CHARS.
    ``before``: instead the page that ends just before the ``before``-th entry (the page
    earlier than one starting there). ``apart``: each entry's thinking apart."""
    if offset < 0:
        raise QueryError("offset must be 0 or more")
    with Reader(store, roots, reindex) as reader:
        for _attempt in (0, 1):
            total = read_sql.entry_count(store, session.file_id)
            if before is not None:
                if not 0 < before <= total:
                    raise QueryError(f"before must be 1 to {total}, the entries of the session")
                first = max(0, before - _PAGE_ROWS)
                rows = read_sql.journal_hits(store, session.file_id, first, before - first)
                page = _page(store, reader, rows[::-1], page_chars, apart)
                entries = None if page is None else page[::-1]
                start = before - (0 if entries is None else len(entries))
            else:
                if offset > 0 and offset >= total:
                    raise QueryError(f"offset {offset} is past the end of the session ({total} entries)")
                entries = _page(store, reader, read_sql.journal_hits(store, session.file_id, offset, _PAGE_ROWS),
                                page_chars, apart)
                start = offset
            if entries is None:
                continue
            end = start + len(entries)
            return {"status": "ok", "sessionId": session.session_id, "agent": session.agent, "cwd": session.cwd,
                    "entries": entries, "offset": start, "nextOffset": end if end < total else None,
                    "totalEntries": total}
    return {"status": "unavailable", "sessionId": session.session_id, "reason": "the journal changed while reading"}
