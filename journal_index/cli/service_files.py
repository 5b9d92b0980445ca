"""Service files that run `journal-index watch` in the background: a systemd user unit, a
launchd agent. We print them; installing is one copy and one command (see the README)."""

from __future__ import annotations

import os
import plistlib
import shutil
import sys
from pathlib import Path

from journal_index.formats import all_formats

KINDS = ("systemd", "launchd")
LAUNCHD_LABEL = "dev.journal-index.watch"
SYSTEMD_PATH = "~/.config/systemd/user/journal-index.service"
LAUNCHD_PATH = f"~/Library/LaunchAgents/{LAUNCHD_LABEL}.plist"
# Settings a service manager does not inherit from the login shell; carried over when set
# (with each agent's own variables that move its journals).
OWN_ENV = ("JOURNAL_INDEX_DB", "JOURNAL_INDEX_SESSIONS", "JOURNAL_INDEX_MAX_SCOPE")


def carried_env_names() -> tuple[str, ...]:
    return OWN_ENV + tuple(name for fmt in all_formats() for name in fmt.env_vars())


class ServiceFileError(ValueError):
    pass


def executable() -> list[str]:
    """The absolute command that starts journal-index: the installed script if this is it (or
    one is on PATH), else this interpreter with ``-m journal_index``."""
    argv0 = Path(sys.argv[0])
    if argv0.name == "journal-index" and argv0.exists():
        return [str(argv0.resolve())]
    found = shutil.which("journal-index")
    if found:
        return [str(Path(found).resolve())]
    return [str(Path(sys.executable).absolute()), "-m", "journal_index"]


def watch_command(db: str | None = None, sessions: tuple[str, ...] = ()) -> list[str]:
    command = executable()
    if db:
        command += ["--db", os.path.abspath(os.path.expanduser(db))]
    for root in sessions:
        command += ["--sessions", os.path.abspath(os.path.expanduser(root))]
    return command + ["watch"]


def _systemd_quote(arg: str) -> str:
    if arg and not any(c in arg for c in ' \t"\'\\$%;'):
        return arg
    escaped = arg.replace("\\", "\\\\").replace('"', '\\"').replace("$", "$$").replace("%", "%%")
    return f'"{escaped}"'


def systemd_unit(command: list[str], env: dict[str, str] | None = None) -> str:
    env = _carried(env)
    lines = [
        f"# {SYSTEMD_PATH}",
        "# Install: systemctl --user daemon-reload && systemctl --user enable --now journal-index",
        "[Unit]",
        "Description=journal-index: keep the index of agent session journals up to date",
        "",
        "[Service]",
        "Type=simple",
        f"ExecStart={' '.join(_systemd_quote(a) for a in command)}",
        *(f"Environment={_systemd_quote(f'{k}={v}')}" for k, v in env.items()),
        "Restart=on-failure",
        "RestartSec=10",
        "Nice=10",
        "IOSchedulingClass=idle",
        "",
        "[Install]",
        "WantedBy=default.target",
    ]
    return "\n".join(lines) + "\n"


def launchd_plist(command: list[str], env: dict[str, str] | None = None) -> str:
    env = _carried(env)
    logs = str(Path.home() / "Library" / "Logs" / "journal-index.log")
    agent: dict[str, object] = {
        "Label": LAUNCHD_LABEL,
        "ProgramArguments": command,
        "RunAtLoad": True,
        "KeepAlive": True,
        "ProcessType": "Background",
        "LowPriorityIO": True,
        "Nice": 10,
        "StandardErrorPath": logs,
        "StandardOutPath": logs,
    }
    if env:
        agent["EnvironmentVariables"] = env
    body = plistlib.dumps(agent, sort_keys=False).decode()
    comment = f"<!-- {LAUNCHD_PATH}\n     Install: launchctl load -w {LAUNCHD_PATH} -->\n"
    head, _, rest = body.partition("\n")  # the comment goes after the <?xml?> declaration
    return f"{head}\n{comment}{rest}"


def _carried(env: dict[str, str] | None) -> dict[str, str]:
    source = os.environ if env is None else env
    return {k: source[k] for k in carried_env_names() if source.get(k)}


def service_file(kind: str | None, db: str | None = None, sessions: tuple[str, ...] = ()) -> str:
    if kind is None:
        raise ServiceFileError(f"say which service file to print: --print {' or --print '.join(KINDS)}")
    if kind not in KINDS:
        raise ServiceFileError(f"--print takes {' or '.join(KINDS)}, not {kind!r}")
    command = watch_command(db, sessions)
    return systemd_unit(command) if kind == "systemd" else launchd_plist(command)
