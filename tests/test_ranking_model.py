"""The ranking model: a hit's score is the sum of its named factors, hits come in score order,
and `search --explain` shows the factors (text and JSON), on the real fixture journals."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from journal_index.data.store import Store
from journal_index.indexing.indexer import index_file
from journal_index.query import Filters, Reader, ranking, search
from journal_index.query.ranking_weights import FIELD_NAMES, FITTED
from journal_index.query.scope import resolve_scope
from tests.test_codex_format import THREAD, TS, event, item, line

NOW_MS = 1_796_083_200_000  # 2026-12-01
QUERIES = [
    "personal API tokens stored hash",
    "what did we settle about the personal API tokens?",
    "how did we fix the failing migration",
    "what is the current database pool size now",
    "what's the staging url",
    "test_revoke_twice",
    "what did pytest print",
    "why was the export slow",
]


@pytest.mark.parametrize("query", QUERIES)
def test_hits_come_in_score_order_and_each_score_is_its_factors_sum(indexed_store: Store, query: str) -> None:
    hits = search(indexed_store, query, Filters(resolve_scope(indexed_store, "global")), limit=10, now=NOW_MS).hits
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True), scores
    for hit in hits:
        assert hit.explain, hit.entry_id
        assert abs(sum(hit.explain.values()) - hit.score) < 1e-9
        assert hit.matched_field in FIELD_NAMES
    shown = [h.as_json(explain=True) for h in hits]
    rounded = [s["score"] for s in shown]
    assert rounded == sorted(rounded, reverse=True)  # what the JSON shows is the sort key


def test_the_weights_cover_every_intent_and_field() -> None:
    from journal_index.query.question import INTENTS

    fields = FITTED["fields"]
    assert isinstance(fields, dict) and set(fields) == set(INTENTS)
    for intent in INTENTS:
        assert set(fields[intent]) == set(FIELD_NAMES)
    features = FITTED["features"]
    assert isinstance(features, dict)
    assert set(features) >= {"proximity", "pairs", "question_turn", "reply_link", "age", "copy"}


def test_a_factor_weight_moves_the_score_it_names(indexed_store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Setting the age weight to 0 takes age out of every explanation's sum (no hidden terms)."""
    weights = json.loads(json.dumps(ranking.WEIGHTS))
    weights["features"]["age"] = 0.0
    monkeypatch.setattr(ranking, "WEIGHTS", weights)
    hits = search(indexed_store, QUERIES[0], Filters(resolve_scope(indexed_store, "global")), now=NOW_MS).hits
    assert hits and all(h.explain.get("age", 0.0) == 0.0 for h in hits)


def test_a_longer_line_is_lowered_by_the_log_of_its_size(indexed_store: Store) -> None:
    """``length``: coverage is not normalized by length, so a long entry is lowered a little, by
    the logarithm of its journal line's bytes; a short one hardly at all."""
    weight = ranking.WEIGHTS["features"]["length"]
    assert weight < 0
    hits = search(indexed_store, QUERIES[0], Filters(resolve_scope(indexed_store, "global")), limit=10, now=NOW_MS).hits
    assert len({h.length for h in hits}) > 1
    for hit in hits:
        assert hit.explain["length"] == pytest.approx(weight * math.log1p(hit.length / ranking.LENGTH_BYTES))
    longest, shortest = max(hits, key=lambda h: h.length), min(hits, key=lambda h: h.length)
    assert longest.explain["length"] < shortest.explain["length"] <= 0


def _cli(db: Path, root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "JOURNAL_INDEX_NOW": "2026-12-01T00:00:00Z"}
    return subprocess.run([sys.executable, "-m", "journal_index", "--db", str(db), "--sessions", str(root), *args],
                          capture_output=True, text=True, env=env, timeout=120, check=False)


