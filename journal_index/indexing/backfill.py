"""Backfill: bring every journal under the session roots up to date, newest first.

Only one process backfills at a time (DESIGN §7). It holds a lease, ``owner@expiry`` in
``meta.backfill_lease``, taken or renewed inside ``BEGIN IMMEDIATE`` so two processes can never
both see it free; it lasts 120 s and is renewed as the pass goes, and a backfill that finds
it taken by someone else stops. Every process may still index the journal it is serving
(that is plain :func:`indexer.index_file`). Progress is ``meta.backfill_progress`` =
``done/total@finishedEpochMs``, the ``@…`` part empty while a pass is running.
"""

from __future__ import annotations

import os
import secrets
import socket
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from journal_index.data import index_sql
from journal_index.data.store import Store
from journal_index.formats import RootLike
from journal_index.indexing import indexer

LEASE_KEY = "backfill_lease"
PROGRESS_KEY = "backfill_progress"
LEASE_SECONDS = 120
# Unchanged journals cost a stat and a SELECT; renewing the lease after each of them would
# be one write transaction per journal per pass. They renew at most this often instead.
IDLE_RENEW_SECONDS = 5.0


def new_owner() -> str:
    """``host:pid:random``: unique per process, readable in `status` and in logs."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


def parse_lease(raw: str | None) -> tuple[str, float] | None:
    """``owner@expiry`` → (owner, expiry epoch seconds); None for no or an unreadable lease."""
    if not raw:
        return None
    owner, sep, expiry = raw.rpartition("@")
    if not sep or not owner:
        return None
    try:
        return owner, float(expiry)
    except ValueError:
        return None


def progress_value(done: int, total: int, finished_ms: int | None = None) -> str:
    return f"{done}/{total}@{'' if finished_ms is None else finished_ms}"


def record_progress(store: Store, done: int, total: int, finished: bool) -> None:
    """Store progress outside a lease (``journal-index index`` reports its pass this way)."""
    with store.write():
        index_sql.put_meta(store, PROGRESS_KEY,
                  progress_value(done, total, int(time.time() * 1000) if finished else None))


class Lease:
    """This process's claim on the backfill. All reads and writes run in ``BEGIN IMMEDIATE``."""

    def __init__(self, store: Store, owner: str | None = None, seconds: float = LEASE_SECONDS,
                 clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.owner = owner or new_owner()
        self.seconds = seconds
        self.clock = clock
        self.held = False
        self.holder: str | None = None  # who held it when we last looked, if not us
        self.took_over: str | None = None  # the expired owner we took it from, on the last take
        self.renewed_at = 0.0

    def _claim(self, progress: str | None) -> None:
        now = self.clock()
        index_sql.put_meta(self.store, LEASE_KEY, f"{self.owner}@{int(now + self.seconds)}")
        if progress is not None:
            index_sql.put_meta(self.store, PROGRESS_KEY, progress)
        self.held, self.holder, self.renewed_at = True, None, now

    def acquire(self, progress: str | None = None) -> bool:
        """Take the lease when it is free, expired or ours (renewing it); False when another
        live process holds it."""
        self.took_over = None
        with self.store.write():
            current = parse_lease(self.store.get_meta(LEASE_KEY))
            if current is not None and current[0] != self.owner and current[1] > self.clock():
                self.held, self.holder = False, current[0]
                return False
            if current is not None and current[0] != self.owner:
                self.took_over = current[0]
            self._claim(progress)
        return True

    def renew(self, progress: str | None = None) -> bool:
        """Extend the lease if it is still ours; False (and ``held`` False) when it was taken."""
        with self.store.write():
            current = parse_lease(self.store.get_meta(LEASE_KEY))
            if current is not None and current[0] != self.owner:
                self.held, self.holder = False, current[0]
                return False
            self._claim(progress)
        return True

    def release(self) -> None:
        """Give the lease up (only if it is still ours), so the next backfiller need not wait."""
        if not self.held:
            return
        with self.store.write():
            current = parse_lease(self.store.get_meta(LEASE_KEY))
            if current is not None and current[0] == self.owner:
                index_sql.delete_meta(self.store, LEASE_KEY)
        self.held = False


@dataclass
class BackfillReport:
    ran: bool = False  # False: another process holds the lease
    holder: str | None = None
    took_over: str | None = None
    lost: bool = False  # the lease was taken from us during the pass
    stopped: bool = False  # asked to stop before the end
    total: int = 0
    done: int = 0
    changed: int = 0
    removed: int = 0
    report: indexer.IndexReport = field(default_factory=indexer.IndexReport)


def _under(path: str, roots: list[str]) -> bool:
    return any(path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def forget_vanished(store: Store, roots: Iterable[RootLike],
                    on_result: Callable[[indexer.FileResult], None] | None = None) -> int:
    """Drop the rows of journals under the roots that no longer exist."""
    absolute = [str(r.path) for r in indexer.as_roots(roots)]
    removed = 0
    for path in index_sql.known_paths(store):
        if _under(path, absolute) and not os.path.exists(path) and index_sql.remove_file(store, path):
            removed += 1
            if on_result is not None:
                on_result(indexer.FileResult(path, removed=True))
    return removed


# A backfill indexes in batches of about this many bytes to read (or this many journals): big
# enough for worker processes to pay off, small enough that `watch` serves its live journals
# and checks for a stop between them every second or two.
BATCH_BYTES = 48 * 1024 * 1024
BATCH_JOURNALS = 200


def batches(store: Store, paths: list[str]) -> Iterator[list[str]]:
    """``paths`` in order, cut into batches of at most BATCH_BYTES to read or BATCH_JOURNALS."""
    batch: list[str] = []
    size = 0
    for path, pending in zip(paths, indexer.pending_bytes(store, paths), strict=True):
        if batch and (size + pending > BATCH_BYTES or len(batch) >= BATCH_JOURNALS):
            yield batch
            batch, size = [], 0
        batch.append(path)
        size += pending
    if batch:
        yield batch


def backfill(
    store: Store,
    roots: Iterable[RootLike],
    lease: Lease,
    *,
    stop: Callable[[], bool] = lambda: False,
    on_result: Callable[[indexer.FileResult], None] | None = None,
    between: Callable[[], None] | None = None,
) -> BackfillReport:
    """One backfill pass under ``lease``: index what changed, forget what vanished.

    Journals are indexed in batches (:func:`batches`). ``stop`` is checked between batches;
    ``between`` runs after each (the watcher serves its live journals there, so a long backfill
    delays them by one batch at most); ``on_result`` sees each journal's result.
    """
    rooted = indexer.as_roots(roots)
    out = BackfillReport()
    if not lease.acquire():
        out.holder = lease.holder
        return out
    out.ran, out.took_over = True, lease.took_over
    started = time.perf_counter()
    paths = indexer.discover(rooted)
    out.total = len(paths)
    if not lease.renew(progress_value(0, out.total)):
        out.lost, out.holder = True, lease.holder
        return out
    out.removed = forget_vanished(store, rooted, on_result)
    for batch in batches(store, paths):
        if stop():
            out.stopped = True
            break
        results: list[indexer.FileResult] = []
        # A batch is one indexing pass: small journals share transactions, and a big one gets
        # the worker processes, as `journal-index index` does.
        # ``stop`` is asked between journals too: a first Ctrl-C finishes the journals started
        indexer.index_files(store, batch, progress=results.append, roots=rooted, stop=stop)
        changed = False
        for result in results:
            out.report.add(result)
            out.done += 1
            changed = changed or not result.unchanged
            out.changed += int(not result.unchanged)
            if on_result is not None:
                on_result(result)
        last = out.done == out.total
        if (changed or last or lease.clock() - lease.renewed_at >= IDLE_RENEW_SECONDS) and not lease.renew(
            progress_value(out.done, out.total, int(time.time() * 1000) if last else None)
        ):
            out.lost, out.holder = True, lease.holder
            break
        if between is not None:
            between()
    out.stopped = out.stopped or (out.done < out.total and not out.lost and stop())
    if out.total == 0 and not lease.renew(progress_value(0, 0, int(time.time() * 1000))):
        out.lost, out.holder = True, lease.holder
    out.report.seconds = time.perf_counter() - started
    return out


def run(store: Store, roots: Iterable[RootLike], *, owner: str | None = None,
        serve: Iterable[str | os.PathLike[str]] = (), stop: Callable[[], bool] = lambda: False,
        on_result: Callable[[indexer.FileResult], None] | None = None) -> BackfillReport:
    """What a process does when it starts: index the journals it serves (no lease needed),
    then backfill everything else if it wins the lease, and give the lease back."""
    roots = indexer.as_roots(roots)
    for path in serve:
        result = indexer.index_file(store, path, roots)
        if on_result is not None:
            on_result(result)
    lease = Lease(store, owner)
    try:
        return backfill(store, roots, lease, stop=stop, on_result=on_result)
    finally:
        lease.release()
