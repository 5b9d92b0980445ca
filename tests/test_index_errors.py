"""A full disk and a read-only index, for real: each says what is wrong, and neither says rebuild.

The file systems are real: a 512 KiB tmpfs and read-only bind mounts, made in a private mount
namespace (``unshare``) that vanishes with the process — nothing is left mounted, and no root
is needed where unprivileged user namespaces are allowed.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

UNSHARE = ["unshare", "--user", "--map-root-user", "--mount"]


def _namespaces_work() -> str | None:
    """Why mounts cannot be made here, or None when they can."""
    if shutil.which("unshare") is None:
        return "no unshare command (util-linux) on this machine"
    probe = subprocess.run([*UNSHARE, "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
                           capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        return f"cannot mount in a private namespace here ({probe.stderr.strip() or probe.returncode})"
    return None


_WHY_NOT = _namespaces_work()
pytestmark = pytest.mark.skipif(_WHY_NOT is not None, reason=_WHY_NOT or "")


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


def in_namespace(tmp_path: Path, setup: str, commands: list[list[str] | str]) -> list[Ran]:
    """Run ``setup`` and then each step in one private mount namespace: a list is a journal-index
    command, whose output is kept in files outside the namespace; a string is a shell step."""
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    lines = ["set -e", setup, "set +e"]
    runs = 0
    for step in commands:
        if isinstance(step, str):
            lines.append(step)
            continue
        command = shlex.join([sys.executable, "-m", "journal_index", *step])
        lines.append(f"{command} >{out}/{runs}.out 2>{out}/{runs}.err </dev/null; echo $? >{out}/{runs}.rc")
        runs += 1
    done = subprocess.run([*UNSHARE, "sh", "-c", "\n".join(lines)], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return [Ran(int((out / f"{n}.rc").read_text()), (out / f"{n}.out").read_text(), (out / f"{n}.err").read_text())
            for n in range(runs)]


def one_line(ran: Ran) -> str:
    lines = ran.stderr.strip().splitlines()
    assert ran.returncode == 1 and len(lines) == 1, ran
    assert "rebuild" not in ran.stderr
    return lines[0]


def test_a_full_disk_says_the_disk_is_full(tmp_path: Path, sessions_root: Path) -> None:
    small = tmp_path / "small"
    small.mkdir()
    more = tmp_path / "more"
    shutil.copytree(sessions_root, more)  # journals to index once the disk is nearly full
    db = small / "index.db"
    first = ["--db", str(db), "--sessions", str(sessions_root)]
    both = [*first, "--sessions", str(more)]
    tool = json.dumps({"action": "search", "query": "token"})
    # The agent's current journal, indexed before each call: the tool must write too.
    current = tmp_path / "current" / "session.jsonl"
    current.parent.mkdir()
    shutil.copy(max(sessions_root.rglob("*.jsonl"), key=lambda p: p.stat().st_size), current)
    # A 4 MiB disk takes the first index; then a file leaves it 96 KiB, too little for the rest.
    fill = (f"avail=$(df -k --output=avail {small} | tail -1); "
            f"dd if=/dev/zero of={small}/filler bs=1k count=$((avail - 96)) 2>/dev/null")
    made, index, status, agent = in_namespace(
        tmp_path, f"mount -t tmpfs -o size=4m tmpfs {small}",
        [[*first, "index"], fill, [*both, "index"], [*both, "status", "--json"],
         [*both, "tool", "--session-file", str(current), tool]])
    assert made.returncode == 0, made
    line = one_line(index)
    assert line.startswith(f"Error: the disk holding the index is full ({small})"), line
    # What was committed before the disk filled is a sound index: status reads it.
    assert status.returncode == 0 and json.loads(status.stdout)["sessions"] >= 26, status
    answer = json.loads(agent.stdout)
    assert answer["error"]["code"] == "disk_full" and "rebuild" not in agent.stdout, answer


def test_an_index_on_a_read_only_file_system_says_so(tmp_path: Path, sessions_root: Path) -> None:
    folder, view = tmp_path / "index", tmp_path / "view"
    folder.mkdir()
    view.mkdir()
    made = subprocess.run([sys.executable, "-m", "journal_index", "--db", str(folder / "index.db"), "--sessions",
                           str(sessions_root), "index"], capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    base = ["--db", str(view / "index.db"), "--sessions", str(sessions_root)]
    tool = json.dumps({"action": "search", "query": "token"})
    results = in_namespace(tmp_path, f"mount --bind {folder} {view} && mount -o remount,bind,ro {view}",
                           [[*base, "index"], [*base, "status"], [*base, "search", "token"], [*base, "tool", tool]])
    for ran in results[:3]:
        line = one_line(ran)
        assert f"the index {view / 'index.db'} is read-only (its file system is mounted read-only)" in line
    answer = json.loads(results[3].stdout)
    assert answer["error"]["code"] == "read_only" and "rebuild" not in results[3].stdout, answer


def test_a_read_only_index_file_says_so_and_can_still_be_read(tmp_path: Path, sessions_root: Path) -> None:
    db = tmp_path / "index.db"
    base = ["--db", str(db), "--sessions", str(sessions_root)]
    made = subprocess.run([sys.executable, "-m", "journal_index", *base, "index"], capture_output=True, text=True,
                          timeout=120)
    assert made.returncode == 0, made.stderr
    journal = next(sessions_root.rglob("*.jsonl"))
    (sessions_root / "new").mkdir()  # a journal not indexed yet: the next pass must write
    shutil.copy(journal, sessions_root / "new" / journal.name)
    index, status = in_namespace(tmp_path, f"mount --bind {db} {db} && mount -o remount,bind,ro {db}",
                                 [[*base, "index"], [*base, "status", "--json"]])
    line = one_line(index)
    assert f"the index {db} is read-only" in line and "not writable" in line
    assert status.returncode == 0 and json.loads(status.stdout)["sessions"] == 26, status
