"""``hub push``: send the shared projects' entries, redacted, to the hub.

Per host and journal the hub keeps a cursor (the last byte offset pushed, how many entries,
and a digest chaining their offsets and ids). Each batch of entries and the cursor that covers
them commit in one transaction, and rows are upserted by (host, journal, offset, entry id): a
push killed at any moment, or a hub restarted under it, leaves the hub where the next push
continues to exactly what one uninterrupted push gives. A journal whose pushed prefix no longer
matches the local index (rewritten, or reindexed differently) has its rows replaced.

The text sent is ``Reader.verified_text``: re-read from the journal, checked to be the entry,
redacted. Every other text column (ids, folders, names) is redacted too.

The hub's statements are here; the local index is read through :mod:`journal_index.data.read_sql`.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from journal_index.data import read_sql
from journal_index.data.store import Store
from journal_index.formats import Root
from journal_index.hub.connection import HubError, PushBusy, is_hub_failure
from journal_index.hub.forms import TS_CONFIG, clean, document_form
from journal_index.hub.shares import Share
from journal_index.indexing.indexer import index_file
from journal_index.query import Reader
from journal_index.query.hits import Hit
from journal_index.query.scope import Scope
from journal_index.redact import redact


def batch_size() -> int:
    """Entries per transaction ($JOURNAL_INDEX_HUB_BATCH; tests make it small to kill mid-push)."""
    return max(1, int(os.environ.get("JOURNAL_INDEX_HUB_BATCH", "500")))


@dataclass(frozen=True)
class LocalJournal:
    share: Share
    file_id: int
    path: str
    agent: str
    session_id: str | None
    cwd: str | None
    name: str | None
    started: int | None
    last_ts: int | None
    head_hash: str | None

    @property
    def key(self) -> str:
        # The path may hold a secret or a person's name: the hub keys journals by its hash.
        return hashlib.sha256(self.path.encode("utf-8", "surrogateescape")).hexdigest()


@dataclass
class PushReport:
    host: str
    journals: int = 0  # journals with something new
    entries: int = 0
    bytes: int = 0  # journal bytes of the entries pushed
    replaced: int = 0  # journals whose rows were replaced (rewritten)
    unavailable: int = 0  # entries left for the next push (their line was not the entry)
    seconds: float = 0.0
    by_project: dict[str, int] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"host": self.host, "journals": self.journals, "entries": self.entries, "bytes": self.bytes,
                "replaced": self.replaced, "unavailable": self.unavailable, "seconds": round(self.seconds, 3),
                "byProject": self.by_project}


def shared_journals(store: Store, shares: Sequence[Share]) -> list[LocalJournal]:
    """The indexed journals inside the shared folders (a journal in two nested shares belongs
    to the innermost)."""
    chosen: dict[int, LocalJournal] = {}
    for share in sorted(shares, key=lambda s: len(s.folder)):
        where, params = Scope("project", root=share.folder).sql("f")
        for meta in read_sql.journal_metas(store, (where, params)):
            chosen[meta.id] = LocalJournal(share, *meta)
    return sorted(chosen.values(), key=lambda j: j.path)


def local_entries(store: Store, file_id: int) -> int:
    """How many entries the local index holds of one journal."""
    return read_sql.entry_count(store, file_id)


def _chain(digest: str, hit: Hit) -> str:
    return hashlib.sha256(f"{digest}|{hit.offset}|{hit.entry_id}".encode()).hexdigest()[:32]


def claim_host(conn: Any, host: str) -> None:
    """Register ``host`` to this member (first come); refuse a host another member owns."""
    with conn.cursor() as cur:
        cur.execute("INSERT INTO hub_hosts (host) VALUES (%s) ON CONFLICT DO NOTHING", (host,))
        cur.execute("SELECT 1 FROM hub_hosts WHERE host = %s", (host,))
        mine = cur.fetchone() is not None
    conn.commit()
    if not mine:
        raise HubError(f"host {redact(host)!r} is registered on the hub to another member; "
                       "set JOURNAL_INDEX_HOST to a name of your own")


def my_teams(conn: Any) -> list[str]:
    with conn.cursor() as cur:
        cur.execute("SELECT team FROM hub_team_members WHERE member = current_user ORDER BY team")
        teams = [str(r[0]) for r in cur.fetchall()]
    conn.rollback()
    return teams


def team_of(share: Share, teams: list[str]) -> str:
    if share.team is not None:
        if share.team not in teams:
            raise HubError(f"you are not in team {share.team!r} on the hub (yours: {', '.join(teams) or 'none'}); "
                           f"share {redact(share.folder)} again with --team TEAM")
        return share.team
    if len(teams) == 1:
        return teams[0]
    if not teams:
        raise HubError("your role is in no team on the hub; ask its owner to add you (README, \"Team hub\")")
    raise HubError(f"you are in several teams ({', '.join(teams)}); share {redact(share.folder)} "
                   "again with --team TEAM")


_UPSERT_JOURNAL = """
INSERT INTO hub_journals (host, journal, team, project, agent, session_id, path, cwd, name, started, last_ts,
                          head_hash, pushed_offset, pushed_entries, digest)
