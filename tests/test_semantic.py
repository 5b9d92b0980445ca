"""The semantic layer's guard and its table, without the model: with the layer unavailable (or
nothing to fuse) search is what it was, to the byte; a forgotten entry takes its vector along.

The model itself (embedding, fusion, background embedding) is tested in test_semantic_model.py,
which needs the `semantic` extra and runs in CI's semantic step."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from journal_index.config import ConfigError
from journal_index.data.store import Store, open_store
from journal_index.indexing.indexer import index_file
from journal_index.query import Filters, find, search
from journal_index.query.hits import Hit
from journal_index.query.scope import resolve_scope
from journal_index.semantic import embedder, fusion

# Questions whose words are all found, some found, none found, a paraphrase, and no query at all.
QUERIES = ["alembic heads", "alembic xylophonequartz", "xylophonequartz", "why did the database refuse clients",
           "what did we decide about the login lifetime", ""]


def _results(store: Store, q: str) -> bytes:
    scope = resolve_scope(store, "global")
    result = search(store, q, Filters(scope), limit=10, now=1_790_000_000_000)
    return json.dumps(result.as_json(), sort_keys=True).encode()


def _without_the_call_site(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(find, "fuse", lambda store, ranked, q, filters, limit, asked=None: ranked)


def _fake_vectors(store: Store) -> None:
    """A vector for every said entry (any bytes: the guard must not even look at them)."""
    with store.write():
        store.conn.execute("INSERT INTO entry_vectors(entry, vector) SELECT rowid, zeroblob(384) FROM entries "
                           "WHERE kind IN ('user', 'assistant')")


def test_without_the_extra_search_is_byte_identical(indexed_store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedder, "missing", lambda: embedder.NOT_INSTALLED)
    _fake_vectors(indexed_store)  # even an index that has vectors (made by another install)
    monkeypatch.setenv(fusion.ENV, "on")  # and however the environment asks
    assert fusion.mode() == "off"
    now = [_results(indexed_store, q) for q in QUERIES]
    _without_the_call_site(monkeypatch)
    assert [_results(indexed_store, q) for q in QUERIES] == now


def test_no_vectors_or_off_is_byte_identical(indexed_store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """The extra installed but nothing embedded yet, or the layer turned off: nothing changes."""
    monkeypatch.setattr(embedder, "missing", lambda: None)
    for mode in ("on", "gated"):
        monkeypatch.setenv(fusion.ENV, mode)
        assert fusion.mode() == mode
        assert [_results(indexed_store, q) for q in QUERIES[:3]]  # no vectors: the model is never loaded
    _fake_vectors(indexed_store)
    monkeypatch.setenv(fusion.ENV, "off")
    now = [_results(indexed_store, q) for q in QUERIES]
    _without_the_call_site(monkeypatch)
    assert [_results(indexed_store, q) for q in QUERIES] == now


def test_gate_stays_shut_when_every_word_is_found(indexed_store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Gated, a question whose words are all found is answered by them: the same bytes as without the
    layer, even with vectors there (the model would fail to load here, were it asked)."""
    monkeypatch.setattr(embedder, "missing", lambda: None)
    monkeypatch.setattr(embedder, "encoder", lambda: pytest.fail("the gate let an all-words query through"))
    _fake_vectors(indexed_store)
    monkeypatch.setenv(fusion.ENV, "gated")
    scope = resolve_scope(indexed_store, "global")
    assert search(indexed_store, "alembic heads", Filters(scope)).match == "all"
    now = _results(indexed_store, "alembic heads")
    _without_the_call_site(monkeypatch)
    assert _results(indexed_store, "alembic heads") == now


def test_the_gate_reads_the_page_a_search_would_show() -> None:
    def hit(complete: bool) -> Hit:
        return Hit(1, "e", 0, "user", "user", None, 0, 1, "/p", None, None, "pi", complete=complete)

    assert fusion.words_fall_short([hit(False)] * 12, 10)
    assert not fusion.words_fall_short([hit(False)] * 9 + [hit(True)], 10)
    assert fusion.words_fall_short([hit(False)] * 10 + [hit(True)], 10)  # complete only past the page
    assert fusion.words_fall_short([], 10)


def test_unknown_mode_says_what_is_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(fusion.ENV, "sometimes")
    with pytest.raises(ConfigError, match="expected one of off, on, gated"):
        fusion.mode()


def test_a_forgotten_entry_takes_its_vector_along(indexed_store: Store, sessions_root: Path) -> None:
    store = indexed_store
    _fake_vectors(store)
    path = str(next(sessions_root.rglob("*.jsonl")))
    file_id = store.value("SELECT id FROM files WHERE path = ?", (path,))
    mine = {r[0] for r in store.rows("SELECT rowid FROM entries WHERE file_id = ?", (file_id,))}
    assert mine & {r[0] for r in store.rows("SELECT entry FROM entry_vectors")}
    Path(path).write_text(Path(path).read_text("utf-8").splitlines(keepends=True)[0], "utf-8")  # rewritten
    index_file(store, path, rebuild=True)
    vectored = {r[0] for r in store.rows("SELECT entry FROM entry_vectors")}
    assert vectored <= {r[0] for r in store.rows("SELECT rowid FROM entries")}  # none outlives its entry
    assert not vectored & {r[0] for r in store.rows("SELECT rowid FROM entries WHERE file_id = ?", (file_id,))}


