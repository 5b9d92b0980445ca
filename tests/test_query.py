"""search, read and summaries: scope boundaries, fallbacks, hostile input, verified reads, time."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import BinaryIO

import psutil
import pytest
from click.testing import CliRunner

from journal_index.cli import cli
from journal_index.data import read_sql
from journal_index.data.store import Store
from journal_index.indexing.indexer import index_file
from journal_index.query import Filters, QueryError, Reader, parse_time_bound, ranking, read, search, summaries
from journal_index.query.question import parse
from journal_index.query.scope import resolve_scope, resolve_session
from journal_index.query.time_bounds import TimeBoundError
from tests.conftest import FIXTURES
from tests.eval.run_eval import evaluate, load_questions
from tests.helpers import load_secrets, served_hits, served_read

PRJCT = "/home/dev/Apps/prjct"
BE = f"{PRJCT}/prjct-be"
ALL_CWDS = {"/home/dev", "/home/dev/Apps/fluenty", PRJCT, BE, f"{PRJCT}/prjct-fe", "/home/dev/notes",
            "/tmp/scratch-abc"}


def cwds_of(store: Store, scope_kind: str, cwd: str, query: str = "") -> set[str]:
    scope = resolve_scope(store, scope_kind, cwd)
    return {h.cwd for h in search(store, query, Filters(scope), limit=1000).hits if h.cwd}


def test_project_scope_is_exactly_the_project_tree(indexed_store: Store) -> None:
    assert cwds_of(indexed_store, "project", BE) == {PRJCT, BE, f"{PRJCT}/prjct-fe"}
    assert cwds_of(indexed_store, "project", f"{PRJCT}/prjct-fe/src/components") == {
        PRJCT, BE, f"{PRJCT}/prjct-fe"}
    # the same words reach other projects in global scope
    assert cwds_of(indexed_store, "project", BE, "the") <= {PRJCT, BE, f"{PRJCT}/prjct-fe"}
    assert cwds_of(indexed_store, "global", BE) == ALL_CWDS


def test_home_and_its_direct_children_are_their_own_projects(indexed_store: Store) -> None:
    assert cwds_of(indexed_store, "project", "/home/dev/notes") == {"/home/dev/notes"}
    assert cwds_of(indexed_store, "project", "/home/dev") == {"/home/dev"}
    assert cwds_of(indexed_store, "project", "/home/dev/Apps/fluenty") == {"/home/dev/Apps/fluenty"}
    assert cwds_of(indexed_store, "project", "/tmp/scratch-abc") == {"/tmp/scratch-abc"}
    assert cwds_of(indexed_store, "project", "/srv/elsewhere") == set()


def test_like_wildcards_in_a_root_are_literal(indexed_store: Store) -> None:
    indexed_store.conn.execute("UPDATE files SET cwd = '/home/dev/Apps/prjctX' WHERE cwd = ?", (PRJCT,))
    indexed_store.conn.execute(
        "INSERT INTO files(path, format, cwd) VALUES('/x/y.jsonl', 'pi', '/home/dev/Apps/p_jct')")
    scope = resolve_scope(indexed_store, "project", "/home/dev/Apps/p_jct")
    where, params = scope.sql()
    assert params[1] == "/home/dev/Apps/p\\_jct/%"
    assert cwds_of(indexed_store, "project", "/home/dev/Apps/p_jct") == set()


def test_session_scope_needs_an_id(indexed_store: Store) -> None:
    from journal_index.query.scope import ScopeError

    with pytest.raises(ScopeError, match="needs a session id"):
        resolve_scope(indexed_store, "session")
    scope = resolve_scope(indexed_store, "session", session="01a0c82e-b7a0-734b-8420-231d0797ebf0")
    hits = search(indexed_store, "", Filters(scope), limit=100).hits
    assert hits and {h.session_id for h in hits} == {"01a0c82e-b7a0-734b-8420-231d0797ebf0"}


def test_all_terms_first_then_any(indexed_store: Store) -> None:
    scope = resolve_scope(indexed_store, "global")
    both = search(indexed_store, "alembic heads", Filters(scope))
    assert both.match == "all" and both.hits
    some = search(indexed_store, "alembic xylophonequartz", Filters(scope))
    assert some.match == "any" and some.hits and some.hint
    none = search(indexed_store, "xylophonequartz", Filters(scope))
    assert none.match == "none" and not none.hits and none.hint


@pytest.mark.parametrize("query", ['"', 'OR (', '*:', 'NEAR(a b', ')', '-', '^', 'AND', 'body:x', '"unbalanced',
                                   "a' OR 1=1 --", "{}[]", "\\", "NOT", "\x00"])
def test_hostile_queries_never_error(indexed_store: Store, query: str) -> None:
    result = search(indexed_store, query, Filters(resolve_scope(indexed_store, "global")))
    assert result.match in {"all", "any", "none"}


def test_filters_by_kind_and_time(indexed_store: Store) -> None:
    scope = resolve_scope(indexed_store, "global")
    hits = search(indexed_store, "token", Filters(scope, kinds=("compaction",)), limit=50).hits
    assert hits and {h.kind for h in hits} == {"compaction"}
    since = parse_time_bound("2026-10-01T00:00:00Z", end=False)
    hits = search(indexed_store, "", Filters(scope, since=since), limit=500).hits
    assert hits and all(h.ts is not None and h.ts >= since for h in hits)
    with pytest.raises(QueryError, match="unknown kind"):
        Filters(scope, kinds=("poem",))


def test_excerpt_is_a_window_around_the_terms(indexed_store: Store) -> None:
    hits = search(indexed_store, "selectinload assignee", Filters(resolve_scope(indexed_store, "global"))).hits
    assert hits and hits[0].complete
    for hit in hits:
        assert len(hit.excerpt) <= 340
        assert ("selectinload" in hit.excerpt.lower()) == hit.complete or not hit.complete
        assert "  " not in hit.excerpt and "\n" not in hit.excerpt
        assert hit.spans and all(hit.excerpt[s:e] for s, e in hit.spans)


def test_read_pages_and_verifies(indexed_store: Store, sessions_root: Path) -> None:
    scope = resolve_scope(indexed_store, "global")
    big = indexed_store.one("SELECT entry_id FROM entries WHERE chars > 40000 ORDER BY chars DESC")
    assert big is not None
    first = read(indexed_store, big[0], scope)
    assert first["status"] == "ok" and len(first["text"]) == 16_000 and first["nextOffset"] == 16_000
    second = read(indexed_store, big[0], scope, offset=first["nextOffset"])
    assert second["text"] and second["offset"] == 16_000
    last = read(indexed_store, big[0], scope, offset=(first["totalChars"] // 16_000) * 16_000)
    assert last["nextOffset"] is None
    with pytest.raises(QueryError, match="past the end"):
        read(indexed_store, big[0], scope, offset=first["totalChars"] + 1)


def test_read_of_a_copied_entry_is_ambiguous_unless_a_session_is_given(indexed_store: Store) -> None:
    scope = resolve_scope(indexed_store, "global")
    shared = indexed_store.one(
        "SELECT entry_id FROM entries GROUP BY entry_id HAVING count(DISTINCT file_id) = 2 "
        "ORDER BY entry_id LIMIT 1")
    assert shared is not None
    answer = read(indexed_store, shared[0], scope)
    assert answer["status"] == "ambiguous" and len(answer["candidates"]) == 2
    session = answer["candidates"][1]["sessionId"]
    picked = read(indexed_store, shared[0], scope, session=resolve_session(indexed_store, session))
    assert picked["status"] == "ok" and picked["sessionId"] == session


def test_read_outside_the_project_is_not_found(indexed_store: Store) -> None:
    # An entry of fluenty only: /fork copies keep ids, so some fluenty entries also live in the project.
    fluenty = indexed_store.one(
        "SELECT e.entry_id FROM entries e JOIN files f ON f.id = e.file_id "
        "WHERE f.cwd = '/home/dev/Apps/fluenty' AND e.kind = 'user' AND e.entry_id NOT IN ("
        "  SELECT e2.entry_id FROM entries e2 JOIN files f2 ON f2.id = e2.file_id "
        "  WHERE f2.cwd != '/home/dev/Apps/fluenty') ORDER BY e.entry_id LIMIT 1")
    assert fluenty is not None
    assert read(indexed_store, fluenty[0], resolve_scope(indexed_store, "project", BE))["status"] == "not_found"
    assert read(indexed_store, fluenty[0], resolve_scope(indexed_store, "global"))["status"] == "ok"


@pytest.mark.parametrize("how", ["same_length", "longer", "same_length_same_mtime"])
def test_a_rewritten_journal_never_returns_a_stale_or_wrong_line(how: str, store: Store, tmp_path: Path) -> None:
    path = tmp_path / "s" / "--w--" / "j.jsonl"
    path.parent.mkdir(parents=True)

    def msg(entry_id: str, text: str) -> str:
        return json.dumps({"type": "message", "id": entry_id, "parentId": None,
                           "timestamp": "2026-09-01T10:00:01.000Z", "message": {"role": "user", "content": text}})

    header = json.dumps({"type": "session", "version": 3, "id": "s1", "timestamp": "2026-09-01T10:00:00.000Z",
                         "cwd": "/w"})
    path.write_text("\n".join([header, msg("old00001", "walrus original"), msg("old00002", "second line")]) + "\n")
    index_file(store, path)
    stat = path.stat()
    if how == "longer":
        new = [header, msg("new00001", "penguin replacement text"), msg("new00002", "second line"), msg("n3", "x")]
    else:
        new = [header, msg("new00001", "penguin replace"), msg("new00002", "second line")]
    path.write_text("\n".join(new) + "\n")
    if how == "same_length_same_mtime":
        assert path.stat().st_size == stat.st_size
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    answer = served_read(store, "old00001")
    assert answer["status"] in {"unavailable", "not_found"}
    assert "penguin" not in json.dumps(answer)
    hits = served_hits(store, "walrus")
    assert all("penguin" not in h.excerpt for h in hits)
    assert not [h for h in hits if h.entry_id == "old00001" and h.excerpt != "[journal line unavailable]"]
    # the journal was reindexed: the new line is found and readable
    assert served_read(store, "new00001")["text"].startswith("penguin")


def test_vanished_journal_lines_show_as_unavailable(indexed_store: Store, sessions_root: Path) -> None:
    hits = search(indexed_store, "selectinload", Filters(resolve_scope(indexed_store, "global"))).hits
    victim = Path(hits[0].path)
    victim.chmod(0o644)
    victim.unlink()
    again = served_hits(indexed_store, "selectinload")
    assert all(Path(h.path) != victim for h in again)  # its rows were dropped on the failed re-read


def test_planted_secrets_are_not_found_and_masked_everywhere(indexed_store: Store) -> None:
    scope = resolve_scope(indexed_store, "global")
    secrets = load_secrets(FIXTURES)
    data = json.loads((FIXTURES / "SECRETS.json").read_text())
    for secret in secrets:
        result = search(indexed_store, secret, Filters(scope), limit=20)
        assert all(secret not in h.excerpt for h in result.hits)
    masked = 0
    for item in data["secrets"]:
        for occurrence in item["occurrences"]:
            answer = read(indexed_store, occurrence["entryId"], scope,
                          session=resolve_session(indexed_store, occurrence["sessionId"]))
            if answer["status"] != "ok":
                continue
            text = answer["text"]
            assert item["value"] not in text
            masked += "[REDACTED:" in text  # some occurrences sit in fields that are never read out
    assert masked >= 25
    for hit in summaries(indexed_store, Filters(scope), limit=100).hits:
        assert not any(s in hit.excerpt for s in secrets)


def test_summaries_newest_first(indexed_store: Store) -> None:
    hits = summaries(indexed_store, Filters(resolve_scope(indexed_store, "global")), limit=100).hits
    assert {h.kind for h in hits} == {"compaction", "branch_summary"}
    assert len({h.entry_id for h in hits}) >= 12
    times = [h.ts or 0 for h in hits]
    assert times == sorted(times, reverse=True)


@pytest.fixture
def tokyo(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_day_bounds_are_local_days(tokyo, store: Store, tmp_path: Path) -> None:
    path = tmp_path / "tz.jsonl"
    rows = [json.dumps({"type": "session", "version": 3, "id": "tz", "cwd": "/w",
                        "timestamp": "2026-09-01T00:00:00.000Z"})]
    for entry_id, stamp in [("before00", "2026-09-01T14:59:59.999Z"), ("after000", "2026-09-01T15:00:00.000Z")]:
        rows.append(json.dumps({"type": "message", "id": entry_id, "timestamp": stamp,
                                "message": {"role": "user", "content": "boundary"}}))
    path.write_text("\n".join(rows) + "\n")
    index_file(store, path)
    scope = resolve_scope(store, "global")

    def ids(since: str | None, until: str | None) -> set[str]:
        f = Filters(scope, since=parse_time_bound(since, end=False) if since else None,
                    until=parse_time_bound(until, end=True) if until else None)
        return {h.entry_id for h in search(store, "boundary", f).hits}

    # 14:59:59.999Z is 23:59:59.999 on Sep 1 in Tokyo; 15:00Z is midnight of Sep 2
    assert ids("2026-09-02", None) == {"after000"}
    assert ids(None, "2026-09-01") == {"before00"}
    assert ids("2026-09-01", "2026-09-01") == {"before00"}
    assert ids("2026-09-01T15:00:00Z", None) == {"after000"}


@pytest.mark.parametrize("bad", ["last tuesday", "2026-13-01", "01/09/2026", ""])
def test_bad_times_name_the_accepted_form(bad: str) -> None:
    with pytest.raises(TimeBoundError, match="2026-09-01"):
        parse_time_bound(bad, end=False)


def test_eval_meets_its_floor(indexed_store: Store) -> None:
    result = evaluate(indexed_store, load_questions())
    assert len(load_questions()) >= 40
    assert result.recall_at_5 >= 0.9, result.misses
    assert result.recall_at_1 >= 0.8, result.misses
    assert result.mrr >= 0.85


def cli_json(*args: str) -> dict:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code in (0, 1, 3), result.output
    return json.loads(result.output)


def test_cli_contract_shapes(tmp_path: Path, sessions_root: Path) -> None:
    base = ["--db", str(tmp_path / "c.db"), "--sessions", str(sessions_root)]
    cli_json(*base, "index", "--json")
    found = cli_json(*base, "search", "token", "bucket", "--cwd", BE, "--json")
    assert set(found) == {"match", "hint", "scope", "results", "offset", "nextOffset"}
    assert found["scope"] == {"kind": "project", "root": PRJCT}
    assert set(found["results"][0]) == {"entryId", "sessionId", "agent", "path", "time", "kind", "role", "tool",
                                        "cwd", "score", "excerpt", "alsoIn"}
    entry = found["results"][0]
    ok = cli_json(*base, "read", entry["entryId"], "--session", entry["sessionId"], "--cwd", BE, "--json")
    assert set(ok) == {"status", "entryId", "sessionId", "agent", "time", "kind", "cwd", "text", "offset", "nextOffset",
                       "totalChars"}
    missing = cli_json(*base, "read", "nope0000", "--cwd", BE, "--json")
    assert missing == {"status": "not_found", "entryId": "nope0000", "where": "any indexed session"}
    summ = cli_json(*base, "summaries", "--cwd", BE, "--json")
    assert set(summ) == {"scope", "results"} and summ["results"]


def test_cli_bad_since_is_one_line_with_an_example(tmp_path: Path, sessions_root: Path) -> None:
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "c.db"), "--sessions", str(sessions_root), "search",
                                      "x", "--since", "last tuesday"])
    assert result.exit_code != 0
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "2026-09-01" in lines[0]


def test_cli_human_output_has_no_color_without_a_tty(tmp_path: Path, sessions_root: Path) -> None:
    base = ["--db", str(tmp_path / "c.db"), "--sessions", str(sessions_root)]
    assert CliRunner().invoke(cli, [*base, "index"]).exit_code == 0
    result = CliRunner().invoke(cli, [*base, "search", "selectinload", "--scope", "global"])
    assert result.exit_code == 0 and "\x1b[" not in result.output
    assert "selectinload" in result.output and "results 1–" in result.output and "in all projects" in result.output


def test_journal_index_now_fixes_recency(monkeypatch: pytest.MonkeyPatch, indexed_store: Store) -> None:
    scope = resolve_scope(indexed_store, "global")
    monkeypatch.setenv("JOURNAL_INDEX_NOW", "2026-09-05T00:00:00Z")
    early = {h.entry_id: h.score for h in search(indexed_store, "token", Filters(scope)).hits}
    monkeypatch.setenv("JOURNAL_INDEX_NOW", "2027-06-01T00:00:00Z")
    late = {h.entry_id: h.score for h in search(indexed_store, "token", Filters(scope)).hits}
    # the age factor is reckoned from that "now": the same entries score differently (their
    # order may or may not change with it, depending on the age weight)
    shared = early.keys() & late.keys()
    assert shared and any(abs(early[e] - late[e]) > 1e-6 for e in shared)


def test_copy_of_fixture_is_not_shared(sessions_root: Path) -> None:
    assert not str(sessions_root).startswith(str(FIXTURES))
    shutil.rmtree(sessions_root)
    assert (FIXTURES / "sessions").is_dir()


@pytest.mark.parametrize("text, query, expected", [
    ("Révoquer les jetons", "revoquer", ["Révoquer"]),
    ("we set maxRetryCount to 5", "retry", ["maxRetryCount"]),
    ("Deploying now; it deployed", "deploy", ["Deploying", "deployed"]),
    ("我们明天去東京都看看", "京都", ["我们明天去東京都看看"]),
    ("İstanbul retries twice", "retry", ["retries"]),  # a lowercase that changes length
    ("nothing to see", "retry", []),
])
def test_excerpt_matches_words_the_way_the_index_does(store: Store, text: str, query: str,
                                                       expected: list[str]) -> None:
    from journal_index.query import Reader
    from journal_index.query.excerpt import find_matches

    reader = Reader(store)
    terms = reader.query_terms([query.split()])
    assert [text[a:b] for a, b, _ in find_matches(text, terms, reader.tokenize)] == expected


def _session(path: Path, lines: list[tuple[str, str, str]]) -> None:
    """A small pi journal: (entry id, role, text) per message, a second apart."""
    rows = [json.dumps({"type": "session", "version": 3, "id": path.stem, "timestamp": "2026-09-01T10:00:00.000Z",
                        "cwd": "/w"})]
    for i, (entry_id, role, text) in enumerate(lines, 1):
        rows.append(json.dumps({"type": "message", "id": entry_id, "parentId": None,
                                "timestamp": f"2026-09-01T10:00:{i:02d}.000Z",
                                "message": {"role": role, "content": [{"type": "text", "text": text}]}}))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(rows) + "\n")


def test_a_verb_and_its_particle_are_one_phrase(store: Store, tmp_path: Path) -> None:
    """"give up" asks for the phrase: an entry with "give me" and "mixing up" is not it, though it
    holds both words and the one with the phrase lacks nothing else."""
    _session(tmp_path / "s" / "--w--" / "a.jsonl", [
        ("aa000001", "user", "give me the queue stats, queue sizes are up"),
        ("aa000002", "assistant", "We give up on the queue library for now: it cannot requeue per tenant, and "
                                  "the maintainers closed the issue asking for it, so the workers keep their own "
                                  "list of pending jobs in the database until we find a replacement."),
    ])
    index_file(store, tmp_path / "s" / "--w--" / "a.jsonl")
    hits = search(store, "why did we give up on the queue", Filters(resolve_scope(store, "global")), now=0).hits
    assert [h.entry_id for h in hits][:1] == ["aa000002"]
    concepts = ranking.concepts(parse("why did we give up on the queue"), read_sql.stats(store), store,
                                Reader(store).tokenize)
    assert (concepts[0].phrase, concepts[0].alternatives) == (["give", "up"], [["give"]])
    assert [c.phrase for c in concepts[1:]] == [["queue"]]  # "up" is no concept of its own


def test_a_question_in_french_looks_for_its_subject_not_its_glue(store: Store, tmp_path: Path) -> None:
    """French function words are no concepts, and an elided article is no phrase with its word:
    the entry holding "équipe" and "astreintes" answers, not the one full of "la", "de", "pour"."""
    _session(tmp_path / "s" / "--w--" / "fr.jsonl", [
        ("ff000001", "assistant", "Décision : notre équipe garde la rotation des astreintes chaque semaine."),
        ("ff000002", "user", "Pour la doc, c'était quoi la page de la rotation ? On met les liens de la page "
                             "dans le README, c'était plus simple pour les autres."),
    ])
    index_file(store, tmp_path / "s" / "--w--" / "fr.jsonl")
    query = "c'était quoi la décision pour l'équipe de la rotation des astreintes ?"
    concepts = ranking.concepts(parse(query), read_sql.stats(store), store, Reader(store).tokenize)
    assert [c.phrase for c in concepts] == [["décision"], ["équipe"], ["rotation"], ["astreintes"]]
    hits = search(store, query, Filters(resolve_scope(store, "global")), now=0).hits
    assert [h.entry_id for h in hits][:1] == ["ff000001"]


def test_how_did_we_fix_finds_the_reply_that_ends_the_request(store: Store, tmp_path: Path) -> None:
    """A request found for "how did we fix…" is answered by the reply that ends its turn, even
    when that reply shares few of the question's words."""
    _session(tmp_path / "s" / "--w--" / "b.jsonl", [
        ("bb000001", "user", "alembic upgrade fails with multiple heads after the merge"),
        ("bb000002", "assistant", "Looking at the revisions."),
        ("bb000003", "assistant", "Generated a merge revision joining both branches; upgrade now applies cleanly."),
        ("bb000004", "user", "thanks, now the changelog"),
    ])
    index_file(store, tmp_path / "s" / "--w--" / "b.jsonl")
    scope = resolve_scope(store, "global")
    hits = search(store, "how did we fix the alembic multiple heads", Filters(scope), now=0).hits
    assert "bb000003" in [h.entry_id for h in hits][:2]
    # Asked what was said, not how it was fixed, the request itself is the answer.
    hits = search(store, "alembic multiple heads", Filters(scope), now=0).hits
    assert [h.entry_id for h in hits][:1] == ["bb000001"]


