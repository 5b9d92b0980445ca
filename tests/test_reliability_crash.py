"""Crash safety (DESIGN invariant 4): `journal-index index` killed with SIGKILL at random moments —
mid-batch, mid-commit, mid-reset of a rewritten journal — then resumed by a normal pass, gives
exactly the rows and FTS terms of a from-scratch index, and SQLite's integrity check passes.

The process is started in its own process group and the whole group is killed (the indexer may
run worker processes on a large pass), so nothing outlives the "crash".
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw
import pytest

from benchmarks.corpus import generate
from journal_index.data.store import Store, open_store
from journal_index.indexing.indexer import discover, index_files
from tests.helpers import entry_rows
from tests.reliability_helpers import CLI, duplicate_rows, fts_integrity, instance_digest, integrity, row_vocab

SEED = int(os.environ.get("JOURNAL_INDEX_CRASH_SEED", "20261129"))


@dataclass
class Reference:
    root: Path
    rows: list[tuple[Any, ...]]
    vocab: list[tuple[Any, ...]]
    db: Path  # a from-scratch index (closed, checkpointed)
    full_pass_s: float  # wall time of a complete `index` subprocess, start-up included
    startup_s: float  # until the index file is open (its -wal appears)
    _snapshot: Any = None

    def instances(self) -> tuple[int, str]:
        if self._snapshot is None:
            store = open_store(str(self.db))
            try:
                self._snapshot = instance_digest(store)
            finally:
                store.conn.close()
        return self._snapshot


def _scratch(root: Path, db: Path) -> tuple[list, list]:
    store = open_store(str(db))
    try:
        report = index_files(store, discover([root]))
        assert report.errors == []
        return entry_rows(store), row_vocab(store)
    finally:
        store.close()


def _spawn_index(db: Path, root: Path) -> subprocess.Popen:
    return subprocess.Popen([*CLI, "--db", str(db), "--sessions", str(root), "index"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            start_new_session=True)


def _wait_open(proc: subprocess.Popen, db: Path) -> None:
    """Until the indexer has opened the index (its -wal exists) or has ended."""
    wal = Path(f"{db}-wal")
    deadline = time.monotonic() + 120
    while not wal.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)


def _timed_full_pass(db: Path, root: Path) -> tuple[float, float]:
    """(whole pass, start-up) wall times of an `index` subprocess."""
    started = time.perf_counter()
    proc = _spawn_index(db, root)
    _wait_open(proc, db)
    opened = time.perf_counter() - started
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err.decode()
    return time.perf_counter() - started, opened


def _kill_group(proc: subprocess.Popen) -> bool:
    """SIGKILL the indexer and its workers; True if it was still running (a real crash)."""
    running = proc.poll() is None
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.communicate()
    # No worker of the killed group may survive and keep writing.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("a process of the killed indexer's group survived SIGKILL")
    return running


def _reference(factory: pytest.TempPathFactory, name: str, size: int) -> Reference:
    out = factory.mktemp(name)
    generate(out, size, seed=SEED % 1000 + 1)
    root = out / "sessions"
    rows, vocab = _scratch(root, out / "scratch.db")
    timed, startup = _timed_full_pass(out / "timed.db", root)
    return Reference(root, rows, vocab, out / "scratch.db", timed, startup)


@pytest.fixture(scope="session")
def corpus_30mb(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    return _reference(tmp_path_factory, "crash-30mb", 30_000_000)


@pytest.fixture(scope="session")
def corpus_small(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    return _reference(tmp_path_factory, "crash-small", 8_000_000)


def _check(db: Path, ref: Reference, full: bool) -> int:
    """Resume with a normal in-process pass, then compare with the from-scratch index."""
    store: Store = open_store(str(db))
    try:
        assert integrity(store) == "ok"  # after WAL recovery, before the resume
        crashed_rows = int(store.value("SELECT count(*) FROM entries", default=0))
        report = index_files(store, discover([ref.root]))
        assert report.errors == []
        assert duplicate_rows(store) == []
        assert entry_rows(store) == ref.rows
        assert row_vocab(store) == ref.vocab
        assert integrity(store) == "ok"
        fts_integrity(store)
        if full:  # the full rowid-free instance comparison (helpers.snapshot), streamed
            assert instance_digest(store) == ref.instances()
        return crashed_rows
    finally:
        store.close()


def _committed_rows(db: Path) -> int:
    """Entries the indexer has committed so far, read through a read-only connection (WAL lets
    a reader in beside the writer; read-only never creates the file)."""
    try:
        conn = apsw.Connection(f"file:{db}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    except apsw.Error:
        return 0
    try:
        conn.set_busy_timeout(50)
        row = conn.execute("SELECT count(*) FROM entries").fetchone()
        return int(row[0]) if row is not None else 0
    except apsw.Error:  # not migrated yet, or busy
        return 0
    finally:
        conn.close()


def _wait_committed(proc: subprocess.Popen, db: Path) -> None:
    """Until the indexer has committed its first batch (or has ended)."""
    _wait_open(proc, db)
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline and _committed_rows(db) == 0:
        time.sleep(0.005)


def _sleep_then_kill_point(proc: subprocess.Popen, db: Path, ref: Reference, rng: random.Random) -> None:
    """A third of the kills: any moment of the run (start-up included); a third: a moment of
    the indexing itself; a third: soon after the first commit, so that a fair share of the
    crashes leave a partly filled index however fast this machine runs the pass."""
    mode = rng.random()
    if mode < 1 / 3:
        time.sleep(rng.uniform(0, ref.full_pass_s))
    elif mode < 2 / 3:
        _wait_open(proc, db)
        time.sleep(rng.uniform(0, max(0.05, ref.full_pass_s - ref.startup_s)))
    else:
        _wait_committed(proc, db)
        time.sleep(rng.uniform(0, max(0.01, (ref.full_pass_s - ref.startup_s) / 4)))


def _crash_runs(tmp_path: Path, ref: Reference, kills: int, full_every: int, rng: random.Random) -> dict:
    stats = {"kills": 0, "crashed_mid_run": 0, "empty": 0, "partial": 0, "complete": 0, "double": 0,
             "full_snapshots": 0}
    total = len(ref.rows)
    db = tmp_path / "crash.db"
    for n in range(kills):
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        # Sometimes crash twice in a row: the second run starts from a crashed state.
        rounds = 2 if rng.random() < 0.25 else 1
        stats["double"] += rounds == 2
        for _ in range(rounds):
            proc = _spawn_index(db, ref.root)
            _sleep_then_kill_point(proc, db, ref, rng)
            stats["crashed_mid_run"] += _kill_group(proc)
            stats["kills"] += 1
        full = full_every > 0 and n % full_every == 0
        stats["full_snapshots"] += full
        crashed_rows = _check(db, ref, full)
        stats["empty" if crashed_rows == 0 else "complete" if crashed_rows == total else "partial"] += 1
    return stats


def test_sigkill_during_index_small(tmp_path: Path, corpus_small: Reference) -> None:
    stats = _crash_runs(tmp_path, corpus_small, kills=4, full_every=2, rng=random.Random(SEED))
    print(f"crash (8 MB): {stats}")


@pytest.mark.slow
def test_sigkill_during_index_30mb(tmp_path: Path, corpus_30mb: Reference) -> None:
    stats = _crash_runs(tmp_path, corpus_30mb, kills=30, full_every=10, rng=random.Random(SEED + 1))
    print(f"crash (30 MB, full pass {corpus_30mb.full_pass_s:.1f} s): {stats}")
    assert stats["kills"] >= 30
    assert stats["partial"] >= 10, stats  # most kills landed mid-pass


def _rewrite(path: Path, how: str) -> None:
    data = path.read_bytes()
    lines = data.splitlines(keepends=True)
    if how == "header":  # pi's migration rewrites the header (and keeps most lines)
        lines[0] = lines[0].replace(b'"type":"session"', b'"type":"session","migrated":true', 1)
        path.write_bytes(b"".join(lines[: max(2, len(lines) * 9 // 10)]))
    elif how == "shorter":  # cut below the cursor
        path.write_bytes(b"".join(lines[: max(2, len(lines) // 2)]))
    else:  # same header, other bytes before the cursor
        path.write_bytes(lines[0] + b"".join(reversed(lines[1:])))


@pytest.mark.slow
@pytest.mark.parametrize("how", ["header", "shorter", "reordered"])
def test_sigkill_during_reset(tmp_path: Path, corpus_30mb: Reference, how: str) -> None:
    """Kill during the pass that drops a rewritten journal's rows and reindexes it from byte 0."""
    root = tmp_path / "sessions"
    shutil.copytree(corpus_30mb.root, root)
    pristine = tmp_path / "pristine.db"
    _scratch(root, pristine)  # indexed before the rewrite (closed: no -wal left)
    largest = sorted(root.rglob("*.jsonl"), key=lambda p: p.stat().st_size)[-3:]
    for path in largest:
        _rewrite(path, how)
    rows, vocab = _scratch(root, tmp_path / "after.db")
    ref = Reference(root, rows, vocab, tmp_path / "after.db", 0.0, 0.0)
    timing = tmp_path / "timing.db"
    shutil.copy(pristine, timing)
    ref.full_pass_s, ref.startup_s = _timed_full_pass(timing, root)
    rng = random.Random(SEED + hash(how) % 1000)
    db = tmp_path / "crash.db"
    kills = 0
    for n in range(5):
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        shutil.copy(pristine, db)
        proc = _spawn_index(db, root)
        _sleep_then_kill_point(proc, db, ref, rng)
        _kill_group(proc)
        kills += 1
        _check(db, ref, full=n == 0)
    print(f"crash mid-reset ({how}, pass {ref.full_pass_s:.2f} s): {kills} kills, all resumed to the rebuild")
