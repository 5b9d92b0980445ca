"""Running a real agent host as a child process: a clean environment, a timeout, the journals it wrote.

Shared by the pi, Claude Code and Codex harnesses. A host runs in its own process group, so
whatever it leaves behind (its MCP servers, a helper) is ended with it, and a run that goes
over its time fails with what the host printed so far instead of hanging the test.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

# Variables of the caller that must not reach a host: they would point it (or journal-index,
# or the host's model client) elsewhere than the test's private HOME and scripted model.
LEAKY_PREFIXES = ("PI_", "JOURNAL_INDEX_", "CLAUDE", "CODEX_", "ANTHROPIC_", "OPENAI_")
LEAKY_NAMES = frozenset({"AI_AGENT", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME",
                         "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"})


class HostRunError(RuntimeError):
    """The host did not finish in time; carries what it printed so far."""


def clean_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The caller's environment without what would point a host elsewhere, with ``HOME`` = ``home``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(LEAKY_PREFIXES) and k not in LEAKY_NAMES}
    env.update({"HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"),
                "XDG_CONFIG_HOME": str(home / ".config"), "NO_COLOR": "1",
                # Anything a host tries to reach besides 127.0.0.1 fails at once instead of waiting.
                "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"})
    if extra:
        env.update(extra)
    return env


@dataclass
class Finished:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    started_at: float  # time.monotonic() when the host was started
    seconds: float


def run_host(argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeout: float, what: str) -> Finished:
    """Run ``argv`` to its end (stdin closed), ending its whole process group afterwards."""
    started = time.monotonic()
    proc = subprocess.Popen(list(argv), cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        raise HostRunError(f"{what} ran over {timeout:g} s\nargv: {list(argv)}\nstdout:\n{stdout[-3000:]}\n"
                           f"stderr:\n{stderr[-3000:]}") from None
    finally:
        try:  # the host stops its MCP servers itself; anything left in the group is ended here
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return Finished(list(argv), proc.returncode, stdout, stderr, started, time.monotonic() - started)


def snapshot(folders: Sequence[Path]) -> dict[Path, tuple[int, int]]:
    """(size, mtime) of every journal under ``folders``."""
    seen = {}
    for folder in folders:
        if folder.is_dir():
            for path in folder.rglob("*.jsonl"):
                st = path.stat()
                seen[path] = (st.st_size, st.st_mtime_ns)
    return seen


def changed(before: Mapping[Path, tuple[int, int]], folders: Sequence[Path]) -> list[Path]:
    """The journals under ``folders`` written or changed since ``before``."""
    return sorted(p for p, stamp in snapshot(folders).items() if before.get(p) != stamp)
