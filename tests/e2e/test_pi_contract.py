"""The agent tool's contract, checked through what pi 1.6 sent the model and wrote to its journal.

Every test runs under both exposures: ``codemode`` (pi's default: the model's script calls our
tool) and ``direct`` (the model calls ``mcp__journal_index__memory_context``). The answers are
read from the tool messages pi sent to the scripted model (:mod:`tests.e2e.answers`), and
``isError`` from pi's journal (direct) or the script's ``r.isError`` (codemode).

One session per exposure (:func:`one_session`) carries most items. Three prompts:

1. a prompt whose words exist nowhere else, then searches for those words, the session scope,
   the same search twice, a query only some hits hold entirely, and a read of a missing entry;
2. a prompt whose reply reports a nearly full context, so pi compacts before the next one
   (pi's own auto-compaction, its summary request answered by the scripted model);
3. after the compaction: the first prompt's words again, the session scope, the same search again.

Slow: pi runs for real (installed once per test session into the e2e cache).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from journal_index.agent.tool_args import DESCRIPTION, INSTRUCTIONS
from journal_index.data.store import open_store
from journal_index.text.entry_text import ANSWER_START
from tests.e2e.answers import DIRECT_NAME, EXPOSURES, SERVER_LINE, Answer, Hit, answers, call, model_texts
from tests.e2e.history import ECHO_QUERY, FIRST_PROMPT, HISTORY, OWN_WORDS, RATE_LIMIT_QUERY, assert_no_echo
from tests.e2e.node_host import NodeHost
from tests.e2e.pi_host import JournalFile, PiHome, PiRun, journal_index_executable, journal_index_server
from tests.e2e.scripted_model import Reply, ScriptedModel, Turn
from tests.helpers import index_tokens, strings_in, vocabulary

pytestmark = pytest.mark.slow

SECOND_PROMPT = "Let us move on to the deployment checklist for the staging cluster."
THIRD_PROMPT = "Search the history again."
PARTIAL_QUERY = RATE_LIMIT_QUERY  # two or three entries hold every word
SUMMARY = "## Goal\nCarry on with the checklist.\n\n## Progress\n### Done\n- [x] Earlier turns summarized"
# pi keeps this many recent tokens when it compacts: the second prompt's turn (a long prompt
# and an "ok"), so the cut falls on the second prompt and the first prompt's turn is summarized.
KEEP_RECENT_TOKENS = 5
FULL_CONTEXT = 120_000  # of the model's 128,000: pi compacts before the next prompt
INSTRUCTIONS_FIRST_LINE = INSTRUCTIONS.splitlines()[0]
_PARTIAL_NOTE = re.compile(r"^note: (\d+) of these (\d+) results hold every term; ")


def setup_project(pi_home: PiHome, project: Path, db: Path, exposure: str,
                  global_args: tuple[str, ...] = ()) -> None:
    """prjct-be's journals as this project's history; journal-index as pi's MCP server."""
    pi_home.adopt_history(HISTORY, project)
    server = journal_index_server(db, global_args=global_args)
    if exposure == "direct":
        server["exposure"] = "direct"
    pi_home.write_mcp({"journal-index": server})


def assert_clean(run: PiRun, model: ScriptedModel) -> None:
    assert run.returncode == 0, run.describe()
    assert model.errors == [], model.errors
    assert model.exhausted == 0, run.describe()
    assert model.turns_played == len(model.script), run.describe()
    for text in model_texts(run):
        assert "……" not in text, f"the model was sent a doubled ellipsis:\n{text}"


# Journal fields that are bookkeeping, not text anyone wrote (ids, times, folders, model names).
_NOT_TEXT = frozenset({"type", "id", "parentId", "timestamp", "cwd", "toolCallId", "firstKeptEntryId",
                       "parentSession", "responseId", "api", "provider", "model", "modelId", "stopReason",
                       "rawStopReason", "thinkingLevel", "role", "details", "nestedCalls", "usage"})


