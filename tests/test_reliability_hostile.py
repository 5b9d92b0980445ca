"""Hostile journals: each bad line or file is skipped and counted (or reported in one line),
nothing crashes, the good lines around it are indexed, and memory stays bounded.

Everything runs through the real CLI in a subprocess (exit code, stderr, peak RSS by wait4).
"""

from __future__ import annotations

import json
import os
import random
import socket
import stat
from pathlib import Path

import orjson
import pytest

from journal_index.data.store import open_store
from journal_index.indexing.indexer import discover
from tests.reliability_helpers import run_cli

CWD = "/home/dev/Apps/hostile"
FOLDER = "--home-dev-Apps-hostile--"
MB = 1_000_000
PEAK_RSS_LIMIT_MB = 400


def header(session: str) -> bytes:
    return orjson.dumps({"type": "session", "version": 3, "id": session,
                         "timestamp": "2026-03-01T10:00:00.000Z", "cwd": CWD}) + b"\n"


def good(entry_id: str, text: str) -> bytes:
    return orjson.dumps({"type": "message", "id": entry_id, "parentId": None,
                         "timestamp": "2026-03-01T10:01:00.000Z",
                         "message": {"role": "user", "content": [{"type": "text", "text": text}]}}) + b"\n"


def _msg(content: str) -> bytes:
    return b'{"type":"message","id":"x","message":{"role":"user","content":' + content.encode() + b"}}"


# Lines that must be skipped and counted; each is followed by a good line.
BAD_LINES: dict[str, bytes] = {
    "invalid json": b'{"type": "message", "id": "broken", "message": {"role": "user", oops',
    "array": b"[1, 2, 3]",
    "string": b'"just a string"',
    "number": b"42",
    "null": b"null",
    "content as a number": b'{"type":"message","id":"wt1","message":{"role":"user","content":42}}',
    "id as a list": b'{"type":"message","id":["a","b"],"message":{"role":"user","content":"hello"}}',
    "message as a string": b'{"type":"message","id":"wt2","message":"hello"}',
    "type as a number": b'{"type":7,"id":"wt3"}',
    "summary as an object": b'{"type":"compaction","id":"wt4","summary":{"a":1}}',
    "raw NUL bytes": b'{"type":"message","id":"nul1","message":{"role":"user","content":"a\x00b"}}',
    "only NUL bytes": b"\x00" * 300,
    "10k nested arrays": b"[" * 10_000 + b"]" * 10_000,
    "10k nested objects": b'{"a":' * 10_000 + b"1" + b"}" * 10_000,
    "10k nested content": _msg("[" * 10_000 + "]" * 10_000),
    "unknown type": b'{"type":"from_the_future","id":"fut1","payload":1}',
}


def mixed_journal(path: Path) -> list[str]:
    """A journal alternating good lines and every bad line; returns the good ids."""
    ids = []
    data = header("hostile-mixed")
    for n, bad in enumerate(BAD_LINES.values()):
        entry_id = f"good-{n}"
        ids.append(entry_id)
        data += good(entry_id, f"survivor{n} words around a hostile line") + bad + b"\n"
    # A NUL escaped inside a JSON string is valid JSON: it is a good line.
    data += good("good-escaped-nul", "escaped\u0000nul survivorzero")
    ids.append("good-escaped-nul")
    # Bad characters are replaced (U+FFFD), the entry kept (DESIGN invariant 11).
    data += b'{"type":"message","id":"badutf8","message":{"role":"user","content":"caf\xe9 \xff\xfe"}}\n'
    data += b'{"type":"message","id":"lonesurrogate","message":{"role":"user","content":"cut \\ud83d here"}}\n'
    ids += ["badutf8", "lonesurrogate"]
    # Two objects on one line (a writer lost a newline): both are salvaged.
    data += good("joined-1", "first of a pair")[:-1] + good("joined-2", "second of a pair")
    ids += ["joined-1", "joined-2"]
    data += good("good-last", "survivorlast final words")
    ids.append("good-last")
    path.write_bytes(data)
    return ids


def read_ok(db: Path, root: Path, entry_id: str) -> dict:
    """`read --json`; exit 0 for ok, 1 for not found / unavailable (never a traceback)."""
    run = run_cli(db, root, "read", entry_id, "--scope", "global", "--json")
    answer = json.loads(run.stdout)
    assert run.returncode == (0 if answer["status"] == "ok" else 1), run
    assert "Traceback" not in run.stderr and not run.timed_out, run.stderr
    return answer


