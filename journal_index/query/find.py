"""search, read and summaries: scoped SQL over the index, then verified re-reads of the journal.

Every text that leaves this module was re-read from the journal at (offset, length), parsed
with the same format code as the indexer, checked to carry the entry id the index promised,
and redacted again. A line that fails the check makes its file reindex once; if it still
fails, the entry is answered as unavailable, never with another line's text.
"""

from __future__ import annotations

import dataclasses
import os
import re
import stat
from collections.abc import Callable, Iterable, Sequence
from typing import Any, BinaryIO

import apsw

from journal_index.config import now_ms
from journal_index.data import read_sql
from journal_index.data.store import Store
from journal_index.formats import SUMMARY_KINDS, Entry, Root, ToolCall, get_format, open_journal
from journal_index.query.excerpt import Excerpt, make_excerpt
from journal_index.query.hits import (
    TIME_EXAMPLE,
    Filters,
    Hit,
    QueryError,
    SearchResult,
    iso,
    parse_time_bound,
    short_entry_id,
)
from journal_index.query.question import parse
from journal_index.query.ranking import match_quality, rank, rerank
from journal_index.query.scope import Scope, SessionRef
from journal_index.semantic.fusion import fuse, start
from journal_index.text import giant_line
from journal_index.text.call_lookback import process_lookback
from journal_index.text.call_sites import find_call
from journal_index.text.entry_text import call_summary, entry_text, searchable_text, thinking_apart
from journal_index.text.text_forms import indexed_part

__all__ = ["TIME_EXAMPLE", "Filters", "Hit", "QueryError", "SearchResult", "iso", "parse_time_bound", "read",
           "search", "short_entry_id", "summaries"]

PAGE_CHARS = 16_000
# Journals a Reader keeps open between reads: a search reads a few journals many times (the
# re-ranked candidates, the echo check's window, the page), mostly the same ones.
OPEN_JOURNALS = 16
UNAVAILABLE = "[journal line unavailable]"
# Redo one journal from its start (it was rewritten under the index); True when that moved
# anything. The query side never writes the index itself: the service layer hands this in.
Reindex = Callable[[str], bool]
Roots = Sequence[Root | str | os.PathLike[str]] | None