def journal_words(folders: list[Path]) -> str:
    """The text of every journal under ``folders`` — what the model, the user and the tools wrote,
    compaction summaries included — except the strings that carry an answer of ours."""
    texts = []
    for folder in folders:
        for path in sorted(folder.rglob("*.jsonl")):
            for line in path.read_text().splitlines():
                entry = json.loads(line)
                if entry.get("type") == "session" or (entry.get("message") or {}).get("role") == "system":
                    continue  # the header and pi's system sections: nobody's words
                texts += [s for s in strings_in(entry, _NOT_TEXT) if ANSWER_START not in s]
    return "\n".join(texts)


def terms_only_in(answer: Answer, db: Path, folders: list[Path]) -> tuple[set[str], set[str]]:
    """(terms of ``answer`` that no journal text outside our answers holds, the index's vocabulary)."""
    store = open_store(str(db))
    try:
        ours = set(index_tokens(store, answer.text))
        elsewhere = set(index_tokens(store, journal_words(folders)))
        return ours - elsewhere, vocabulary(store)
    finally:
        store.close()


@dataclass
class Session:
    """One pi run of the three prompts under one exposure, and what it left behind."""

    exposure: str
    project: Path
    db: Path
    home: PiHome
    run: PiRun
    answers: list[Answer]

    @property
    def journal(self) -> JournalFile:
        return self.run.journal

    @property
    def session_id(self) -> str:
        return str(self.journal.header()["id"])

    def entry_of(self, role: str, text: str) -> str:
        """The id of the message entry of ``role`` whose text is ``text``."""
        for line in self.journal.messages(role):
            content = line["message"]["content"]
            if any(block.get("text") == text for block in content if isinstance(block, dict)):
                return str(line["id"])
        raise AssertionError(f"no {role} entry {text!r} in {self.journal.path}")

    def position(self, entry_id: str) -> int:
        return next(n for n, line in enumerate(self.journal.lines()) if line.get("id") == entry_id)

    def kept_from(self) -> int:
        """The journal position of the compaction's first kept entry."""
        compactions = [line for line in self.journal.lines() if line.get("type") == "compaction"]
        assert len(compactions) == 1, f"pi compacted {len(compactions)} times: {self.run.describe()}"
        return self.position(compactions[0]["firstKeptEntryId"])

    def our_calls(self) -> dict[str, str]:
        """The journal entries that are calls of our tool or their results: id → what."""
        calls: dict[str, str] = {}
        call_ids = set()
        for line in self.journal.messages("assistant"):
            for block in line["message"]["content"]:
                if block.get("type") == "toolCall" and (block["name"] == DIRECT_NAME or DIRECT_NAME in json.dumps(
                        block.get("arguments"))):
                    calls[line["id"]] = f"the {block['name']} call"
                    call_ids.add(block["id"])
        for line in self.journal.messages("toolResult"):
            if line["message"]["toolCallId"] in call_ids:
                calls[line["id"]] = f"the {line['message']['toolName']} result"
        return calls

    def own_hits(self, answer: Answer) -> list[Hit]:
        return [h for h in answer.hits() if h.session_id == self.session_id]


# The calls of the session, in order: (name, arguments); names index Session.answers.
FIRST_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("own words", {"action": "search", "query": OWN_WORDS}),
    ("own session", {"action": "search", "scope": "session"}),
    ("echo 1", {"action": "search", "query": ECHO_QUERY}),
    ("echo 2", {"action": "search", "query": ECHO_QUERY}),
    ("partial", {"action": "search", "query": PARTIAL_QUERY}),
    ("missing", {"action": "read", "entryId": "deadbeef"}),
]
THIRD_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("own words compacted", {"action": "search", "query": OWN_WORDS}),
    ("own session compacted", {"action": "search", "scope": "session"}),
    ("echo compacted", {"action": "search", "query": ECHO_QUERY}),
]
CALL_NAMES = [name for name, _ in FIRST_CALLS + THIRD_CALLS]