def test_what_a_command_printed_is_its_output(store: Store, tmp_path: Path) -> None:
    """"what did `alembic heads` print" asks for the command's output (named only by its call),
    not for the talk that mentions the same words; "print" is no word to find in it."""
    path = tmp_path / "s" / "--w--" / "c.jsonl"
    _session(path, [("cc000001", "user", "alembic heads are a mess again, both branches print a head")])
    call = {"type": "message", "id": "cc000002", "parentId": None, "timestamp": "2026-09-01T10:00:05.000Z",
            "message": {"role": "assistant", "content": [{"type": "toolCall", "id": "call_1", "name": "bash",
                                                          "arguments": {"command": "uv run alembic heads"}}]}}
    result = {"type": "message", "id": "cc000003", "parentId": None, "timestamp": "2026-09-01T10:00:06.000Z",
              "message": {"role": "toolResult", "toolCallId": "call_1", "toolName": "bash", "isError": False,
                          "content": [{"type": "text", "text": "20260901_tokens (head)\n20260903_watchers (head)\n"}]}}
    with path.open("a") as handle:
        handle.write(json.dumps(call) + "\n" + json.dumps(result) + "\n")
    index_file(store, path)
    hits = search(store, "what did alembic heads print", Filters(resolve_scope(store, "global")), now=0).hits
    assert [h.entry_id for h in hits][:1] == ["cc000003"]


