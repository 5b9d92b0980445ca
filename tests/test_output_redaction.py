"""Every byte the program prints is redacted (issue 19): a token planted in the folder and file
names of real journals never reaches stdout or stderr — not through `index` warnings, `watch -v`
logs, `status`, search results, error messages, usage errors, warnings, logging or tracebacks."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from journal_index.text.output import scrub
from tests.agent_homes import first_cwd, home_env
from tests.shared_data import agent_journals

TOKEN = "ghp_" + "Zq8Lw3Rt6Yp1Mx4Nv7Kb2Hd5Gf9Js0Ac3Ee6"  # the shape of a GitHub token
DEADLINE = 60


@pytest.fixture
def planted(tmp_path: Path) -> dict[str, str]:
    """A home whose Claude project folder, transcript and Codex rollout are named with TOKEN,
    plus a FIFO named with it (an error every pass reports). The environment to run in."""
    home = tmp_path / "home"
    folder = home / ".claude" / "projects" / f"-home-dev-{TOKEN}-app"
    folder.mkdir(parents=True)
    shutil.copy(agent_journals("claude-code")[0], folder / f"{TOKEN}.jsonl")
    os.mkfifo(folder / f"fifo-{TOKEN}.jsonl")
    rollout = agent_journals("codex")[0]
    day = home / ".codex" / "sessions" / "2026" / "01" / "02"
    day.mkdir(parents=True)
    shutil.copy(rollout, day / f"rollout-2026-01-02T10-00-00-{TOKEN}.jsonl")
    return home_env(home, tmp_path / "index.db")


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "journal_index", *args], env=env, capture_output=True,
                          timeout=DEADLINE, stdin=subprocess.DEVNULL, cwd=env["HOME"])


def _printed(done: subprocess.CompletedProcess[bytes]) -> bytes:
    return done.stdout + b"\n" + done.stderr


def test_index_status_and_results_print_no_token(planted: dict[str, str]) -> None:
    env = planted
    index = _run(env, "index")
    assert index.returncode == 0, index.stderr
    assert b"warning:" in index.stderr and b"[REDACTED:github_token]" in index.stderr  # the FIFO, named
    printed = [index, _run(env, "index", "--json")]
    word = first_cwd(agent_journals("claude-code")[0]).rsplit("/", 1)[-1]
    for args in (["status"], ["status", "--json"], ["search", "--scope", "global"],
                 ["search", "--scope", "global", "--json"], ["search", word, "--scope", "global", "--json"],
                 ["summaries", "--scope", "global"], ["export", "files"], ["gc"], ["gc", "--json"]):
        done = _run(env, *args)
        assert done.returncode == 0, (args, done.stderr)
        printed.append(done)
    results = json.loads(printed[5].stdout)["results"]
    assert results
    read = _run(env, "read", results[0]["entryId"], "--scope", "global")
    assert read.returncode == 0, read.stderr
    everything = b"\n".join(_printed(p) for p in [*printed, read])
    assert TOKEN.encode() not in everything
    assert TOKEN[4:20].encode() not in everything  # no piece of it either


def test_error_paths_print_no_token(planted: dict[str, str], tmp_path: Path) -> None:
    env = planted
    folder = Path(env["HOME"]) / ".claude" / "projects" / f"-home-dev-{TOKEN}-app"
    failing = [
        ["--sessions", str(tmp_path / TOKEN / "missing"), "index"],  # a folder that does not exist
        ["search", "--since", TOKEN, "anything"],  # click's usage error quotes the value
        ["--db", str(folder / f"{TOKEN}.jsonl"), "status"],  # a file that is no index
        ["index", str(tmp_path / f"{TOKEN}.jsonl")],  # a path that is no file
        ["read", TOKEN],
        ["tool", TOKEN],
    ]
    for args in failing:
        done = _run(env, *args)
        assert done.returncode != 0, (args, done.stdout)
        assert _printed(done).strip(), args  # it says what went wrong...
        assert TOKEN.encode() not in _printed(done), (args, done.stderr)  # ...without the token


def test_watch_verbose_logs_no_token(planted: dict[str, str], tmp_path: Path) -> None:
    """`watch -v` (a real process, stopped by SIGINT) logs every journal by path and the FIFO's
    error: all redacted."""
    log = tmp_path / "watch.log"
    with log.open("wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "journal_index", "watch", "-v", "--rescan", "1"],
                                env=planted, stdout=err, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                cwd=planted["HOME"])
    try:
        deadline = time.monotonic() + DEADLINE
        # The backfill: each journal indexed by path, the FIFO's error, the summary.
        while not all(word in log.read_bytes() for word in (b"not a regular file", b"indexed ", b"backfill:")):
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=DEADLINE)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = log.read_bytes()
    assert code in (0, 130), text
    assert b"[REDACTED:github_token]" in text
    assert TOKEN.encode() not in text


_LOUD = f"""
import logging, sys, warnings
early = logging.getLogger("early")
early.addHandler(logging.StreamHandler())  # made before the sink: it holds the old stderr
from journal_index.text import output
output.install()
token = {TOKEN!r}
print("print", token)
print("to stderr", token, file=sys.stderr)
sys.stdout.write("a line in two writes: " + token[:10])
sys.stdout.write(token[10:] + "\\n")
sys.stdout.buffer.write(("bytes " + token + "\\n").encode())
warnings.warn("a warning naming " + token)
logging.basicConfig()
logging.getLogger("lib").error("a library logs %s", token)
early.error("an early handler logs %s", token)
raise RuntimeError("a traceback quoting " + token)
"""


def test_prints_warnings_logs_and_tracebacks_are_redacted() -> None:
    """Whoever writes, once the sink is installed: print, sys.stdout/stderr, bytes, warnings,
    a library's logging handler, an uncaught exception's traceback."""
    done = subprocess.run([sys.executable, "-c", _LOUD], capture_output=True, timeout=DEADLINE)
    assert done.returncode == 1
    out, err = done.stdout.decode(), done.stderr.decode()
    assert out.count("[REDACTED:github_token]") == 3, out
    for what in ("to stderr", "a warning naming", "a library logs", "an early handler logs", "a traceback quoting"):
        assert f"{what} [REDACTED:github_token]" in err, err
    assert "Traceback" in err
    assert TOKEN not in out + err and TOKEN[:10] + "\n" not in out


def test_a_secret_found_on_the_way_out_keeps_json_valid() -> None:
    value = {"text": "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA0Z3VS5JJcds3xfn\n"
                     "-----END RSA PRIVATE KEY-----\nthen \"password\": \"hunter2X\" and " + TOKEN}
    for dumped in (json.dumps(value), json.dumps(value, indent=2), json.dumps(json.dumps(value))):
        out = scrub(dumped)
        assert "MIIEpAIBAAKCAQEA0Z3VS5JJcds3xfn" not in out and TOKEN not in out and "hunter2X" not in out
        json.loads(out)
