"""Run the real Claude Code and Codex CLI non-interactively in a private HOME, against a scripted model.

Both hosts get journal-index registered the way the README tells a user to, and a scripted
model on 127.0.0.1 as their only network:

* Claude Code: ``claude mcp add -s user journal-index -- journal-index --db DB mcp`` into a
  private ``CLAUDE_CONFIG_DIR`` (``~/.claude``), then ``claude -p PROMPT --output-format json
  --allowedTools mcp__journal-index__memory_context``; the model is the Messages API at
  ``ANTHROPIC_BASE_URL`` with a dummy ``ANTHROPIC_API_KEY``; telemetry, error reports, the
  auto-updater and all non-essential traffic are off.
* Codex: ``~/.codex/config.toml`` (``CODEX_HOME``) names the scripted server as a
  ``wire_api = "responses"`` model provider and holds ``[mcp_servers.journal_index]``; then
  ``codex exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox PROMPT``
  (the bypass only lets the MCP call run without an approval prompt; nothing else runs).

The history is real: pi journals of the fixture project prjct-be, re-filed under the test's
project (their words, and the secrets planted in them: fixtures/SECRETS.json), journals the real
Claude Code and Codex wrote in another project (fixtures/agents), and whatever the host's
earlier runs of the test wrote. A run returns the host's output, the session id it
reported, the journals it wrote and every model request it made; :func:`our_answers` pairs our
tool's calls with the results the model was sent.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from journal_index.text.entry_text import ANSWER_END, ANSWER_START
from tests.agent_homes import place_fixtures
from tests.e2e.answers import Answer
from tests.e2e.history import HISTORY
from tests.e2e.host_process import Finished, changed, clean_env, run_host, snapshot
from tests.e2e.model_apis import ToolCall
from tests.e2e.node_host import install_claude_code, install_codex
from tests.e2e.pi_host import adopt_pi_history, journal_index_executable
from tests.e2e.scripted_model import ModelRequest, ScriptedModel

REPO = Path(__file__).resolve().parents[2]
RUN_TIMEOUT = 180.0
# Codex prints this before an MCP tool's output in the tool result it sends the model.
_CODEX_PREAMBLE = re.compile(r"\AWall time:? [^\n]*\nOutput:\n?")


@dataclass
class HostRun:
    """One host run: its process, the session it reported, its journals and model requests."""

    host: str
    finished: Finished
    requests: list[ModelRequest]
    session_id: str | None
    journals: list[Path] = field(default_factory=list)  # written or changed by this run
    model_log: Path | None = None

    @property
    def returncode(self) -> int:
        return self.finished.returncode

    def first_request_after(self) -> float | None:
        """Seconds from starting the host to its first model request (MCP start-up included)."""
        return self.requests[0].received_at - self.finished.started_at if self.requests else None

    def describe(self) -> str:
        """For assertion messages: what the host printed and where the model's requests are."""
        f = self.finished
        return (f"{self.host} exit {f.returncode} after {f.seconds:.1f} s, session {self.session_id}\n"
                f"argv: {f.argv}\nstdout:\n{f.stdout[-2500:]}\nstderr:\n{f.stderr[-2500:]}\n"
                f"{len(self.requests)} model requests; every request body is in {self.model_log}")


