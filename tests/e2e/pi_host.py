"""Run the real pi 1.6 non-interactively in a temporary HOME, against a scripted model.

:class:`PiHome` lays out a private ``~/.pi/agent`` (``models.json`` naming the scripted model's
server as an ``openai-completions`` provider, ``settings.json``, ``mcp.json``), copies the repo's
fixture journals in as the session history, and runs ``pi --print`` with a cwd, a timeout and a
clean environment (no ``PI_*`` or ``JOURNAL_INDEX_*`` variable leaks in from the caller). A run
returns pi's exit code and output, the journals it wrote or changed, and the requests the model
server received.

``journal_index_server`` is the MCP server entry for the ``journal-index`` executable next to
``sys.executable``, with a private ``--db``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from tests.e2e.host_process import HostRunError, changed, clean_env, run_host, snapshot
from tests.e2e.node_host import NodeHost
from tests.e2e.scripted_model import ModelRequest, ScriptedModel

REPO = Path(__file__).resolve().parents[2]
FIXTURE_SESSIONS = REPO / "fixtures" / "sessions"
PROVIDER = "scripted"
RUN_TIMEOUT = 180.0


def encoded_cwd_dir(cwd: Path | str) -> str:
    """pi's session folder name for a cwd: ``--`` + the path without its leading ``/``, ``/`` → ``-``, ``--``."""
    return "--" + str(cwd).lstrip("/").replace("/", "-").replace(":", "-") + "--"


class PiRunError(HostRunError):
    """pi did not finish in time; carries what it printed so far."""


def journal_index_executable() -> Path:
    """The ``journal-index`` installed next to the running interpreter (the venv's)."""
    candidate = Path(sys.executable).parent / "journal-index"
    if not candidate.exists():
        raise FileNotFoundError(f"{candidate} is missing: install the project into this interpreter's "
                                "environment (pip install -e .)")
    return candidate


def journal_index_server(db: Path, *mcp_args: str, global_args: Sequence[str] = ()) -> dict[str, Any]:
    """An ``mcpServers`` entry that starts ``journal-index [global args] --db DB mcp [mcp args]``."""
    return {"command": str(journal_index_executable()),
            "args": [*global_args, "--db", str(db), "mcp", *mcp_args]}


@dataclass
class JournalFile:
    path: Path

    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.path.read_text().splitlines() if line.strip()]

    def header(self) -> dict[str, Any]:
        return self.lines()[0]

    def messages(self, role: str | None = None) -> list[dict[str, Any]]:
        """The ``message`` entries (whole lines), optionally of one message role."""
        return [e for e in self.lines() if e.get("type") == "message"
                and (role is None or e["message"].get("role") == role)]

    def tool_calls(self) -> list[dict[str, Any]]:
        """Every toolCall content block of the assistant messages, in order."""
        return [block for e in self.messages("assistant") for block in e["message"].get("content", [])
                if block.get("type") == "toolCall"]

    def tool_results(self) -> list[dict[str, Any]]:
        """The toolResult messages (the ``message`` objects), in order."""
        return [e["message"] for e in self.messages("toolResult")]


@dataclass
class PiRun:
    argv: list[str]
    cwd: Path
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    started_at: float  # time.monotonic() when pi was started
    requests: list[ModelRequest]
    journals: list[JournalFile] = field(default_factory=list)  # written or changed by this run

    @property
    def journal(self) -> JournalFile:
        """The one journal this run wrote (fails when there is not exactly one)."""
        assert len(self.journals) == 1, f"expected one journal, got {[str(j.path) for j in self.journals]}"
        return self.journals[0]

    def first_request_after(self) -> float | None:
        """Seconds from starting pi to the first model request (startup, MCP waits included)."""
        return self.requests[0].received_at - self.started_at if self.requests else None

    def describe(self) -> str:
        """For assertion messages."""
        return (f"pi exit {self.returncode} after {self.seconds:.1f} s\nargv: {self.argv}\n"
                f"stdout:\n{self.stdout[-3000:]}\nstderr:\n{self.stderr[-3000:]}\n"
                f"model requests: {len(self.requests)}")


def _last_written(path: Path) -> float | None:
    """When pi last wrote a journal: the timestamp of its last line that has one (epoch seconds)."""
    for line in reversed(path.read_text().splitlines()):
        try:
            stamp = json.loads(line).get("timestamp")
        except ValueError:
            continue
        if isinstance(stamp, str):
            return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    return None


def age_like_history(path: Path) -> None:
    """Give a copied journal the mtime pi left it with, so it looks like a past session (and not
    like one written since pi started, which a journal finder would take for the current one)."""
    written = _last_written(path)
    if written is not None:
        os.utime(path, (written, written))


