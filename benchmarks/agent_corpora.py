"""Corpora of real-format journals for the benchmark, built from the shared data folder.

* ``ours``: pi journals replicated by ``tools/scale_corpus.py --unique`` from the shared pi
  journals (real sessions, tool-output heavy, real source files read by tools). Built once into a
  cache folder and reused while the size matches.
* per format: pi (the same replication), Claude Code and Codex CLI (the real transcripts of
  ``agent-journals-real`` copied as often as needed, each copy a session of its own: a new
  session id, file name and thread id, text unchanged) laid out where each agent keeps its
  journals (``~/.pi/agent/sessions``, ``~/.claude/projects/<dashed cwd>``,
  ``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``), as ``tests/agent_homes.py`` does.

The shared folder is ``$JOURNAL_INDEX_SHARED``, else ``<repo>/../shared``, else ``/work/shared``;
nothing is ever written there.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson

from journal_index.formats import Root

REPO = Path(__file__).resolve().parent.parent
MB = 1_000_000
_MARKER = "agent-journals-real"
PI_SOURCES = ("pi-journals/sessions", "pi-journals-real")


def shared_dir() -> Path:
    given = os.environ.get("JOURNAL_INDEX_SHARED")
    candidates = [Path(given).expanduser()] if given else [REPO.parent / "shared", Path("/work/shared")]
    for path in candidates:
        if (path / _MARKER).is_dir():
            return path
    raise SystemExit("bench: error: the shared data folder (real journals) was not found in "
                     + " or ".join(map(str, candidates)) + "; set JOURNAL_INDEX_SHARED")


def scale_pi(out: Path, megabytes: float) -> dict[str, int]:
    """``scale_corpus.py --unique OUT MEGABYTES <shared pi journals>`` (out must not exist yet)."""
    shared = shared_dir()
    cmd = [sys.executable, str(shared / "tools" / "scale_corpus.py"), "--unique", str(out), f"{megabytes:g}",
           *(str(shared / s) for s in PI_SOURCES)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"bench: error: {' '.join(cmd)} exited {done.returncode}: {done.stderr[-2000:]}")
    stats: dict[str, int] = orjson.loads(done.stdout.strip().splitlines()[-1])
    return stats


def ours_corpus(size_bytes: int, cache: Path) -> tuple[Path, dict[str, object]]:
    """The "ours" corpus of about ``size_bytes``, built into ``cache/ours-<MB>MB`` once."""
    megabytes = size_bytes / MB
    folder = cache / f"ours-{megabytes:g}MB"
    stats_file = folder / "corpus.json"
    sessions = folder / "sessions"
    if stats_file.exists() and sessions.is_dir():
        stats = orjson.loads(stats_file.read_bytes())
        return sessions, {**stats, "generated": False}
    if sessions.exists():
        raise SystemExit(f"bench: error: {sessions} is incomplete; remove it")
    folder.mkdir(parents=True, exist_ok=True)
    stats = {"kind": "ours", "size_requested": size_bytes, **scale_pi(sessions, megabytes),
             "sources": [str(shared_dir() / s) for s in PI_SOURCES]}
    stats_file.write_bytes(orjson.dumps(stats, option=orjson.OPT_INDENT_2))
    return sessions, {**stats, "generated": True}


def _new_uuid(salt: str) -> str:
    h = hashlib.blake2b(salt.encode(), digest_size=16).hexdigest()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}"


def _first_cwd(data: bytes) -> str:
    for raw in data.splitlines():
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("cwd"), str):
            return str(obj["cwd"])
    return "/home/bench"


def _copies(agent: str, size_bytes: int) -> Iterator[tuple[int, bytes]]:
    """(copy number, bytes) of the shared real journals of ``agent``, in turn, until ``size_bytes``."""
    sources = sorted((shared_dir() / _MARKER / agent).glob("*.jsonl"))
    written, n = 0, 0
    while written < size_bytes:
        data = sources[n % len(sources)].read_bytes()
        yield n, data
        written += len(data)
        n += 1


def place_claude(home: Path, size_bytes: int) -> Root:
    """Real Claude Code transcripts, copied under ``home/.claude/projects`` until ``size_bytes``."""
    root = home / ".claude" / "projects"
    for n, data in _copies("claude-code", size_bytes):
        old = orjson.loads(next(line for line in data.splitlines() if b'"sessionId"' in line))["sessionId"]
        new = _new_uuid(f"claude:{n}:{old}")
        data = data.replace(old.encode(), new.encode())
        folder = root / re.sub(r"[^A-Za-z0-9]", "-", _first_cwd(data))
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{new}.jsonl").write_bytes(data)
    return Root(root, "claude")


def place_codex(home: Path, size_bytes: int) -> Root:
    """Real Codex CLI rollouts, copied under ``home/.codex/sessions/YYYY/MM/DD`` until ``size_bytes``."""
    root = home / ".codex" / "sessions"
    for n, data in _copies("codex", size_bytes):
        meta = orjson.loads(data.split(b"\n", 1)[0])["payload"]
        new = _new_uuid(f"codex:{n}:{meta['id']}")
        data = data.replace(meta["id"].encode(), new.encode())
        stamp = meta["timestamp"][:19].replace(":", "-")
        folder = root / stamp[:4] / stamp[5:7] / stamp[8:10]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"rollout-{stamp}-{new}.jsonl").write_bytes(data)
    return Root(root, "codex")


def place_pi(home: Path, size_bytes: int) -> Root:
    root = home / ".pi" / "agent" / "sessions"
    root.parent.mkdir(parents=True, exist_ok=True)
    scale_pi(root, size_bytes / MB)
    return Root(root, "pi")


def agent_home(home: Path, size_bytes: int) -> dict[str, Root]:
    """A home holding about ``size_bytes`` of journals of each agent, where each keeps them."""
    return {"pi": place_pi(home, size_bytes), "claude": place_claude(home, size_bytes),
            "codex": place_codex(home, size_bytes)}