def test_vectors_of_the_first_model_are_forgotten_when_the_index_upgrades(indexed_store: Store) -> None:
    """Migration 0013: vectors written by all-MiniLM-L6-v2 mean nothing to e5; they go, and the
    background embedding writes them again (the entries themselves stay)."""
    store = indexed_store
    _fake_vectors(store)
    entries = store.value("SELECT count(*) FROM entries")
    assert store.value("SELECT count(*) FROM entry_vectors") > 0
    store.conn.pragma("user_version", 12)  # as an index written before the model changed
    path = store.conn.filename
    store.conn.close()
    upgraded = open_store(path)
    try:
        assert upgraded.value("SELECT count(*) FROM entries") == entries
        assert upgraded.value("SELECT count(*) FROM entry_vectors") == 0
    finally:
        upgraded.conn.close()


# -- what the layer tells its user: status, watch's log, the MCP server's stderr --------------------

def _status(db: Path, sessions: Path, mode: str) -> tuple[str, dict[str, Any]]:
    from click.testing import CliRunner

    from journal_index.cli import cli

    args = ["--db", str(db), "--sessions", str(sessions), "status"]
    text = CliRunner().invoke(cli, args, env={fusion.ENV: mode}, catch_exceptions=False)
    as_json = CliRunner().invoke(cli, [*args, "--json"], env={fusion.ENV: mode}, catch_exceptions=False)
    assert text.exit_code == 0 and as_json.exit_code == 0, text.output + as_json.output
    line = next(row for row in text.output.splitlines() if row.startswith("semantic"))
    return line, json.loads(as_json.output)["semantic"]


def _said_entries(store: Store) -> int:
    from journal_index.semantic.background import SAID_KINDS

    kinds = ", ".join(f"'{k}'" for k in SAID_KINDS)
    return int(store.value(f"SELECT count(*) FROM entries WHERE kind IN ({kinds})", default=0))


def test_status_says_the_layer_was_asked_for_but_cannot_run(indexed_store: Store, sessions_root: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedder, "missing", lambda: embedder.NOT_INSTALLED)
    line, info = _status(Path(indexed_store.path), sessions_root, "on")
    assert line == ("semantic     off: JOURNAL_INDEX_SEMANTIC=on, but the semantic extra is not installed "
                    "(pip install 'journal-index[semantic]')")
    assert info["asked"] == "on" and info["mode"] == "off" and info["installed"] is False
    assert info["embedded"] is None and info["pending"] is None  # nothing runs: nothing is counted
    line, info = _status(Path(indexed_store.path), sessions_root, "off")
    assert line == "semantic     off (not installed)" and info["whyOff"] is None


def test_status_counts_what_is_embedded_and_what_is_left(indexed_store: Store, sessions_root: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedder, "missing", lambda: None)
    db = Path(indexed_store.path)
    line, info = _status(db, sessions_root, "off")  # off, and no vector made yet: nothing counted
    assert line == "semantic     off (JOURNAL_INDEX_SEMANTIC=on searches by meaning too)"
    assert info["mode"] == "off" and info["embedded"] is None
    said = _said_entries(indexed_store)
    line, info = _status(db, sessions_root, "gated")
    assert info["mode"] == "gated" and info["whyOff"] is None
    assert (info["embedded"], info["pending"]) == (0, said) and said > 0
    assert line == f"semantic     gated, {embedder.MODEL_NAME}; 0 entries embedded, {said} to go"
    _fake_vectors(indexed_store)  # a vector for every user and assistant entry
    with_vector = int(indexed_store.value("SELECT count(*) FROM entry_vectors", default=0))
    line, info = _status(db, sessions_root, "on")
    assert (info["embedded"], info["pending"]) == (with_vector, said - with_vector)
    _, info = _status(db, sessions_root, "off")  # turned off later: what was made is still told
    assert info["mode"] == "off" and info["embedded"] == with_vector


