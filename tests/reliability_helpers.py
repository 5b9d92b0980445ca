"""Helpers shared by the reliability suites: real CLI subprocesses and index comparisons."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from journal_index.data.store import Store

CLI = [sys.executable, "-m", "journal_index"]


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    peak_rss_mb: float  # peak resident set of the child and its workers together (psutil polling)
    timed_out: bool = False

    def clean(self) -> bool:
        """Exit 0 and nothing on stderr that looks like a crash."""
        return self.returncode == 0 and "Traceback" not in self.stderr and not self.timed_out


def run_cli(db: Path | str, roots: list[Path] | Path | None, *args: str, timeout: float = 120,
            cwd: str | None = None) -> Run:
    """Run ``journal-index --db DB --sessions ROOT… ARGS`` to completion (killed after ``timeout``)."""
    if isinstance(roots, Path):
        roots = [roots]
    argv = [*CLI, "--db", str(db)]
    for root in roots or []:
        argv += ["--sessions", str(root)]
    argv += list(args)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=cwd)
        timed_out = threading.Event()

        def kill() -> None:
            timed_out.set()
            proc.kill()

        timer = threading.Timer(timeout, kill)
        timer.start()
        done = threading.Event()
        peak = [0.0]
        sampler = threading.Thread(target=_sample_rss, args=(proc.pid, done, peak), daemon=True)
        sampler.start()
        try:
            # (wait4's ru_maxrss is no use here: after fork+exec Linux keeps the parent's high-water mark)
            _, status, _ = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
            done.set()
            sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Run(proc.returncode, out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace"),
                   peak[0] / 1e6, timed_out.is_set())


def _sample_rss(pid: int, done: threading.Event, peak: list[float]) -> None:
    """Poll the RSS of a process and all its descendants (worker processes) every 10 ms."""
    import psutil

    try:
        top = psutil.Process(pid)
    except psutil.Error:
        return
    while not done.is_set():
        total = 0
        try:
            for process in [top, *top.children(recursive=True)]:
                try:
                    total += process.memory_info().rss
                except psutil.Error:
                    pass
        except psutil.Error:
            return
        peak[0] = max(peak[0], total)
        done.wait(0.01)


def instance_digest(store: Store) -> tuple[int, str]:
    """(count, sha256) of every (term, path, line offset, token position), streamed in SQL order.

    The rowid-free FTS instance comparison of ``helpers.snapshot`` without holding millions of
    tuples in memory (a 30 MB corpus has over a million instances).
    """
    import hashlib

    digest = hashlib.sha256()
    count = 0
    for table in ("entries_fts", "entries_bulk"):
        store.conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab_inst_{table} USING fts5vocab(main, {table}, instance)")
        for row in store.conn.execute(
                f"SELECT v.term, f.path, e.offset, v.offset FROM temp.vocab_inst_{table} v "
                "JOIN entries e ON e.rowid = v.doc JOIN files f ON f.id = e.file_id ORDER BY 1, 2, 3, 4"):
            digest.update(repr((table, *row)).encode())
            count += 1
    return count, digest.hexdigest()


def row_vocab(store: Store) -> list[tuple[Any, ...]]:
    """(table, term, documents, occurrences) for every FTS term: rowid-free and cheap on a large index."""
    rows: list[tuple[Any, ...]] = []
    for table in ("entries_fts", "entries_bulk"):
        store.conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab_rows_{table} USING fts5vocab(main, {table}, row)")
        rows += [(table, *r) for r in store.rows(f"SELECT term, doc, cnt FROM temp.vocab_rows_{table} ORDER BY term")]
    return rows


def integrity(store: Store) -> str:
    return "\n".join(str(r[0]) for r in store.rows("PRAGMA integrity_check"))


def fts_integrity(store: Store) -> None:
    """FTS5's own check that the index matches its rows (raises apsw.CorruptError if not)."""
    for table in ("entries_fts", "entries_bulk"):
        store.conn.execute(f"INSERT INTO {table}({table}, rank) VALUES('integrity-check', 0)")


def duplicate_rows(store: Store) -> list[tuple[Any, ...]]:
    return store.rows("SELECT file_id, offset, count(*) FROM entries GROUP BY 1, 2 HAVING count(*) > 1")