class Reader:
    """Re-reads and verifies journal lines, and tokenizes for excerpts, over one store."""

    def __init__(self, store: Store, roots: Roots = None, reindex: Reindex | None = None) -> None:
        self.store = store
        # Without it, a line that is not its entry reads as unavailable and nothing is redone.
        self.reindex = reindex
        # Journals are only opened where they resolve inside these folders (None: anywhere,
        # for in-process callers and tests); a tampered path or a symlink out reads as unavailable.
        self.roots = None if roots is None else [os.path.realpath(os.fspath(r.path if isinstance(r, Root) else r))
                                                 for r in roots]
        self._tokenizer = store.conn.fts5_tokenizer("porter", ["unicode61", "remove_diacritics", "2"])
        # Lines parsed in this search, by (path, offset, length): re-ranking reads the best
        # candidates, and the page then shows most of them. A Reader lives for one search.
        self._parsed: dict[tuple[str, int, int], Entry | None] = {}
        self._resolved: dict[str, str | None] = {}
        self._real_folders: dict[str, str] = {}
        # ...and each hit's entry with its call, so a hit asked for again (re-ranking, echoes,
        # the page) does not open its journal again.
        self._found: dict[tuple[str, str, int, int, str, int | None, int | None],
                          tuple[Entry, ToolCall | None] | None] = {}
        self._starts: dict[tuple[str, int, str], ToolCall | None] = {}  # a poll's command, by poll
        self._journals: dict[str, BinaryIO] = {}  # open, least recently read first (OPEN_JOURNALS at most)

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    def close(self) -> None:
        """Close the journals kept open (the Reader still works: it opens them again)."""
        journals = getattr(self, "_journals", {})
        while journals:
            journals.popitem()[1].close()

    def _journal(self, path: str) -> int:
        """A descriptor of the journal at ``path``, opened once and kept for the next reads."""
        handle = self._journals.pop(path, None)
        if handle is None:
            handle = open_journal(path)
            if len(self._journals) >= OPEN_JOURNALS:
                self._journals.pop(next(iter(self._journals))).close()
        self._journals[path] = handle
        return handle.fileno()

    def tokenize(self, text: str) -> list[str]:
        tokens = self._tokenizer(text.encode("utf-8"), apsw.FTS5_TOKENIZE_QUERY, None,
                                 include_offsets=False)
        return [str(t[0]) for t in tokens]

    def query_terms(self, groups: list[list[str]]) -> set[str]:
        return {token for group in groups for token in self.tokenize(" ".join(group))}

    def resolve(self, path: str) -> str | None:
        """The path to open (symlinks and ``..`` resolved), or None when it lies outside the roots."""
        if self.roots is None:
            return path
        if path not in self._resolved:  # realpath stats every component: once per folder per search
            real = self._real(path)
            inside = any(real.startswith(root.rstrip(os.sep) + os.sep) for root in self.roots)
            self._resolved[path] = real if inside else None
        return self._resolved[path]

    def _real(self, path: str) -> str:
        """``os.path.realpath(path)``, with the folder's real path found once per search: a name
        that is not a symlink is the real folder joined with it (one lstat, not one per component)."""
        folder, name = os.path.split(path)
        if name in ("", ".", ".."):
            return os.path.realpath(path)
        try:
            if stat.S_ISLNK(os.lstat(path).st_mode):
                return os.path.realpath(path)
        except OSError:
            return os.path.realpath(path)
        if folder not in self._real_folders:
            self._real_folders[folder] = os.path.realpath(folder)
        return os.path.join(self._real_folders[folder], name)

    def _entry_and_call(self, hit: Hit) -> tuple[Entry, ToolCall | None] | None:
        """The entry at the hit's place and, for a result, the call it answers; None if the line
        is not it or the call's line moved (the journal was rewritten)."""
        path = self.resolve(hit.path)
        if path is None:
            return None
        key = (path, hit.format, hit.offset, hit.length, hit.entry_id, hit.link_offset, hit.link_length)
        if key not in self._found:
            try:
                self._found[key] = self._read_entry_and_call(path, hit)
            except OSError:
                return None  # not kept: a journal that could not be opened is tried again
        return self._found[key]

    def _read_entry_and_call(self, path: str, hit: Hit) -> tuple[Entry, ToolCall | None] | None:
        fd = self._journal(path)
        parsed = self._entry(fd, path, hit)
        if parsed is None:
            return None
        if hit.link_offset is None or hit.link_length is None or not parsed.answers:
            return parsed, None
        call_line = os.pread(fd, hit.link_length, hit.link_offset)
        site = find_call(get_format(hit.format), parsed.answers, call_line, hit.link_offset)
        return None if site is None else (parsed, site.call)

    def verified_text(self, hit: Hit, searchable_only: bool = False) -> str | None:
        """The redacted text of the entry at the hit's place, or None if the line is not it.

        ``searchable_only``: of a giant entry, only the head and tail that hold its terms
        (what an excerpt can show), so a 1 MB tool result is not redacted whole per search.
        """
        found = self._entry_and_call(hit)
        if found is None:
            return None
        parsed, call = found
        return searchable_text(parsed, call) if searchable_only else entry_text(parsed, call)

    def verified_apart(self, hit: Hit) -> tuple[str, list[str]] | None:
        """As :meth:`verified_text`, with the entry's thinking apart: (the text without it, each
        thinking part), all redacted; None if the line is not it."""
        found = self._entry_and_call(hit)
        return None if found is None else thinking_apart(*found)

    def scoring_text(self, hit: Hit, limit: int = 8_000) -> str | None:
        """The entry's text (a result's led by its call's summary, as the hit shows it), unredacted
        and cut to ``limit`` characters, for re-ranking only: it never leaves this process
        (nothing is shown from it). None if the line is not it."""
        found = self._entry_and_call(hit)
        if found is None:
            return None
        parsed, call = found
        # A result's words include its call's: "what did alembic heads print" names the call.
        lead = call_summary(call) + "\n" if call is not None else ""
        if call is not None and call.reads_process is not None:
            # A poll was found by the command that started its process too (the index files
            # its output under it): the re-ranker reads those words where the index did.
            started = self._process_start(hit, call.reads_process)
            if started is not None and started.shown:
                lead += call_summary(started) + "\n"
        return (lead + parsed.text)[:limit]

    def _process_start(self, hit: Hit, process: str) -> ToolCall | None:
        """The call that started the process a poll's result reads, found before the poll as
        the indexer finds it (None when it is out of reach)."""
        path = self.resolve(hit.path)
        if path is None:
            return None
        key = (path, hit.offset, process)
        if key not in self._starts:
            try:
                site = process_lookback(self._journal(path), get_format(hit.format), hit.offset, process, hit.offset)
            except OSError:
                return None
            self._starts[key] = site.call if site is not None else None
        return self._starts[key]

    def said_text(self, hit: Hit) -> str | None:
        """What the entry says besides its tool calls and their output (unredacted, for re-ranking
        only), or None if the line is not it."""
        found = self._entry_and_call(hit)
        return None if found is None else "\n".join(found[0].parts)

    def only_thinking(self, hit: Hit) -> bool:
        """Whether the entry at the hit's place is only the model's readable thinking: no reply,
        no call, no output (False if the line is not it)."""
        found = self._entry_and_call(hit)
        if found is None:
            return False
        entry = found[0]
        return bool(entry.parts) and len(entry.thinking_at) == len(entry.parts) and not entry.calls and not entry.output

    def progress_note(self, hit: Hit) -> bool:
        """Whether the journal marks the entry at the hit's place a note written between steps
        (False if the line is not it)."""
        found = self._entry_and_call(hit)
        return found is not None and found[0].progress

    def forget(self) -> None:
        """Drop the lines read so far and close the journals (one was reindexed after a rewrite:
        its path may name another file now)."""
        self.close()
        self._parsed.clear()
        self._resolved.clear()
        self._real_folders.clear()
        self._found.clear()

    def _entry(self, fd: int, path: str, hit: Hit) -> Entry | None:
        """The entry on the hit's line, or None if the line is not it (read once per search)."""
        key = (path, hit.offset, hit.length)
        if key not in self._parsed:
            line: bytes | None
            if hit.length > giant_line.limit():  # read as the indexer did: its head and tail
                giant = giant_line.read_giant(fd, hit.offset, hit.length)
                line = giant_line.condensed_line(giant) if giant is not None else None
            else:
                line = os.pread(fd, hit.length, hit.offset)
                line = line if len(line) == hit.length else None
            parsed = get_format(hit.format).parse_line(line, hit.offset) if line is not None else None
            self._parsed[key] = parsed if isinstance(parsed, Entry) else None
        entry = self._parsed[key]
        return entry if entry is not None and entry.entry_id == hit.entry_id else None


