"""The agent tool's look at what the index lacks, with the roots' folders watched (inotify): the
same answer as a look from scratch after any change to the journals, and no journal stat'ed again
while nothing happened in their folders."""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from journal_index.agent.freshness import Pending, Scans, pending
from journal_index.data.store import Store
from journal_index.formats import Root
from journal_index.indexing import folder_watch
from journal_index.indexing.folder_watch import LOCAL_FILESYSTEMS, FolderWatch, filesystem_type
from journal_index.indexing.indexer import Listings, discover, index_file, index_files
from tests.test_tool import append_user

SEED = 20261204


def watched_scans() -> Scans:
    scans = Scans()
    scans.listings = Listings(racy_ns=0, watch=FolderWatch())  # keep even what changed a moment ago
    return scans


def answer(found: Pending) -> tuple[int, int, int, list[str]]:
    return found.grown, found.unseen, found.bytes, found.paths


def journal_stats(monkeypatch: Any) -> list[str]:
    """Every journal path ``os.stat`` is asked for from now on."""
    seen: list[str] = []
    real_stat = os.stat

    def counted(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if str(path).endswith(".jsonl"):
            seen.append(str(path))
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", counted)
    return seen


@pytest.fixture
def watchable(sessions_root: Path) -> Path:
    if FolderWatch().usable is False or filesystem_type(str(sessions_root)) not in LOCAL_FILESYSTEMS:
        pytest.skip(f"no inotify on a local file system for {sessions_root} here")
    return sessions_root


def test_nothing_is_stated_again_while_the_folders_are_quiet_and_a_write_anywhere_is_seen(
        store: Store, watchable: Path, monkeypatch: Any) -> None:
    roots = [Root(watchable)]
    journals = discover(roots)
    index_files(store, journals, roots=roots)
    current, other = journals[0], journals[-1]
    scans = watched_scans()
    pending(store, roots, [current], scans)  # the walk; its folders are watched from now on
    stats = journal_stats(monkeypatch)
    pending(store, roots, [current], scans)
    assert len(stats) == len(journals), "a folder watched only since the last look must be looked at again"
    stats.clear()
    assert answer(pending(store, roots, [current], scans)) == (0, 0, 0, [])
    assert stats == []

    append_user(Path(current), "said in the current session", "feed0201")  # the caller's own journal
    assert answer(pending(store, roots, [current], scans)) == (0, 0, 0, [])
    assert stats == [], "writes to the journal left aside woke the look"

    append_user(Path(other), "said in another session", "feed0202")
    grown = pending(store, roots, [current], scans)
    assert (grown.grown, grown.unseen, grown.paths) == (1, 0, [other]) and grown.bytes > 0
    assert len(stats) == len(journals)


def test_the_answer_is_the_one_of_a_look_from_scratch_after_any_change(
        store: Store, watchable: Path, monkeypatch: Any) -> None:
    """Seeded random changes to the tree (appends, the caller's own included, new journals and
    folders, renames, rewrites, removals, a touch, another journal becoming the caller's) and
    indexing in between: each answer equals a look without anything kept."""
    roots = [Root(watchable)]
    index_files(store, discover(roots), roots=roots)
    current = discover(roots)[0]
    scans = watched_scans()
    rng = random.Random(SEED)
    made = 0

    def switch_current() -> None:  # the caller's journal is another one now
        nonlocal current
        current = rng.choice(discover(roots))

    def some_journal() -> Path:
        return Path(rng.choice([p for p in discover(roots) if p != current]))

    def new_journal(folder: Path) -> None:
        nonlocal made
        made += 1
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"2026-12-04T10-00-00-000Z_0000000{made}-0000-7000-8000-000000000000.jsonl"
        header = {"type": "session", "version": 3, "id": path.stem.split("_")[1],
                  "timestamp": "2026-12-04T10:00:00.000Z", "cwd": f"/home/dev/new{made}"}
        path.write_text(json.dumps(header) + "\n")

    def rewrite(path: Path) -> None:
        lines = path.read_bytes().splitlines(keepends=True)
        spare = path.with_suffix(".tmp")
        spare.write_bytes(b"".join(lines[: max(1, len(lines) - 1)]))
        os.replace(spare, path)

    changes: list[Callable[[], object]] = [
        lambda: append_user(some_journal(), "more words", f"feed{rng.randrange(10**4):04d}"),
        lambda: append_user(Path(current), "the caller speaks", f"feed{rng.randrange(10**4):04d}"),
        lambda: append_user(Path(current), "the caller speaks", f"feed{rng.randrange(10**4):04d}"),
        switch_current,
        lambda: new_journal(watchable / rng.choice(sorted(os.listdir(watchable)))),
        lambda: new_journal(watchable / f"--home-dev-new{made}--"),
        lambda: some_journal().unlink(),
        lambda: rewrite(some_journal()),
        lambda: os.utime(some_journal(), ns=(1, 1)),
        lambda: index_file(store, str(some_journal()), roots),
        lambda: None,
    ]
    for _ in range(80):
        rng.choice(changes)()
        kept = answer(pending(store, roots, [current], scans))
        assert kept == answer(pending(store, roots, [current]))


def test_a_folder_on_a_file_system_not_trusted_is_looked_at_every_time(
        store: Store, watchable: Path, monkeypatch: Any) -> None:
    """Where changes may come from elsewhere (NFS, FUSE: here, every file system made untrusted),
    every call stats every journal, as without a watch."""
    monkeypatch.setattr(folder_watch, "LOCAL_FILESYSTEMS", set())
    roots = [Root(watchable)]
    journals = discover(roots)
    index_files(store, journals, roots=roots)
    scans = watched_scans()
    pending(store, roots, [], scans)
    assert scans.listings.watch is not None and not scans.listings.watch.usable
    stats = journal_stats(monkeypatch)
    for _ in range(3):
        stats.clear()
        assert answer(pending(store, roots, [], scans)) == (0, 0, 0, [])
        assert len(stats) == len(journals)
