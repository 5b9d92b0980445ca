"""Entries of the hub in their journal's order: an entry in its place (``read ENTRY --hub
--context N``) and a whole session a page at a time (``read --hub --session ID``).

The hub keeps each entry's redacted text, kind, time and id, so the answers come from its rows,
ordered by the entry's byte offset in its journal; they have the shapes of
:mod:`journal_index.query.conversation`'s answers plus the host and project. Row-level security
decides what a member may read: an entry of a team the member is not in is not found, exactly
as an id the hub never held. A neighbour's text is cut on the server (``left``), so a giant
tool output is never sent whole to be cut here.
"""

from __future__ import annotations

from typing import Any

# The hub's rows are read as search reads them: one column list, one row → HubHit.
from journal_index.hub.search import HIT_COLUMNS, HubHit, HubScope, fetch_rows, find_entry, hit_from_row
from journal_index.query import PAGE_CHARS
from journal_index.query.conversation import CONTEXT_ENTRY_CHARS, MAX_CONTEXT, SESSION_ENTRY_CHARS
from journal_index.query.hits import QueryError, iso

_PAGE_ROWS = 400  # rows fetched per session page (a page holds far fewer at PAGE_CHARS), as locally
_JOURNAL = "e.host = %s AND e.journal = %s"


def _cut_select(where: str, order: str) -> str:
    """A SELECT of the entries meeting ``where`` in ``order``, each with its text cut to a number
    of characters (the first parameter) and its whole length; LIMIT and OFFSET are parameters."""
    columns = HIT_COLUMNS.replace("e.text,", "left(e.text, %s),")
    return (f"{columns}, e.chars FROM hub_entries e JOIN hub_journals j ON j.host = e.host AND j.journal = e.journal "
            f"WHERE {where} ORDER BY {order} LIMIT %s OFFSET %s")


def _cut_hits(rows: list[tuple[Any, ...]]) -> list[tuple[HubHit, int]]:
    return [(hit_from_row(row), int(row[14])) for row in rows]


def _neighbours(conn: Any, target: HubHit, count: int) -> tuple[list[tuple[HubHit, int]], list[tuple[HubHit, int]]]:
    """Up to ``count`` entries of the target's journal before it and after it, in journal order
    (one query: a round trip costs more here than the rows)."""
    before = _cut_select(f'{_JOURNAL} AND e."offset" < %s', 'e."offset" DESC')
    after = _cut_select(f'{_JOURNAL} AND e."offset" > %s', 'e."offset"')
    side = [target.host, target.journal, target.offset]
    rows = fetch_rows(conn, f'({before}) UNION ALL ({after}) ORDER BY "offset"',
                      [CONTEXT_ENTRY_CHARS, *side, count, 0, CONTEXT_ENTRY_CHARS, *side, count, 0])
    hits = _cut_hits(rows)
    return [h for h in hits if h[0].offset < target.offset], [h for h in hits if h[0].offset > target.offset]


def _entry_json(hit: HubHit, total: int, cut: int) -> dict[str, Any]:
    """One entry of a conversation, as ``query.conversation`` writes it (the text is on the hub:
    never unavailable)."""
    text = hit.text[:cut]
    return {"entryId": hit.entry_id, "time": iso(hit.ts), "kind": hit.kind, "role": hit.role, "tool": hit.tool,
            "text": text, "totalChars": total, "cut": total > len(text)}


def _place(conn: Any, host: str, journal: str, offset: int = 0) -> tuple[int, int]:
    """How many entries of the journal lie before byte ``offset`` (an entry's place in its
    session), and how many it has."""
    rows = fetch_rows(conn, f'SELECT count(*) FILTER (WHERE e."offset" < %s), count(*) FROM hub_entries e '
                            f"WHERE {_JOURNAL}", [offset, host, journal])
    return int(rows[0][0]), int(rows[0][1])


def read_context(conn: Any, entry_id: str, scope: HubScope, host: str, count: int) -> dict[str, Any]:
    """The entry ``entry_id`` names (the copy :func:`journal_index.hub.search.find_entry`
    chooses) with the ``count`` entries before and after it in its journal, each cut to a few
    thousand characters (the entry itself to a read page). ``offset`` is the place in the
    session of the first entry shown, ``totalEntries`` the session's count, as locally."""
    if not 0 <= count <= MAX_CONTEXT:
        raise QueryError(f"context must be 0 to {MAX_CONTEXT} entries")
    target = find_entry(conn, entry_id, scope, host)
    if isinstance(target, dict):
        return target
    before, after = _neighbours(conn, target, count)
    entries = [{**_entry_json(hit, total, CONTEXT_ENTRY_CHARS), "target": False} for hit, total in before]
    entries.append({**_entry_json(target, len(target.text), PAGE_CHARS), "target": True})
    entries += [{**_entry_json(hit, total, CONTEXT_ENTRY_CHARS), "target": False} for hit, total in after]
    place, total = _place(conn, target.host, target.journal, target.offset)
    return {"status": "ok", "entryId": target.entry_id, "sessionId": target.session_id, "agent": target.format,
            "cwd": target.cwd, "host": target.host, "project": target.project, "context": count,
            "entries": entries, "offset": place - len(before), "totalEntries": total}


def read_session(conn: Any, scope: HubScope, offset: int = 0, page_chars: int = PAGE_CHARS) -> dict[str, Any]:
    """A page of one hub session's entries in journal order, from the ``offset``-th entry on: as
    many as fit in ``page_chars`` characters (at least one), each cut to SESSION_ENTRY_CHARS."""
    if scope.kind != "session" or scope.session is None:
        raise QueryError("reading a whole session on the hub needs its id (--session ID)")
    if offset < 0:
        raise QueryError("offset must be 0 or more")
    host, journal = scope.session
    session = fetch_rows(conn, "SELECT j.session_id, j.agent, j.cwd, j.project FROM hub_journals j "
                               "WHERE j.host = %s AND j.journal = %s", [host, journal])
    if not session:  # pushed away (forgotten) since its scope was resolved
        raise QueryError(f"session {scope.session_id} is no longer on the hub")
    session_id, agent, cwd, project = session[0]
    _, total = _place(conn, host, journal)
    if offset > 0 and offset >= total:
        raise QueryError(f"offset {offset} is past the end of the session ({total} entries)")
    rows = _cut_hits(fetch_rows(conn, _cut_select(_JOURNAL, 'e."offset"'),
                                [SESSION_ENTRY_CHARS, host, journal, _PAGE_ROWS, offset]))
    entries: list[dict[str, Any]] = []
    used = 0
    for hit, chars in rows:
        entry = _entry_json(hit, chars, SESSION_ENTRY_CHARS)
        if entries and used + len(entry["text"]) > page_chars:
            break
        entries.append(entry)
        used += len(entry["text"])
    end = offset + len(entries)
    return {"status": "ok", "sessionId": session_id, "agent": agent, "cwd": cwd, "host": host, "project": project,
            "entries": entries, "offset": offset, "nextOffset": end if end < total else None, "totalEntries": total}
