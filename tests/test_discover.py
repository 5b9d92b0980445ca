"""discover() walks with scandir and skips realpath for entries that are not links: it must list
exactly what a walk that resolves every path lists (the plain, slow way), links and loops included."""

from __future__ import annotations

import os
from pathlib import Path

from journal_index.indexing.indexer import Listings, discover, discover_stats


def _resolving_walk(roots: list[Path]) -> list[str]:
    """The plain way: os.walk, realpath of every folder and file."""
    real_roots = [os.path.realpath(r) for r in roots]

    def within(path: str) -> bool:
        return any(path == f or path.startswith(f + os.sep) for f in real_roots)

    by_file: dict[tuple[int, int], tuple[int, str]] = {}
    seen: set[tuple[int, int]] = set()
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
            st = os.stat(dirpath)
            if (st.st_dev, st.st_ino) in seen or not within(os.path.realpath(dirpath)):
                dirnames[:] = []
                continue
            seen.add((st.st_dev, st.st_ino))
            dirnames.sort()
            for name in sorted(filenames):
                full = os.path.abspath(os.path.join(dirpath, name))
                real = os.path.realpath(full)
                if not name.endswith(".jsonl") or not within(real) or not os.path.exists(full):
                    continue
                fst = os.stat(full)
                kept = by_file.get((fst.st_dev, fst.st_ino))
                if kept is None or (full == real and kept[1] != real):
                    by_file[(fst.st_dev, fst.st_ino)] = (fst.st_mtime_ns, full)
    return [p for _, p in sorted(by_file.values(), key=lambda item: (-item[0], item[1]))]


