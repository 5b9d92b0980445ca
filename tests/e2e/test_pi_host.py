"""The real host: pi 1.6 (Node 22) drives ``journal-index mcp`` through a scripted model.

Each test runs ``pi --print`` in a temporary HOME whose session history is the repo's fixture
journals, with the prjct-be project's journals re-filed under the test's project folder. The
model is :class:`ScriptedModel`, so every request pi sent to it can be read back: the declared
tools, the system prompt, and the tool results, our tool's answer among them.

Both exposures are covered: pi 1.6's default (``codemode``: the model writes a script whose
``tools.mcp__journal_index__memory_context(...)`` call reaches our server) and ``direct`` (the
tool is declared to the model as ``mcp__journal_index__memory_context``).

Slow: the first run installs Node and pi from the npm registry into the e2e cache.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from journal_index.text.entry_text import ANSWER_END, ANSWER_START
from tests.e2e.answers import DIRECT_NAME, codemode_call, result_text, script_output
from tests.e2e.history import HISTORY, RATE_LIMIT_ENTRY, RATE_LIMIT_QUERY, RATE_LIMIT_SESSION, RATE_LIMIT_TEXT
from tests.e2e.node_host import PI_VERSION
from tests.e2e.pi_host import PiHome, PiRun, encoded_cwd_dir, journal_index_executable, journal_index_server
from tests.e2e.scripted_model import ModelRequest, Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.slow

PROBE = Path(__file__).with_name("probe_mcp_server.py")


def signed_lines(text: str) -> list[str]:
    """The lines of a signed answer of ours, without the signature (which must be there)."""
    lines = text.splitlines()
    assert lines[0] == ANSWER_START and lines[-1] == ANSWER_END, text
    return lines[1:-1]


def assert_clean(run: PiRun, model: ScriptedModel, turns: int) -> None:
    assert run.returncode == 0, run.describe()
    assert model.errors == [], model.errors
    assert model.exhausted == 0, run.describe()
    assert len(run.requests) == turns, run.describe()


def setup_project(pi_home: PiHome, project: Path, db: Path, exposure: str | None) -> None:
    pi_home.adopt_history(HISTORY, project)
    server = journal_index_server(db)
    if exposure:
        server["exposure"] = exposure
    pi_home.write_mcp({"journal-index": server})


def test_codemode_exposure_the_script_reaches_our_server_and_the_answer_reaches_the_model(
        pi_home: PiHome, project: Path, tmp_path: Path) -> None:
    setup_project(pi_home, project, tmp_path / "index.db", exposure=None)  # pi 1.6's default: codemode
    search = {"action": "search", "query": RATE_LIMIT_QUERY}
    read = {"action": "read", "entryId": RATE_LIMIT_ENTRY, "sessionId": RATE_LIMIT_SESSION}
    with ScriptedModel([codemode_call(search), codemode_call(read), Reply("found it")]) as model:
        run = pi_home.run("where did we talk about the rate limit per token?", model, project)
    assert_clean(run, model, turns=3)
    assert run.stdout.strip() == "found it"

    first = run.requests[0]
    assert "codemode" in first.tool_names()
    assert DIRECT_NAME not in first.tool_names()  # codemode servers are not declared to the model
    assert "mcp__journal_index (codemode)" in first.system_text()

    found = script_output(run.requests[1].last_tool_result() or "")
    assert found["isError"] is False
    lines = signed_lines(found["text"])
    assert lines[0] == f"search: results 1–8 in project {project}"
    assert f"entry {RATE_LIMIT_ENTRY}" in found["text"]
    assert lines[-1].startswith("index: ") and "this session indexed just now" in lines[-1]
    page = script_output(run.requests[2].last_tool_result() or "")
    assert page["isError"] is False
    assert RATE_LIMIT_TEXT in page["text"]

    # The journal: one codemode call per script, its result holding our text.
    journal = run.journal
    assert journal.header()["cwd"] == str(project)
    assert journal.path.parent.name == encoded_cwd_dir(project)
    calls, results = journal.tool_calls(), journal.tool_results()
    assert [c["name"] for c in calls] == ["codemode", "codemode"]
    assert [r["toolName"] for r in results] == ["codemode", "codemode"]
    assert script_output(result_text(results[0])) == found
    nested = [c["name"] for r in results for c in r.get("nestedCalls", {}).get("calls", [])]
    assert nested == [DIRECT_NAME, DIRECT_NAME]


def read_more_of(request: ModelRequest) -> ToolCall:
    """The read call our last answer suggested ("read more: {...}"), as the next turn."""
    text = request.last_tool_result() or ""
    line = next((row for row in signed_lines(text) if row.startswith("read more: ")), None)
    assert line is not None, f"no read more line in:\n{text}"
    return ToolCall(DIRECT_NAME, json.loads(line.removeprefix("read more: ")))


def test_direct_exposure_the_declared_tool_reaches_our_server_and_the_answer_reaches_the_model(
        pi_home: PiHome, project: Path, tmp_path: Path) -> None:
    pi_home.adopt_history(HISTORY, project)
    executable = str(journal_index_executable())
    added = pi_home.pi(["mcp", "add", "journal-index", "--exposure", "direct", "--", executable,
                        "--db", str(tmp_path / "index.db"), "mcp"], cwd=project)
    assert added.returncode == 0, added.stderr
    assert pi_home.mcp_config() == {"mcpServers": {"journal-index": {
        "command": executable, "args": ["--db", str(tmp_path / "index.db"), "mcp"], "exposure": "direct"}}}

    search = {"action": "search", "query": RATE_LIMIT_QUERY}
    with ScriptedModel([ToolCall(DIRECT_NAME, search), read_more_of, Reply("done")]) as model:
        run = pi_home.run("where did we talk about the rate limit per token?", model, project)
    assert_clean(run, model, turns=3)

    declared = run.requests[0].tool(DIRECT_NAME)
    assert declared is not None, run.requests[0].tool_names()
    assert declared["description"].startswith("Search and read this project's past agent sessions")
    assert declared["parameters"]["required"] == ["action"]

    found = run.requests[1].last_tool_result() or ""
    assert signed_lines(found)[0] == f"search: results 1–8 in project {project}"
    assert f"entry {RATE_LIMIT_ENTRY}" in found
    page = run.requests[2].last_tool_result() or ""
    assert signed_lines(page)[1].startswith("(characters 0–")

    # The journal holds the call as the model made it and the result exactly as the model got it.
    calls, results = run.journal.tool_calls(), run.journal.tool_results()
    assert [c["name"] for c in calls] == [DIRECT_NAME, DIRECT_NAME]
    assert calls[0]["arguments"] == search
    assert [r["toolName"] for r in results] == [DIRECT_NAME, DIRECT_NAME]
    assert [result_text(r) for r in results] == [found, page]
    assert [r["isError"] for r in results] == [False, False]
    assert results[0]["details"] == {"server": "journal-index", "tool": "memory_context"}


def test_what_pi_gives_an_mcp_server(pi_home: PiHome, project: Path, tmp_path: Path) -> None:
    """A stand-in server beside journal-index records pi's side of the connection."""
    log = tmp_path / "probe.jsonl"
    pi_home.write_mcp({"probe": {"command": sys.executable, "args": [str(PROBE), str(log)]},
                       "journal-index": journal_index_server(tmp_path / "index.db")})
    script = ('await tools.mcp__journal_index__memory_context({action: "search", query: "anything"});\n'
              'return (await tools.mcp__probe__probe({q: "hello"})).content[0].text;')
    with ScriptedModel([ToolCall("codemode", {"code": script}), Reply("one"), Reply("two")]) as model:
        run = pi_home.run(["first prompt", "second prompt"], model, project)
    assert_clean(run, model, turns=3)
    records = [json.loads(line) for line in log.read_text().splitlines()]
    start = records[0]

    # Process: started in the session's cwd, with pi's environment plus two markers, and no
    # variable that names the session or its journal.
    assert start["cwd"] == str(project)
    assert start["argv"][1:] == [str(log)]
    env = start["env"]
    assert env["HOME"] == str(pi_home.home)
    assert env["AI_AGENT"] == "pi" and env["PI_CODING_AGENT"] == "true"
    # (PI_OFFLINE and PI_TELEMETRY are the harness's; the caller's PI_* variables are removed.)
    assert sorted(k for k in env if k.startswith("PI_")) == [
        "PI_CODING_AGENT", "PI_OFFLINE", "PI_SKIP_VERSION_CHECK", "PI_TELEMETRY"], "pi 1.6 names no session"
    assert start["chain"][1]["argv"] == ["pi"]  # pi sets its process title

    # Protocol: clientInfo pi 1.6, a roots capability, and the roots are the cwd alone.
    received = [r["received"] for r in records if "received" in r]
    init = next(m for m in received if m.get("method") == "initialize")
    assert init["params"]["clientInfo"] == {"name": "pi", "version": PI_VERSION}
    assert "roots" in init["params"]["capabilities"]
    roots = next(m for m in received if m.get("id") == "probe-roots")
    assert roots["result"]["roots"] == [{"uri": project.as_uri(), "name": project.name}]

    # journal-index runs beside it the same way: same cwd, same environment.
    siblings = next(r["siblings"] for r in records if "siblings" in r)
    ours = [s for s in siblings if "mcp" in s["argv"] and "--db" in s["argv"]]
    assert len(ours) == 1, siblings
    assert ours[0]["cwd"] == str(project)
    assert ours[0]["env"] == env

    # Server instructions: once connected, their first line is the server's line in the system
    # prompt's <mcp_servers> section, from the next prompt on (codemode exposure).
    assert "- mcp__probe (codemode)\n" in run.requests[0].system_text()
    assert "- mcp__probe (codemode): PROBE-INSTRUCTIONS first line: the probe server." in run.requests[2].system_text()
    assert "PROBE-INSTRUCTIONS second line" not in run.requests[2].everything_text()


@pytest.mark.parametrize("how", ["flag", "env", "setting"])
def test_a_session_dir_holds_the_journals_flat(pi_home: PiHome, project: Path, tmp_path: Path, how: str) -> None:
    """--session-dir, PI_CODING_AGENT_SESSION_DIR and the sessionDir setting: no per-cwd folder."""
    folder = tmp_path / f"sessions-{how}"
    args = ["--session-dir", str(folder)] if how == "flag" else []
    env = {"PI_CODING_AGENT_SESSION_DIR": str(folder)} if how == "env" else None
    if how == "setting":
        pi_home.write_settings({"sessionDir": str(folder)})
    with ScriptedModel([Reply("ok")]) as model:
        run = pi_home.run("hello", model, project, args=args, env=env, watch=[folder])
    assert_clean(run, model, turns=1)
    assert run.journal.path.parent == folder
    assert run.journal.header()["cwd"] == str(project)
    assert not (pi_home.sessions_dir / encoded_cwd_dir(project)).exists()
