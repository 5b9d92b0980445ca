"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Placeholder registration while the parser is written: it owns no file yet.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from journal_index.formats import Header, Parsed, Skip, is_own_tool_name

NAME = "codex"
LABEL = "Codex CLI"
COLLECTABLE = False


def default_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    return []


def env_vars() -> tuple[str, ...]:
    return ("CODEX_HOME",)


def owns(path: str) -> bool:
    return False


def sniff(head: bytes) -> bool:
    return False


def read_header(path: str, head: bytes) -> Header | None:
    return None


def parse_line(line: bytes, offset: int) -> Parsed:
    return Skip.UNKNOWN


def is_own_tool(name: str) -> bool:
    return is_own_tool_name(name)


def is_host(argv: Sequence[str]) -> bool:
    return False


def current_journals(roots: Sequence[Path], cwd: str, env: Mapping[str, str],
                     host_argv: Sequence[str] = ()) -> list[str]:
    return []