def test_search_explain_prints_each_factor_per_hit(sessions_root: Path, tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    words = QUERIES[0].split()
    assert _cli(db, sessions_root, "index").returncode == 0
    plain = _cli(db, sessions_root, "search", *words, "--json")
    assert plain.returncode == 0, plain.stderr
    assert all("explain" not in r for r in json.loads(plain.stdout)["results"])  # only when asked

    done = _cli(db, sessions_root, "search", *words, "--json", "--explain")
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)["results"]
    assert results
    for r in results:
        factors = r["explain"]["factors"]
        assert {"bm25", "field", "coverage", "age"} <= set(factors) or "reply_link" in factors
        assert abs(sum(factors.values()) - r["score"]) < 1e-3 * len(factors)
        assert r["explain"]["field"] in FIELD_NAMES
    scores = [r["score"] for r in results]
    assert scores == sorted(scores, reverse=True)

    text = _cli(db, sessions_root, "search", *words, "--explain")
    assert text.returncode == 0, text.stderr
    lines = [line for line in text.stdout.splitlines() if line.strip().startswith("score ")]
    assert len(lines) == len(results)
    assert all(" bm25 " in line and " coverage " in line for line in lines if "reply_link" not in line)


def test_an_entry_that_only_thinks_is_lowered_by_thought(tmp_path: Path, store: Store) -> None:
    """``thought``: a Codex reasoning summary ("I'm checking…") holding the question's words
    comes after the reply that says what was found, and only it carries the factor."""
    plan = "**Checking the widget cache eviction** I'm looking at how the widget cache evicts entries."
    reply = "The widget cache eviction drops entries after ten minutes idle; the sweep runs hourly."
    lines = [
        line("session_meta", {"id": THREAD, "cwd": "/tmp/proj", "timestamp": TS}),
        item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "look at the cache"}]}),
        item({"type": "reasoning", "summary": [{"type": "summary_text", "text": plan}], "content": None}),
        item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": reply}]}),
    ]
    path = tmp_path / "rollout-2026-11-30T12-38-07-thought.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    index_file(store, path)

    weight = ranking.WEIGHTS["features"]["thought"]
    assert weight < 0
    hits = search(store, "widget cache eviction", Filters(resolve_scope(store, "global", "/")), now=NOW_MS).hits
    reader = Reader(store)
    thinking = [h for h in hits if reader.only_thinking(h)]
    replies = [h for h in hits if h.kind == "assistant" and not reader.only_thinking(h)]
    assert len(thinking) == 1 and len(replies) == 1
    assert thinking[0].explain["thought"] == weight
    assert "thought" not in replies[0].explain
    assert hits.index(replies[0]) < hits.index(thinking[0])


def _said(text: str, phase: str | None = None) -> bytes:
    payload: dict[str, object] = {"type": "message", "role": "assistant",
                                  "content": [{"type": "output_text", "text": text}]}
    if phase is not None:
        payload["phase"] = phase
    return item(payload)


def _rollout(tmp_path: Path, store: Store, name: str, *lines: bytes, thread: str = THREAD) -> None:
    path = tmp_path / f"rollout-2026-11-30T12-38-07-{name}.jsonl"
    path.write_bytes(b"\n".join([line("session_meta", {"id": thread, "cwd": "/tmp/proj", "timestamp": TS}),
                                  *lines]) + b"\n")
    index_file(store, path)


def test_a_note_between_steps_is_lowered_by_progress(tmp_path: Path, store: Store) -> None:
    """``progress``: a Codex message marked commentary ("I'll check…") holding the question's
    words is lowered by the weight; the turn's final answer, holding them too, is not."""
    _rollout(tmp_path, store, "progress",
             event({"type": "user_message", "message": "why is the gizmo ledger off"}),
             _said("I'll check the gizmo ledger totals against the invoices first.", "commentary"),
             _said("The gizmo ledger totals were off because refunds were counted twice.", "final_answer"))
    weight = ranking.WEIGHTS["features"]["progress"]
    assert weight < 0
    hits = search(store, "gizmo ledger totals", Filters(resolve_scope(store, "global", "/")), now=NOW_MS).hits
    said = {h.explain.get("progress"): h for h in hits if h.kind == "assistant"}
    assert set(said) == {weight, None}


