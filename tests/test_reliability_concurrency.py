"""Concurrency (DESIGN §7): two `index` processes, a `watch` process, a reader thread (own
connection) and a reader process (CLI `search`/`read --json`) all run at once over journals a
writer thread keeps appending to (whole lines, and half lines finished later).

No error surfaces (exit 0, no traceback, no error line from watch), no (file, offset) row is
duplicated, every read is verified (ok with exactly the entry's text, or not found/unavailable),
and the final index equals a from-scratch index of the same journals.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from journal_index import query
from journal_index.data.store import open_store
from journal_index.indexing.indexer import discover, index_file
from journal_index.query.scope import Scope
from tests.conftest import FIXTURES
from tests.helpers import copy_journal_tree, snapshot
from tests.helpers import scratch_snapshot as _scratch_snapshot
from tests.reliability_helpers import CLI, duplicate_rows, integrity, run_cli

CWD = "/home/dev/Apps/concurrent"
FOLDER = "--home-dev-Apps-concurrent--"
WORDS = "amber basil cedar dune ember fjord grove heron iris jade kelp lotus".split()


def watch_available() -> bool:
    try:
        return subprocess.run([*CLI, "watch", "--help"], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


class Writer(threading.Thread):
    """Appends lines to a few journals; remembers each entry's text by id."""

    def __init__(self, folder: Path, stop: threading.Event, seed: int) -> None:
        super().__init__(daemon=True)
        self.folder, self.stop, self.rng = folder, stop, random.Random(seed)
        self.texts: dict[str, str] = {}
        self.complete: list[str] = []  # ids whose line (with its newline) is on disk
        self.lock = threading.Lock()
        self.journals: list[Path] = []
        self.lines = 0
        self.half_lines = 0
        self.error: BaseException | None = None

    def new_journal(self) -> None:
        path = self.folder / f"live-{len(self.journals)}.jsonl"
        head = {"type": "session", "version": 3, "id": f"live-session-{len(self.journals)}",
                "timestamp": "2026-05-01T10:00:00.000Z", "cwd": CWD}
        path.write_bytes(orjson.dumps(head) + b"\n")
        self.journals.append(path)

    def line(self) -> tuple[str, bytes]:
        n = self.lines
        self.lines += 1
        entry_id = f"live-{n:06d}"
        text = f"token{n}x " + " ".join(self.rng.choices(WORDS, k=self.rng.randint(3, 40)))
        if self.rng.random() < 0.05:  # a long entry now and then
            text += " " + " ".join(self.rng.choices(WORDS, k=20_000))
        self.texts[entry_id] = text
        obj = {"type": "message", "id": entry_id, "parentId": None, "timestamp": "2026-05-01T10:01:00.000Z",
               "message": {"role": "assistant" if n % 2 else "user", "content": [{"type": "text", "text": text}]}}
        return entry_id, orjson.dumps(obj) + b"\n"

    def run(self) -> None:
        try:
            for _ in range(3):
                self.new_journal()
            while not self.stop.is_set():
                if self.rng.random() < 0.02:
                    self.new_journal()
                path = self.rng.choice(self.journals)
                batch = [self.line() for _ in range(self.rng.randint(1, 3))]
                data = b"".join(line for _, line in batch)
                with open(path, "ab") as handle:
                    if self.rng.random() < 0.3:  # half a line now, the rest a moment later
                        cut = self.rng.randrange(1, len(data))
                        handle.write(data[:cut])
                        handle.flush()
                        self.half_lines += 1
                        time.sleep(self.rng.uniform(0, 0.05))
                        handle.write(data[cut:])
                    else:
                        handle.write(data)
                with self.lock:
                    self.complete.extend(entry_id for entry_id, _ in batch)
                time.sleep(self.rng.uniform(0, 0.02))
        except BaseException as exc:  # surfaced by the test
            self.error = exc

    def some_ids(self, k: int) -> list[str]:
        with self.lock:
            done = list(self.complete)
        return self.rng.sample(done, min(k, len(done))) if done else []


class Loop(threading.Thread):
    """Run a check over and over until stopped; failures are kept for the test to raise."""

    def __init__(self, name: str, step, stop: threading.Event) -> None:
        super().__init__(daemon=True, name=name)
        self.step, self.stop = step, stop
        self.count = 0
        self.failures: list[str] = []

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self.step()
                self.count += 1
            except BaseException as exc:  # reported by the test
                self.failures.append(f"{self.name}: {type(exc).__name__}: {exc}")
                if len(self.failures) > 5:
                    return


