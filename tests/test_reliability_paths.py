"""Path safety: `read`, `search` and `gc` never open or delete a journal outside the session roots,
whatever path the index holds (tampered rows, ``..``) and wherever a symlink in the roots points.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import orjson
import pytest

from journal_index import query
from journal_index.data.store import open_store
from journal_index.indexing import gc
from journal_index.indexing.indexer import discover, index_files
from journal_index.query.scope import Scope
from tests.reliability_helpers import run_cli

CWD = "/home/dev/Apps/paths"
FOLDER = "--home-dev-Apps-paths--"
INSIDE, OUTSIDE = "insidetext", "outsidetxt"  # same length: the outside line still "verifies"


def journal(session: str, entry_id: str, word: str) -> bytes:
    head = {"type": "session", "version": 3, "id": session, "timestamp": "2026-01-01T00:00:00.000Z", "cwd": CWD}
    line = {"type": "message", "id": entry_id, "parentId": None, "timestamp": "2026-01-01T00:01:00.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": f"{word} common words here"}]}}
    return orjson.dumps(head) + b"\n" + orjson.dumps(line) + b"\n"


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    root = tmp_path / "sessions"
    (root / FOLDER).mkdir(parents=True)
    outside_dir = tmp_path / "outside"
    outside_dir.mkdir()
    inside = root / FOLDER / "victim.jsonl"
    inside.write_bytes(journal("s-victim", "victim-1", INSIDE))
    outside = tmp_path / "outside.jsonl"  # i.e. <root>/../outside.jsonl
    outside.write_bytes(journal("s-victim", "victim-1", OUTSIDE))
    return {"root": root, "inside": inside, "outside": outside, "outside_dir": outside_dir,
            "db": tmp_path / "index.db"}


def _tamper(db: Path, old: Path | str, new: str) -> None:
    store = open_store(str(db))
    try:
        with store.write():
            store.conn.execute("UPDATE files SET path = ? WHERE path = ?", (new, str(old)))
    finally:
        store.close()


def _assert_no_outside_text(db: Path, root: Path, entry_id: str) -> None:
    read = run_cli(db, root, "read", entry_id, "--scope", "global", "--json")
    assert "Traceback" not in read.stderr
    assert OUTSIDE not in read.stdout
    assert json.loads(read.stdout)["status"] in ("unavailable", "not_found")
    for args in (["search", "common", "words"], ["search"]):
        run = run_cli(db, root, *args, "--scope", "global", "--json")
        assert run.clean(), run.stderr
        assert OUTSIDE not in run.stdout, (args, run.stdout)


@pytest.mark.parametrize("tampered", ["dotdot", "absolute"])
def test_tampered_paths_are_never_read(layout: dict[str, Path], tampered: str) -> None:
    root, db = layout["root"], layout["db"]
    assert run_cli(db, root, "index").clean()
    ok = run_cli(db, root, "read", "victim-1", "--scope", "global", "--json")
    assert json.loads(ok.stdout)["text"].startswith(INSIDE)
    new = f"{root}/../outside.jsonl" if tampered == "dotdot" else str(layout["outside"])
    _tamper(db, layout["inside"], new)
    before = _files(db)
    _assert_no_outside_text(db, root, "victim-1")
    # The outside journal was not reindexed either (no rebuild-on-mismatch through a bad path).
    assert _files(db) == before


def _files(db: Path) -> list[tuple]:
    store = open_store(str(db))
    try:
        return store.rows("SELECT path, cursor, entries, indexed_at FROM files ORDER BY path")
    finally:
        store.close()


def test_symlinks_pointing_out_are_never_read(layout: dict[str, Path]) -> None:
    root, db = layout["root"], layout["db"]
    layout["inside"].unlink()
    (root / FOLDER / "link.jsonl").symlink_to(layout["outside"])  # a file symlink out
    (layout["outside_dir"] / "other.jsonl").write_bytes(journal("s-other", "victim-2", OUTSIDE))
    (root / "linked-folder").symlink_to(layout["outside_dir"])  # a folder symlink out
    run = run_cli(db, root, "index")
    assert run.clean(), run.stderr
    for entry_id in ("victim-1", "victim-2"):
        _assert_no_outside_text(db, root, entry_id)


def test_symlinked_root_itself_still_reads(tmp_path: Path, layout: dict[str, Path]) -> None:
    """The roots are resolved too: a session root that is itself a symlink keeps working."""
    alias = tmp_path / "alias-sessions"
    alias.symlink_to(layout["root"])
    db = layout["db"]
    assert run_cli(db, alias, "index").clean()
    answer = json.loads(run_cli(db, alias, "read", "victim-1", "--scope", "global", "--json").stdout)
    assert answer["status"] == "ok" and answer["text"].startswith(INSIDE)


def test_query_layer_roots_argument(layout: dict[str, Path]) -> None:
    root = layout["root"]
    store = open_store(str(layout["db"]))
    try:
        index_files(store, discover([root]))
        with store.write():
            store.conn.execute("UPDATE files SET path = ?", (f"{root}/../outside.jsonl",))
        answer = query.read(store, "victim-1", Scope("global"), roots=[root])
        assert answer["status"] == "unavailable"
        hits = query.search(store, "common", query.Filters(Scope("global")), roots=[root]).hits
        assert hits and all(OUTSIDE not in h.excerpt for h in hits)
        # Without roots (in-process callers and tests) the query layer is unrestricted, as before.
        assert query.read(store, "victim-1", Scope("global"))["text"].startswith(OUTSIDE)
    finally:
        store.close()


def test_gc_never_deletes_outside_the_roots(layout: dict[str, Path]) -> None:
    root, db, outside = layout["root"], layout["db"], layout["outside"]
    old = time.time() - 10 * 86_400
    os.utime(outside, (old, old))  # old and tiny: junk by every rule, were it inside
    link = root / FOLDER / "link.jsonl"
    link.symlink_to(outside)
    dotdot = f"{root}/../outside.jsonl"
    assert gc.unsafe_reason(str(link), [root]) is not None
    assert gc.unsafe_reason(dotdot, [root]) is not None
    assert gc.unsafe_reason(str(outside), [root]) is not None
    run = run_cli(db, root, "gc", "--json", cwd=str(layout["outside_dir"]))
    assert run.clean(), run.stderr
    listed = {c["path"] for c in json.loads(run.stdout)["candidates"]}
    assert str(link) not in listed and str(outside) not in listed
    # A tampered preview (the only list --confirm deletes from) naming paths outside the roots.
    st = outside.stat()
    store = open_store(str(db))
    try:
        with store.write():
            store.conn.execute("DELETE FROM gc_preview")
            for path in (dotdot, str(outside), str(link)):
                store.conn.execute(
                    "INSERT INTO gc_preview(path, size, mtime_ns, reasons, previewed_at) VALUES(?, ?, ?, ?, ?)",
                    (path, st.st_size, st.st_mtime_ns, "few-replies", 0))
    finally:
        store.close()
    run = run_cli(db, root, "gc", "--confirm", "--json", cwd=str(layout["outside_dir"]))
    assert run.clean(), run.stderr
    assert json.loads(run.stdout)["deleted"] == []
    assert outside.exists() and link.is_symlink()
