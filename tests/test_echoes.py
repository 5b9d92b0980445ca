"""Echoes through quoting: a later reply that pastes an earlier answer of ours never ranks above
the entry that answer showed — through `journal-index search` and `journal-index tool`, on
the real fixture journals."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from journal_index.query.echoes import RUN_WORDS, _run_hashes, _run_hashes_within, originals
from journal_index.query.hits import Hit
from tests.conftest import FIXTURES
from tests.helpers import copy_journal_tree

BE = "/home/dev/Apps/prjct/prjct-be"
NOW = "2026-10-15T00:00:00Z"
QUERY = "personal API tokens stored hash"
ORIGINAL = "b297e5a7"  # the user's request that started the API tokens work (2026-09-01)
LATER = "01a13000-0000-7000-8000-0000000ec0ec"  # the session that pastes our answer
_HIT = re.compile(r"^\[(\d+)\] .* · entry (\S+) · ", re.M)


def journal_index(db: Path, root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "JOURNAL_INDEX_NOW": NOW}
    return subprocess.run([sys.executable, "-m", "journal_index", "--db", str(db), "--sessions", str(root), *args],
                          capture_output=True, text=True, env=env, timeout=120, check=False)


def tool_hits(db: Path, root: Path) -> tuple[str, list[str]]:
    """The answer body (inside its signature) and its hits' entry ids, in order."""
    done = journal_index(db, root, "tool", "--cwd", BE, json.dumps({"action": "search", "query": QUERY}))
    assert done.returncode == 0, done.stderr
    text = json.loads(done.stdout)["text"]
    body = "\n".join(text.splitlines()[1:-1])
    return body, [entry for _, entry in _HIT.findall(body)]


def cli_hits(db: Path, root: Path) -> list[str]:
    done = journal_index(db, root, "search", *QUERY.split(), "--cwd", BE, "--json")
    assert done.returncode == 0, done.stderr
    return [r["entryId"] for r in json.loads(done.stdout)["results"]]


def _line(entry_id: str, parent: str | None, stamp: str, role: str, text: str) -> str:
    return json.dumps({"type": "message", "id": entry_id, "parentId": parent, "timestamp": stamp,
                       "message": {"role": role, "content": [{"type": "text", "text": text}]}})


def write_session_quoting(root: Path, answer: str) -> list[str]:
    """A later pi session of the same project whose model pastes parts of ``answer`` (hits
    and excerpts, as models do, without the signature) into two replies; their entry ids."""
    blocks = re.split(r"\n(?=\[\d+\] )", answer)
    first_hits = "\n".join(blocks[1:3])  # [1] and [2], headers and excerpts
    excerpt = blocks[1].splitlines()[1].strip()  # [1]'s excerpt alone
    folder = root / "--home-dev-Apps-prjct-prjct-be--"
    path = folder / f"2026-10-14T09-00-00-000Z_{LATER}.jsonl"
    rows = [
        json.dumps({"type": "session", "version": 3, "id": LATER, "timestamp": "2026-10-14T09:00:00.000Z",
                    "cwd": BE}),
        _line("ec000001", None, "2026-10-14T09:00:05.000Z", "user",
              "what did we settle about the personal API tokens? check the history"),
        _line("ec000002", "ec000001", "2026-10-14T09:00:20.000Z", "assistant",
              "The history has it. From memory_context:\n" + first_hits
              + "\nSo personal API tokens are stored as a hash only, and look like prj_<random>."),
        _line("ec000003", "ec000002", "2026-10-14T09:01:00.000Z", "user", "and where was the hash decided?"),
        _line("ec000004", "ec000003", "2026-10-14T09:01:15.000Z", "assistant",
              f"In the first request of that work:\n> {excerpt}\n"
              "The personal API tokens hash is stored, never the token."),
    ]
    path.write_text("\n".join(rows) + "\n")
    return ["ec000002", "ec000004"]


def test_a_reply_pasting_our_answer_ranks_below_the_entry_it_quotes(tmp_path: Path) -> None:
    root = copy_journal_tree(FIXTURES / "sessions", tmp_path / "sessions")
    db = tmp_path / "index.db"
    answer, before = tool_hits(db, root)
    assert before[0] == ORIGINAL, answer

    copies = write_session_quoting(root, answer)
    assert journal_index(db, root, "index").returncode == 0
    for hits in (cli_hits(db, root), tool_hits(db, root)[1]):
        assert hits[0] == ORIGINAL, hits
        for copy in copies:  # still found (its own words may say more), after what it copies
            assert copy not in hits or hits.index(copy) > hits.index(ORIGINAL), hits


def _hit(rowid: int, kind: str, ts: int, session: str = "earlier") -> Hit:
    return Hit(rowid, f"e{rowid:07d}", ts, kind, None, None, 0, 0, "/j.jsonl", session, "/w", "pi")


QUOTED = ("personal access tokens are stored hashed with argon2id, and the raw token is displayed "
          "exactly once, right after its creation")


