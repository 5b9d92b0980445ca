"""Which journal is the agent that called us writing right now?

The agent tool indexes that journal before each call (so a minute-old decision is searchable)
and leaves out what of it is still in the agent's context. Hosts do not say which journal is
theirs, so it is found: ``--session-file`` when the operator gave one; else the formats are
asked for the newest journals of the working folder, the format of the agent that started
this process (its command line, read from /proc) alone when it is known. Only a journal
written since the host started can be the current one.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from journal_index.formats import AgentHints, JournalFormat, Root, all_formats

FRESH_SECONDS = 600  # host unknown: a journal written this recently may be the current one
PARENT_LEVELS = 4  # the host may start us through a shell or npx


@dataclass(frozen=True)
class Host:
    format: JournalFormat | None
    argv: tuple[str, ...] = ()
    started: float | None = None  # epoch seconds the host process started


def _boot_time() -> float | None:
    try:
        with open("/proc/stat", "rb") as handle:
            for line in handle:
                if line.startswith(b"btime "):
                    return float(line.split()[1])
    except OSError:
        pass
    return None


def _proc_stat(pid: int) -> list[bytes]:
    """The fields of /proc/PID/stat after ``pid (comm)`` (state, ppid, …), or [] when unreadable.
    comm may hold spaces and parentheses, so the line is cut at the last ')'."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return []
    return stat[stat.rfind(b")") + 2:].split()


def _proc_started(pid: int) -> float | None:
    """When a process started (epoch seconds), from /proc."""
    fields = _proc_stat(pid)
    boot = _boot_time()
    if boot is None or len(fields) < 20:
        return None
    return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")


def _proc_argv(pid: int) -> tuple[str, ...]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            raw = handle.read()
    except OSError:
        return ()
    return tuple(os.fsdecode(a) for a in raw.split(b"\0") if a)


def _proc_parent(pid: int) -> int | None:
    fields = _proc_stat(pid)
    return int(fields[1]) if len(fields) > 1 else None


def detect_host(pid: int | None = None) -> Host:
    """The agent among our ancestors (by its command line), if any is a known one."""
    current: int | None = os.getppid() if pid is None else pid
    for _ in range(PARENT_LEVELS):
        if current is None or current <= 1:
            break
        argv = _proc_argv(current)
        for fmt in all_formats():
            if argv and fmt.is_host(argv):
                return Host(fmt, argv, _proc_started(current))
        current = _proc_parent(current)
    return Host(None)


def _format_roots(fmt: JournalFormat, roots: Sequence[Root]) -> list[Path]:
    """The roots a format's journals may be under: its own, and those of any format."""
    return [r.path for r in roots if r.format in (None, fmt.NAME)]


def current_journal(roots: Sequence[Root], cwd: str, host: Host, env: Mapping[str, str] | None = None,
                    call_meta: Mapping[str, Any] | None = None, now: float | None = None) -> str | None:
    """The journal the agent at ``cwd`` is most likely writing, or None.

    Only a journal written since the host started (or, host unknown, in the last minutes) can
    be the current one: the newest journal of a folder is often the previous session, whose
    entries must stay findable. A known host is asked alone (another agent's journal of the
    same folder is not ours); an unknown one gets the newest of any format.
    """
    hints = AgentHints(os.environ if env is None else env, host.argv, call_meta or {})
    now = time.time() if now is None else now
    since = host.started if host.started is not None else now - FRESH_SECONDS
    formats = [host.format] if host.format is not None else all_formats()
    newest: tuple[float, str] | None = None
    for fmt in formats:
        for path in fmt.current_journals(_format_roots(fmt, roots), cwd, hints)[:3]:
            try:
                stamped = (os.stat(path).st_mtime, path)
            except OSError:
                continue
            if stamped[0] < since:
                continue
            newest = stamped if newest is None else max(newest, stamped)
    return None if newest is None else newest[1]
