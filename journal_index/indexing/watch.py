"""`journal-index watch`: keep the index up to date while pi writes its journals.

Backfill first (under the lease), then follow the session roots: OS file events (watchdog,
one recursive observer per root) mark journals dirty; a short debounce coalesces a burst of
appends into one pass; a periodic rescan (a backfill pass, for whoever holds the lease) catches
anything the events missed. Dirty journals are a set of paths, so memory stays bounded by the
number of journals, never by the number of events; the indexer reads in chunks and commits in
small batches, so write transactions stay short. SIGINT/SIGTERM end the pass at the block
being written and exit 0 (a second signal interrupts at once; the open batch rolls back).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

import apsw
from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

from journal_index.data.store import BROKEN_INDEX, Store, recover
from journal_index.formats import RootLike
from journal_index.hub.watch_push import HubPusher
from journal_index.indexing import backfill, indexer
from journal_index.semantic import fusion
from journal_index.text.counts import count
from journal_index.text.output import redacting

if TYPE_CHECKING:  # the semantic layer's background is imported only when it embeds
    from journal_index.semantic.background import EmbedReport

# Opened / closed-without-writing are left out: our own reads would wake us up.
EVENT_TYPES: list[type[FileSystemEvent]] = [
    FileCreatedEvent, FileModifiedEvent, FileMovedEvent, FileDeletedEvent, FileClosedEvent,
    DirCreatedEvent, DirMovedEvent, DirDeletedEvent,
]
JOURNAL_SUFFIX = ".jsonl"
QUIET, NORMAL, VERBOSE = 0, 1, 2
EMBED_SECONDS = 2.0  # semantic layer: embedding runs in slices this long while nothing else is to do
# Embedding a large index takes hours (about 10 entries a second on one core): its progress is
# logged this often, and once when it catches up.
EMBED_LOG_SECONDS = 60.0
EMBED_BACKLOG = 100  # entries embedded in one go that make a backlog worth a line when done


@dataclass
class WatchOptions:
    rescan: float = 30.0  # seconds between fallback rescans
    debounce: float = 0.2  # seconds a burst of events is left to settle
    events: bool = True  # False: rescans only (file systems without change notification)
    verbosity: int = NORMAL


class Log:
    """One line per notable event on stderr."""

    def __init__(self, verbosity: int = NORMAL, stream: TextIO | None = None) -> None:
        self.verbosity = verbosity
        self.stream = redacting(stream or sys.stderr)  # paths come from journals: redacted

    def _line(self, level: str, message: str) -> None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
        # stderr may be closed (a detached service): logging must never stop the indexer.
        with contextlib.suppress(OSError, ValueError):
            print(f"{stamp} journal-index watch: {level}{message}", file=self.stream, flush=True)

    def error(self, message: str) -> None:
        self._line("error: ", message)

    def warning(self, message: str) -> None:
        if self.verbosity >= NORMAL:
            self._line("warning: ", message)

    def info(self, message: str) -> None:
        if self.verbosity >= NORMAL:
            self._line("", message)

    def debug(self, message: str) -> None:
        if self.verbosity >= VERBOSE:
            self._line("", message)


class EmbedLog:
    """When and what to log of the background embedding: its progress every EMBED_LOG_SECONDS
    while it works through a backlog (entries embedded, to go, and the time left at the pace
    since the last line), and one line when a backlog is done. The few entries of a session at
    work, embedded as they come, are not logged."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.since = clock()
        self.embedded = 0  # since the last line
        self.busy = 0.0  # seconds spent embedding since the last line
        self.backlog = False  # a progress line was logged since the last catch-up

    def after(self, report: EmbedReport, progress: Callable[[], dict[str, int]]) -> str | None:
        """The line to log after a slice, if any; ``progress()`` counts the index's vectors (a
        query: only asked when a line is due)."""
        self.embedded += report.embedded
        self.busy += report.seconds
        if report.done:
            line = None
            if self.backlog or self.embedded >= EMBED_BACKLOG:
                line = f"embedding: caught up, {count(progress()['embedded'], 'entry', 'entries')} embedded"
            self.backlog = False
        elif self.clock() - self.since < EMBED_LOG_SECONDS:
            return None
        else:
            now = progress()
            pace = self.embedded / self.busy if self.busy > 0 else 0.0
            left = f", about {_duration(now['pending'] / pace)} left" if pace > 0 else ""
            line = (f"embedding: {count(now['embedded'], 'entry', 'entries')} embedded, "
                    f"{now['pending']} to go ({pace:.1f} a second{left})")
            self.backlog = True
        self.since, self.embedded, self.busy = self.clock(), 0, 0.0
        return line


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class WriteTimer:
    """Times every ``store.write()`` block (lock held → commit done) of one store."""

    def __init__(self) -> None:
        self.longest = 0.0
        self.count = 0

    def wrap(self, store: Store) -> None:
        original = store.write

        @contextmanager
        def timed() -> Iterator[apsw.Connection]:
            with original() as conn:
                started = time.perf_counter()
                yield conn
            elapsed = time.perf_counter() - started
            self.count += 1
            self.longest = max(self.longest, elapsed)

        store.write = timed  # type: ignore[method-assign]