def reindex_stale(store: Store, reader: Reader, paths: Iterable[str]) -> bool:
    """Reindex the journals whose lines turned out not to be their entries (those inside the
    roots only: a journal outside them is never read). True when that moved anything; then the
    lines read so far may have moved too, and the reader forgets them."""
    if reader.reindex is None:
        return False
    changed = False
    for path in paths:
        if reader.resolve(path) is None:
            continue
        changed = reader.reindex(path) or changed
    if changed:
        reader.forget()
    return changed

def _page(store: Store, reader: Reader, ranked: list[Hit], terms: set[str], limit: int,
          retry: bool) -> list[Hit] | None:
    """The first ``limit`` hits with verified excerpts, copies collapsed into the first of them
    (a /fork or branch copy repeats text under new ids: one slot, the others noted). None when
    a journal turned out rewritten and was reindexed: rank again."""
    out: list[Hit] = []
    by_text: dict[tuple[str, int | str], Hit] = {}
    stale: dict[str, list[Hit]] = {}
    for hit in ranked:
        if len(out) >= limit:
            break
        text = reader.verified_text(hit, searchable_only=True)
        if text is None:
            stale.setdefault(hit.path, []).append(hit)
            hit.excerpt, hit.spans = UNAVAILABLE, []
            out.append(hit)
            continue
        # Only the indexed part can hold the matched terms; a giant entry is not collapsed whole.
        excerpt: Excerpt = make_excerpt(indexed_part(text), terms, reader.tokenize)
        hit.excerpt, hit.spans = excerpt.text, excerpt.spans
        # Copies show the same words: one slot. With a query, what is shown is the excerpt (fork
        # copies of a summary differ only where nobody looks); without one, the whole text.
        first = by_text.setdefault((hit.kind, hit.excerpt if terms else hash(text)), hit)
        if first is not hit:
            if hit.session_id and hit.session_id != first.session_id and hit.session_id not in first.also_in:
                first.also_in.append(hit.session_id)
            continue
        out.append(hit)
    if stale and retry and reindex_stale(store, reader, stale):
        return None
    return out