class AgentHome:
    """A private HOME with prjct-be's pi history filed under ``project``, and an index file."""

    name: ClassVar[str]
    tool_name: ClassVar[str]  # the name the model calls our tool by

    def __init__(self, root: Path, project: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.project = project
        self.db = root / "index.db"
        self.logs = root / "model-requests"
        self.home.mkdir(parents=True, exist_ok=True)
        self.logs.mkdir(exist_ok=True)
        self.project.mkdir(parents=True, exist_ok=True)
        self.history = adopt_pi_history(self.home / ".pi" / "agent" / "sessions", HISTORY, project)
        place_fixtures(self.home)  # real Claude Code and Codex journals, of another project
        self.runs = 0

    # what differs per host
    def journals_dir(self) -> Path:
        raise NotImplementedError

    def argv(self, prompt: str, resume: str | None) -> list[str]:
        raise NotImplementedError

    def env(self, model: ScriptedModel) -> dict[str, str]:
        raise NotImplementedError

    def session_of(self, stdout: str) -> str | None:
        raise NotImplementedError

    def call(self, arguments: dict[str, Any]) -> ToolCall:
        """The model's turn that calls our tool with ``arguments``."""
        raise NotImplementedError

    def prelude(self) -> list[ToolCall]:
        """Turns a session needs before it can call our tool (none by default)."""
        return []

    def answer_text(self, sent: str) -> str:
        """Our answer inside the tool result the host sent (the host may add a preamble)."""
        return sent

    def is_error(self, run: HostRun, call_id: str) -> bool | None:
        raise NotImplementedError

    # shared
    def model(self, script: Sequence[Any]) -> ScriptedModel:
        """A scripted model for the next run, logging its request bodies into this home's log folder."""
        self.runs += 1
        return ScriptedModel(script, log=self.logs / f"run-{self.runs:02d}.jsonl")

    def run(self, prompt: str, model: ScriptedModel, *, resume: str | None = None,
            timeout: float = RUN_TIMEOUT) -> HostRun:
        folders = [self.journals_dir()]
        before = snapshot(folders)
        first = len(model.requests)
        done = run_host(self.argv(prompt, resume), self.project, self.env(model), timeout, self.name)
        return HostRun(self.name, done, model.requests[first:], self.session_of(done.stdout),
                       changed(before, folders), model.log)

    def journal_index(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``journal-index --db DB ARGS`` in this HOME (e.g. ``index``), as a user would run it."""
        env = clean_env(self.home)
        return subprocess.run([str(journal_index_executable()), "--db", str(self.db), *args], cwd=self.project,
                              env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)

    def server_argv(self) -> list[str]:
        """The MCP server's command line, as registered with the host."""
        return [str(journal_index_executable()), "--db", str(self.db), "mcp"]


class ClaudeHome(AgentHome):
    name = "claude"
    tool_name = "mcp__journal-index__memory_context"

    def __init__(self, root: Path, project: Path) -> None:
        super().__init__(root, project)
        self.binary = install_claude_code()
        self.config_dir = self.home / ".claude"
        self.config_dir.mkdir(exist_ok=True)

    def journals_dir(self) -> Path:
        return self.config_dir / "projects"

    def base_env(self) -> dict[str, str]:
        return clean_env(self.home, {
            "CLAUDE_CONFIG_DIR": str(self.config_dir),
            "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1", "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_BUG_COMMAND": "1",
        })

    def register(self) -> subprocess.CompletedProcess[str]:
        """``claude mcp add -s user journal-index -- <journal-index> --db DB mcp`` (the README's command,
        at user scope, with this test's index file)."""
        return subprocess.run([str(self.binary), "mcp", "add", "-s", "user", "journal-index", "--",
                               *self.server_argv()], cwd=self.project, env=self.base_env(), capture_output=True,
                              text=True, timeout=120, stdin=subprocess.DEVNULL)

    def env(self, model: ScriptedModel) -> dict[str, str]:
        return {**self.base_env(), "ANTHROPIC_BASE_URL": model.origin, "ANTHROPIC_API_KEY": "sk-ant-scripted-dummy"}

    def argv(self, prompt: str, resume: str | None) -> list[str]:
        resuming = ["--resume", resume] if resume else []
        return [str(self.binary), "-p", prompt, *resuming, "--output-format", "json", "--model", "scripted",
                "--allowedTools", self.tool_name]

    def session_of(self, stdout: str) -> str | None:
        try:
            return str(json.loads(stdout)["session_id"])
        except (ValueError, KeyError, TypeError):
            return None

    def call(self, arguments: dict[str, Any]) -> ToolCall:
        return ToolCall(self.tool_name, arguments)

    def prelude(self) -> list[ToolCall]:
        # Claude Code defers MCP tools behind its ToolSearch tool: the model loads the schema first.
        return [ToolCall("ToolSearch", {"query": f"select:{self.tool_name}"})]

    def is_error(self, run: HostRun, call_id: str) -> bool | None:
        for request in run.requests:
            errors = request.reader.tool_result_errors()
            if call_id in errors:
                return errors[call_id]
        return None


class CodexHome(AgentHome):
    name = "codex"
    tool_name = "mcp__journal_index__memory_context"
    NAMESPACE = "mcp__journal_index"

    def __init__(self, root: Path, project: Path, *, required: bool = False) -> None:
        super().__init__(root, project)
        self.binary = install_codex()
        self.codex_home = self.home / ".codex"
        self.codex_home.mkdir(exist_ok=True)
        self.required = required

    def journals_dir(self) -> Path:
        return self.codex_home / "sessions"

    def config(self, model: ScriptedModel) -> str:
        """config.toml: the scripted model as a Responses API provider, and journal-index as a user writes it
        (``required = true`` only when asked)."""
        command, *args = self.server_argv()
        required = "required = true\n" if self.required else ""
        return (f'model = "scripted"\nmodel_provider = "scripted"\ncheck_for_update_on_startup = false\n\n'
                f'[analytics]\nenabled = false\n\n'
                f'[model_providers.scripted]\nname = "Scripted"\nbase_url = "{model.base_url}"\n'
                f'wire_api = "responses"\nenv_key = "SCRIPTED_API_KEY"\n\n'
                f'[mcp_servers.journal_index]\ncommand = {json.dumps(command)}\nargs = {json.dumps(args)}\n{required}')

    def env(self, model: ScriptedModel) -> dict[str, str]:
        (self.codex_home / "config.toml").write_text(self.config(model))
        return clean_env(self.home, {"CODEX_HOME": str(self.codex_home), "SCRIPTED_API_KEY": "scripted-dummy-key"})

    def argv(self, prompt: str, resume: str | None) -> list[str]:
        resuming = ["resume", resume] if resume else []
        return [str(self.binary), "exec", *resuming, "--json", "--skip-git-repo-check",
                "--dangerously-bypass-approvals-and-sandbox", prompt]

    def session_of(self, stdout: str) -> str | None:
        for line in stdout.splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and event.get("type") == "thread.started":
                return str(event["thread_id"])
        return None

    def call(self, arguments: dict[str, Any]) -> ToolCall:
        return ToolCall("memory_context", arguments, namespace=self.NAMESPACE)

    def answer_text(self, sent: str) -> str:
        return _CODEX_PREAMBLE.sub("", sent, count=1)

    def is_error(self, run: HostRun, call_id: str) -> bool | None:
        """Codex tells the model nothing; its rollout records the MCP result's ``isError``."""
        for path in run.journals:
            for line in path.read_text().splitlines():
                payload = json.loads(line).get("payload") or {}
                item = payload.get("item") or {}
                if payload.get("type") == "item_completed" and item.get("type") == "McpToolCall" \
                        and item.get("id") == call_id:
                    return bool((item.get("result") or {}).get("isError"))
        return None


def our_answers(home: AgentHome, run: HostRun) -> list[Answer]:
    """Our tool's answers in this run, in call order, as the model was sent them (a resumed
    session's earlier calls, already in its first request, are not this run's)."""
    results: dict[str, str] = {}
    calls: dict[str, dict[str, Any]] = {}
    earlier = {c for c, _, _ in run.requests[0].reader.tool_calls()} if run.requests else set()
    for request in run.requests:
        for call_id, name, arguments in request.reader.tool_calls():
            if name == home.tool_name and call_id not in earlier:
                calls.setdefault(call_id, arguments)
        for call_id, text in request.tool_results():
            results.setdefault(call_id, text)
    out = []
    for call_id, arguments in calls.items():
        assert call_id in results, f"{home.name} never sent the model the result of {call_id}\n{run.describe()}"
        sent = results[call_id]
        out.append(Answer(call_id, arguments, sent, home.answer_text(sent), bool(home.is_error(run, call_id))))
    return out


def signed(answer: Answer) -> bool:
    return answer.text.startswith(ANSWER_START + "\n") and answer.text.endswith("\n" + ANSWER_END)