def test_a_summary_is_not_the_current_state_for_being_newest(store: Store, tmp_path: Path) -> None:
    """Asked for now, the newest statement comes first; a compaction summary is always newer than
    the turns it sums up, so it does not come before the statement it repeats."""
    path = tmp_path / "s" / "--w--" / "d.jsonl"
    _session(path, [
        ("dd000001", "assistant", "The nightly export timeout is 900 seconds."),
        ("dd000002", "assistant", "Raised the nightly export timeout to 3600 seconds."),
    ])
    summary = {"type": "compaction", "id": "dd000003", "parentId": "dd000002", "timestamp": "2026-09-01T10:05:00.000Z",
               "summary": "## Done\nRaised the nightly export timeout.", "firstKeptEntryId": "dd000002",
               "tokensBefore": 50000}
    with path.open("a") as handle:
        handle.write(json.dumps(summary) + "\n")
    index_file(store, path)
    hits = search(store, "what is the nightly export timeout now", Filters(resolve_scope(store, "global")),
                  now=0).hits
    assert [h.entry_id for h in hits] == ["dd000002", "dd000001", "dd000003"]


def _append(path: Path, *objects: dict) -> None:
    with path.open("a") as handle:
        handle.write("".join(json.dumps(o) + "\n" for o in objects))