def run_session(node_host: NodeHost, folder: Path, exposure: str) -> Session:
    home = PiHome(folder / "pi", node_host)
    project = folder / "work" / "prjct-be"
    project.mkdir(parents=True)
    db = folder / "index.db"
    setup_project(home, project, db, exposure)
    home.write_settings({"compaction": {"keepRecentTokens": KEEP_RECENT_TOKENS}})
    script: list[Turn] = [
        *(call(exposure, arguments) for _, arguments in FIRST_CALLS), Reply("noted"),
        Reply("ok", prompt_tokens=FULL_CONTEXT),
        Reply(SUMMARY),  # pi's compaction asks the model for the summary
        *(call(exposure, arguments) for _, arguments in THIRD_CALLS), Reply("done"),
    ]
    with ScriptedModel(script) as model:
        run = home.run([FIRST_PROMPT, SECOND_PROMPT, THIRD_PROMPT], model, project)
    assert_clean(run, model)
    found = answers(run, exposure)
    assert len(found) == len(CALL_NAMES), run.describe()
    return Session(exposure, project, db, home, run, found)


@pytest.fixture(scope="module")
def one_session(node_host: NodeHost, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Session]:
    """The session of an exposure, run on first use (tests may come in any order)."""
    done: dict[str, Session] = {}

    def get(exposure: str) -> Session:
        if exposure not in done:
            done[exposure] = run_session(node_host, tmp_path_factory.mktemp(f"session-{exposure}"), exposure)
        return done[exposure]

    return get


def answer(session: Session, name: str) -> Answer:
    return session.answers[CALL_NAMES.index(name)]


# -- 1. searches do not echo earlier searches --------------------------------------------------


@pytest.mark.parametrize("exposure", EXPOSURES)
def test_a_second_search_returns_nothing_of_the_first_answer(one_session: Callable[[str], Session],
                                                             exposure: str) -> None:
    session = one_session(exposure)
    first, second = answer(session, "echo 1"), answer(session, "echo 2")
    assert not first.is_error and not second.is_error, second.describe()
    assert first.hits(), first.describe()
    # Nothing new came in between: the same page, our first answer nowhere in it.
    assert [(h.entry_id, h.session_id) for h in second.hits()] == [(h.entry_id, h.session_id) for h in first.hits()]
    assert [line for line in second.lines if not line.startswith("index: ")] == \
        [line for line in first.lines if not line.startswith("index: ")]
    assert_no_echo(second)
    assert session.own_hits(second) == [], second.describe()


@pytest.mark.parametrize("exposure", EXPOSURES)
def test_once_compacted_away_our_earlier_answers_are_still_not_found(one_session: Callable[[str], Session],
                                                                    exposure: str) -> None:
    """After the compaction the first prompt's turn (its searches and their results among them)
    is searchable: the results that carried our answers must not bring them back."""
    session = one_session(exposure)
    later = answer(session, "echo compacted")
    assert not later.is_error, later.describe()
    assert_no_echo(later)
    kept = session.kept_from()
    for hit in session.own_hits(later):
        assert session.position(hit.entry_id) < kept, f"a hit still in the context:\n{later.text}"


@pytest.mark.parametrize("exposure", EXPOSURES)
def test_once_compacted_away_our_earlier_searches_are_no_hits(one_session: Callable[[str], Session],
                                                              exposure: str) -> None:
    """The contract: a code-mode result that carried our answer is not searchable. Nor should the
    searches themselves come back as hits (under direct exposure pi's calls of our tool are not
    indexed by name)."""
    session = one_session(exposure)
    later = answer(session, "echo compacted")
    ours = session.our_calls()
    echoed = [f"[{h.number}] entry {h.entry_id}: {ours[h.entry_id]}" for h in later.hits() if h.entry_id in ours]
    assert echoed == [], "earlier searches come back as hits:\n" + "\n".join(echoed) + "\n" + later.text


@pytest.mark.parametrize("exposure", EXPOSURES)
def test_no_term_only_our_answer_holds_is_indexed(one_session: Callable[[str], Session], exposure: str) -> None:
    session = one_session(exposure)
    folders = [session.home.sessions_dir]
    for name in ("echo 1", "own session compacted"):
        only_ours, indexed = terms_only_in(answer(session, name), session.db, folders)
        assert only_ours, f"the test needs terms only our answer holds ({name})"
        assert sorted(only_ours & indexed) == [], f"terms of our answer ({name}) were indexed"


# -- 2. the model's own prompt is not a hit while it is in the context --------------------------


