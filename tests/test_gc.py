"""gc: each junk rule, each exemption, preview → confirm, and the roots as a hard boundary."""

from __future__ import annotations

import os
import time
from pathlib import Path

import apsw
import orjson
import pytest
from click.testing import CliRunner

from journal_index.cli import cli
from journal_index.data.store import open_store
from journal_index.indexing import gc
from tests.helpers import copy_journal_tree

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "sessions"
DAY = 24 * 3600


def line(obj: dict) -> bytes:
    return orjson.dumps(obj) + b"\n"


def write_journal(path: Path, cwd: str, *, users: int = 2, customs: int = 0, replies: int = 4,
                  compactions: int = 0, word: str = "ordinary", age_hours: float = 72) -> Path:
    """A pi v3 journal with the given numbers of user, custom, assistant and compaction entries."""
    path.parent.mkdir(parents=True, exist_ok=True)
    ts = "2026-10-01T10:00:00.000Z"
    out = [line({"type": "session", "version": 3, "id": path.stem, "timestamp": ts, "cwd": cwd})]
    n = 0

    def entry(obj: dict) -> None:
        nonlocal n
        n += 1
        out.append(line({"id": f"{n:08x}", "parentId": None, "timestamp": ts, **obj}))

    for i in range(users):
        entry({"type": "message", "message": {"role": "user", "content": f"{word} question {i}"}})
    for i in range(customs):
        entry({"type": "custom_message", "customType": "team", "content": f"{word} note {i}", "display": True})
    for i in range(replies):
        entry({"type": "message", "message": {"role": "assistant", "content": [
            {"type": "text", "text": f"{word} answer {i}"}]}})
    for _ in range(compactions):
        entry({"type": "compaction", "summary": f"{word} summary", "firstKeptEntryId": "00000001",
               "tokensBefore": 1000})
    path.write_bytes(b"".join(out))
    age(path, age_hours)
    return path


def age(path: Path, hours: float) -> None:
    moment = time.time() - hours * 3600
    os.utime(path, (moment, moment))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "sessions"


@pytest.fixture
def store(tmp_path: Path):
    s = open_store(str(tmp_path / "index.db"))
    yield s
    s.close()


def reasons_by_name(candidates: list[gc.Candidate]) -> dict[str, list[str]]:
    return {Path(c.path).name: c.reasons for c in candidates}


def test_each_junk_rule(tmp_path, root, store):
    proj = "/home/dev/Apps/proj"
    write_journal(root / "--tmp-x--" / "tmp.jsonl", "/tmp/x")
    write_journal(root / "--var-tmp-y--" / "vartmp.jsonl", "/var/tmp/y")
    write_journal(root / "--mac--" / "macos.jsonl", "/private/var/folders/zz/abc/T/work")
    write_journal(root / "--proj--" / "nouser.jsonl", proj, users=0)
    write_journal(root / "--proj--" / "custom-only.jsonl", proj, users=0, customs=1)
    write_journal(root / "--proj--" / "two-replies.jsonl", proj, replies=2)
    write_journal(root / "--proj--" / "three-replies.jsonl", proj, replies=3)
    write_journal(root / "--proj--" / "empty.jsonl", proj, users=0, replies=0)
    write_journal(root / "--tmp-x--" / "compacted.jsonl", "/tmp/x", users=0, replies=1, compactions=1)

    found = reasons_by_name(gc.preview(store, [root], cwd=str(tmp_path)))
    assert found == {
        "tmp.jsonl": ["temp-cwd"],
        "vartmp.jsonl": ["temp-cwd"],
        "macos.jsonl": ["temp-cwd"],
        "nouser.jsonl": ["no-user-message"],
        "two-replies.jsonl": ["few-replies"],
        "empty.jsonl": ["no-user-message", "few-replies"],
    }


def test_the_fixture_corpus(tmp_path, store):
    root = tmp_path / "sessions"
    copy_journal_tree(FIXTURES, root)
    for path in root.rglob("*.jsonl"):
        age(path, 72)
    found = reasons_by_name(gc.preview(store, [root], cwd=str(tmp_path)))
    assert sorted(found.values()) == [["few-replies"], ["temp-cwd"], ["temp-cwd"]]


def test_exemptions(tmp_path, root, store, monkeypatch):
    write_journal(root / "--tmp-x--" / "fresh.jsonl", "/tmp/x", age_hours=23)
    current = write_journal(root / "--tmp-x--" / "current.jsonl", "/tmp/x")
    here = tmp_path / "work"
    here.mkdir()
    write_journal(root / "--work--" / "older.jsonl", str(here), users=0, age_hours=100)
    write_journal(root / "--work--" / "newest.jsonl", str(here), users=0, age_hours=50)
    monkeypatch.chdir(here)
    found = reasons_by_name(gc.preview(store, [root], current=str(current)))
    assert set(found) == {"older.jsonl"}  # (tmp_path may itself be a temporary folder)
    assert "no-user-message" in found["older.jsonl"]
    # The same journals without the exemptions are candidates.
    monkeypatch.chdir(tmp_path)
    found = reasons_by_name(gc.preview(store, [root]))
    assert set(found) == {"older.jsonl", "newest.jsonl", "current.jsonl"}