def test_a_step_deep_in_its_turn_is_lowered_by_rest(tmp_path: Path, store: Store) -> None:
    """``rest``: each hit below the first is lowered by weight × log(1 + the entries after it in
    its turn); a turn ends where the user speaks again or the journal ends, and the first hit,
    user entries and a turn's last entry get nothing."""
    _rollout(tmp_path, store, "rest",
             event({"type": "user_message", "message": "look into the sprocket queue"}),
             _said("Reading the sprocket queue worker to see how it retries."),
             _said("Looking at the sprocket queue settings next."),
             _said("Checking the sprocket queue logs as well."),
             _said("The sprocket queue retried forever because max_attempts was unset; it is 5 now."),
             event({"type": "user_message", "message": "what about the sprocket queue docs"}),
             _said("The sprocket queue docs now say max_attempts is 5."),
             _said("Nothing else needed."))
    weight = ranking.WEIGHTS["features"]["rest"]
    assert weight < 0
    hits = search(store, "sprocket queue", Filters(resolve_scope(store, "global", "/")), now=NOW_MS).hits
    assert len(hits) == 7
    # entries after each one in its turn, in journal order: the second turn starts at the user's entry
    left = {h.offset: n for n, h in zip([0, 3, 2, 1, 0, 0, 1], sorted(hits, key=lambda h: h.offset), strict=True)}
    first = hits[0]
    for hit in hits:
        expected = 0.0 if hit is first or hit.kind == "user" else weight * math.log1p(left[hit.offset])
        assert hit.explain.get("rest", 0.0) == pytest.approx(expected), (hit.kind, hit.offset)
    assert sum("rest" in h.explain for h in hits) >= 3  # the deep steps are lowered, whichever is first


def test_a_later_hit_of_the_same_turn_is_lifted_by_later(tmp_path: Path, store: Store) -> None:
    """``later``: of a turn's hits, each after the first is lifted by weight × log(1 + the hits of
    its turn before it); a user entry starts a new turn, so does another journal, and a question
    asked for now is left to ``newest``."""
    _rollout(tmp_path, store, "later",
             event({"type": "user_message", "message": "look into the sprocket queue"}),
             _said("Reading the sprocket queue worker to see how it retries."),
             _said("Looking at the sprocket queue settings next."),
             _said("The sprocket queue retried forever because max_attempts was unset; it is 5 now."),
             event({"type": "user_message", "message": "thanks"}),
             _said("The sprocket queue change is in the release notes."))
    _rollout(tmp_path, store, "later-other",
             event({"type": "user_message", "message": "is the sprocket queue fast enough"}),
             _said("Timing the sprocket queue under load."),
             _said("The sprocket queue drains 900 jobs a second."),
             thread="019ac100-0000-7000-8000-00000000abcd")
    weight = ranking.WEIGHTS["features"]["later"]
    assert weight > 0
    hits = search(store, "sprocket queue", Filters(resolve_scope(store, "global", "/")), now=NOW_MS).hits
    lifts = {}
    for journal in ("later.jsonl", "later-other.jsonl"):
        said = sorted((h for h in hits if h.kind == "assistant" and h.path.endswith(journal)), key=lambda h: h.offset)
        lifts[journal] = [h.explain.get("later", 0.0) for h in said]
    assert lifts["later.jsonl"] == pytest.approx([0.0, weight * math.log(2), weight * math.log(3), 0.0])
    assert lifts["later-other.jsonl"] == pytest.approx([0.0, weight * math.log(2)])  # counted afresh
    asked_now = search(store, "sprocket queue now", Filters(resolve_scope(store, "global", "/")), now=NOW_MS).hits
    assert asked_now and all("later" not in h.explain for h in asked_now)


def test_a_question_typed_as_a_chinese_sentence_finds_the_entry_holding_its_words(tmp_path: Path,
                                                                                   store: Store) -> None:
    """A Chinese question is one run of characters: its bigrams are looked for one by one, so the
    reply that says the same thing in another sentence is found (as one phrase, nothing was)."""
    _rollout(tmp_path, store, "cjk",
             event({"type": "user_message", "message": "日志一直把磁盘写满，帮我看看"}),
             _said("我把日志改成了按大小轮转，最多保留五个文件，磁盘不会再被写满。"),
             _said("另外更新了 README 的安装说明。"))
    hits = search(store, "当时为什么把日志改成轮转的？", Filters(resolve_scope(store, "global", "/")), now=NOW_MS).hits
    assert hits and "按大小轮转" in (hits[0].excerpt or "")
    assert all("README" not in (h.excerpt or "") for h in hits)
