"""A damaged index (DESIGN invariant 2): random pages overwritten, the file truncated, the ``-wal``
deleted mid-write or after a SIGKILL. The next CLI command exits 0 without a traceback and answers
exactly what a healthy index answers; when it finds the damage it moves the file aside
(``*.corrupt-<time>``, one warning line on stderr) and rebuilds from the journals.
"""

from __future__ import annotations

import glob
import json
import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from benchmarks.corpus import generate
from journal_index.config import cache_db_path
from journal_index.data.store import open_store
from journal_index.indexing.indexer import discover, index_files
from tests.conftest import FIXTURES
from tests.helpers import copy_journal_tree, entry_rows
from tests.reliability_helpers import CLI, integrity, row_vocab, run_cli

QUERIES: tuple[list[str], ...] = (["rate", "limit", "token"], [])  # [] = newest entries
PAGE = 4096
WARNING = "journal-index: warning: index "


def _answers(db: Path, root: Path) -> tuple[dict[str, list], list[str]]:
    """Search results (ids and excerpts, not the time-dependent scores) and stderr lines."""
    out: dict[str, list] = {}
    errors: list[str] = []
    for words in QUERIES:
        run = run_cli(db, root, "search", *words, "--scope", "global", "--limit", "30", "--json")
        assert run.clean(), run.stderr
        errors += [line for line in run.stderr.splitlines() if line.strip()]
        out[" ".join(words)] = [(r["entryId"], r["excerpt"]) for r in json.loads(run.stdout)["results"]]
    return out, errors


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> dict:
    base = tmp_path_factory.mktemp("healthy")
    root = base / "sessions"
    copy_journal_tree(FIXTURES / "sessions", root)
    db = base / "healthy.db"
    assert run_cli(db, root, "index").clean()
    answers, errors = _answers(db, root)
    assert errors == []
    status = json.loads(run_cli(db, root, "status", "--json").stdout)
    return {"root": root, "db": db, "answers": answers, "status": status}


def _corrupt_files(db: Path) -> list[str]:
    return glob.glob(f"{db}.corrupt-*")


def _fresh_copy(healthy: dict, tmp_path: Path) -> Path:
    # The default cache path: there a file whose header is destroyed is still taken as ours.
    db = cache_db_path()
    db.parent.mkdir(parents=True, exist_ok=True)
    for path in [*glob.glob(f"{db}*")]:
        os.remove(path)
    shutil.copy(healthy["db"], db)
    return db


def _assert_recovers(db: Path, healthy: dict, stats: dict) -> None:
    answers, errors = _answers(db, healthy["root"])
    assert answers == healthy["answers"]
    moved = _corrupt_files(db)
    if moved:
        stats["detected"] += 1
        assert len(moved) == 1 and len(errors) == 1 and errors[0].startswith(WARNING), errors
    else:
        assert errors == []
    status = run_cli(db, healthy["root"], "status", "--json")
    assert status.clean(), status.stderr
    stats["runs"] += 1


def _overwrite_pages(db: Path, rng: random.Random) -> None:
    pages = os.path.getsize(db) // PAGE
    with open(db, "r+b") as handle:
        for _ in range(rng.randint(1, 4)):
            handle.seek(rng.randrange(pages) * PAGE)
            handle.write(rng.randbytes(PAGE))


def _page_runs(healthy: dict, tmp_path: Path, runs: int, seed: int) -> dict:
    rng = random.Random(seed)
    stats = {"runs": 0, "detected": 0}
    for _ in range(runs):
        db = _fresh_copy(healthy, tmp_path)
        _overwrite_pages(db, rng)
        _assert_recovers(db, healthy, stats)
    return stats


def test_random_pages_overwritten(healthy: dict, tmp_path: Path) -> None:
    stats = _page_runs(healthy, tmp_path, runs=2, seed=5)
    print(f"overwritten pages: {stats}")


@pytest.mark.slow
def test_random_pages_overwritten_many(healthy: dict, tmp_path: Path) -> None:
    stats = _page_runs(healthy, tmp_path, runs=30, seed=6)
    print(f"overwritten pages: {stats}")


def test_header_page_overwritten(healthy: dict, tmp_path: Path) -> None:
    db = _fresh_copy(healthy, tmp_path)
    with open(db, "r+b") as handle:
        handle.write(random.Random(1).randbytes(PAGE))
    stats = {"runs": 0, "detected": 0}
    _assert_recovers(db, healthy, stats)
    assert stats["detected"] == 1


@pytest.mark.parametrize("keep", [0, PAGE, "minus-one-page"])
@pytest.mark.slow
def test_truncated_many(healthy: dict, tmp_path: Path, keep: int | str) -> None:
    test_truncated(healthy, tmp_path, keep)


