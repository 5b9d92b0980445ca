"""The agent tool's contract inside the real Claude Code and Codex CLI, read from what the model was sent.

Each host runs four sessions in one private HOME (:func:`host_sessions`), against a scripted
model that logs every request body (``<tmp>/…/model-requests/run-NN.jsonl``: look there when a
test fails):

1. a new session: a prompt whose words exist nowhere else, then our tool searches for them, the
   session scope, a search with real hits twice, reads (a known entry, a missing one, entries
   holding planted secrets), and a final reply that quotes our first answer, as models do;
2. the same session resumed: the search and the session scope again;
3. ``journal-index index`` once, then a new session that only says a new word (and two secrets);
4. a new session that searches for that word (freshness without ``watch``), for the first
   session's words, the real hits again (no echo of our earlier answers, quoted or not), and
   its own session.

Slow: Claude Code and Codex are installed from the npm registry into the e2e cache on first use.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from journal_index.agent.tool_args import DESCRIPTION, INSTRUCTIONS
from tests.conftest import FIXTURES
from tests.e2e.answers import Answer, Hit
from tests.e2e.history import (
    ANSWER_MARKS,
    ECHO_QUERY,
    FIRST_PROMPT,
    OWN_WORDS,
    RATE_LIMIT_ENTRY,
    RATE_LIMIT_SESSION,
    RATE_LIMIT_TEXT,
)
from tests.e2e.history import assert_no_echo as no_echo_in
from tests.e2e.mcp_hosts import AgentHome, ClaudeHome, CodexHome, HostRun, our_answers, signed
from tests.e2e.scripted_model import ModelRequest, Reply, ScriptedModel, ToolCall, Turn
from tests.helpers import load_secrets

pytestmark = pytest.mark.slow

HOSTS = ("claude", "codex")
FRESH_WORDS = "quillbrook gateway"
# Two planted secrets that no pi journal holds: the user types them into a host's own journal.
TYPED_SECRETS = tuple(s["value"] for s in json.loads((FIXTURES / "SECRETS.json").read_text())["secrets"]
                      if s["id"] in ("S015", "S016"))
FRESH_PROMPT = (f"Note for later: the quillbrook gateway listens on port 7311; its deploy key is {TYPED_SECRETS[1]} "
                f"and the model key {TYPED_SECRETS[0]}.")
# Entries of the pi history that hold planted secrets (fixtures/SECRETS.json): (entry, session prefix).
SECRET_ENTRIES = (("233c0313", "01a05d32-b780"), ("b3318842", "01a05d32-b780"), ("8f0edf41", "01a0a9b1-d8c0"),
                  ("be1598e1", "01a08ad4-d880"))
MAX_ANSWER_CHARS = 3_500  # for a page of 8 hits
FRESH_WAIT = 3.0  # seconds: new journals are to be picked up within seconds of a call

FIRST_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("own words", {"action": "search", "query": OWN_WORDS}),
    ("own session", {"action": "search", "scope": "session"}),
    ("echo 1", {"action": "search", "query": ECHO_QUERY}),
    ("echo 2", {"action": "search", "query": ECHO_QUERY}),
    ("known entry", {"action": "read", "entryId": RATE_LIMIT_ENTRY, "sessionId": RATE_LIMIT_SESSION}),
    ("missing", {"action": "read", "entryId": "deadbeef"}),
    *((f"secret {entry}", {"action": "read", "entryId": entry, "sessionId": session})
      for entry, session in SECRET_ENTRIES),
    ("secret search", {"action": "search", "query": "aws secret access key stripe"}),
]
RESUMED_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("resumed echo", {"action": "search", "query": ECHO_QUERY}),
    ("resumed session", {"action": "search", "scope": "session"}),
]
LATER_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("fresh", {"action": "search", "query": FRESH_WORDS}),
    ("fresh again", {"action": "search", "query": FRESH_WORDS}),  # played FRESH_WAIT seconds later
    ("earlier session's words", {"action": "search", "query": OWN_WORDS}),
    ("new echo", {"action": "search", "query": ECHO_QUERY}),
    ("new session", {"action": "search", "scope": "session"}),
]


def make_home(host: str, root: Path, **options: Any) -> AgentHome:
    project = root / "work" / "prjct-be"
    if host == "codex":
        return CodexHome(root / "host", project, **options)
    claude = ClaudeHome(root / "host", project)
    added = claude.register()
    assert added.returncode == 0, added.stdout + added.stderr
    return claude


def quoting(home: AgentHome, arguments: dict[str, Any]) -> Callable[[ModelRequest], Reply]:
    """A final reply that pastes the hits of the first answer to ``arguments`` (without our signature
    and header), the way a model quotes what it found."""
    def reply(request: ModelRequest) -> Reply:
        call_id = next(c for c, name, args in request.reader.tool_calls() if name == home.tool_name
                       and args == arguments)
        sent = dict(request.tool_results())[call_id]
        lines = home.answer_text(sent).splitlines()
        return Reply("Here is what the history says:\n" + "\n".join(lines[2:-2]))
    return reply


def after(seconds: float, turn: ToolCall) -> Callable[[ModelRequest], ToolCall]:
    def later(_request: ModelRequest) -> ToolCall:
        time.sleep(seconds)
        return turn
    return later


@dataclass
class Sessions:
    """The four runs of one host and our answers in them, by call name."""

    home: AgentHome
    runs: dict[str, HostRun]
    answers: dict[str, Answer]
    models: list[ScriptedModel]

    def answer(self, name: str) -> Answer:
        assert name in self.answers, f"no answer {name!r}: {sorted(self.answers)}"
        return self.answers[name]

    def all_requests(self) -> list[ModelRequest]:
        return [r for m in self.models for r in m.requests]


def play(home: AgentHome, name: str, prompt: str, calls: list[tuple[str, dict[str, Any]]], final: Turn,
         sessions: Sessions, resume: str | None = None, delayed: frozenset[str] = frozenset()) -> HostRun:
    turns: list[Turn] = [*home.prelude()]
    for call_name, arguments in calls:
        call = home.call(arguments)
        turns.append(after(FRESH_WAIT, call) if call_name in delayed else call)
    turns.append(final)
    model = home.model(turns)
    sessions.models.append(model)
    with model:
        run = home.run(prompt, model, resume=resume)
    sessions.runs[name] = run
    assert run.returncode == 0, run.describe()
    assert model.errors == [] and model.exhausted == 0, model.describe() + "\n" + run.describe()
    assert model.turns_played == len(turns), model.describe() + "\n" + run.describe()
    found = our_answers(home, run)
    assert len(found) == len(calls), run.describe()
    sessions.answers.update({call_name: a for (call_name, _), a in zip(calls, found, strict=True)})
    return run


def run_sessions(host: str, root: Path) -> Sessions:
    home = make_home(host, root, required=True) if host == "codex" else make_home(host, root)
    sessions = Sessions(home, {}, {}, [])
    first = play(home, "first", FIRST_PROMPT, FIRST_CALLS, quoting(home, dict(FIRST_CALLS)["echo 1"]), sessions)
    assert first.session_id, first.describe()
    play(home, "resumed", "Search the history again.", RESUMED_CALLS, Reply("ok"), sessions,
         resume=first.session_id)
    indexed = home.journal_index("index")
    assert indexed.returncode == 0, indexed.stdout + indexed.stderr
    play(home, "fresh", FRESH_PROMPT, [], Reply("noted"), sessions)
    play(home, "later", "What did we note earlier?", LATER_CALLS, Reply("done"), sessions,
         delayed=frozenset({"fresh again"}))
    return sessions


@pytest.fixture(scope="module")
def host_sessions(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Sessions]:
    """The sessions of a host, run on first use (tests may come in any order); a failure to run
    them fails every test of the host, without running them again."""
    done: dict[str, Sessions | BaseException] = {}

    def get(host: str) -> Sessions:
        if host not in done:
            try:
                done[host] = run_sessions(host, tmp_path_factory.mktemp(f"host-{host}"))
            except Exception as exc:  # noqa: BLE001 - kept, so that every test of the host reports it
                done[host] = exc
        found = done[host]
        if isinstance(found, BaseException):
            raise found
        return found

    return get


def hits_of(answer: Answer) -> list[Hit]:
    return answer.hits() if signed(answer) else []


def assert_signed_text(answer: Answer) -> None:
    """The model got our signed text answer, not a JSON dump of it."""
    assert not answer.text.lstrip().startswith("{") and '"results":' not in answer.text, \
        f"the model was sent JSON, not our text:\n{answer.describe()}"
    assert signed(answer), f"the answer is not signed:\n{answer.describe()}"


def assert_no_echo(answer: Answer) -> None:
    if signed(answer):
        no_echo_in(answer)


# -- the tool is listed, with our instructions --------------------------------------------------


@pytest.mark.parametrize("host", HOSTS)
def test_the_tool_is_listed_with_our_instructions(host_sessions: Callable[[str], Sessions], host: str) -> None:
    sessions = host_sessions(host)
    for name, run in sessions.runs.items():
        first = run.requests[0]
        if host == "claude":
            # Claude Code defers MCP tools: the first request names ours in its deferred-tool list,
            # and puts the server's instructions in a system section of their own.
            assert sessions.home.tool_name in first.everything_text(), f"{name}: {first.tool_names()}"
            assert f"## journal-index\n{INSTRUCTIONS}" in first.system_text(), name
        else:
            namespace = first.reader.namespace(CodexHome.NAMESPACE)
            assert namespace is not None, f"{name}: the tool is missing from the first request: {first.tool_names()}"
            assert namespace["description"] == INSTRUCTIONS
            assert [t["name"] for t in namespace["tools"]] == ["memory_context"]
            assert namespace["tools"][0]["description"] == DESCRIPTION
    if host == "claude":  # once ToolSearch loaded it, the tool is declared with our description
        loaded = sessions.runs["first"].requests[1]
        declared = loaded.tool(sessions.home.tool_name)
        assert declared is not None, loaded.tool_names()
        assert declared["description"] == DESCRIPTION
        assert declared["input_schema"]["required"] == ["action"]


# -- real hits, as our signed text ----------------------------------------------------------------


@pytest.mark.parametrize("host", HOSTS)
def test_real_hits_reach_the_model_as_our_signed_text(host_sessions: Callable[[str], Sessions], host: str) -> None:
    sessions = host_sessions(host)
    found = sessions.answer("echo 1")
    assert not found.is_error, found.describe()
    assert_signed_text(found)
    assert found.lines[0] == f"search: results 1–8 in project {sessions.home.project}", found.describe()
    assert len(hits_of(found)) == 8, found.describe()
    assert len(found.text) <= MAX_ANSWER_CHARS, f"{len(found.text)} characters:\n{found.text}"
    assert RATE_LIMIT_SESSION in {h.session_id for h in hits_of(found)}, found.describe()

    page = sessions.answer("known entry")
    assert not page.is_error, page.describe()
    assert_signed_text(page)
    assert RATE_LIMIT_TEXT in page.text, page.describe()


# -- no echo: new session, resumed session, quoted answers ----------------------------------------


@pytest.mark.parametrize("host", HOSTS)
def test_a_second_search_in_the_session_returns_nothing_of_the_first_answer(
        host_sessions: Callable[[str], Sessions], host: str) -> None:
    sessions = host_sessions(host)
    first, second = sessions.answer("echo 1"), sessions.answer("echo 2")
    assert_signed_text(second)
    assert [(h.entry_id, h.session_id) for h in hits_of(second)] == [(h.entry_id, h.session_id) for h in hits_of(first)]
    assert_no_echo(second)
    own = sessions.runs["first"].session_id
    assert [h for h in hits_of(second) if h.session_id == own] == [], second.describe()


@pytest.mark.parametrize("host", HOSTS)
def test_a_resumed_session_finds_nothing_of_its_earlier_answers(host_sessions: Callable[[str], Sessions],
                                                                 host: str) -> None:
    sessions = host_sessions(host)
    resumed = sessions.answer("resumed echo")
    assert_signed_text(resumed)
    assert_no_echo(resumed)
    own = sessions.runs["first"].session_id
    assert [h for h in hits_of(resumed) if h.session_id == own] == [], resumed.describe()


@pytest.mark.parametrize("host", HOSTS)
def test_a_new_session_finds_no_earlier_answer_and_quoted_copies_rank_below_the_original(
        host_sessions: Callable[[str], Sessions], host: str) -> None:
    """The first session's answers are out of the new session's context: they must still not be
    found, and the reply that pasted one ranks below the entries it copies (or collapses into them)."""
    sessions = host_sessions(host)
    later = sessions.answer("new echo")
    assert_signed_text(later)
    ours = {sessions.runs[name].session_id for name in ("first", "resumed")}
    hits = hits_of(later)
    for hit in hits:
        if hit.session_id in ours:  # only the reply that quoted us may be found, never an answer itself
            assert hit.kind == "assistant", f"hit [{hit.number}] is an earlier call or answer of ours:\n{later.text}"
        else:
            for mark in ANSWER_MARKS:
                assert mark not in hit.excerpt, f"hit [{hit.number}] echoes an answer of ours:\n{later.text}"
    copied = {(h.entry_id, h.session_id) for h in hits_of(sessions.answer("echo 1"))}
    originals = [n for n, h in enumerate(hits) if (h.entry_id, h.session_id) in copied]
    copies = [n for n, h in enumerate(hits) if h.session_id in ours]
    assert originals, later.describe()
    assert all(c > max(originals) for c in copies), f"a copy of our answer ranks above what it copies:\n{later.text}"


# -- session scope ----------------------------------------------------------------------------------


@pytest.mark.parametrize("host", HOSTS)
def test_the_session_scope_is_the_callers_session(host_sessions: Callable[[str], Sessions], host: str) -> None:
    sessions = host_sessions(host)
    for call, run in (("own session", "first"), ("resumed session", "resumed"), ("new session", "later")):
        answer = sessions.answer(call)
        assert_signed_text(answer)
        session_id = sessions.runs[run].session_id
        # Everything of the caller's session is in its context, so nothing is listed: but the
        # answer names the session it searched, the caller's.
        assert answer.lines[0] == f"newest entries: nothing in session {session_id}.", answer.describe()
    earlier = sessions.answer("earlier session's words")  # the first session, out of this one's context
    assert sessions.runs["first"].session_id in {h.session_id for h in hits_of(earlier)}, earlier.describe()


# -- freshness without watch -----------------------------------------------------------------------


@pytest.mark.parametrize("host", HOSTS)
def test_a_word_of_another_session_is_found_without_watch(host_sessions: Callable[[str], Sessions],
                                                         host: str) -> None:
    """After one `journal-index index`, a session says a new word; a later session finds it
    (within seconds of its first call) though nothing but the MCP server indexed since."""
    sessions = host_sessions(host)
    fresh_session = sessions.runs["fresh"].session_id
    found = sessions.answer("fresh again")
    assert_signed_text(found)
    assert fresh_session in {h.session_id for h in hits_of(found)}, found.describe()


# -- errors and secrets ----------------------------------------------------------------------------


@pytest.mark.parametrize("host", HOSTS)
def test_a_bogus_read_is_an_error(host_sessions: Callable[[str], Sessions], host: str) -> None:
    sessions = host_sessions(host)
    missing = sessions.answer("missing")
    assert missing.is_error is True, missing.describe()
    assert_signed_text(missing)
    assert missing.lines[0] == f"error (not_found): no entry deadbeef in project {sessions.home.project}.", \
        missing.describe()


@pytest.mark.parametrize("host", HOSTS)
def test_planted_secrets_never_reach_the_model(host_sessions: Callable[[str], Sessions], host: str) -> None:
    sessions = host_sessions(host)
    for entry, _ in SECRET_ENTRIES:  # the entries were read: they reached the model, redacted
        page = sessions.answer(f"secret {entry}")
        assert not page.is_error, page.describe()
    requests = sessions.all_requests()
    assert len(requests) >= 4
    for secret in load_secrets(FIXTURES):
        leaked = [n for n, r in enumerate(requests) if secret in r.everything_text()]
        if secret in TYPED_SECRETS:  # the session the user typed them in sent them itself; no other may
            typed = {id(r) for r in sessions.runs["fresh"].requests}
            leaked = [n for n in leaked if id(requests[n]) not in typed]
        assert leaked == [], f"a planted secret reached the model in requests {leaked}: {secret[:12]}…"
    found = sessions.answer("fresh again")  # once found (see the freshness test), the typed ones show redacted
    for hit in hits_of(found):
        if "quillbrook" in hit.excerpt:
            assert "[REDACTED:" in hit.excerpt, found.describe()


@pytest.mark.parametrize("host", HOSTS)
def test_no_hit_is_of_another_project(host_sessions: Callable[[str], Sessions], host: str) -> None:
    """The HOME holds real Claude Code and Codex journals of another project: no project-scoped
    answer shows any of them; every hit is of the prjct-be history or of this test's sessions."""
    sessions = host_sessions(host)
    history = {path.stem.split("_", 1)[1] for path in sessions.home.history}
    ours = {run.session_id for run in sessions.runs.values()}
    for name, answer in sessions.answers.items():
        strangers = [h for h in hits_of(answer) if h.session_id not in history | ours]
        assert strangers == [], f"{name}: hits of another project:\n{answer.text}"


# -- Codex: the tool is there from the first request ------------------------------------------------

STARTUP_RUNS = 10


def test_codex_has_the_tool_in_its_first_request_every_time(tmp_path: Path) -> None:
    """Codex sends its first request about a second after starting its MCP servers, ready or not;
    with the config a user writes (no ``required = true``) our tool must be in it, run after run."""
    home = CodexHome(tmp_path / "host", tmp_path / "work" / "prjct-be")
    present, waits = 0, []
    for _ in range(STARTUP_RUNS):
        model = home.model([Reply("ok")])
        with model:
            run = home.run("hello", model)
        assert run.returncode == 0 and run.requests, run.describe()
        waits.append(round(run.first_request_after() or 0, 2))
        present += CodexHome.NAMESPACE in [t.get("name") for t in run.requests[0].tools]
    assert present == STARTUP_RUNS, (f"the tool was in the first request in {present} of {STARTUP_RUNS} runs "
                                     f"(first request after {waits} s)")
