"""Parsing and redaction of a large pass in worker processes (see :func:`indexer.index_files`).

A worker is a plain ``python -c`` child (not multiprocessing: that re-imports the caller's main
script in every child, and forking would copy this process's threads and open database). It
reads tasks from its stdin and sends results on its stdout, both pickled and framed by
multiprocessing.connection. A thread sends its results, so parsing goes on while the writer
commits (up to RESULTS_AHEAD blocks ahead). The writer process checks each journal (and
registers or resets it) before a worker reads it, and writes each journal's blocks in order as
they come back, several journals sharing transactions as in one process.

Imported only when a pass uses workers: a search never pays for these imports.
"""

from __future__ import annotations

import os
import pickle
import queue
import signal
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from typing import Any

from journal_index.data.store import Store
from journal_index.formats import FORMATS, Root, open_journal
from journal_index.indexing.extract import Extractor
from journal_index.indexing.journal_blocks import Block, BytesBefore, read_blocks
from journal_index.indexing.journal_pass import Journal, Writer, index_serially, start_journal
from journal_index.text import output

JOURNALS_PER_WORKER = 2  # journals handed to each worker at a time
RESULTS_AHEAD = 3
STOP_CHECK_SECONDS = 0.25  # the longest a stop waits while no worker has sent anything
WORKER_NICENESS = 10
# Ctrl-C in a terminal (SIGINT) and a service manager's stop (SIGTERM to the whole group) reach
# the workers too; they leave both to the parent, which stops them (a worker killed by the
# signal would turn a clean stop into a failed pass). A worker starts with both blocked (see
# _Worker) and ignores them before unblocking, so none lands while it starts up.
_PARENTS_SIGNALS = {signal.SIGINT, signal.SIGTERM}
_WORKER_CODE = (
    "import signal\n"
    "for sig in (signal.SIGINT, signal.SIGTERM):\n"
    "    signal.signal(sig, signal.SIG_IGN)\n"
    "signal.pthread_sigmask(signal.SIG_UNBLOCK, (signal.SIGINT, signal.SIGTERM))\n"
    "import sys\n"
    "from multiprocessing.connection import Connection\n"
    "tasks = Connection(0, writable=False)\n"
    "sys.path[:] = tasks.recv()\n"
    "from journal_index.indexing.index_workers import worker_main\n"
    "worker_main(tasks)\n"
)
# (key, path, format name, cursor, (st_dev, st_ino) of the file the writer checked)
_Task = tuple[int, str, str, int, tuple[int, int]]
_DONE, _CHANGED, _FAILED, _CRASHED = "done", "changed", "failed", "crashed"


def worker_main(tasks: Connection) -> None:
    """The worker's loop: each task is one journal, read from its cursor block by block; each
    block's rows and redacted texts go back in file order, then a final word."""
    results = Connection(os.dup(1), readable=False)
    os.dup2(2, 1)  # a stray print goes to stderr, never into the results
    output.install()  # and is redacted, as a traceback would be
    if hasattr(os, "nice"):
        os.nice(WORKER_NICENESS)  # the writer first: its transactions stay short on a busy machine
    outbox: queue.Queue[bytes | None] = queue.Queue(maxsize=RESULTS_AHEAD)

    def send() -> None:
        try:
            while (item := outbox.get()) is not None:
                results.send_bytes(item)
        except OSError:
            os._exit(1)  # the writer is gone

    sender = threading.Thread(target=send, daemon=True)
    sender.start()

    def put(message: tuple[int, Any, Any]) -> None:
        outbox.put(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))

    while True:
        try:
            task: _Task | None = tasks.recv()
        except EOFError:
            break
        if task is None:
            break
        key, path, fmt_name, cursor, identity = task
        try:
            with open_journal(path) as handle:
                fd = handle.fileno()
                st = os.fstat(fd)
                if (st.st_dev, st.st_ino) != identity:
                    put((key, _CHANGED, None))  # replaced since the writer checked it: next pass
                    continue
                fmt = FORMATS[fmt_name]
                extractor = Extractor(fmt, BytesBefore(fd, fmt, cursor))
                for block in read_blocks(fd, cursor):
                    extracted = extractor.block(block.data, block.start)
                    block.data = b""  # the writer needs where the block ends, not its bytes
                    put((key, block, extracted))
            put((key, _DONE, None))
        except OSError as exc:
            put((key, _FAILED, exc.strerror or str(exc)))
        except Exception:  # a bug: the writer raises it rather than wait for this journal
            put((key, _CRASHED, traceback.format_exc()))
    outbox.put(None)
    sender.join()