def test_the_mcp_server_warns_at_start_when_the_layer_cannot_run(tmp_path: Path, sessions_root: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from journal_index.cli import cli

    args = ["--db", str(tmp_path / "i.db"), "--sessions", str(sessions_root), "mcp"]
    monkeypatch.setattr(embedder, "missing", lambda: embedder.NOT_INSTALLED)
    result = CliRunner().invoke(cli, args, input="", env={fusion.ENV: "on"})  # stdin closes at once
    assert result.exit_code == 0, result.output
    assert ("journal-index mcp: warning: JOURNAL_INDEX_SEMANTIC=on, but the semantic extra is not installed "
            "(pip install 'journal-index[semantic]'): searching by words only") in result.stderr
    quiet = CliRunner().invoke(cli, args, input="", env={fusion.ENV: "off"})
    assert quiet.exit_code == 0 and "warning" not in quiet.stderr
    wrong = CliRunner().invoke(cli, args, input="", env={fusion.ENV: "sometimes"})
    assert wrong.exit_code == 2 and "expected one of off, on, gated" in wrong.output  # before serving


def test_watch_logs_the_embedding_of_a_backlog_and_not_each_new_entry() -> None:
    from journal_index.indexing.watch import EMBED_BACKLOG, EMBED_LOG_SECONDS, EmbedLog
    from journal_index.semantic.background import EmbedReport

    clock = [0.0]
    log = EmbedLog(clock=lambda: clock[0])
    left = [3_000]

    def progress() -> dict[str, int]:
        return {"embedded": 3_000 - left[0], "pending": left[0]}

    def slice_of(n: int, done: bool = False) -> str | None:
        clock[0] += n / 10  # ten entries a second
        left[0] -= n
        return log.after(EmbedReport(embedded=n, seconds=n / 10, done=done), progress)

    assert [slice_of(20) for _ in range(29)] == [None] * 29  # 58 s: no line yet
    line = slice_of(20)
    assert clock[0] >= EMBED_LOG_SECONDS
    assert line == "embedding: 600 entries embedded, 2400 to go (10.0 a second, about 4 min left)"
    while left[0] > 20:
        slice_of(20)
    assert slice_of(20, done=True) == "embedding: caught up, 3000 entries embedded"
    # a session at work: a few entries now and then, embedded as they come, are not logged
    left[0] = 3
    assert slice_of(3, done=True) is None
    clock[0] += 3_600
    left[0] = EMBED_BACKLOG - 1
    assert slice_of(EMBED_BACKLOG - 1, done=True) is None
    left[0] = EMBED_BACKLOG  # a backlog done within one slice still says so
    assert slice_of(EMBED_BACKLOG, done=True) == "embedding: caught up, 3000 entries embedded"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_watch_warns_once_when_the_layer_was_asked_for_but_cannot_run(tmp_path: Path, sessions_root: Path) -> None:
    """A real `watch`: with the extra missing (as in the main test run) the log says so once, at
    start; with it installed, nothing is said."""
    log = tmp_path / "watch.log"
    env = {**os.environ, fusion.ENV: "on", "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    proc = subprocess.Popen([sys.executable, "-m", "journal_index", "--db", str(tmp_path / "i.db"),
                             "--sessions", str(sessions_root), "watch", "--rescan", "600"],
                            stdout=subprocess.DEVNULL, stderr=log.open("wb"), env=env)
    try:
        deadline = time.monotonic() + 20
        while b"backfill:" not in log.read_bytes():
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0, log.read_text()
    warnings = [line for line in log.read_text().splitlines() if "warning:" in line]
    if embedder.missing():
        assert len(warnings) == 1, log.read_text()
        assert warnings[0].endswith(f"journal-index watch: warning: JOURNAL_INDEX_SEMANTIC=on, but "
                                    f"{embedder.missing()}: searching by words only")
    else:
        assert warnings == [], log.read_text()


def test_kept_hits_stay_first_and_every_score_is_its_factors_sum(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fusion's arithmetic with stand-in neighbours (the model's own are tested in
    test_semantic_model.py): the lexical top KEEP stay in place even where their own scores are
    below the fused ones (a weak match), lifted by a ``kept`` factor; the rest are ordered by
    their ``words`` and ``meaning`` parts, which sum to the score."""
    from concurrent.futures import Future

    from journal_index.semantic import vectors

    def hit(rowid: int, score: float) -> Hit:
        out = Hit(rowid, f"e{rowid}", None, "assistant", None, None, 0, 1, "/j.jsonl", "s", "/p", "pi")
        out.score, out.explain = score, {"lexical": score}
        return out

    ranked = [hit(i, -1.0 - i) for i in range(1, 9)]  # every lexical score below any fused one
    near = [hit(7, 0.9), hit(42, 0.8), hit(2, 0.7)]  # a tail hit, one only by meaning, a kept one
    monkeypatch.setattr(embedder, "missing", lambda: None)
    monkeypatch.setenv(fusion.ENV, "on")
    monkeypatch.setattr(vectors, "nearest", lambda store, asked, filters, k: [hit(h.rowid, h.score) for h in near])
    asked: Future[Any] = Future()
    asked.set_result([1.0])
    out = fusion.fuse(None, ranked, "anything", None, 10, asked)  # type: ignore[arg-type]  # nearest is stood in
    assert [h.rowid for h in out[:fusion.KEEP]] == [1, 2, 3]
    assert [h.score for h in out] == sorted((h.score for h in out), reverse=True)
    for h in out:
        assert abs(sum(h.explain.values()) - h.score) < 1e-12, h.explain
    assert "kept" in out[0].explain and out[0].fused == {"wordsRank": 1}
    by_id = {h.rowid: h for h in out}
    assert by_id[7].fused == {"wordsRank": 7, "meaningRank": 1, "cosine": 0.9}
    assert set(by_id[7].explain) == {"words", "meaning"} and set(by_id[42].explain) == {"meaning"}
    assert [h.rowid for h in out[fusion.KEEP:]][0] == 7  # found both ways: first of the fused