def _call(entry_id: str, second: int, call_id: str, name: str, arguments: dict, thinking: str = "") -> dict:
    content = ([{"type": "thinking", "thinking": thinking}] if thinking else []) + [
        {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}]
    return {"type": "message", "id": entry_id, "parentId": None, "timestamp": f"2026-09-01T10:00:{second:02d}.000Z",
            "message": {"role": "assistant", "content": content}}


def _result(entry_id: str, second: int, call_id: str, name: str, output: str) -> dict:
    return {"type": "message", "id": entry_id, "parentId": None, "timestamp": f"2026-09-01T10:00:{second:02d}.000Z",
            "message": {"role": "toolResult", "toolCallId": call_id, "toolName": name, "isError": False,
                        "content": [{"type": "text", "text": output}]}}


def test_words_looked_up_find_the_entry_holding_them_not_its_reply(store: Store, tmp_path: Path) -> None:
    """A question found in the journal is answered by its reply when the query asks something;
    a query that only names words ("日本語", an identifier) asks for the entry holding them."""
    _session(tmp_path / "s" / "--w--" / "q.jsonl", [
        ("qq000001", "user", "CSV export: is DictWriter ok with 日本語? excel showed mojibake last time"),
        ("qq000002", "assistant", "Write it as utf-8-sig: Excel reads the byte order mark and shows the cards."),
        ("qq000003", "user", "thanks"),
    ])
    index_file(store, tmp_path / "s" / "--w--" / "q.jsonl")
    scope = resolve_scope(store, "global")
    assert [h.entry_id for h in search(store, "日本語", Filters(scope), now=0).hits][:1] == ["qq000001"]
    assert [h.entry_id for h in search(store, "DictWriter mojibake", Filters(scope), now=0).hits][:1] == ["qq000001"]
    asked = search(store, "why did excel show mojibake for the DictWriter export", Filters(scope), now=0).hits
    assert [h.entry_id for h in asked][:1] == ["qq000002"]