def run_concurrently(tmp_path: Path, seconds: float, seed: int) -> dict:
    root = tmp_path / "sessions"
    copy_journal_tree(FIXTURES / "sessions", root)
    (root / FOLDER).mkdir()
    db = tmp_path / "index.db"
    assert run_cli(db, root, "index").clean()  # the DB exists before the readers start
    writers_stop, stop = threading.Event(), threading.Event()
    writer = Writer(root / FOLDER, writers_stop, seed)
    stats: dict[str, Any] = {"index_runs": 0, "reads_ok": 0, "reads_other": 0, "searches": 0, "cli_reads": 0}

    def verify(entry_id: str, answer: dict) -> None:
        assert answer["status"] in ("ok", "not_found", "unavailable"), answer
        if answer["status"] == "ok":
            assert answer["text"] == writer.texts[entry_id][: len(answer["text"])], entry_id
            assert answer["offset"] == 0 and answer["entryId"] == entry_id
            stats["reads_ok"] += 1
        else:
            stats["reads_other"] += 1

    def index_step() -> None:
        run = run_cli(db, root, "index", timeout=300)
        assert run.clean(), run.stderr[-2000:]
        assert run.stderr.strip() == "", run.stderr[-2000:]
        stats["index_runs"] += 1

    store_holder: dict = {}

    def reader_step() -> None:
        store = store_holder.setdefault("store", open_store(str(db)))
        for entry_id in writer.some_ids(3):
            verify(entry_id, query.read(store, entry_id, Scope("global")))
            found = query.search(store, f"token{entry_id[5:].lstrip('0') or '0'}x", query.Filters(Scope("global")))
            for hit in found.hits:
                if hit.entry_id in writer.texts and hit.excerpt != query.UNAVAILABLE:
                    piece = hit.excerpt.strip("…")
                    assert piece in " ".join(writer.texts[hit.entry_id].split()), (hit.entry_id, hit.excerpt)
            stats["searches"] += 1
        assert duplicate_rows(store) == []

    def cli_reader_step() -> None:
        for entry_id in writer.some_ids(1):
            run = run_cli(db, root, "read", entry_id, "--scope", "global", "--json", timeout=120)
            assert run.returncode in (0, 1) and "Traceback" not in run.stderr, run.stderr[-2000:]
            verify(entry_id, json.loads(run.stdout))
            stats["cli_reads"] += 1
        run = run_cli(db, root, "search", WORDS[0], "--scope", "global", "--json", timeout=120)
        assert run.clean(), run.stderr[-2000:]

    watch = None
    watch_err = tempfile.TemporaryFile()  # noqa: SIM115 - closed in the finally below
    if watch_available():
        watch = subprocess.Popen([*CLI, "--db", str(db), "--sessions", str(root), "watch", "--rescan", "1"],
                                 stdout=subprocess.DEVNULL, stderr=watch_err, stdin=subprocess.DEVNULL)
    loops = [Loop("index-1", index_step, writers_stop), Loop("index-2", index_step, writers_stop),
             Loop("reader", reader_step, stop), Loop("cli-reader", cli_reader_step, stop)]
    writer.start()
    for loop in loops:
        loop.start()
    try:
        time.sleep(seconds)
    finally:
        writers_stop.set()
        writer.join(30)
        for loop in loops[:2]:
            loop.join(300)
        stop.set()
        for loop in loops[2:]:
            loop.join(120)
        if "store" in store_holder:
            store_holder["store"].conn.close()
        if watch is not None:
            time.sleep(1.5)  # let it see the last appends
            watch.send_signal(signal.SIGTERM)
            try:
                watch_rc = watch.wait(60)
            except subprocess.TimeoutExpired:
                watch.kill()
                watch_rc = watch.wait()
            watch_err.seek(0)
            watch_log = watch_err.read().decode("utf-8", "replace")
        watch_err.close()
    assert writer.error is None, writer.error
    failures = [f for loop in loops for f in loop.failures]
    assert failures == [], failures
    if watch is not None:
        assert watch_rc == 0, watch_log[-3000:]
        assert "Traceback" not in watch_log and " error: " not in watch_log, watch_log[-3000:]
    # Final: one more pass, then the index must equal a rebuild of the same journals.
    store = open_store(str(db))
    try:
        for path in discover([root]):
            index_file(store, path)
        assert duplicate_rows(store) == []
        assert integrity(store) == "ok"
        assert snapshot(store) == _scratch_snapshot(discover([root]))
        indexed = {r[0] for r in store.rows("SELECT entry_id FROM entries WHERE entry_id LIKE 'live-%'")}
    finally:
        store.close()
    assert indexed == set(writer.texts)  # every line the writer finished is in
    stats.update(lines=writer.lines, half_lines=writer.half_lines, journals=len(writer.journals),
                 watch="yes" if watch is not None else "skipped (no `watch` command)",
                 reader_loops=loops[2].count)
    assert stats["index_runs"] >= 2 and stats["reads_ok"] > 0, stats
    return stats


def test_concurrent_index_watch_read_append(tmp_path: Path) -> None:
    stats = run_concurrently(tmp_path, seconds=6, seed=1)
    print(f"concurrency: {stats}")
    if not watch_available():
        pytest.skip("`journal-index watch` is not available: ran without the watch process")


@pytest.mark.slow
def test_concurrent_index_watch_read_append_long(tmp_path: Path) -> None:
    stats = run_concurrently(tmp_path, seconds=60, seed=2)
    print(f"concurrency (60 s): {stats}")
    assert stats["lines"] > 500