@pytest.mark.parametrize("exposure", EXPOSURES)
def test_the_prompt_is_no_hit_until_compaction_takes_it_out_of_the_context(
        one_session: Callable[[str], Session], exposure: str) -> None:
    session = one_session(exposure)
    before = answer(session, "own words")
    assert not before.is_error, before.describe()
    assert before.hits() == [], before.describe()
    assert before.lines[0] == f"search: nothing in project {session.project}.", before.describe()
    assert "this session indexed just now" in before.index_line

    prompt = session.entry_of("user", FIRST_PROMPT)
    kept = session.kept_from()
    assert session.position(prompt) < kept <= session.position(session.entry_of("user", SECOND_PROMPT)), \
        "pi's compaction was to summarize the first prompt's turn and keep the second"
    after = answer(session, "own words compacted")
    assert not after.is_error, after.describe()
    hits = after.hits()
    assert prompt in [h.entry_id for h in hits], after.describe()
    assert {h.session_id for h in hits} == {session.session_id}, after.describe()
    assert all(session.position(h.entry_id) < kept for h in hits), after.describe()


# -- 3. in code mode the model is told what the tool is for -------------------------------------


@pytest.mark.parametrize("exposure", EXPOSURES)
def test_the_model_is_told_what_the_tool_is_for(one_session: Callable[[str], Session], exposure: str) -> None:
    session = one_session(exposure)
    requests = session.run.requests
    if exposure == "direct":
        declared = requests[0].tool("mcp__journal_index__memory_context")
        assert declared is not None and declared["description"] == DESCRIPTION, requests[0].tool_names()
        assert INSTRUCTIONS_FIRST_LINE not in requests[-1].everything_text()  # direct: pi shows no instructions
        return
    # The first prompt does not wait for code-mode servers: its requests name the server only.
    assert f"{SERVER_LINE}\n" in requests[0].system_text()
    # From the next prompt on (the server connected during the first), the line carries our
    # instructions' first line.
    second = next(r for r in requests if SECOND_PROMPT in r.user_texts())
    assert f"{SERVER_LINE}: {INSTRUCTIONS_FIRST_LINE}" in second.system_text(), second.system_text()
    assert f"{SERVER_LINE}: {INSTRUCTIONS_FIRST_LINE}" in requests[-1].system_text()
    rest = INSTRUCTIONS.splitlines()[1]
    assert rest[:60] not in requests[-1].everything_text()  # only the first line reaches the model


# -- 4. scope "session" without sessionId is the current session --------------------------------


@pytest.mark.parametrize("exposure", EXPOSURES)
def test_scope_session_without_an_id_is_the_current_session(one_session: Callable[[str], Session],
                                                            exposure: str) -> None:
    session = one_session(exposure)
    before = answer(session, "own session")
    assert not before.is_error, before.describe()
    assert before.lines[0] == f"newest entries: nothing in session {session.session_id}.", before.describe()

    after = answer(session, "own session compacted")
    assert not after.is_error, after.describe()
    assert after.lines[0].startswith("newest entries: results 1–") and \
        after.lines[0].endswith(f" in session {session.session_id}"), after.describe()
    hits = after.hits()
    assert {h.session_id for h in hits} == {session.session_id}, after.describe()
    kept = session.kept_from()
    assert all(session.position(h.entry_id) < kept for h in hits), after.describe()
    # Newest first: the last entry compaction took out of the context leads.
    assert hits[0].entry_id == session.entry_of("assistant", "noted"), after.describe()


# -- 5. a read that finds nothing is an error ----------------------------------------------------


@pytest.mark.parametrize("exposure", EXPOSURES)
def test_reading_a_missing_entry_is_an_error(one_session: Callable[[str], Session], exposure: str) -> None:
    session = one_session(exposure)
    missing = answer(session, "missing")
    assert missing.is_error is True, missing.describe()
    assert missing.lines[0] == f"error (not_found): no entry deadbeef in project {session.project}.", \
        missing.describe()
    assert missing.lines[1].startswith("hint: ")


# -- 6. the match-quality note is in the text ----------------------------------------------------


