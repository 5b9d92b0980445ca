"""The incremental indexer: counts, appends, rewrites, crashes, bad lines, unchanged files."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from journal_index.data.store import Store
from journal_index.indexing import journal_blocks, journal_pass
from journal_index.indexing.indexer import discover, index_file, index_files
from journal_index.text import giant_line
from tests.conftest import FIXTURES
from tests.helpers import (
    entry_rows,
    expected_kind_counts,
    fts_ids,
    load_secrets,
    scratch_snapshot,
    secret_is_searchable,
    snapshot,
    vocabulary,
)

BE1 = "--home-dev-Apps-prjct-prjct-be--/2026-09-01T13-40-00-000Z_01a05d32-b780-77a8-84b6-ccc1caffba94.jsonl"


def test_counts_per_kind_match_the_design(indexed_store: Store, sessions_root: Path) -> None:
    paths = sorted(sessions_root.rglob("*.jsonl"))
    expected = expected_kind_counts(paths)
    got = dict(indexed_store.rows("SELECT kind, count(*) FROM entries GROUP BY kind"))
    assert got == expected
    assert set(got) == {"user", "assistant", "tool_result", "bash", "custom", "compaction", "branch_summary",
                        "context_edit"}
    assert indexed_store.value("SELECT count(*) FROM files") == len(paths)
    assert indexed_store.value("SELECT sum(skipped) FROM files") == 0
    # every cursor reached the end of its (newline-terminated) journal
    for path, cursor in indexed_store.rows("SELECT path, cursor FROM files"):
        assert cursor == os.path.getsize(path)


def test_headers_become_file_metadata(indexed_store: Store, sessions_root: Path) -> None:
    row = indexed_store.one("SELECT session_id, cwd, version, name, entries FROM files WHERE path = ?",
                            (str(sessions_root / BE1),))
    assert row is not None
    assert row[:4] == ("01a05d32-b780-77a8-84b6-ccc1caffba94", "/home/dev/Apps/prjct/prjct-be", 3,
                       "API tokens + rate limiting")
    assert row[4] > 100


def test_legacy_journals_index_with_synthetic_ids(store: Store, legacy_dir: Path, tmp_path: Path) -> None:
    paths = sorted(legacy_dir.glob("*.jsonl"))
    report = index_files(store, paths)
    assert report.errors == [] and report.files == 4
    counts = dict(store.rows("SELECT f.version, count(*) FROM entries e JOIN files f ON f.id = e.file_id "
                             "GROUP BY f.version"))
    assert counts[1] > 100 and counts[3] > 10
    v1_ids = [r[0] for r in store.rows("SELECT entry_id FROM entries e JOIN files f ON f.id = e.file_id "
                                       "WHERE f.version = 1")]
    assert all(i.startswith("v1.") for i in v1_ids) and len(set(v1_ids)) == len(v1_ids)
    assert scratch_snapshot(paths) == snapshot(store)  # stable across a rebuild


def test_unchanged_files_are_not_read_again(indexed_store: Store, sessions_root: Path) -> None:
    path = sessions_root / BE1
    before = indexed_store.value("SELECT indexed_at FROM files WHERE path = ?", (str(path),))
    result = index_file(indexed_store, path)
    assert result.unchanged and result.entries == 0
    assert indexed_store.value("SELECT indexed_at FROM files WHERE path = ?", (str(path),)) == before


def split_journal(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def test_appends_index_exactly_the_new_entries(store: Store, sessions_root: Path, tmp_path: Path) -> None:
    source = sessions_root / BE1
    lines = split_journal(source)
    target = tmp_path / "growing.jsonl"
    target.write_bytes(b"".join(lines[:40]))
    index_file(store, target)
    first = store.value("SELECT count(*) FROM entries")
    # a whole line, then a line written in two halves
    with target.open("ab") as handle:
        handle.write(lines[40])
    assert index_file(store, target).entries == len(expected_entries(lines[40:41]))
    half = len(lines[41]) // 2
    with target.open("ab") as handle:
        handle.write(lines[41][:half])
    partial = index_file(store, target)
    assert partial.entries == 0  # the unterminated line waits
    with target.open("ab") as handle:
        handle.write(lines[41][half:])
    assert index_file(store, target).entries == len(expected_entries(lines[41:42]))
    assert store.value("SELECT count(*) FROM entries") == first + len(expected_entries(lines[40:42]))
    assert scratch_snapshot([target]) == snapshot(store)


def expected_entries(lines: list[bytes]) -> list[str]:
    out = []
    for raw in lines:
        obj = json.loads(raw)
        if obj.get("type") in ("message", "compaction", "branch_summary", "custom_message"):
            out.append(obj["id"])
    return out


@pytest.mark.parametrize("seed", range(6))
def test_random_chunked_appends_equal_a_scratch_index(seed: int, store: Store, sessions_root: Path,
                                                      tmp_path: Path) -> None:
    rng = random.Random(seed)
    sources = sorted(sessions_root.rglob("*.jsonl"))
    source = sources[seed * 4 % len(sources)]
    data = source.read_bytes()
    target = tmp_path / f"grow-{seed}.jsonl"
    target.write_bytes(b"")
    position = 0
    while position < len(data):
        step = rng.choice([1, 7, 100, 4096, 50_000, len(data)])
        with target.open("ab") as handle:
            handle.write(data[position : position + step])
        position += step
        index_file(store, target)
    assert scratch_snapshot([target]) == snapshot(store)


@pytest.mark.parametrize("how", ["shorter", "same_length", "longer"])
def test_rewrites_leave_no_old_terms(how: str, store: Store, tmp_path: Path) -> None:
    target = tmp_path / "rewritten.jsonl"
    header = b'{"type":"session","version":3,"id":"s1","timestamp":"2026-09-01T10:00:00.000Z","cwd":"/w"}\n'

    def msg(entry_id: str, text: str) -> bytes:
        return (json.dumps({"type": "message", "id": entry_id, "parentId": None,
                            "timestamp": "2026-09-01T10:00:01.000Z",
                            "message": {"role": "user", "content": text}}) + "\n").encode()

    old = header + msg("aaaa0001", "zebrafish alpha") + msg("aaaa0002", "okapi beta")
    target.write_bytes(old)
    index_file(store, target)
    assert fts_ids(store, "zebrafish") == {"aaaa0001"}
    if how == "shorter":
        new = header + msg("bbbb0001", "narwhal")
    elif how == "same_length":
        new = header + msg("bbbb0001", "narwhal gamma") + msg("bbbb0002", "quokka delta")
        assert len(new) == len(old)
    else:
        new = header + msg("bbbb0001", "narwhal alpha") + msg("bbbb0002", "quokka beta") + msg("bbbb0003", "more")
    target.write_bytes(new)
    os.utime(target, ns=(1, 1))  # even an mtime going backwards must not hide the change
    result = index_file(store, target)
    assert result.reset
    terms = vocabulary(store)
    assert "zebrafish" not in terms and "okapi" not in terms
    assert fts_ids(store, "narwhal") == {"bbbb0001"}
    assert {r[1] for r in entry_rows(store)} == {i for i in ("bbbb0001", "bbbb0002", "bbbb0003")
                                                 if i.encode() in new}
    assert scratch_snapshot([target]) == snapshot(store)


def test_version_1_migrated_in_place_is_reindexed(store: Store, legacy_dir: Path, tmp_path: Path) -> None:
    path = legacy_dir / "v1-before-compaction.jsonl"
    index_file(store, path)
    old_ids = {r[1] for r in entry_rows(store)}
    # what pi does when it opens a v1 journal: add version and ids, rewrite the file
    lines = path.read_bytes().splitlines()
    header = json.loads(lines[0])
    header["version"] = 3
    out = [json.dumps(header).encode()]
    for n, raw in enumerate(lines[1:]):
        obj = json.loads(raw)
        obj = {"type": obj["type"], "id": f"{n:08x}", "parentId": None, **obj}
        out.append(json.dumps(obj).encode())
    path.write_bytes(b"\n".join(out) + b"\n")
    assert index_file(store, path).reset
    new_ids = {r[1] for r in entry_rows(store)}
    assert not (old_ids & new_ids) and all(not i.startswith("v1.") for i in new_ids)
    assert scratch_snapshot([path]) == snapshot(store)


def test_deleted_journal_is_forgotten(indexed_store: Store, sessions_root: Path) -> None:
    path = sessions_root / BE1
    ids = {r[1] for r in entry_rows(indexed_store) if r[0] == str(path)}
    path.unlink()
    assert index_file(indexed_store, path).removed
    assert indexed_store.value("SELECT count(*) FROM files WHERE path = ?", (str(path),)) == 0
    remaining = {r[1] for r in entry_rows(indexed_store)}
    # ids shared with the branched copy stay; the rest are gone
    copy_ids = {r[1] for r in entry_rows(indexed_store) if "01a066a0" in r[0]}
    assert not ((ids - copy_ids) & remaining)


def test_a_crash_between_batches_leaves_a_resumable_state(store: Store, sessions_root: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    path = sessions_root / BE1
    monkeypatch.setattr(journal_blocks, "CHUNK_BYTES", 16 * 1024)
    monkeypatch.setattr(journal_pass, "GROUP_CHARS", 16 * 1024)
    real_commit = journal_pass.Journal.apply
    calls = {"n": 0}

    def failing_commit(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt("simulated crash")
        return real_commit(self, *args, **kwargs)

    monkeypatch.setattr(journal_pass.Journal, "apply", failing_commit)
    with pytest.raises(KeyboardInterrupt):
        index_file(store, path)
    partial = store.value("SELECT count(*) FROM entries")
    assert 0 < partial < 150
    monkeypatch.setattr(journal_pass.Journal, "apply", real_commit)
    index_file(store, path)
    assert scratch_snapshot([path]) == snapshot(store)


def test_bad_lines_are_counted_and_good_lines_around_them_indexed(store: Store, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(giant_line, "GIANT_LINE_BYTES", 10_000)
    path = tmp_path / "hostile.jsonl"

    def msg(entry_id: str, text: str) -> bytes:
        return json.dumps({"type": "message", "id": entry_id, "message": {"role": "user", "content": text}}).encode()

    path.write_bytes(b"\n".join([
        b'{"type":"session","version":3,"id":"s","timestamp":"2026-09-01T10:00:00Z","cwd":"/w"}',
        msg("good0001", "first good"),
        b"{broken json",
        b"\xff\xfe\x00 binary",
        b"[1,2]",
        b"x" * 50_000,  # longer than the line limit: skipped without being held whole
        msg("good0002", "second good"),
        b'{"type":"future_thing","id":"f"}',
        b"",
        msg("good0003", "third good"),
    ]) + b"\n" + msg("tail0001", "unterminated"))
    result = index_file(store, path)
    assert {r[1] for r in entry_rows(store)} == {"good0001", "good0002", "good0003"}
    assert result.skipped == 5
    assert store.value("SELECT skipped FROM files") == 5
    with path.open("ab") as handle:
        handle.write(b"\n")
    index_file(store, path)
    assert {r[1] for r in entry_rows(store)} == {"good0001", "good0002", "good0003", "tail0001"}


def test_a_file_of_only_a_partial_line_waits(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "partial.jsonl"
    path.write_bytes(b'{"type":"session","version":3,"id":"s"')
    result = index_file(store, path)
    assert result.entries == 0 and result.error is None
    path.write_bytes(b'{"type":"session","version":3,"id":"s","cwd":"/w"}\n')
    index_file(store, path)
    assert store.value("SELECT cwd FROM files") == "/w"


def test_unreadable_journal_is_reported_not_raised(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "locked.jsonl"
    path.write_bytes(b'{"type":"session","version":3,"id":"s","cwd":"/w"}\n')
    path.chmod(0)
    try:
        if os.access(path, os.R_OK):
            pytest.skip("running as a user who can read mode-000 files")
        assert index_file(store, path).error
    finally:
        path.chmod(0o644)


def test_a_folder_named_like_a_journal_is_reported_not_raised(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "odd.jsonl"
    path.mkdir()
    result = index_file(store, path)
    assert result.error and result.entries == 0


def test_discover_is_newest_first_and_survives_symlink_loops(sessions_root: Path) -> None:
    (sessions_root / "loop").symlink_to(sessions_root)
    found = discover([sessions_root])
    assert len(found) == len(set(found))
    mtimes = [os.stat(p).st_mtime_ns for p in found]
    assert mtimes == sorted(mtimes, reverse=True)


def test_no_planted_secret_becomes_a_term(indexed_store: Store) -> None:
    secrets = load_secrets(FIXTURES)
    assert len(secrets) >= 19
    for secret in secrets:
        found = secret_is_searchable(indexed_store, secret)
        assert found is None, f"secret {secret[:6]}… is searchable through {found!r}"


def test_transactions_spanning_journals_give_the_same_index(store: Store, sessions_root: Path, legacy_dir: Path,
                                                             tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(journal_blocks, "CHUNK_BYTES", 64 * 1024)  # many blocks, across files
    monkeypatch.setattr(journal_pass, "GROUP_CHARS", 256 * 1024)
    paths = discover([sessions_root]) + discover([legacy_dir])
    report = index_files(store, paths)
    assert report.errors == [] and report.files == 30
    assert scratch_snapshot([Path(p) for p in paths]) == snapshot(store)


def test_a_long_line_at_the_end_waits_for_its_newline(store: Store, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(giant_line, "GIANT_LINE_BYTES", 5_000)
    monkeypatch.setattr(journal_blocks, "CHUNK_BYTES", 1024)
    path = tmp_path / "long.jsonl"
    header = b'{"type":"session","version":3,"id":"s","cwd":"/w"}\n'
    first = json.dumps({"type": "message", "id": "e0000001", "message": {"role": "user", "content": "hi"}})
    path.write_bytes(header + first.encode() + b"\n" + b"y" * 20_000)
    index_file(store, path)
    cursor = store.value("SELECT cursor FROM files")
    assert cursor == len(header) + len(first) + 1  # not past the unfinished long line
    after = json.dumps({"type": "message", "id": "e0000002", "message": {"role": "user", "content": "after"}})
    with path.open("ab") as handle:
        handle.write(b"\n" + after.encode() + b"\n")
    result = index_file(store, path)
    assert result.skipped == 1
    assert {r[1] for r in entry_rows(store)} == {"e0000001", "e0000002"}
    assert store.value("SELECT cursor FROM files") == path.stat().st_size


def test_a_journal_taken_over_by_another_process_does_not_stop_the_others(
        store: Store, sessions_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = discover([sessions_root])
    victim = paths[3]
    real_apply = journal_pass.Journal.apply

    def apply_after_another_process_moved_the_cursor(self, block, extracted):
        if self.path == victim and not self.conflicted:  # another process registered and indexed a line
            self.store.conn.execute("INSERT INTO files(path, format, cursor) VALUES(?, 'pi', 1) "
                                    "ON CONFLICT(path) DO UPDATE SET cursor = cursor + 1", (self.path,))
        return real_apply(self, block, extracted)

    monkeypatch.setattr(journal_pass.Journal, "apply", apply_after_another_process_moved_the_cursor)
    report = index_files(store, paths)
    assert report.errors == [] and report.files == len(paths)
    others = [Path(p) for p in paths if p != victim]
    assert {r for r in entry_rows(store) if r[0] != victim} == set(scratch_snapshot(others)[0])
    assert not [r for r in entry_rows(store) if r[0] == victim]  # its pass stopped at once


def _pi_journal(word: str) -> bytes:
    """A pi journal whose three entries all say ``word`` (words of one length give one size)."""
    lines = [{"type": "session", "version": 3, "id": "same-session", "timestamp": "2026-09-01T10:00:00.000Z",
              "cwd": "/home/dev/Apps/replaced"}]
    for n in range(1, 4):
        lines.append({"type": "message", "id": f"{n:08x}", "parentId": None, "timestamp": "2026-09-01T10:01:00.000Z",
                      "message": {"role": "user", "content": f"entry {n} says {word}"}})
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def test_a_journal_renamed_over_by_one_of_the_same_size_and_mtime_is_read_again(tmp_path: Path) -> None:
    from tests.reliability_helpers import run_cli

    root = tmp_path / "sessions"
    folder = root / "--home-dev-Apps-replaced--"
    folder.mkdir(parents=True)
    journal = folder / "journal.jsonl"
    old, new = _pi_journal("alphaquokka"), _pi_journal("omegawombat")
    assert len(old) == len(new)
    journal.write_bytes(old)
    db = tmp_path / "index.db"
    first = run_cli(db, root, "index", "--json")
    assert first.clean(), first.stderr
    before = os.stat(journal)

    # The same path, size, mtime, header line and entry ids; another inode and other words.
    replacement = folder / "replacement.tmp"
    replacement.write_bytes(new)
    os.utime(replacement, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(replacement, journal)
    after = os.stat(journal)
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert after.st_ino != before.st_ino

    again = run_cli(db, root, "index", "--json")
    assert again.clean(), again.stderr
    assert json.loads(again.stdout)["resetFiles"] == 1

    def found(word: str) -> list[dict]:
        run = run_cli(db, root, "search", word, "--scope", "global", "--json")
        assert run.clean(), run.stderr
        return json.loads(run.stdout)["results"]

    assert found("alphaquokka") == []  # the old words are gone from the index
    assert sorted(r["entryId"] for r in found("omegawombat")) == ["00000001", "00000002", "00000003"]
    page = run_cli(db, root, "read", "00000002", "--scope", "global", "--json")
    assert page.clean(), page.stderr
    assert json.loads(page.stdout)["text"] == "entry 2 says omegawombat"


def test_a_journal_rewritten_in_place_with_its_mtime_put_back_is_read_again(store: Store, tmp_path: Path) -> None:
    # Same inode, size, mtime, header line and last 4 KB: only the ctime tells the rewrite.
    filler = [json.dumps({"type": "message", "id": f"f{n:07x}", "parentId": None,
                          "message": {"role": "user", "content": f"filler line {n:04d} " + "z" * 100}}).encode()
              for n in range(60)]
    journal = tmp_path / "inplace.jsonl"
    journal.write_bytes(_pi_journal("alphaquokka") + b"\n".join(filler) + b"\n")
    index_file(store, journal)
    before = os.stat(journal)
    assert fts_ids(store, "alphaquokka")
    with journal.open("r+b") as handle:  # the same file, written over
        handle.write(_pi_journal("omegawombat"))
    os.utime(journal, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(journal)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)
    assert after.st_ctime_ns != before.st_ctime_ns

    result = index_file(store, journal)
    assert result.reset
    assert fts_ids(store, "alphaquokka") == set()
    assert fts_ids(store, "omegawombat") == {"00000001", "00000002", "00000003"}
    assert index_file(store, journal).unchanged  # and once recorded, it is left alone again