def test_bad_lines_are_skipped_counted_and_the_good_ones_indexed(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    (root / FOLDER).mkdir(parents=True)
    journal = root / FOLDER / "mixed.jsonl"
    ids = mixed_journal(journal)
    db = tmp_path / "index.db"
    run = run_cli(db, root, "index", str(journal), "--json")
    assert run.clean(), run.stderr
    report = json.loads(run.stdout)
    assert report["skippedLines"] == len(BAD_LINES), report
    assert report["entries"] == len(ids)
    assert report["errors"] == []
    for n, entry_id in enumerate(ids[:3]):
        answer = read_ok(db, root, entry_id)
        assert answer["status"] == "ok" and f"survivor{n}" in answer["text"]
    assert read_ok(db, root, "badutf8")["text"] == "caf\ufffd \ufffd\ufffd"
    assert read_ok(db, root, "lonesurrogate")["text"] == "cut \ufffd here"
    assert read_ok(db, root, "joined-2")["text"] == "second of a pair"
    found = run_cli(db, root, "search", "pair", "--scope", "global", "--json")
    assert {r["entryId"] for r in json.loads(found.stdout)["results"]} == {"joined-1", "joined-2"}
    store = open_store(str(db))
    try:
        stored = {r[0] for r in store.rows("SELECT entry_id FROM entries")}
    finally:
        store.conn.close()
    assert stored == set(ids)


def test_unterminated_and_partial_files(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    (root / FOLDER).mkdir(parents=True)
    no_newline = root / FOLDER / "no-newline.jsonl"
    no_newline.write_bytes(header("s-nonl") + good("nonl-1", "terminatedline") + good("nonl-2", "danglingline")[:-1])
    partial = root / FOLDER / "partial.jsonl"
    partial.write_bytes(header("s-partial")[:40])
    db = tmp_path / "index.db"
    run = run_cli(db, root, "index", "--json")
    assert run.clean(), run.stderr
    assert json.loads(run.stdout)["errors"] == []
    assert read_ok(db, root, "nonl-1")["status"] == "ok"
    # A last line without its newline may still be being written: it waits for the newline.
    assert read_ok(db, root, "nonl-2")["status"] == "not_found"
    with no_newline.open("ab") as handle:
        handle.write(b"\n")
    assert run_cli(db, root, "index").clean()
    assert read_ok(db, root, "nonl-2")["status"] == "ok"


def test_hostile_files_in_the_roots(tmp_path: Path) -> None:
    """Binary, FIFO, socket, directory and dangling-symlink `.jsonl`s, symlink loops: one pass, no hang."""
    root = tmp_path / "sessions"
    folder = root / FOLDER
    folder.mkdir(parents=True)
    rng = random.Random(7)
    (folder / "binary.jsonl").write_bytes(bytes(rng.getrandbits(8) for _ in range(200_000)))
    os.mkfifo(folder / "fifo.jsonl")  # opening it for reading would block forever
    sock = socket.socket(socket.AF_UNIX)
    sock_path: Path | None = folder / "sock.jsonl"
    try:
        sock.bind(str(sock_path))
    except OSError:
        sock_path = None  # path too long for AF_UNIX: skip this one case
    (folder / "dir.jsonl").mkdir()
    (folder / "dir.jsonl" / "inner.jsonl").write_bytes(header("s-inner") + good("inner-1", "innerword"))
    (folder / "dangling.jsonl").symlink_to(tmp_path / "nowhere.jsonl")
    (folder / "loop").symlink_to(root)  # a loop back to the root
    (folder / "self").symlink_to(folder / "self")  # a symlink to itself
    unreadable = None
    if os.geteuid() != 0:  # chmod 000 does not stop root
        unreadable = folder / "unreadable.jsonl"
        unreadable.write_bytes(header("s-unread") + good("unread-1", "secretish"))
        unreadable.chmod(0)
    (folder / "fine.jsonl").write_bytes(header("s-fine") + good("fine-1", "finewordzz"))
    db = tmp_path / "index.db"
    try:
        run = run_cli(db, root, "index", "--json", timeout=60)
        assert not run.timed_out, "the index pass hung on a hostile file"
        assert run.clean(), run.stderr
        report = json.loads(run.stdout)
        # Each file that cannot be read is one line on stderr, nothing more.
        warnings = [line for line in run.stderr.splitlines() if line.strip()]
        assert all(line.startswith("journal-index: warning: ") for line in warnings), run.stderr
        assert len(warnings) == len(report["errors"])
        assert report["ignoredFiles"] >= 1  # the binary file: no journal format recognizes it
        for entry_id in ("fine-1", "inner-1"):
            assert read_ok(db, root, entry_id)["status"] == "ok"
        # The query side copes too: search and status answer.
        for args in (["search", "finewordzz", "--scope", "global", "--json"], ["status", "--json"]):
            again = run_cli(db, root, *args, timeout=60)
            assert again.clean() and not again.timed_out, again.stderr
        assert "fine-1" in run_cli(db, root, "search", "finewordzz", "--scope", "global", "--json").stdout
        # the journal replaced by a FIFO after it was indexed: read must not block
        fine = folder / "fine.jsonl"
        fine.unlink()
        os.mkfifo(fine)
        answer = run_cli(db, root, "read", "fine-1", "--scope", "global", "--json", timeout=60)
        assert not answer.timed_out, "read blocked on a FIFO"
        assert answer.returncode in (0, 1) and "Traceback" not in answer.stderr, answer.stderr
        assert json.loads(answer.stdout)["status"] in ("unavailable", "not_found")
    finally:
        sock.close()
        if unreadable is not None:
            unreadable.chmod(stat.S_IRUSR | stat.S_IWUSR)


def test_discover_survives_symlink_loops(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "up").symlink_to(root / "a")
    (root / "a" / "loop").symlink_to(root)
    (root / "a" / "b" / "x.jsonl").write_bytes(header("s-x"))
    found = discover([root, root / "a"])
    assert found.count(str(root / "a" / "b" / "x.jsonl")) == 1
    assert len(found) == 1


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["valid 50 MB message", "50 MB garbage line"])
def test_50mb_line_is_bounded(tmp_path: Path, kind: str) -> None:
    root = tmp_path / "sessions"
    folder = root / FOLDER
    folder.mkdir(parents=True)
    journal = folder / "huge.jsonl"
    rng = random.Random(3)
    words = [f"w{rng.randrange(10**6)}" for _ in range(2000)]
    with journal.open("wb") as handle:
        handle.write(header("s-huge") + good("before-huge", "beforehugeword"))
        if kind == "valid 50 MB message":
            chunk = " ".join(words).encode()
            prefix = b'{"type":"message","id":"huge-1","message":{"role":"user","content":[{"type":"text","text":"'
            handle.write(prefix + b"headmarker ")
            for _ in range(50 * MB // len(chunk)):
                handle.write(chunk + b" ")
            handle.write(b'tailmarker"}]}}\n')
        else:
            chunk = bytes(rng.getrandbits(8) for _ in range(MB)).replace(b"\n", b" ")
            for _ in range(50):
                handle.write(chunk)
            handle.write(b"\n")
        handle.write(good("after-huge", "afterhugeword"))
    assert journal.stat().st_size > 50 * MB
    db = tmp_path / "index.db"
    run = run_cli(db, root, "index", "--json", timeout=300)
    assert run.clean(), run.stderr
    assert run.peak_rss_mb < PEAK_RSS_LIMIT_MB, f"peak RSS {run.peak_rss_mb:.0f} MB"
    report = json.loads(run.stdout)
    print(f"{kind}: peak RSS {run.peak_rss_mb:.0f} MB, report {report}")
    for entry_id in ("before-huge", "after-huge"):
        assert read_ok(db, root, entry_id)["status"] == "ok"
    if kind == "valid 50 MB message":
        assert report["entries"] == 3 and report["skippedLines"] == 0
        found = run_cli(db, root, "search", "tailmarker", "--scope", "global", "--json", timeout=300)
        assert found.clean() and found.peak_rss_mb < PEAK_RSS_LIMIT_MB, (found.stderr, found.peak_rss_mb)
        assert [r["entryId"] for r in json.loads(found.stdout)["results"]] == ["huge-1"]
        page = run_cli(db, root, "read", "huge-1", "--scope", "global", "--json", timeout=300)
        assert page.clean() and page.peak_rss_mb < PEAK_RSS_LIMIT_MB, (page.stderr, page.peak_rss_mb)
        answer = json.loads(page.stdout)
        assert answer["status"] == "ok" and answer["text"].startswith("headmarker ")
        assert answer["nextOffset"] == 16_000
    else:
        assert report["entries"] == 2 and report["skippedLines"] == 1