def test_a_result_is_scored_with_the_words_of_its_call(store: Store, tmp_path: Path) -> None:
    """"what did alembic heads print": the output of the call `alembic heads` (which never says
    "alembic") comes before a newer output that merely holds the words."""
    path = tmp_path / "s" / "--w--" / "r.jsonl"
    _session(path, [("rr000001", "user", "check the migrations")])
    _append(path,
            _call("rr000002", 2, "c1", "bash", {"command": "uv run alembic heads"}),
            _result("rr000003", 3, "c1", "bash", "20260901_tokens (head)\n20260903_watchers (head)\n"),
            _call("rr000004", 4, "c2", "bash", {"command": "git commit -am 'chore(db): merge'"}),
            _result("rr000005", 5, "c2", "bash", "[main 5d0e6a1] chore(db): merge alembic heads, print "
                                                 "the merged revision\n 1 file changed, 24 insertions(+)\n"))
    index_file(store, path)
    hits = search(store, "what did alembic heads print", Filters(resolve_scope(store, "global")), now=0).hits
    assert [h.entry_id for h in hits][:2] == ["rr000003", "rr000005"]


def test_a_call_that_says_the_answer_itself_is_kept_beside_its_result(store: Store, tmp_path: Path) -> None:
    """A call gives way to its result (the result shows the call), unless its entry also says
    what the question asks about: a thought before the call is a statement of its own."""
    path = tmp_path / "s" / "--w--" / "t.jsonl"
    _session(path, [("tt000001", "user", "the token tests")])
    _append(path,
            _call("tt000002", 2, "c1", "bash", {"command": "pytest -q tests/test_tokens.py"},
                  thinking="Revoking an already revoked token should be 409 Conflict."),
            _result("tt000003", 3, "c1", "bash", "FAILED test_revoke_twice: token revoked twice, 204 != 409 conflict"),
            _call("tt000004", 4, "c2", "bash", {"command": "pytest -q tests/test_tokens.py -k conflict"}),
            _result("tt000005", 5, "c2", "bash", "1 passed: revoked token conflict"))
    index_file(store, path)
    ids = [h.entry_id for h in search(store, "revokes tokens conflict", Filters(resolve_scope(store, "global")),
                                      now=0).hits]
    assert {"tt000002", "tt000003", "tt000005"} <= set(ids)
    assert "tt000004" not in ids  # a bare call: its result stands for it