def test_discover_lists_what_a_resolving_walk_lists(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    for folder in (root / "a" / "deep", root / "b", outside):
        folder.mkdir(parents=True)
    for n, path in enumerate([root / "a" / "one.jsonl", root / "a" / "deep" / "two.jsonl",
                              root / "b" / "three.jsonl", outside / "secret.jsonl", root / "notes.txt"]):
        path.write_text("{}\n")
        os.utime(path, ns=(10**18 + n, 10**18 + n))
    (root / "b" / "again.jsonl").symlink_to(root / "a" / "one.jsonl")  # a second name: listed once
    (root / "link-a").symlink_to(root / "a")  # a second way into a folder
    (root / "out").symlink_to(outside)  # a folder link out of the roots
    (root / "b" / "out.jsonl").symlink_to(outside / "secret.jsonl")  # a file link out
    (root / "a" / "deep" / "loop").symlink_to(root)  # a loop
    (root / "b" / "broken.jsonl").symlink_to(tmp_path / "gone.jsonl")

    found = discover([root])
    assert found == _resolving_walk([root])
    assert not any("secret" in p or "out" in os.path.basename(p) for p in found)
    assert len(found) == 3
    assert [p for p, _ in discover_stats([root])] == found
    assert all(st.st_size == os.stat(p).st_size for p, st in discover_stats([root]))


def _walk(root: Path, listings: Listings | None = None) -> list[tuple[str, int]]:
    return [(p, st.st_size) for p, st in discover_stats([root], listings)]


def test_kept_listings_walk_as_a_fresh_walk_does_while_folders_change(tmp_path: Path) -> None:
    """The agent tool keeps folder listings between calls: a folder unchanged since (device, inode,
    mtime, ctime) is not listed again, but every journal is stat'ed again, so what grew, appeared,
    vanished or moved is seen as a fresh walk sees it. A folder holding a symlink is never kept."""
    root = tmp_path / "root"
    for folder in (root / "a" / "deep", root / "b"):
        folder.mkdir(parents=True)
    for path in (root / "a" / "one.jsonl", root / "a" / "deep" / "two.jsonl", root / "b" / "three.jsonl"):
        path.write_text("{}\n")
    (root / "b" / "again.jsonl").symlink_to(root / "a" / "one.jsonl")
    listings = Listings(racy_ns=0)  # keep even what changed a moment ago (the default waits 2 s)
    assert _walk(root, listings) == _walk(root)
    assert listings.get(str(root / "a"), os.stat(root / "a")) is not None
    assert listings.get(str(root / "b"), os.stat(root / "b")) is None  # a symlink inside: listed each time

    with open(root / "a" / "one.jsonl", "a") as handle:  # grows; its folder does not change
        handle.write('{"more": 1}\n')
    assert listings.get(str(root / "a"), os.stat(root / "a")) is not None
    assert _walk(root, listings) == _walk(root)
    assert (str(root / "a" / "one.jsonl"), 15) in _walk(root, listings)

    (root / "a" / "new.jsonl").write_text("{}\n")  # appears in a kept folder
    (root / "a" / "deep" / "two.jsonl").unlink()  # vanishes from another
    (root / "a" / "deep" / "deeper").mkdir()
    (root / "a" / "deep" / "deeper" / "four.jsonl").write_text("{}\n")
    (root / "a" / "one.jsonl").rename(root / "a" / "moved.jsonl")
    walked = _walk(root, listings)
    assert walked == _walk(root)
    assert {os.path.basename(p) for p, _ in walked} == {"new.jsonl", "moved.jsonl", "four.jsonl", "three.jsonl"}


def test_a_folder_changed_just_before_its_listing_is_listed_again(tmp_path: Path) -> None:
    """Within RACY_NS of a change a folder may change again inside the same mtime tick: its listing
    is not kept, so a journal created right after a walk is found by the next one."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "one.jsonl").write_text("{}\n")
    listings = Listings()
    assert len(_walk(root, listings)) == 1
    assert listings.get(str(root), os.stat(root)) is None
    (root / "two.jsonl").write_text("{}\n")
    assert len(_walk(root, listings)) == 2


def test_a_kept_walk_is_redone_by_stat_alone_as_a_fresh_walk_would_find_it(tmp_path: Path) -> None:
    """With every folder's listing kept, the next walk only stats what the last one did
    (Listings.again): a journal grown, or touched to another time, is seen and ordered as a fresh
    walk orders it; a folder that changed, or a name that now holds another file, makes a walk."""
    root = tmp_path / "root"
    for folder in (root / "a" / "deep", root / "b"):
        folder.mkdir(parents=True)
    paths = [root / "a" / "one.jsonl", root / "a" / "deep" / "two.jsonl", root / "b" / "three.jsonl"]
    for n, path in enumerate(paths):
        path.write_text("{}\n")
        os.utime(path, ns=(10**18 + n, 10**18 + n))
    listings = Listings(racy_ns=0)
    walked = [(p, st.st_mtime_ns) for p, st in discover_stats([root], listings)]
    assert listings.again(((str(root),), (os.path.realpath(root),))) is not None  # the walk is kept
    assert listings.unchanged

    def both() -> list[tuple[str, int]]:
        kept = [(p, st.st_size, st.st_mtime_ns) for p, st in discover_stats([root], listings)]
        assert kept == [(p, st.st_size, st.st_mtime_ns) for p, st in discover_stats([root])]
        return [(p, size) for p, size, _ in kept]

    assert [p for p, _ in both()] == [p for p, _ in walked] and listings.unchanged
    with open(paths[0], "a") as handle:  # grows; its folder does not change
        handle.write('{"more": 1}\n')
    assert (str(paths[0]), 15) in both() and not listings.unchanged
    os.utime(paths[0], ns=(1, 1))  # now the oldest: last
    assert [p for p, _ in both()][-1] == str(paths[0])
    assert both() and listings.unchanged
    (root / "b" / "new.jsonl").write_text("{}\n")  # a kept folder changes: walked afresh
    assert str(root / "b" / "new.jsonl") in [p for p, _ in both()]
    os.rename(paths[2], root / "b" / "gone.jsonl")
    assert str(paths[2]) not in [p for p, _ in both()]