VALUES (%(host)s, %(journal)s, %(team)s, %(project)s, %(agent)s, %(session_id)s, %(path)s, %(cwd)s, %(name)s,
        %(started)s, %(last_ts)s, %(head_hash)s, %(pushed_offset)s, %(pushed_entries)s, %(digest)s)
ON CONFLICT (host, journal) DO UPDATE SET
    team = EXCLUDED.team, project = EXCLUDED.project, agent = EXCLUDED.agent, session_id = EXCLUDED.session_id,
    path = EXCLUDED.path, cwd = EXCLUDED.cwd, name = EXCLUDED.name, started = EXCLUDED.started,
    last_ts = EXCLUDED.last_ts, head_hash = EXCLUDED.head_hash, pushed_offset = EXCLUDED.pushed_offset,
    pushed_entries = EXCLUDED.pushed_entries, digest = EXCLUDED.digest, pushed_at = now()
"""

_UPSERT_ENTRY = f"""
INSERT INTO hub_entries (host, journal, "offset", team, project, entry_id, ts, kind, role, tool, call_name, text,
                         chars, digest, terms)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s,
        setweight(to_tsvector('{TS_CONFIG}', %s), 'A') || setweight(to_tsvector('{TS_CONFIG}', %s), 'B')
        || setweight(to_tsvector('{TS_CONFIG}', %s), 'D'))
ON CONFLICT (host, journal, "offset") DO UPDATE SET
    team = EXCLUDED.team, project = EXCLUDED.project, entry_id = EXCLUDED.entry_id, ts = EXCLUDED.ts,
    kind = EXCLUDED.kind, role = EXCLUDED.role, tool = EXCLUDED.tool, call_name = EXCLUDED.call_name,
    text = EXCLUDED.text, chars = EXCLUDED.chars, digest = EXCLUDED.digest, terms = EXCLUDED.terms