@pytest.mark.parametrize("exposure", EXPOSURES)
def test_the_text_says_when_only_some_hits_hold_every_word(one_session: Callable[[str], Session],
                                                           exposure: str) -> None:
    session = one_session(exposure)
    partial = answer(session, "partial")
    assert not partial.is_error, partial.describe()
    note = _PARTIAL_NOTE.match(partial.lines[1])
    assert note is not None, partial.describe()
    assert 0 < int(note[1]) < int(note[2]) == len(partial.hits()), partial.describe()
    assert "20147e3f" in [h.entry_id for h in partial.hits()]  # it holds every word


# -- 7. forked copies take one hit ---------------------------------------------------------------

FORKED_PROMPT = "Which tool runs the quokkaline migration?"
FORKED_REPLY = "The quokkaline migration runs on flyway 9."


@pytest.mark.parametrize("exposure", EXPOSURES)
def test_a_forked_copy_is_one_hit_that_names_the_other_session(pi_home: PiHome, project: Path, tmp_path: Path,
                                                               exposure: str) -> None:
    setup_project(pi_home, project, tmp_path / "index.db", exposure)
    with ScriptedModel([Reply(FORKED_REPLY)]) as model:
        original = pi_home.run(FORKED_PROMPT, model, project)
    assert_clean(original, model)
    original_id = original.journal.header()["id"]
    with ScriptedModel([Reply("forked")]) as model:  # pi --fork <id prefix>: a copy under the same entry ids
        forked = pi_home.run("Carry on in a fork.", model, project, args=["--fork", original_id[:13]])
    assert_clean(forked, model)
    fork = forked.journal
    assert fork.header()["parentSession"] == str(original.journal.path)
    reply_id = next(line["id"] for line in original.journal.messages("assistant"))
    assert reply_id in [line.get("id") for line in fork.lines()]

    with ScriptedModel([call(exposure, {"action": "search", "query": "quokkaline flyway"}), Reply("x")]) as model:
        searched = pi_home.run("Search for it.", model, project)
    assert_clean(searched, model)
    found = answers(searched, exposure)[0]
    hits = [h for h in found.hits() if FORKED_REPLY in h.excerpt]
    assert len(hits) == 1, found.describe()
    sessions = {original_id, fork.header()["id"]}
    assert hits[0].session_id in sessions
    assert hits[0].also_in == sorted(sessions - {hits[0].session_id}), \
        f"the hit does not name the other copy's session:\n{found.text}"


# -- 8. pi's flat session folders --------------------------------------------------------------

EARLIER_PROMPT = "What is the numbatline cache ttl?"
EARLIER_REPLY = "The numbatline cache ttl is 42 seconds."


def session_folder_case(how: str, pi_home: PiHome, project: Path, tmp_path: Path
                        ) -> tuple[Path, list[str], dict[str, str] | None, tuple[str, ...]]:
    """(the folder pi writes to, pi's extra args, pi's extra env, journal-index's global args)."""
    folder = tmp_path / "flat-sessions"
    if how == "env":
        return folder, [], {"PI_CODING_AGENT_SESSION_DIR": str(folder)}, ()
    if how == "setting":
        pi_home.write_settings({"sessionDir": str(folder)})
        return folder, [], None, ()
    if how == "relative setting":  # pi: "Relative paths resolve from the working directory."
        pi_home.write_settings({"sessionDir": "flat-sessions"})
        return project / "flat-sessions", [], None, ()
    if how == "project setting":  # <cwd>/.pi/settings.json, read by pi before project trust
        (project / ".pi").mkdir()
        (project / ".pi" / "settings.json").write_text(json.dumps({"sessionDir": str(folder)}))
        return folder, [], None, ()
    assert how == "flag with --sessions", how  # the README's advice for pi --session-dir
    return folder, ["--session-dir", str(folder)], None, ("--sessions", str(folder))


def assert_found_in(found: Answer, session_id: str) -> None:
    """The two entries holding both words of "numbatline ttl", of that session, come first;
    partial matches may follow, and then the note counts those two."""
    assert [h.session_id for h in found.hits()][:2] == [session_id, session_id], found.describe()
    note = _PARTIAL_NOTE.match(found.lines[1])
    assert len(found.hits()) == 2 or (note is not None and note[1] == "2"), found.describe()