@pytest.mark.parametrize("keep", [50, "half"])
def test_truncated(healthy: dict, tmp_path: Path, keep: int | str) -> None:
    db = _fresh_copy(healthy, tmp_path)
    size = os.path.getsize(db)
    length = {"half": size // 2, "minus-one-page": size - PAGE}.get(keep, keep)  # type: ignore[arg-type]
    os.truncate(db, int(length))
    stats = {"runs": 0, "detected": 0}
    if length == 0:
        # An empty file holds no index: a command that only reads says so (one line, exit 1) and
        # changes nothing, as for a --db that does not exist; `index` then makes it anew.
        run = run_cli(db, healthy["root"], "search", "rate", "--scope", "global")
        assert run.returncode == 1 and run.stderr.strip().endswith("(or give --db the index's path)"), run.stderr
        assert "there is no index at" in run.stderr and len(run.stderr.strip().splitlines()) == 1
        assert os.path.getsize(db) == 0 and _corrupt_files(db) == []
        assert run_cli(db, healthy["root"], "index").clean()
    _assert_recovers(db, healthy, stats)
    if length not in (0,):
        assert stats["detected"] == 1, f"a {length}-byte index was not detected"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A few MB of journals, so an index pass lasts long enough to be interrupted."""
    base = tmp_path_factory.mktemp("wal-corpus")
    generate(base, 4_000_000, seed=3)
    root = base / "sessions"
    store = open_store(str(base / "scratch.db"))
    try:
        index_files(store, discover([root]))
        return {"root": root, "rows": entry_rows(store), "vocab": row_vocab(store)}
    finally:
        store.close()


def _spawn(db: Path, root: Path) -> subprocess.Popen:
    return subprocess.Popen([*CLI, "--db", str(db), "--sessions", str(root), "index"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True)


def _final_state_matches(db: Path, corpus: dict) -> None:
    run = run_cli(db, corpus["root"], "index")
    assert run.clean(), run.stderr
    assert len([line for line in run.stderr.splitlines() if line.strip()]) <= 1
    store = open_store(str(db))
    try:
        assert integrity(store) == "ok"
        assert entry_rows(store) == corpus["rows"]
        assert row_vocab(store) == corpus["vocab"]
    finally:
        store.close()


def _wait_for_wal(db: Path, proc: subprocess.Popen) -> None:
    wal, deadline = Path(f"{db}-wal"), time.monotonic() + 60
    while not wal.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)  # the index is open and being written from here on


def _writing_seconds(db: Path, root: Path) -> float:
    """How long a pass over ``root`` writes (from its WAL's appearance to its exit) on this
    machine now: the interruptions below fall inside that window however fast indexing is."""
    for path in glob.glob(f"{db}*"):
        os.remove(path)
    proc = _spawn(db, root)
    _wait_for_wal(db, proc)
    started = time.monotonic()
    proc.communicate(timeout=120)
    return time.monotonic() - started


def _wal_runs(corpus: dict, tmp_path: Path, runs: int, seed: int, after_kill: bool) -> dict:
    rng = random.Random(seed)
    stats = {"runs": 0, "wal_deleted": 0, "moved_aside": 0}
    db = tmp_path / "index.db"
    window = _writing_seconds(db, corpus["root"])
    for _ in range(runs):
        for path in glob.glob(f"{db}*"):
            os.remove(path)
        proc = _spawn(db, corpus["root"])
        _wait_for_wal(db, proc)
        time.sleep(rng.uniform(0, 0.7 * window))
        if after_kill:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
        for suffix in ("-wal", "-shm") if after_kill else ("-wal",):
            try:
                os.remove(f"{db}{suffix}")
                stats["wal_deleted"] += suffix == "-wal"
            except FileNotFoundError:
                pass
        if not after_kill:
            _, err = proc.communicate(timeout=120)
            assert proc.returncode == 0 and b"Traceback" not in err, err.decode()
        _final_state_matches(db, corpus)
        stats["moved_aside"] += bool(_corrupt_files(db))
        stats["runs"] += 1
    assert stats["wal_deleted"] >= runs // 2, stats  # the scenario really happened
    return stats


@pytest.mark.parametrize("after_kill", [False, True], ids=["while-indexing", "after-sigkill"])
def test_wal_deleted(corpus: dict, tmp_path: Path, after_kill: bool) -> None:
    stats = _wal_runs(corpus, tmp_path, runs=1, seed=11 + after_kill, after_kill=after_kill)
    print(f"wal deleted ({'after SIGKILL' if after_kill else 'while indexing'}): {stats}")


@pytest.mark.slow
@pytest.mark.parametrize("after_kill", [False, True], ids=["while-indexing", "after-sigkill"])
def test_wal_deleted_many(corpus: dict, tmp_path: Path, after_kill: bool) -> None:
    stats = _wal_runs(corpus, tmp_path, runs=12, seed=21 + after_kill, after_kill=after_kill)
    print(f"wal deleted ({'after SIGKILL' if after_kill else 'while indexing'}): {stats}")