def test_the_reply_to_a_question_is_what_was_said_not_a_call(store: Store, tmp_path: Path) -> None:
    """The reply that ends a question's turn is the last thing the agent said, not a tool call
    made after it (a turn cut short by the end of the journal, or longer than is looked at)."""
    path = tmp_path / "s" / "--w--" / "e.jsonl"
    _session(path, [
        ("ee000001", "user", "why does the nightly export time out?"),
        ("ee000002", "assistant", "It scans every invoice row without an index; I added one on issued_at."),
    ])
    _append(path, _call("ee000003", 3, "c1", "bash", {"command": "uv run pytest -q"}),
            _result("ee000004", 4, "c1", "bash", "12 passed in 0.4s"))
    index_file(store, path)
    hits = search(store, "why did the nightly export time out", Filters(resolve_scope(store, "global")), now=0).hits
    assert [h.entry_id for h in hits][:1] == ["ee000002"]


@pytest.mark.parametrize("text, query, found", [
    ("E   assert 204 == 409", "assert 204 == 409", 2),  # punctuation between typed words
    ("see test_revoke_twice for it", "test_revoke_twice", 2),
    ("we rolled it back", "roll back", 0),
    ("roll-back plan", "roll back plan", 2),
])
def test_word_pairs_are_found_across_punctuation(text: str, query: str, found: int) -> None:
    assert ranking.pairs_found(text.lower(), parse(query).pairs) == found


