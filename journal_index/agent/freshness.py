"""How fresh the index is, and a background thread that keeps it so (for ``journal-index mcp``).

:func:`pending` compares the session roots with the index: journals it holds that grew or changed
since it last looked at them, and journals it has never seen. An answer is complete only when
there are none (besides the caller's own journal, indexed just before).

:class:`Freshener` runs backfill passes (:func:`journal_index.indexing.backfill.backfill`, under the
backfill lease, on its own connection) in a thread of the MCP server: one when it starts, one a
moment after each call, and one every :data:`IDLE_SECONDS` otherwise. So what another session
said is found by the next call of this one, without ``watch`` and without making a call wait.
When ``watch`` (or another server) holds the lease, its passes do the work and ours step aside;
ours give the lease back after each pass so that they can take it. With the `semantic` extra
installed, a pass that held the lease then embeds what was said for a few seconds
(:func:`journal_index.semantic.background.embed_pending`), and asks for another pass soon while any is left.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import apsw

from journal_index.data import index_sql
from journal_index.data.store import Store, open_store
from journal_index.formats import Root, choose_format, open_journal
from journal_index.indexing import backfill
from journal_index.indexing.folder_watch import FolderWatch
from journal_index.indexing.indexer import NOT_INDEXED, Listings, discover_stats, unread_bytes
from journal_index.indexing.journal_blocks import HEAD_BYTES
from journal_index.semantic import fusion

PASS_GAP_SECONDS = 2.0  # a call asks for a pass; passes start at most this often
IDLE_SECONDS = 30.0  # and one runs this often without calls
NICENESS = 10  # the pass thread yields the cores to the agent's own work (Linux: per thread)
EMBED_SECONDS = 3.0  # semantic layer: embedding after a pass, at most this long (then the next pass)


@dataclass
class Pending:
    """What the index lacks: journals with bytes it has not read, and how many bytes."""

    grown: int = 0  # journals it holds that grew or changed since it last looked
    unseen: int = 0  # journals it has never seen
    bytes: int = 0
    paths: list[str] = field(default_factory=list)  # newest first

    @property
    def journals(self) -> int:
        return self.grown + self.unseen

    def as_json(self) -> dict[str, int]:
        return {"journals": self.journals, "grown": self.grown, "unseen": self.unseen, "bytes": self.bytes}

    def text(self) -> str:
        parts = []
        if self.grown:
            parts.append(f"{self.grown} grown")
        if self.unseen:
            parts.append(f"{self.unseen} new")
        journals = "journal" if self.journals == 1 else "journals"
        return f"{self.journals} {journals} ({', '.join(parts)}, {_size(self.bytes)}) not indexed yet"


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{max(1, round(n / 1000))} KB"


def _is_journal(path: str, roots: list[Root]) -> bool:
    """Whether a file the index never saw would be indexed: it has a complete first line and a
    registered format claims it (the roots may hold other ``.jsonl`` files)."""
    try:
        with open_journal(path) as handle:
            head = handle.read(HEAD_BYTES)
    except OSError:
        return False
    cut = head.rfind(b"\n")
    if cut < 0:
        return len(head) >= HEAD_BYTES  # a first line longer than the head: let the indexer decide
    return choose_format(path, head[:cut], roots) is not None


class Scans:
    """What :func:`pending` keeps from one call of the agent tool to the next: the folders'
    listings (:class:`journal_index.indexing.indexer.Listings`) and the index's stamps of its
    journals, read again only once the index changed (a commit of another connection moves
    ``PRAGMA data_version``, one of this connection its ``total_changes``)."""

    def __init__(self) -> None:
        # Watched folders: while the kernel reports nothing in them, no journal is stat'ed again.
        self.listings = Listings(watch=FolderWatch())
        self._stamps: dict[str, index_sql.FileStamp] = {}
        self._as_of: tuple[Store, int, int] | None = None
        # The last answer, and what it was made of: the same again while the roots, the stamps,
        # the journals skipped and every journal's stat are (Listings.unchanged).
        self.answered: tuple[list[Root], dict[str, index_sql.FileStamp], set[str], Pending] | None = None

    def stamps(self, store: Store) -> dict[str, index_sql.FileStamp]:
        as_of = (store, int(store.value("PRAGMA data_version", default=0)), store.conn.total_changes())
        if self._as_of is None or self._as_of[0] is not store or self._as_of[1:] != as_of[1:]:
            self._stamps = index_sql.file_stamps(store)
            self._as_of = as_of
        return self._stamps


def pending(store: Store, roots: Iterable[Root], skip: Iterable[str] = (), scans: Scans | None = None) -> Pending:
    """Journals under ``roots`` (but ``skip``) that the index does not hold as they are now
    (``scans``: what the last call kept, so that only what changed is looked at again)."""
    rooted = [r for r in roots if r.path.is_dir()]
    answered = None
    if scans is not None:  # the last answer is kept again only once this one is made
        answered, scans.answered = scans.answered, None
    skipped = {os.path.abspath(p) for p in skip}
    # Once per call of the agent tool: one walk that keeps each journal's stat, one query.
    found = discover_stats(rooted, scans.listings if scans is not None else None, frozenset(skipped))
    known = scans.stamps(store) if scans is not None else index_sql.file_stamps(store)
    if scans is not None and answered is not None and scans.listings.unchanged:
        roots_then, known_then, skipped_then, answer = answered
        if roots_then == rooted and known_then is known and skipped_then == skipped:
            scans.answered = answered
            return dataclasses.replace(answer, paths=list(answer.paths))
    out = Pending()
    for path, st in found:
        stamp = known.get(path)
        size = unread_bytes(stamp or NOT_INDEXED, st)
        if size <= 0 or path in skipped:
            continue
        if stamp is not None:
            out.grown += 1
        elif _is_journal(path, rooted):
            out.unseen += 1
        else:
            continue
        out.bytes += size
        out.paths.append(path)
    if scans is not None:
        scans.answered = (rooted, known, skipped, dataclasses.replace(out, paths=list(out.paths)))
    return out


def nothing_to_do(store: Store, roots: list[Root], listings: Listings | None = None) -> bool:
    """Whether a backfill pass over ``roots`` would find nothing to do: every journal under them is
    the file the index recorded (device, inode, size, mtime, ctime: what a pass checks before it
    opens one) and every journal the index holds under them is still there. Anything else — a
    file it never saw (even one that turns out no journal), a row from before identities were
    recorded — says False: then a pass decides."""
    found = discover_stats([r for r in roots if r.path.is_dir()], listings)
    known = index_sql.file_stamps(store)
    seen = set()
    for path, st in found:
        kept = known.get(path)
        if kept is None or kept.ino is None or kept.ctime_ns is None or (
                kept.dev, kept.ino, kept.size, kept.mtime_ns, kept.ctime_ns) != (
                st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns):
            return False
        seen.add(path)
    prefixes = tuple(str(r.path).rstrip(os.sep) + os.sep for r in roots)
    # As the pass forgets journals: those under the roots that no longer exist.
    return not any(path.startswith(prefixes) and not os.path.exists(path) for path in known if path not in seen)


class Freshener:
    """Backfill passes in a daemon thread, on a connection of its own. After its first pass, one
    that would find nothing to do (:func:`nothing_to_do`, a few milliseconds) is not run: a pass
    looks at every journal several times and holds the interpreter for tens of milliseconds at
    a few hundred journals, which a call arriving then would wait for."""

    def __init__(self, db_path: str, roots: list[Root]) -> None:
        self.db_path = db_path
        self.roots = roots  # shared with the tool, which may add a folder to it
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._store: Store | None = None
        self._passed = threading.Event()  # set at the end of each pass
        self.passes = 0  # passes run to their end (for tests and logs)
        self.skipped = 0  # passes not run: nothing to do
        self._listings = Listings()  # this thread's own (the tool's calls keep theirs)
        self.last_error: str | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="freshener", daemon=True)
            self._thread.start()

    def wait_for_a_pass(self, seconds: float) -> bool:
        """Wait until a pass has ended (at most ``seconds``): the first call to a brand-new index
        would find nothing otherwise. True when one did."""
        return self._passed.wait(seconds)

    def wait_until(self, filled: Callable[[], bool], seconds: float) -> None:
        """Wait (at most ``seconds``) until ``filled()`` holds, checked after each pass of ours
        and every tenth of a second: a pass that took no lease (another server or `watch` holds
        it, and fills the index) ends at once, and the first call must not go on with nothing.
        A stop ends the wait."""
        deadline = time.monotonic() + seconds
        while not filled() and not self._stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            (self._stop if self._passed.is_set() else self._passed).wait(min(left, 0.1))

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def poke(self) -> None:
        """A call came: run a pass soon (it will not wait for it)."""
        self._wake.set()

    def stop(self, wait_seconds: float = 1.0) -> None:
        """Stop the pass in progress (its open transaction rolls back) and close the connection."""
        self._stop.set()
        self._wake.set()
        self._passed.set()  # a call waiting for the first pass goes on (to its end)
        store = self._store
        if store is not None:
            with contextlib.suppress(apsw.Error):
                store.conn.interrupt()
        if self._thread is not None:
            self._thread.join(wait_seconds)
            if self._thread.is_alive():
                return  # still inside a statement: the process exit takes the connection with it
        self._close_store()

    def _close_store(self) -> None:
        if self._store is not None:
            with contextlib.suppress(apsw.Error):
                self._store.close()
            self._store = None

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            self._pass()
            if self.passes == 1 and sys.platform.startswith("linux"):
                # After the first pass (a first call may be waiting for it), the agent's work comes first.
                with contextlib.suppress(OSError, AttributeError):
                    os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICENESS)
            self._wake.wait(IDLE_SECONDS)
            self._wake.clear()
            # However often calls come, passes start PASS_GAP_SECONDS apart at most.
            self._stop.wait(max(0.0, started + PASS_GAP_SECONDS - time.monotonic()))
        self._close_store()

    def _pass(self) -> None:
        try:
            if self._store is None:
                self._store = open_store(self.db_path)
            if self.passes and fusion.mode() == "off" and nothing_to_do(self._store, list(self.roots),
                                                                          self._listings):
                self.skipped += 1  # (with the semantic layer on, a pass also embeds: it runs)
                return
            lease = backfill.Lease(self._store)
            try:
                report = backfill.backfill(self._store, list(self.roots), lease, stop=self._stop.is_set)
                if report.ran and not report.lost and fusion.mode() != "off":
                    self._embed(self._store)
            finally:
                with contextlib.suppress(apsw.Error):
                    lease.release()  # `watch` or another server may take it between our passes
            self.passes += int(report.ran and not report.stopped and not report.lost)
            self.last_error = None
        except Exception as exc:  # a busy or broken index: the calls report it; try again next pass
            self.last_error = f"{type(exc).__name__}: {exc}"
            self._close_store()
        finally:
            self._passed.set()

    def _embed(self, store: Store) -> None:
        """Embed for a while under the lease we hold (one embedder at a time); when some is left,
        the next pass comes after the usual gap instead of the idle wait."""
        from journal_index.semantic import background as semantic

        done = semantic.embed_pending(store, EMBED_SECONDS, list(self.roots), stop=self._stop.is_set).done
        if not done:
            self._wake.set()

    def status(self) -> dict[str, Any]:
        return {"passes": self.passes, "skipped": self.skipped, "error": self.last_error}