class WorkerError(RuntimeError):
    """A worker process died or failed on a journal."""


class _Worker:
    def __init__(self) -> None:
        task_r, task_w = os.pipe()
        result_r, result_w = os.pipe()
        # The child inherits this thread's signal mask. While it is blocked here, a signal
        # for this process is handled by another of its threads, so none is lost.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, _PARENTS_SIGNALS)
        try:
            self.proc = subprocess.Popen([sys.executable, "-c", _WORKER_CODE], stdin=task_r, stdout=result_w,
                                         close_fds=True)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            os.close(task_r)
            os.close(result_w)
        self.tasks = Connection(task_w, readable=False)
        self.results = Connection(result_r, writable=False)
        self.tasks.send(sys.path)
        self.keys: set[int] = set()  # its journals in flight
        self.open = True

    def kill(self) -> None:
        """Stop at once (the pass was interrupted or failed): a worker only reads journals, so
        killing it loses nothing; waiting for it would finish its journals first."""
        self.open = False
        self.proc.kill()
        self.close()

    def close(self) -> None:
        """Let the worker finish its tasks and exit (the pass is complete)."""
        if self.open:
            self.open = False
            try:
                self.tasks.send(None)
            except OSError:
                pass
        self.tasks.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.results.close()


def index_in_workers(store: Store, paths: list[str], roots: list[Root], writer: Writer, count: int,
                     stop: Callable[[], bool] = lambda: False) -> None:
    """Journals are checked (and registered, reset) here, parsed and redacted by ``count``
    workers, and their blocks written here in each journal's order as they come back. Once
    ``stop()`` says True, the journals in flight end at the block written last and the workers
    are stopped (see :func:`indexer.index_files`)."""
    workers: list[_Worker] = []
    in_flight: dict[int, tuple[Journal, _Worker]] = {}
    queued = iter(paths)
    next_key = 0

    def hand_out() -> None:
        nonlocal next_key
        while True:
            worker = min(workers, key=lambda w: len(w.keys))
            if len(worker.keys) >= JOURNALS_PER_WORKER:
                return
            path = next(queued, None)
            if path is None:
                return
            journal, ready = start_journal(store, path, roots, False)
            if not ready:
                writer.finish(journal)
                continue
            assert journal.handle is not None and journal.fmt is not None
            st = os.fstat(journal.handle.fileno())
            worker.tasks.send((next_key, journal.path, journal.fmt.NAME, journal.cursor, (st.st_dev, st.st_ino)))
            worker.keys.add(next_key)
            in_flight[next_key] = (journal, worker)
            next_key += 1

    complete = False
    try:
        try:
            for _ in range(count):
                workers.append(_Worker())
        except OSError:  # no interpreter to start (an embedded or frozen one): parse here
            index_serially(store, paths, roots, writer, stop)
            complete = True
            return
        by_conn = {w.results: w for w in workers}
        hand_out()
        while in_flight and not stop():
            for conn in wait(list(by_conn), timeout=STOP_CHECK_SECONDS):
                worker = by_conn[conn]  # type: ignore[index]
                try:
                    key, block, extracted = worker.results.recv()
                except EOFError:
                    raise WorkerError(f"an indexing worker process exited ({worker.proc.poll()})") from None
                journal = in_flight[key][0]
                if isinstance(block, Block):
                    writer.add(journal, block, extracted)
                    continue
                if block == _CRASHED:
                    raise WorkerError(f"indexing {journal.path} failed in a worker:\n{extracted}")
                if block == _FAILED:
                    journal.result.error = extracted
                del in_flight[key]
                worker.keys.discard(key)
                writer.finish(journal)
                if not stop():
                    hand_out()
        # Stopped: each journal in flight ends at the block written last (its cursor is where
        # the next pass resumes), and the workers are killed rather than left to finish it.
        for journal, _ in in_flight.values():
            writer.finish(journal)
        complete = not in_flight
        in_flight.clear()
    finally:
        for worker in workers:
            # interrupted (a second Ctrl-C), or failed: the workers stop now, not after their journals
            worker.close() if complete else worker.kill()
        for journal, _ in in_flight.values():
            journal.close()