@pytest.mark.parametrize(("how", "exposure"), [
    ("env", "codemode"), ("env", "direct"), ("setting", "codemode"), ("setting", "direct"),
    ("relative setting", "direct"), ("project setting", "direct"), ("flag with --sessions", "direct")])
def test_journals_in_a_session_folder_are_found(pi_home: PiHome, project: Path, tmp_path: Path, how: str,
                                                exposure: str) -> None:
    folder, args, env, global_args = session_folder_case(how, pi_home, project, tmp_path)
    setup_project(pi_home, project, tmp_path / "index.db", exposure, global_args)
    with ScriptedModel([Reply(EARLIER_REPLY)]) as model:
        earlier = pi_home.run(EARLIER_PROMPT, model, project, args=args, env=env, watch=[folder])
    assert_clean(earlier, model)
    assert earlier.journal.path.parent == folder  # pi stores them flat there
    with ScriptedModel([call(exposure, {"action": "search", "query": "numbatline ttl"}), Reply("x")]) as model:
        now = pi_home.run("Search for it.", model, project, args=args, env=env, watch=[folder])
    assert_clean(now, model)
    assert now.journal.path.parent == folder
    found = answers(now, exposure)[0]
    assert "this session indexed just now" in found.index_line, found.describe()
    assert_found_in(found, earlier.journal.header()["id"])


def test_pi_session_dir_flag_is_invisible_to_the_server(pi_home: PiHome, project: Path, tmp_path: Path) -> None:
    """pi --session-dir D without telling journal-index: pi's process title hides its argv, and
    neither its environment nor the MCP handshake names D, so the session is not found."""
    folder = tmp_path / "flat-sessions"
    setup_project(pi_home, project, tmp_path / "index.db", "direct")
    with ScriptedModel([call("direct", {"action": "search", "query": "anything"}), Reply("x")]) as model:
        run = pi_home.run("Search.", model, project, args=["--session-dir", str(folder)], watch=[folder])
    assert_clean(run, model)
    assert run.journal.path.parent == folder
    found = answers(run, "direct")[0]
    assert "current session not found" in found.index_line, found.describe()



# A pi extension knows the session file (and folder) and can start journal-index with both.
SESSION_FILE_EXTENSION = """
export default function (pi: any) {
  pi.on("session_start", async (_event: any, ctx: any) => {
    const args = ["--db", DB, "--sessions", ctx.sessionManager.getSessionDir(),
                  "--sessions", process.env.HOME + "/.pi/agent/sessions", "mcp"];
    const file = ctx.sessionManager.getSessionFile();
    if (file) args.push("--session-file", file);
    pi.registerMcpServer("journal-index", { command: COMMAND, args, exposure: EXPOSURE });
  });
}
"""


@pytest.mark.parametrize("exposure", EXPOSURES)
def test_a_pi_extension_can_tell_the_server_the_session_file(pi_home: PiHome, project: Path, tmp_path: Path,
                                                             exposure: str) -> None:
    """With pi --session-dir, an extension that registers the server on session_start with
    --session-file and --sessions (pi.registerMcpServer) finds the session exactly."""
    folder = tmp_path / "flat-sessions"
    source = (SESSION_FILE_EXTENSION.replace("DB", json.dumps(str(tmp_path / "index.db")))
              .replace("COMMAND", json.dumps(str(journal_index_executable())))
              .replace("EXPOSURE", json.dumps(exposure)))
    (pi_home.agent_dir / "extensions").mkdir()
    (pi_home.agent_dir / "extensions" / "journal-index.ts").write_text(source)
    args = ["--session-dir", str(folder)]
    with ScriptedModel([Reply(EARLIER_REPLY)]) as model:
        earlier = pi_home.run(EARLIER_PROMPT, model, project, args=args, watch=[folder])
    assert_clean(earlier, model)
    with ScriptedModel([call(exposure, {"action": "search", "query": "numbatline ttl"}), Reply("x")]) as model:
        now = pi_home.run("Search for it.", model, project, args=args, watch=[folder])
    assert_clean(now, model)
    found = answers(now, exposure)[0]
    assert "this session indexed just now" in found.index_line, found.describe()
    assert_found_in(found, earlier.journal.header()["id"])