def search(store: Store, query: str | None, filters: Filters, limit: int = 10,
           now: int | None = None, roots: Roots = None, reindex: Reindex | None = None) -> SearchResult:
    if limit < 1:
        raise QueryError("limit must be at least 1")
    with Reader(store, roots, reindex) as reader:
        question = parse(query or "")
        groups = question.groups
        terms = reader.query_terms(groups)
        asked = start(store, question.raw) if groups else None  # the meaning is read while words are ranked
        for attempt in (0, 1):
            if groups:
                ranked = rank(store, question, filters, now if now is not None else now_ms(), reader.tokenize)
                # ordered by score, which is what the JSON shows: nothing reorders after this
                ranked = rerank(store, ranked, question, reader.tokenize, reader.scoring_text, reader.said_text,
                                reader.only_thinking, reader.progress_note, limit)
                # where words fall short, what is nearest in meaning (the optional semantic layer)
                ranked = fuse(store, ranked, question.raw, filters, limit, asked)
            else:
                ranked = read_sql.newest_hits(store, filters.sql(), limit * 4)
            hits = _page(store, reader, ranked, terms, limit, retry=attempt == 0)
            if hits is not None:
                match, hint = match_quality(hits) if groups else ("all", None)
                return SearchResult(match, hint, filters.scope, hits)
    raise AssertionError("unreachable")  # pragma: no cover


def summaries(store: Store, filters: Filters, limit: int = 10, roots: Roots = None,
              reindex: Reindex | None = None) -> SearchResult:
    kinds = tuple(k for k in filters.kinds if k in SUMMARY_KINDS) or SUMMARY_KINDS
    narrowed = dataclasses.replace(filters, kinds=kinds)
    with Reader(store, roots, reindex) as reader:
        for attempt in (0, 1):
            newest = read_sql.newest_hits(store, narrowed.sql(), limit * 4)
            hits = _page(store, reader, newest, set(), limit, retry=attempt == 0)
            if hits is not None:
                return SearchResult("all", None, filters.scope, hits)
    raise AssertionError("unreachable")  # pragma: no cover


def _scope_words(scope: Scope) -> str:
    if scope.kind == "project":
        return f"project {scope.root}"
    return f"session {scope.session_id}" if scope.kind == "session" else "any indexed session"


MIN_PREFIX_CHARS = 4  # a shorter prefix names too many entries to be meant
_HEX = re.compile(r"^[0-9a-f]{1,8}$")
_PREFIX_CANDIDATES = 50


def entry_candidates(store: Store, entry_id: str, scope: Scope) -> list[Hit]:
    """The entries inside ``scope`` that ``entry_id`` names: those with exactly that id; else,
    for a prefix of at least MIN_PREFIX_CHARS, those whose id starts with it or (a synthetic
    id, "v1.<offset>.<crc>") whose CRC does, as people are shown (hits.short_entry_id).
    Only entries inside the scope are looked at, so a prefix is never ambiguous because of
    an entry the caller may not see."""
    within = scope.sql("f")
    exact = read_sql.hits_with_id(store, entry_id, within)
    if exact or len(entry_id) < MIN_PREFIX_CHARS:
        return exact
    found = read_sql.hits_with_id_prefix(store, entry_id, within, _PREFIX_CANDIDATES)
    if _HEX.match(entry_id):
        found += read_sql.hits_with_crc_prefix(store, entry_id, within, _PREFIX_CANDIDATES)
    return found