def test_a_request_to_find_something_is_answered_by_what_was_found(store: Store, tmp_path: Path) -> None:
    """"find the biggest stuff in my home" asks, like a question, for what the turn found; a
    request to do something ("set the limit to 100") stays the answer itself."""
    path = tmp_path / "s" / "--w--" / "h.jsonl"
    _session(path, [
        ("hh000001", "user", "I'm at 97% disk. find the biggest stuff in my home"),
        ("hh000002", "assistant", "Most of it is ~/.local/share/containers: 181 GB of podman images."),
        ("hh000003", "user", "set the upload limit to 100 MB in the server config"),
        ("hh000004", "assistant", "Done."),
    ])
    index_file(store, path)
    scope = resolve_scope(store, "global")
    found = search(store, "what was eating all the disk space in my home dir", Filters(scope), now=0).hits
    assert [h.entry_id for h in found][:1] == ["hh000002"]
    asked = search(store, "what upload limit did I set in the server config", Filters(scope), now=0).hits
    assert [h.entry_id for h in asked][:1] == ["hh000003"]


def test_what_a_file_says_is_its_output_what_a_person_said_is_not(store: Store, tmp_path: Path) -> None:
    """"what does eval-file.schema.ts say" asks for the file as read; "what did marek say" for
    what was said about him."""
    path = tmp_path / "s" / "--w--" / "k.jsonl"
    _session(path, [("kk000001", "user", "open the schema file")])
    _append(path,
            _call("kk000002", 2, "c1", "read", {"path": "packages/core/eval-file.schema.ts"}),
            _result("kk000003", 3, "c1", "read", "/** JSON schema for eval files: one case per entry, used by the "
                                                 "editor for completion. */\nexport const schema = {}"))
    _session(tmp_path / "s" / "--w--" / "m.jsonl", [
        ("mm000001", "user", "marek says the eval-file.schema.ts is still separated from the runtime types; "
                             "he wants it to stay that way for the editor schema"),
        ("mm000002", "assistant", "Noted: eval-file.schema.ts stays separate, as marek wants."),
    ])
    for name in ("k.jsonl", "m.jsonl"):
        index_file(store, tmp_path / "s" / "--w--" / name)
    scope = resolve_scope(store, "global")
    file_says = search(store, "what does eval-file.schema.ts say it is for", Filters(scope), now=0).hits
    assert [h.entry_id for h in file_says][:1] == ["kk000003"]
    person_said = search(store, "what did marek say about the schema", Filters(scope), now=0).hits
    assert [h.entry_id for h in person_said][:1] in (["mm000001"], ["mm000002"])


def _ranked(*hits: tuple[str, str, float, int]) -> list:
    from journal_index.query.hits import Hit

    return [Hit(rowid=i, entry_id=entry_id, ts=ts, kind=kind, role=None, tool=None, offset=i, length=1, path="p",
                session_id="s", cwd="/w", format="pi", score=score)
            for i, (entry_id, kind, score, ts) in enumerate(hits)]


# How questions are read (intent, freshness, names) is tested in test_question.py.


def test_the_hit_columns_name_hits_fields_in_their_order() -> None:
    import dataclasses

    from journal_index.query.hits import HIT_SOURCES, Hit

    names = [name for name, _ in HIT_SOURCES]
    # A row fills Hit's fields by position: the first ones, then (in ranking) the score.
    assert names + ["score"] == [f.name for f in dataclasses.fields(Hit)][: len(names) + 1]
    assert all(sql.split(".", 1)[1] == name for name, sql in HIT_SOURCES)  # each column is its field