class Dirty:
    """Paths that changed since the last pass. A set: a burst of events costs one entry."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._paths: set[str] = set()
        self.since = 0.0  # monotonic time of the oldest unserved change
        self.wake = threading.Event()

    def add(self, path: str) -> None:
        with self._lock:
            if not self._paths:
                self.since = time.monotonic()
            self._paths.add(path)
        self.wake.set()

    def __len__(self) -> int:
        with self._lock:
            return len(self._paths)

    def take(self) -> list[str]:
        with self._lock:
            paths = sorted(self._paths)
            self._paths.clear()
            self.wake.clear()
        return paths


class _Handler(FileSystemEventHandler):
    def __init__(self, dirty: Dirty) -> None:
        self.dirty = dirty

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.is_directory:
            # A new (or moved-in) project folder: look inside it. Deleted folders are found
            # by the rescan (and their journals' own delete events).
            if event.event_type == "created":
                self.dirty.add(os.fsdecode(event.src_path))
            elif event.event_type == "moved" and event.dest_path:
                self.dirty.add(os.fsdecode(event.dest_path))
            return
        for raw in (event.src_path, event.dest_path):
            path = os.fsdecode(raw) if raw else ""
            if path.endswith(JOURNAL_SUFFIX):
                self.dirty.add(path)


def _journals_in(path: str) -> list[str]:
    """A dirty path → the journals it stands for (a folder stands for the journals inside)."""
    if not os.path.isdir(path):
        return [path] if path.endswith(JOURNAL_SUFFIX) else []
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames.sort()
        found.extend(os.path.join(dirpath, n) for n in sorted(filenames) if n.endswith(JOURNAL_SUFFIX))
    return found


class Watcher:
    def __init__(self, store: Store, roots: Sequence[RootLike], options: WatchOptions, log: Log) -> None:
        self.store = store
        self.rooted = indexer.as_roots(roots)
        self.roots = [str(r.path) for r in self.rooted]
        self.options = options
        self.log = log
        self.timer = WriteTimer()
        self.timer.wrap(store)
        self.lease = backfill.Lease(store)
        self.dirty = Dirty()
        self.stopping = threading.Event()
        self.signalled = False  # a SIGINT/SIGTERM asked for the stop
        self.interrupted = False  # a second one cut it short
        self.observer: Any = None
        self.followed: set[str] = set()
        self.passes = 0
        self._first_backfill = True
        self._lease_state = ""  # "", "held", "other": only transitions are logged
        # path → the error last logged for it: a journal that fails the same way on every
        # rescan (a FIFO, an unreadable file) is logged once, and again only when that changes
        self._failing: dict[str, str] = {}
        # The semantic layer (its extra installed): what was said is embedded while idle, under the lease.
        semantic = fusion.setting()
        self._embedding = semantic.mode != "off"
        self._embedded_all = False
        self._embed_log = EmbedLog()
        warning = semantic.warning()
        if warning:
            log.warning(warning)
        self.hub = HubPusher(log.error, log.info)  # pushes the shared projects when a hub is configured

    # -- lifecycle -------------------------------------------------------------
    def request_stop(self) -> None:
        self.stopping.set()
        self.dirty.wake.set()

    def run(self) -> int:
        """Serve until asked to stop: 0 after a clean stop, 130 when a second signal cut it short."""
        if self.options.events:
            self.observer = Observer()
            self.observer.daemon = True
            self.observer.start()
        status = 0
        try:
            self._loop()
        except KeyboardInterrupt:
            status = 130  # the open transaction rolled back; nothing half-written stays
        finally:
            # The lease is given back on every way out. Once a signal stopped us the process
            # exits next, so signals stay ignored: the second Ctrl-C of a quick pair, landing
            # after the clean-up, must not turn the clean exit into an "Aborted!" or a death by SIGINT.
            with _signals_ignored(restore=not self.signalled):
                self._shut_down(status)
        return status

    def _shut_down(self, status: int) -> None:
        if self.observer is not None:
            self.observer.stop()
            self.observer.join(timeout=5)
        try:
            self.lease.release()
        except apsw.Error as exc:
            self.log.error(f"could not release the backfill lease: {exc}")
        how = "interrupted" if status else "stopped"
        self.log.info(f"{how}; longest write transaction {self.timer.longest * 1000:.1f} ms "
                      f"over {self.timer.count} transactions")

    def _loop(self) -> None:
        next_rescan = 0.0  # the first pass is the backfill
        while not self.stopping.is_set():
            now = time.monotonic()
            if now >= next_rescan:
                self._guard(self._rescan)
                self._guard(lambda: self.hub.maybe_push(self.store, self.rooted))
                next_rescan = time.monotonic() + self.options.rescan
                continue
            wake_at = next_rescan
            if self.lease.held:
                wake_at = min(wake_at, self._renew_due())
                if now >= self._renew_due():
                    self._guard(self._keep_lease)
                    continue
                if self._embedding and not self._embedded_all and not len(self.dirty):
                    self._guard(self._embed)
                    continue
            self.dirty.wake.wait(timeout=max(0.0, wake_at - now))
            if self.stopping.is_set():
                break
            if len(self.dirty):
                # Let the burst settle: a busy session costs a few passes a second at most.
                self.stopping.wait(max(0.0, self.dirty.since + self.options.debounce - time.monotonic()))
                if not self.stopping.is_set():
                    self._guard(self._serve)
                    self._guard(lambda: self.hub.maybe_push(self.store, self.rooted))

    def _guard(self, step: Any) -> None:
        """Run one pass; a failing pass is logged, never fatal (the next one retries)."""
        try:
            step()
        except BROKEN_INDEX as exc:
            self.log.error(f"the index is damaged ({type(exc).__name__}); starting a new one")
            self.store = recover(self.store, type(exc).__name__)
            self.timer.wrap(self.store)
            self.lease = backfill.Lease(self.store, self.lease.owner)
            self._lease_state = ""
        except apsw.BusyError:
            self.log.error("the index stayed locked by another process; retrying on the next pass")
        except (apsw.Error, OSError) as exc:
            if self.interrupted:
                # the second Ctrl-C landed in one of SQLite's callbacks into Python, which
                # turned it into this error: it is the interruption, not a failure
                raise KeyboardInterrupt from None
            self.log.error(f"{type(exc).__name__}: {exc}")
            self.stopping.wait(1.0)

    # -- passes ----------------------------------------------------------------
    def _renew_due(self) -> float:
        # lease.renewed_at is wall-clock; convert the remaining time to monotonic.
        remaining = self.lease.renewed_at + self.lease.seconds / 2 - time.time()
        return time.monotonic() + remaining

    def _keep_lease(self) -> None:
        if not self.lease.renew():
            self._lease_lost()

    def _lease_lost(self) -> None:
        if self._lease_state != "other":
            self.log.info(f"lost the backfill lease to {self.lease.holder}; serving changed journals only")
        self._lease_state = "other"

    def _follow_roots(self) -> None:
        if self.observer is None:
            return
        for root in self.roots:
            if root in self.followed or not os.path.isdir(root):
                continue
            try:
                self.observer.schedule(_Handler(self.dirty), root, recursive=True, event_filter=EVENT_TYPES)
            except OSError as exc:
                self.log.error(f"no file events for {root} ({exc}); relying on the rescan every "
                               f"{self.options.rescan:g} s")
            else:
                self.log.debug(f"following {root}")
            self.followed.add(root)

    def _rescan(self) -> None:
        self._follow_roots()
        self._failing = {p: e for p, e in self._failing.items() if os.path.lexists(p)}  # bounded
        missing = [r for r in self.roots if not os.path.isdir(r)]
        if missing and self._first_backfill:
            self.log.info(f"session folder {missing[0]} does not exist yet; checking again at each rescan")
        if not self.lease.held:
            if not self.lease.acquire():
                if self._lease_state != "other":
                    self.log.info(f"backfill lease held by {self.lease.holder}; serving changed journals "
                                  f"only, retrying the lease every {self.options.rescan:g} s")
                    self._lease_state = "other"
                return
            taken = f" (taken over from expired {self.lease.took_over})" if self.lease.took_over else ""
            self.log.info(f"took the backfill lease{taken}")
            self._lease_state = "held"
        started = time.perf_counter()
        first = self._first_backfill
        out = backfill.backfill(
            self.store, self.rooted, self.lease, stop=self.stopping.is_set,
            on_result=self._log_error if first and self.log.verbosity < VERBOSE else self._log_result,
            between=self._serve_if_due,
        )
        elapsed = time.perf_counter() - started
        if not out.ran or out.lost:
            self._lease_lost()
            return
        self._first_backfill = False
        self._embedded_all = self._embedded_all and not out.changed
        report = out.report
        if first:
            self.log.info(f"backfill: {out.done}/{out.total} journals, "
                          f"{count(report.entries, 'new entry', 'new entries')}, "
                          f"{report.bytes / 1e6:.1f} MB in {elapsed:.2f} s")
        else:
            self.log.debug(f"rescan: {out.total} journals, {out.changed} changed, {elapsed * 1000:.0f} ms")

    def _embed(self) -> None:
        """A slice of embedding; a change to serve, the lease to renew or a stop cuts it short."""
        from journal_index.semantic import background as semantic

        renew_at = self._renew_due()
        report = semantic.embed_pending(
            self.store, EMBED_SECONDS, self.rooted,
            stop=lambda: self.stopping.is_set() or bool(len(self.dirty)) or time.monotonic() >= renew_at)
        self._embedded_all = report.done
        if report.embedded:
            self.log.debug(f"embedded {report.embedded} entries in {report.seconds * 1000:.0f} ms")
        line = self._embed_log.after(report, lambda: semantic.progress(self.store))
        if line:
            self.log.info(line)

    def _serve_if_due(self) -> None:
        if len(self.dirty) and time.monotonic() - self.dirty.since >= self.options.debounce:
            self._serve()

    def _serve(self) -> None:
        started = time.perf_counter()
        paths = list(dict.fromkeys(j for p in self.dirty.take() for j in _journals_in(p)))
        for path in paths:
            if self.stopping.is_set():
                break
            if not any(path.startswith(r + os.sep) for r in self.roots):
                continue
            self._log_result(indexer.index_file(self.store, path, self.rooted))
        self.passes += 1
        self._embedded_all = False
        self.log.debug(f"pass {self.passes}: {len(paths)} journals in "
                       f"{(time.perf_counter() - started) * 1000:.0f} ms")

    def _log_error(self, r: indexer.FileResult) -> None:
        """Log ``r``'s error unless it is the one already logged for its journal. A journal
        that stops failing is forgotten, so its next failure is logged again."""
        if not r.error:
            self._failing.pop(r.path, None)
        elif self._failing.get(r.path) != r.error:
            self._failing[r.path] = r.error
            self.log.error(f"{r.path}: {r.error}")
        else:
            self.log.debug(f"still failing: {r.path}")

    def _log_result(self, r: indexer.FileResult) -> None:
        self._log_error(r)
        if r.error:
            return
        if r.removed:
            self.log.info(f"forgot {r.path} (deleted)")
        elif r.reset:
            self.log.info(f"reindexed {r.path} after a rewrite: {count(r.entries, 'entry', 'entries')}")
        elif r.entries or r.skipped:
            skipped = f", {count(r.skipped, 'line')} skipped" if r.skipped else ""
            self.log.info(f"indexed {r.path}: +{count(r.entries, 'entry', 'entries')} "
                          f"({count(r.bytes, 'byte')}){skipped}")
        else:
            self.log.debug(f"unchanged {r.path}")


@contextmanager
def _signals_ignored(restore: bool = True) -> Iterator[None]:
    """SIGINT and SIGTERM ignored for a moment (the clean-up after a stop must not be cut
    short); ``restore=False`` leaves them ignored (the process is about to exit)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in before.items():
            if restore:
                signal.signal(sig, handler)


def install_signal_handlers(watcher: Watcher) -> None:
    """The first SIGINT/SIGTERM asks for a clean stop; a second one interrupts at once (the
    open transaction rolls back, the lease is still given back)."""

    def interrupt(signum: int, frame: Any) -> None:
        watcher.interrupted = True
        raise KeyboardInterrupt

    def handle(signum: int, frame: Any) -> None:
        watcher.log.info(f"got {signal.Signals(signum).name}; stopping after the block being indexed")
        watcher.signalled = True
        watcher.request_stop()
        signal.signal(signal.SIGINT, interrupt)
        signal.signal(signal.SIGTERM, interrupt)

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, handle)
        signal.signal(signal.SIGTERM, handle)


def run(store: Store, roots: Sequence[RootLike], options: WatchOptions | None = None,
        log: Log | None = None) -> int:
    """Run until a signal; returns the exit status."""
    options = options or WatchOptions()
    watcher = Watcher(store, roots, options, log or Log(options.verbosity))
    install_signal_handlers(watcher)
    return watcher.run()