def vocab(db: Path, prefix: str) -> list[str]:
    conn = apsw.Connection(str(db))
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, entries_fts, 'row')")
        return [t for (t,) in conn.execute("SELECT term FROM temp.v WHERE term LIKE ?", (prefix + "%",))]
    finally:
        conn.close()


def test_preview_then_confirm_deletes_unchanged_candidates_and_their_terms(tmp_path, root):
    db = tmp_path / "index.db"
    doomed = write_journal(root / "--tmp-x--" / "doomed.jsonl", "/tmp/x", word="xylophonequartz")
    touched = write_journal(root / "--tmp-x--" / "touched.jsonl", "/tmp/x", word="marimbafeldspar")
    keeper = write_journal(root / "--proj--" / "keeper.jsonl", "/home/dev/proj", word="keeperword")
    runner = CliRunner()
    base = ["--db", str(db), "--sessions", str(root)]

    nothing = runner.invoke(cli, [*base, "gc", "--confirm", "--json"], catch_exceptions=False)
    assert orjson.loads(nothing.output) == {"deleted": [], "skipped": []}
    assert doomed.exists() and touched.exists()

    shown = runner.invoke(cli, [*base, "gc", "--json"], catch_exceptions=False)
    assert shown.exit_code == 0, shown.output
    listed = orjson.loads(shown.output)["candidates"]
    assert sorted(c["path"] for c in listed) == sorted([str(doomed), str(touched)])
    assert all(c["ageHours"] >= 71 and c["reasons"] == ["temp-cwd"] and c["size"] > 0 for c in listed)
    assert vocab(db, "xylophonequartz")

    age(touched, 60)  # modified after the preview (mtime only)
    done = runner.invoke(cli, [*base, "gc", "--confirm", "--json"], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    assert orjson.loads(done.output) == {
        "deleted": [str(doomed)],
        "skipped": [{"path": str(touched), "reason": "changed since the preview"}],
    }
    assert not doomed.exists() and touched.exists() and keeper.exists()
    assert vocab(db, "xylophonequartz") == []
    assert vocab(db, "marimbafeldspar") and vocab(db, "keeperword")
    store = open_store(str(db))
    try:
        assert store.value("SELECT count(*) FROM files WHERE path = ?", (str(doomed),)) == 0
        assert store.value("SELECT count(*) FROM gc_preview") == 0
    finally:
        store.close()

    # The preview is used up: confirming again deletes nothing.
    again = runner.invoke(cli, [*base, "gc", "--confirm"], catch_exceptions=False)
    assert "run `journal-index gc` first" in again.output
    assert touched.exists()

    text = runner.invoke(cli, [*base, "gc"], catch_exceptions=False)
    assert "touched.jsonl" in text.output and "temporary folder" in text.output


def test_journals_outside_the_roots_are_never_touched(tmp_path, root, store):
    outside = tmp_path / "outside"
    victim = write_journal(outside / "victim.jsonl", "/tmp/x")
    victim_dir = write_journal(outside / "dir" / "victim2.jsonl", "/tmp/x")
    (root / "--proj--").mkdir(parents=True)
    (root / "--proj--" / "link.jsonl").symlink_to(victim)
    (root / "--linked-dir--").symlink_to(victim_dir.parent, target_is_directory=True)
    inside = write_journal(root / "--tmp-x--" / "inside.jsonl", "/tmp/x")

    found = gc.preview(store, [root], cwd=str(tmp_path))
    assert [c.path for c in found] == [str(inside)]

    # Even a tampered preview cannot reach out of the roots.
    with store.write():
        for path in (str(victim), str(root / "--proj--" / "link.jsonl"),
                     str(root / "--linked-dir--" / "victim2.jsonl"),
                     str(root / "--tmp-x--" / ".." / ".." / "outside" / "victim.jsonl")):
            st = os.lstat(path)
            store.conn.execute("INSERT INTO gc_preview(path, size, mtime_ns, reasons, previewed_at) "
                               "VALUES(?, ?, ?, 'temp-cwd', 0)",
                               (path, st.st_size, st.st_mtime_ns))
    result = gc.confirm(store, [root])
    assert result.deleted == [str(inside)]
    reasons = {Path(p).name: r for p, r in result.skipped}
    assert len(result.skipped) == 4
    assert reasons["link.jsonl"] == "a symlink"
    assert reasons["victim2.jsonl"] == "outside the session roots"
    assert {r for p, r in result.skipped if Path(p).name == "victim.jsonl"} == {
        "outside the session roots", "not a plain absolute path"}
    assert victim.exists() and victim_dir.exists()


def test_confirm_keeps_a_journal_put_in_a_listed_ones_place(tmp_path: Path, root: Path) -> None:
    """The listed file is replaced after the preview (renamed over: a new inode) by a valuable
    journal of the same size and mtime, or rewritten in place with its mtime put back: both
    are kept, with a reason; the untouched candidate is deleted."""
    from tests.reliability_helpers import run_cli

    db = tmp_path / "index.db"
    doomed = write_journal(root / "--tmp-x--" / "doomed.jsonl", "/tmp/x", word="doomedword")
    renamed_over = write_journal(root / "--tmp-x--" / "renamed.jsonl", "/tmp/x", word="junkyword1")
    rewritten = write_journal(root / "--tmp-x--" / "rewritten.jsonl", "/tmp/x", word="junkyword2")
    shown = run_cli(db, root, "gc", "--json", cwd=str(tmp_path))
    assert shown.clean(), shown.stderr
    assert sorted(c["path"] for c in orjson.loads(shown.stdout)["candidates"]) == sorted(
        [str(doomed), str(renamed_over), str(rewritten)])

    # A valuable journal of the same size and mtime takes the listed one's name.
    listed = os.stat(renamed_over)
    valuable = write_journal(root / "--tmp-x--" / "incoming.tmp", "/home/dev/valuable", users=2, replies=4,
                             word="valuable")
    valuable.write_bytes(valuable.read_bytes()[:listed.st_size].ljust(listed.st_size, b"\n"))
    os.utime(valuable, ns=(listed.st_atime_ns, listed.st_mtime_ns))
    os.replace(valuable, renamed_over)
    after = os.stat(renamed_over)
    assert (after.st_size, after.st_mtime_ns) == (listed.st_size, listed.st_mtime_ns)
    assert after.st_ino != listed.st_ino
    precious = renamed_over.read_bytes()

    # The same file written over from its start, its mtime put back.
    listed = os.stat(rewritten)
    with rewritten.open("r+b") as handle:
        handle.write(b'{"type":"session","version":3,"id":"precious"')
    os.utime(rewritten, ns=(listed.st_atime_ns, listed.st_mtime_ns))

    done = run_cli(db, root, "gc", "--confirm", "--json", cwd=str(tmp_path))
    assert done.clean(), done.stderr
    assert orjson.loads(done.stdout) == {
        "deleted": [str(doomed)],
        "skipped": [{"path": str(renamed_over), "reason": "replaced by another file since the preview"},
                    {"path": str(rewritten), "reason": "changed since the preview"}],
    }
    assert not doomed.exists()
    assert renamed_over.read_bytes() == precious and rewritten.exists()
    assert sorted(p.name for p in (root / "--tmp-x--").iterdir()) == ["renamed.jsonl", "rewritten.jsonl"]
    text = run_cli(db, root, "gc", "--confirm", cwd=str(tmp_path))
    assert "run `journal-index gc` first" in text.stdout


def test_a_preview_without_identities_deletes_nothing(tmp_path: Path, root: Path, store) -> None:
    junk = write_journal(root / "--tmp-x--" / "junk.jsonl", "/tmp/x")
    st = os.stat(junk)
    with store.write():  # as an older journal-index recorded it: size and mtime only
        store.conn.execute("INSERT INTO gc_preview(path, size, mtime_ns, reasons, previewed_at) "
                           "VALUES(?, ?, ?, 'temp-cwd', 0)", (str(junk), st.st_size, st.st_mtime_ns))
    result = gc.confirm(store, [root])
    assert result.deleted == [] and junk.exists()
    assert result.skipped == [(str(junk), "listed by an older journal-index; run `journal-index gc` again to see it")]


def test_delete_if_same_never_deletes_a_file_that_took_the_name(tmp_path: Path) -> None:
    listed = tmp_path / "listed.jsonl"
    listed.write_bytes(b"junk\n")
    shown = gc.identity_at(str(listed))
    other = tmp_path / "other.jsonl"
    other.write_bytes(b"gold\n")
    os.utime(other, ns=(shown.mtime_ns, shown.mtime_ns))
    os.replace(other, listed)
    assert gc.delete_if_same(str(listed), shown) == "replaced by another file since the preview"
    assert listed.read_bytes() == b"gold\n"
    assert [p.name for p in tmp_path.iterdir()] == ["listed.jsonl"]
    same = gc.identity_at(str(listed))
    assert gc.delete_if_same(str(listed), same) is None
    assert list(tmp_path.iterdir()) == []