def test_a_reader_resolves_paths_as_realpath_does_and_keeps_them_inside_the_roots(store: Store,
                                                                                   tmp_path: Path) -> None:
    """A Reader finds a folder's real path once per search and joins names that are no symlinks
    to it: the answers are realpath's, symlinked folders, linked journals, `..` and a link out of
    the roots included (that one, and a path outside, is None: never opened)."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "a").mkdir(parents=True)
    outside.mkdir()
    for path in (root / "a" / "one.jsonl", outside / "secret.jsonl"):
        path.write_text("{}\n")
    (root / "via").symlink_to(root / "a")  # a second way into a folder
    (root / "a" / "link.jsonl").symlink_to(root / "a" / "one.jsonl")
    (root / "a" / "out.jsonl").symlink_to(outside / "secret.jsonl")
    (root / "out").symlink_to(outside)
    reader = Reader(store, [root])
    paths = [root / "a" / "one.jsonl", root / "via" / "one.jsonl", root / "a" / "link.jsonl",
             root / "via" / "link.jsonl", root / "a" / ".." / "a" / "one.jsonl", root / "a" / "gone.jsonl",
             root / "a" / "out.jsonl", root / "out" / "secret.jsonl", outside / "secret.jsonl", root / "a" / ".."]
    real_root = os.path.realpath(root) + os.sep
    for path in paths:
        real = os.path.realpath(path)
        assert reader.resolve(str(path)) == (real if real.startswith(real_root) else None), path
    assert reader.resolve(str(root / "via" / "one.jsonl")) == os.path.realpath(root / "a" / "one.jsonl")
    assert reader.resolve(str(root / "a" / "out.jsonl")) is None


def _light_by_rank_then_scope(store: Store, expression: str, filters: Filters, limit: int) -> list[tuple[int, float]]:
    """What light() gives, the slow way: every match ranked by FTS5 (equal ranks by rowid), then the scope."""
    where, params = filters.sql()
    rows = store.rows("SELECT entries_fts.rowid, -bm25(entries_fts) FROM entries_fts JOIN entries e "
                      "ON e.rowid = entries_fts.rowid JOIN files f ON f.id = e.file_id "
                      f"WHERE entries_fts MATCH ? AND {where} ORDER BY rank", [expression, *params])
    return [(int(r), float(s)) for r, s in rows[:limit]]


@pytest.mark.parametrize("limit", [1, 3, 200])
@pytest.mark.parametrize("words", ["the", "alembic", "error", "test OR the"])
def test_light_candidates_of_a_scope_are_its_best_matches_by_rank(indexed_store: Store,
                                                                  monkeypatch: pytest.MonkeyPatch,
                                                                  words: str, limit: int) -> None:
    # A narrow scope is scored after filtering (read_sql.light): same rows, same order, ties by rowid.
    monkeypatch.setattr(read_sql, "LIGHT_LIMIT", limit)
    for kind in ("project", "global"):
        filters = Filters(resolve_scope(indexed_store, kind, BE))
        got = [(h.rowid, h.score) for h in read_sql.light(indexed_store, words, filters)]
        assert got == _light_by_rank_then_scope(indexed_store, words, filters, limit)


def test_held_is_the_candidates_matching_in_either_table(indexed_store: Store) -> None:
    everything = {int(r[0]) for r in indexed_store.rows("SELECT rowid FROM entries")}
    some = set(sorted(everything)[::3])
    for phrases in ([["alembic"]], [["the"]], [["alembic", "heads"], ["error"]], [["xylophonequartz"]]):
        light = {int(r[0]) for r in indexed_store.rows("SELECT rowid FROM entries_fts WHERE entries_fts MATCH ?",
                                                       (read_sql.light_expression(phrases),))}
        bulk = {int(r[0]) for r in indexed_store.rows("SELECT rowid FROM entries_bulk WHERE entries_bulk MATCH ?",
                                                      (read_sql.bulk_expression(phrases),))}
        assert read_sql.held(indexed_store, phrases, some) == (light | bulk) & some
        assert read_sql.held(indexed_store, phrases, set()) == set()


def _open_descriptors(folder: Path) -> int:
    """How many files under ``folder`` this process holds open (others, opened by anything else
    in the process meanwhile, are not counted)."""
    inside = os.path.realpath(folder) + os.sep
    return sum(1 for f in psutil.Process().open_files() if f.path.startswith(inside))


def test_a_reader_keeps_a_few_journals_open_and_closes_them(store: Store, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A search reads a few journals many times: a Reader opens each once and keeps up to
    OPEN_JOURNALS of them open, never more; close() (and so the end of a search) closes them,
    and the Reader still reads afterwards."""
    from journal_index.query import find

    journals = find.OPEN_JOURNALS + 4
    journals_folder = tmp_path / "s"
    for n in range(journals):
        path = journals_folder / "--w--" / f"j{n:02d}.jsonl"
        _session(path, [(f"a{n:07d}", "user", f"walrus {n} asked"), (f"b{n:07d}", "assistant", f"walrus {n} said")])
        index_file(store, path)
    scope = Filters(resolve_scope(store, "global"))
    hits = search(store, "walrus", scope, limit=100).hits
    assert len(hits) == 2 * journals
    opened: list[str] = []
    open_journal = find.open_journal

    def counted(path: str) -> BinaryIO:
        opened.append(path)
        return open_journal(path)

    monkeypatch.setattr(find, "open_journal", counted)

    assert _open_descriptors(journals_folder) == 0
    reader = Reader(store)
    first = [h for h in hits if h.path == hits[0].path]
    assert [reader.verified_text(h) is not None for h in first] == [True, True]
    assert opened == [hits[0].path]  # two entries of one journal: opened once
    for hit in hits:
        assert reader.verified_text(hit) is not None
        assert _open_descriptors(journals_folder) <= find.OPEN_JOURNALS
    assert _open_descriptors(journals_folder) == find.OPEN_JOURNALS
    reader.close()
    assert _open_descriptors(journals_folder) == 0
    assert reader.verified_text(hits[-1]) is not None  # read before: from what it parsed
    reader.forget()
    assert reader.verified_text(hits[-1]) is not None and _open_descriptors(journals_folder) == 1
    reader.close()

    assert search(store, "walrus", scope, limit=100).hits and _open_descriptors(journals_folder) == 0