def adopt_pi_history(sessions_dir: Path, fixture_folder: str, cwd: Path) -> list[Path]:
    """Copy one fixture project's pi journals in as history of ``cwd`` (their header cwd rewritten).

    The fixtures ran in /home/dev/...; a test's project lives under a temporary folder, so
    the copies are filed where pi files ``cwd``'s sessions, with ``cwd`` in their header.
    """
    target = sessions_dir / encoded_cwd_dir(cwd)
    target.mkdir(parents=True, exist_ok=True)
    copied = []
    for source in sorted((FIXTURE_SESSIONS / fixture_folder).glob("*.jsonl")):
        first, _, rest = source.read_bytes().partition(b"\n")
        header = json.loads(first)
        header["cwd"] = str(cwd)
        path = target / source.name
        path.write_bytes(json.dumps(header, separators=(",", ":")).encode() + b"\n" + rest)
        age_like_history(path)
        copied.append(path)
    return copied


class PiHome:
    """A temporary HOME holding pi's agent folder, with the fixture journals as its history."""

    def __init__(self, root: Path, host: NodeHost, *, history: bool = True) -> None:
        self.root = root
        self.host = host
        self.home = root / "home"
        self.agent_dir = self.home / ".pi" / "agent"
        self.sessions_dir = self.agent_dir / "sessions"
        self.agent_dir.mkdir(parents=True, exist_ok=True)
        if history:
            shutil.copytree(FIXTURE_SESSIONS, self.sessions_dir)
            for path in self.sessions_dir.rglob("*.jsonl"):
                age_like_history(path)
        else:
            self.sessions_dir.mkdir(parents=True, exist_ok=True)

    def adopt_history(self, fixture_folder: str, cwd: Path) -> list[Path]:
        """Copy one fixture project's journals in as history of ``cwd`` (see :func:`adopt_pi_history`)."""
        return adopt_pi_history(self.sessions_dir, fixture_folder, cwd)

    # -- configuration files ------------------------------------------------------------
    def write_models(self, model: ScriptedModel) -> Path:
        """models.json: the scripted server as a custom openai-completions provider."""
        config = {"providers": {PROVIDER: {
            "baseUrl": model.base_url, "api": "openai-completions", "apiKey": "scripted-key",
            "models": [{"id": model.model_id, "name": "Scripted model", "contextWindow": 128000,
                        "maxTokens": 4096}]}}}
        path = self.agent_dir / "models.json"
        path.write_text(json.dumps(config, indent=2))
        return path

    def write_settings(self, settings: Mapping[str, Any]) -> Path:
        path = self.agent_dir / "settings.json"
        path.write_text(json.dumps(dict(settings), indent=2))
        return path

    def write_mcp(self, servers: Mapping[str, Mapping[str, Any]]) -> Path:
        """~/.pi/agent/mcp.json with these ``mcpServers`` entries."""
        path = self.agent_dir / "mcp.json"
        path.write_text(json.dumps({"mcpServers": {k: dict(v) for k, v in servers.items()}}, indent=2))
        return path

    def mcp_config(self) -> dict[str, Any]:
        path = self.agent_dir / "mcp.json"
        return dict(json.loads(path.read_text())) if path.exists() else {}

    # -- running pi ---------------------------------------------------------------------
    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        return clean_env(self.home, {
            "PATH": self.host.path_with_node(),
            "PI_OFFLINE": "1",  # no catalog refresh, no version check: the only network is the model server
            "PI_TELEMETRY": "0",
            **(extra or {}),
        })

    def pi(self, args: Sequence[str], cwd: Path, *, env: Mapping[str, str] | None = None,
           timeout: float = RUN_TIMEOUT) -> subprocess.CompletedProcess[str]:
        """Run ``pi ARGS`` (no model involved: ``pi mcp add``, ``pi --version``...)."""
        return subprocess.run([*self.host.pi_command(), *args], cwd=cwd, env=self.env(env), capture_output=True,
                              text=True, timeout=timeout, stdin=subprocess.DEVNULL)

    def run(self, prompt: str | Sequence[str], model: ScriptedModel, cwd: Path, *, args: Sequence[str] = (),
            env: Mapping[str, str] | None = None, timeout: float = RUN_TIMEOUT,
            watch: Sequence[Path] = ()) -> PiRun:
        """``pi --print PROMPT...`` in ``cwd`` against ``model`` (several prompts run one after another).

        ``watch`` adds session folders (besides ~/.pi/agent/sessions) whose journals are diffed.
        """
        self.write_models(model)
        prompts = [prompt] if isinstance(prompt, str) else list(prompt)
        argv = [*self.host.pi_command(), "--model", f"{PROVIDER}/{model.model_id}", *args, "--print", "--",
                *prompts]
        folders = [self.sessions_dir, *watch]
        before = snapshot(folders)
        first_request = len(model.requests)
        try:
            done = run_host(argv, cwd, self.env(env), timeout, "pi")
        except HostRunError as exc:
            raise PiRunError(str(exc)) from None
        return PiRun(argv=argv, cwd=cwd, returncode=done.returncode, stdout=done.stdout, stderr=done.stderr,
                     seconds=done.seconds, started_at=done.started_at, requests=model.requests[first_request:],
                     journals=[JournalFile(p) for p in changed(before, folders)])