"""


def _journal_params(host: str, journal: LocalJournal, team: str, offset: int, count: int,
                    digest: str, last_ts: int | None) -> dict[str, Any]:
    def red(text: str | None) -> str | None:
        return clean(redact(text)) if text is not None else None

    return {"host": host, "journal": journal.key, "team": team, "project": journal.share.identity,
            "agent": journal.agent, "session_id": red(journal.session_id), "path": red(journal.path),
            "cwd": red(journal.cwd), "name": red(journal.name), "started": journal.started, "last_ts": last_ts,
            "head_hash": journal.head_hash, "pushed_offset": offset, "pushed_entries": count, "digest": digest}


def _entry_row(host: str, journal: LocalJournal, team: str, hit: Hit, text: str) -> tuple[Any, ...]:
    tool = clean(redact(hit.tool)) if hit.tool else None
    call = clean(text.split("\n", 1)[0][:200]) if hit.kind == "tool_result" and hit.link_offset is not None else None
    name = journal.name and redact(journal.name)
    body = clean(text) or ""
    return (host, journal.key, hit.offset, team, journal.share.identity, clean(redact(hit.entry_id)), hit.ts,
            hit.kind, hit.role, tool, call, body, len(body),
            hashlib.blake2b(body.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest(),
            document_form(" ".join(p for p in (tool, call) if p)), document_form(name), document_form(body))


def _remote_cursor(conn: Any, host: str, journal: LocalJournal) -> tuple[Any, ...] | None:
    with conn.cursor() as cur:
        cur.execute("SELECT head_hash, pushed_offset, pushed_entries, digest, team, project FROM hub_journals "
                    "WHERE host = %s AND journal = %s", (host, journal.key))
        row = cur.fetchone()
    conn.rollback()
    return tuple(row) if row is not None else None


def _push_journal(conn: Any, store: Store, reader: Reader, host: str, journal: LocalJournal, team: str,
                  report: PushReport) -> bool:
    """Push what is new in one journal; False when a line was not its entry (reindex, then again)."""
    local = read_sql.journal_entries(store, journal.file_id)
    remote = _remote_cursor(conn, host, journal)
    offset, count, digest = -1, 0, ""
    if remote is not None:
        head, r_offset, r_count, r_digest, r_team, r_project = remote
        prefix = [h for h in local if h.offset <= r_offset]
        for hit in prefix:
            digest = _chain(digest, hit)
        same = (head == journal.head_hash and len(prefix) == r_count and digest == r_digest
                and r_team == team and r_project == journal.share.identity)
        if same:
            offset, count = int(r_offset), int(r_count)
        else:
            digest = ""
    pending = [h for h in local if h.offset > offset]
    if remote is not None and offset == -1 and (remote[1] != -1 or remote[2] != 0):
        report.replaced += 1  # rewritten: its rows go in the same transaction as the reset cursor
    if remote is None or offset == -1:
        with conn.transaction(), conn.cursor() as cur:
            cur.execute("DELETE FROM hub_entries WHERE host = %s AND journal = %s", (host, journal.key))
            cur.execute(_UPSERT_JOURNAL, _journal_params(host, journal, team, -1, 0, "", None))
    if not pending:
        return True
    report.journals += 1
    size = batch_size()
    last_ts: int | None = None
    for start in range(0, len(pending), size):
        batch = pending[start:start + size]
        rows: list[tuple[Any, ...]] = []
        for hit in batch:
            text = reader.verified_text(hit)
            if text is None:
                report.unavailable += len(pending) - start - len(rows)
                return False
            rows.append(_entry_row(host, journal, team, hit, text))
            digest = _chain(digest, hit)
            last_ts = max(last_ts or 0, hit.ts or 0) or last_ts
        count += len(batch)
        offset = batch[-1].offset
        with conn.transaction(), conn.cursor() as cur:
            cur.executemany(_UPSERT_ENTRY, rows)
            cur.execute(_UPSERT_JOURNAL, _journal_params(host, journal, team, offset, count, digest,
                                                         journal.last_ts or last_ts))
        report.entries += len(batch)
        report.bytes += sum(h.length for h in batch)
        report.by_project[journal.share.identity] = report.by_project.get(journal.share.identity, 0) + len(batch)
    return True


_PUSH_LOCK = "hashtext('journal-index push ' || %s)"  # the advisory lock's key, one per host


def push(conn: Any, store: Store, shares: Sequence[Share], host: str,
         roots: Sequence[Root | str | os.PathLike[str]] | None = None, wait: bool = True) -> PushReport:
    """Push every shared journal's new entries (the local index is brought up to date first by
    the caller). Raises psycopg errors when the hub fails; what was committed stays. With
    ``wait=False``, PushBusy when another push from this host is running, instead of waiting."""
    started = time.perf_counter()
    report = PushReport(host)
    claim_host(conn, host)
    # One push per host at a time (watch and a manual push): a second one waits. A session lock,
    # so a killed push's connection gives it back when the server notices the socket closed.
    # watch does not wait: waiting inside the server, it could not stop on a signal.
    if wait:
        conn.execute(f"SELECT pg_advisory_lock({_PUSH_LOCK})", (host,))
    else:
        row = conn.execute(f"SELECT pg_try_advisory_lock({_PUSH_LOCK})", (host,)).fetchone()
        if not (row and row[0]):
            conn.commit()
            raise PushBusy(f"another push from host {redact(host)!r} is running")
    conn.commit()
    try:
        _push_shared(conn, store, shares, host, roots, report)
    finally:
        _unlock(conn, host)
    report.seconds = time.perf_counter() - started
    return report


def _push_shared(conn: Any, store: Store, shares: Sequence[Share], host: str,
                 roots: Sequence[Root | str | os.PathLike[str]] | None, report: PushReport) -> None:
    teams = my_teams(conn)
    team_by_folder = {share.folder: team_of(share, teams) for share in shares}
    reader = Reader(store, roots)
    for journal in shared_journals(store, shares):
        team = team_by_folder[journal.share.folder]
        if not _push_journal(conn, store, reader, host, journal, team, report):
            index_file(store, journal.path, rebuild=True)  # the journal changed since it was indexed
            reader.forget()
            fresh = next((j for j in shared_journals(store, [journal.share]) if j.path == journal.path), None)
            if fresh is not None:
                _push_journal(conn, store, reader, host, fresh, team, report)


def _unlock(conn: Any, host: str) -> None:
    """Give the push lock back at once: the next push of this host (watch pushes every few
    seconds on a new connection) must not find it held while the server is still closing this
    connection. When the connection has failed, its closing gives the lock back."""
    try:
        conn.rollback()
        conn.execute(f"SELECT pg_advisory_unlock({_PUSH_LOCK})", (host,))
        conn.commit()
    except Exception as exc:
        if not is_hub_failure(exc):
            raise


def forget(conn: Any, what: str) -> tuple[int, int]:
    """Remove what a host, or a project, sent (RLS: only rows this member may delete): (journals, entries)."""
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM hub_entries WHERE host = %s OR project = %s", (what, what))
        row = cur.fetchone()
        entries = int(row[0]) if row else 0
        cur.execute("DELETE FROM hub_journals WHERE host = %s OR project = %s", (what, what))
        journals = cur.rowcount
        cur.execute("DELETE FROM hub_hosts WHERE host = %s AND NOT EXISTS "
                    "(SELECT 1 FROM hub_journals j WHERE j.host = hub_hosts.host)", (what,))
    return journals, entries


def pushed_by_project(conn: Any, host: str) -> dict[str, int]:
    """How many entries the hub holds from ``host``, by project (as its cursors say)."""
    with conn.cursor() as cur:
        cur.execute("SELECT project, sum(pushed_entries) FROM hub_journals WHERE host = %s GROUP BY project", (host,))
        found = {str(p): int(n) for p, n in cur.fetchall()}
    conn.rollback()
    return found