def _choose(candidates: list[Hit], session: SessionRef | None, prefer: Scope | None) -> Hit | list[Hit] | None:
    """The entry to read: the given session's copy; else the only one; else the only one inside
    ``prefer`` (the project a person reads from); else all of them (ambiguous). A prefix of
    several entries' ids is ambiguous wherever they are (only copies of one entry are chosen
    among)."""
    if session is not None:
        mine = [c for c in candidates if c.file_id == session.file_id]
        if len(mine) == 1:
            return mine[0]
    if len({c.entry_id for c in candidates}) > 1:
        return candidates
    if len(candidates) == 1:
        return candidates[0]
    if prefer is not None:
        near = [c for c in candidates if prefer.contains(c.cwd, c.file_id)]
        if len(near) == 1:
            return near[0]
    return candidates or None


def _ambiguous(entry_id: str, chosen: list[Hit]) -> dict[str, Any]:
    """Several entries (a prefix of several ids) or several copies (forks keep ids) are named."""
    several_ids = len({c.entry_id for c in chosen}) > 1
    return {
        "status": "ambiguous",
        "entryId": entry_id,
        "what": "entryId" if several_ids else "session",
        "candidates": [
            {"entryId": c.entry_id, "sessionId": c.session_id, "agent": c.format, "time": iso(c.ts),
             "kind": c.kind, "cwd": c.cwd}
            for c in chosen
        ],
    }


def locate_entry(store: Store, reader: Reader, entry_id: str, scope: Scope, session: SessionRef | None = None,
                 prefer: Scope | None = None) -> tuple[Hit, str] | dict[str, Any]:
    """The entry ``entry_id`` names inside ``scope`` and its verified, redacted text; or the
    answer saying why there is none (not_found, ambiguous, unavailable). A line that is not
    the entry makes its journal reindex once (it was rewritten), then the entry is looked for
    again. ``session`` and ``prefer`` choose among copies, as for :func:`read`."""
    for attempt in (0, 1):
        chosen = _choose(entry_candidates(store, entry_id, scope), session, prefer)
        if chosen is None:
            if attempt == 1:  # it was there until its journal turned out to be rewritten
                return {"status": "unavailable", "entryId": entry_id,
                        "reason": "the journal was rewritten and no longer holds this entry"}
            return {"status": "not_found", "entryId": entry_id, "where": _scope_words(scope)}
        if isinstance(chosen, list):
            return _ambiguous(entry_id, chosen)
        text = reader.verified_text(chosen)
        if text is None:
            if attempt == 0 and reader.reindex is not None and reader.resolve(chosen.path) is not None:
                reader.reindex(chosen.path)
                reader.forget()  # the lines read so far may have moved
                continue
            return {"status": "unavailable", "entryId": entry_id,
                    "reason": "the journal line no longer holds this entry"}
        return chosen, text
    return {"status": "unavailable", "entryId": entry_id, "reason": "the journal changed while reading"}


def read(store: Store, entry_id: str, scope: Scope, session: SessionRef | None = None,
         offset: int = 0, page_chars: int = PAGE_CHARS, roots: Roots = None, prefer: Scope | None = None,
         reindex: Reindex | None = None) -> dict[str, Any]:
    """One entry's verified, redacted text, a page at a time (journals opened only inside ``roots``).

    ``entry_id`` may be a unique prefix (:func:`entry_candidates`). ``session`` picks among
    copies of an entry (forks keep ids); ``prefer`` is the scope whose copy is meant when there
    are several and no session is given.
    """
    if offset < 0:
        raise QueryError("offset must be 0 or more")
    with Reader(store, roots, reindex) as reader:
        found = locate_entry(store, reader, entry_id, scope, session, prefer)
    if isinstance(found, dict):
        return found
    chosen, text = found
    total = len(text)
    if offset > total:
        raise QueryError(f"offset {offset} is past the end of the entry ({total} characters)")
    end = min(total, offset + page_chars)
    return {
        "status": "ok",
        "entryId": chosen.entry_id,
        "sessionId": chosen.session_id,
        "agent": chosen.format,
        "time": iso(chosen.ts),
        "kind": chosen.kind,
        "cwd": chosen.cwd,
        "text": text[offset:end],
        "offset": offset,
        "nextOffset": end if end < total else None,
        "totalChars": total,
    }