def copies(ranked: list[Hit], texts: dict[int, str]) -> dict[int, int]:
    """rowid of each copy found -> rowid of the original it repeats."""
    found = originals(ranked, lambda h: texts[h.rowid], limit=10)
    return {h.rowid: found[id(h)].rowid for h in ranked if id(h) in found}


def test_copies_ranked_above_their_original_are_found_and_nothing_else() -> None:
    """Ranked copy, other, copy of the copy, original: both copies are found, copying the
    original; an entry sharing no long run is none; a tool output read again (a newer read of
    the same file) is not an echo."""
    read = "DATABASE_POOL_SIZE = 20 # connections kept open per worker process, raised from 10 in September"
    texts = {1: f"see: {QUOTED} — that settles it", 2: "unrelated words about the deploy and its rollback",
             3: f"again, as said: {QUOTED}", 4: QUOTED, 5: f"settings.py: {read}", 6: f"settings.py: {read}"}
    copy, other, copy2 = _hit(1, "assistant", 300, "later"), _hit(2, "user", 250, "later"), \
        _hit(3, "user", 400, "later")
    original = _hit(4, "user", 100)
    newer_read, older_read = _hit(5, "tool_result", 500, "later"), _hit(6, "tool_result", 50)
    ranked = [newer_read, copy, other, copy2, original, older_read]

    assert copies(ranked, texts) == {1: 4, 3: 4}
    short = {**texts, 1: QUOTED[:50], 3: QUOTED[:50]}  # a shorter run is no copy
    assert copies(ranked, short) == {}


def test_in_its_own_session_a_copy_is_one_that_names_the_entry_it_quotes() -> None:
    """A model restating its own words later in the turn (its closing summary) keeps its place;
    a reply quoting our answer about a compacted turn of the same session names that entry."""
    original = _hit(1, "assistant", 100, "same")
    restated = _hit(2, "assistant", 200, "same")
    texts = {1: QUOTED, 2: f"Done: {QUOTED}."}
    assert copies([restated, original], texts) == {}
    texts[2] = f"memory_context found entry {original.entry_id}: {QUOTED}"
    assert copies([restated, original], texts) == {2: 1}


def test_an_entry_is_named_by_one_word_holding_its_short_id() -> None:
    """Naming is looked for within words: a hostile id with a space in its first eight characters
    is not named by text that holds them across two words, and is by one word holding them."""
    original = _hit(1, "assistant", 100, "same")
    original.entry_id = "ab cd123-rest"
    restated = _hit(2, "assistant", 200, "same")
    assert copies([restated, original], {1: QUOTED, 2: f"entry ab cd123: {QUOTED}"}) == {}
    original.entry_id = "abcd1234-rest"
    assert copies([restated, original], {1: QUOTED, 2: f"entry (abcd1234…): {QUOTED}"}) == {2: 1}
    assert copies([restated, original], {1: QUOTED, 2: f"entry abcd 1234: {QUOTED}"}) == {}


def test_a_copy_is_found_wherever_the_run_lies_in_the_original_and_only_word_for_word() -> None:
    """The original's runs are hashed once per search and compared by hash first: a run deep in a
    long original (after a repeat of itself cut short) is still found, whichever of several
    earlier candidates holds it; a run that differs by one word is no copy."""
    filler = " ".join(f"word{n}" for n in range(400))
    cut = " ".join(QUOTED.split()[:9])  # nine words of the run, then something else: no run of ten
    texts = {1: f"as I said: {QUOTED}.", 2: f"{filler} {cut} elsewhere {filler} {QUOTED} {filler}",
             3: filler, 4: f"as I said: {QUOTED.replace('personal', 'private')}."}
    copy, original, other = _hit(1, "assistant", 300, "later"), _hit(2, "user", 100), _hit(3, "user", 200)
    assert copies([copy, other, original], texts) == {1: 2}
    assert copies([copy, original, other], {**texts, 2: f"{filler} {cut} elsewhere"}) == {}
    near = _hit(4, "assistant", 300, "later")
    assert copies([near, other, original], texts) == {4: 2}  # the rest of it holds a long enough run
    one_word = {**texts, 4: " ".join(w if n % 5 else "x" for n, w in enumerate(QUOTED.split()))}
    assert copies([near, other, original], one_word) == {}


@given(st.lists(st.sampled_from(["a", "b", "c", "d", "word", "x"]), max_size=60),
       st.sets(st.sampled_from(["a", "b", "c", "d", "word"])))
def test_the_runs_of_a_possible_original_are_its_runs_made_only_of_the_copies_words(
        words: list[str], vocabulary: set[str]) -> None:
    """An original is hashed only where ten words in a row are the copies' words: exactly the
    runs of the whole hashing whose every word is one of them, at the same places."""
    every = _run_hashes(words)
    kept = [(start, h) for start, h in every if set(words[start:start + RUN_WORDS]) <= vocabulary]
    assert _run_hashes_within(words, vocabulary) == kept
