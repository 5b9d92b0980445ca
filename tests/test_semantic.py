"""The semantic layer's guard and its table, without the model: with the layer unavailable (or
nothing to fuse) search is what it was, to the byte; a forgotten entry takes its vector along.

The model itself (embedding, fusion, background embedding) is tested in test_semantic_model.py,
which needs the `semantic` extra and runs in CI's semantic step."""

from __future__ import annotations

import json
from pathlib import Path

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
    monkeypatch.setattr(embedder, "installed", lambda: False)
    _fake_vectors(indexed_store)  # even an index that has vectors (made by another install)
    monkeypatch.setenv(fusion.ENV, "on")  # and however the environment asks
    assert fusion.mode() == "off"
    now = [_results(indexed_store, q) for q in QUERIES]
    _without_the_call_site(monkeypatch)
    assert [_results(indexed_store, q) for q in QUERIES] == now


def test_no_vectors_or_off_is_byte_identical(indexed_store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """The extra installed but nothing embedded yet, or the layer turned off: nothing changes."""
    monkeypatch.setattr(embedder, "installed", lambda: True)
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
    monkeypatch.setattr(embedder, "installed", lambda: True)
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
