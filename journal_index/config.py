"""Where things are: session roots, the index file, the agent's widest scope, "now"."""

from __future__ import annotations

import os
import time
from datetime import datetime
from pathlib import Path

from journal_index.formats import Root, default_roots

SCOPES = ("session", "project", "global")
# Above global, for the agent tool only: what the team hub shares (hub.team), allowed only when
# the operator's max scope is "team" (never by default).
TEAM_SCOPE = "team"
AGENT_SCOPES = (*SCOPES, TEAM_SCOPE)
# A search ranks at most this many candidates (so no page of results starts beyond it).
CANDIDATES = 400
# A query still running after this many seconds is interrupted and answered as an error.
QUERY_SECONDS = 5.0
DEFAULT_MAX_SCOPE = "project"


class ConfigError(ValueError):
    """A setting from the environment or the command line is unusable."""


def session_roots(sessions: tuple[str, ...] = ()) -> list[Root]:
    """Where journals are: ``--sessions`` folders, else ``$JOURNAL_INDEX_SESSIONS``
    (os.pathsep-separated), each holding journals of any format; else every registered
    agent's default folders (existing or not: see :func:`existing`)."""
    if sessions:
        return [Root(Path(s).expanduser()) for s in sessions]
    env = os.environ.get("JOURNAL_INDEX_SESSIONS")
    if env:
        return [Root(Path(p).expanduser()) for p in env.split(os.pathsep) if p]
    return default_roots()


def existing(roots: list[Root]) -> list[Root]:
    return [r for r in roots if r.path.is_dir()]


def cache_db_path() -> Path:
    """The index's place in the user's cache folder (the index is disposable)."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "journal-index" / "index.db"


def default_db_path() -> Path:
    """``$JOURNAL_INDEX_DB``, else :func:`cache_db_path`."""
    env = os.environ.get("JOURNAL_INDEX_DB")
    if env:
        return Path(env).expanduser()
    return cache_db_path()


def db_path(given: str | None) -> str:
    """The index file: ``--db`` when given, else :func:`default_db_path`."""
    return str(Path(given).expanduser()) if given else str(default_db_path())


def max_scope_from_env() -> str:
    value = os.environ.get("JOURNAL_INDEX_MAX_SCOPE", DEFAULT_MAX_SCOPE)
    if value not in AGENT_SCOPES:
        raise ConfigError(
            f"JOURNAL_INDEX_MAX_SCOPE={value!r} is not a scope; use one of {', '.join(AGENT_SCOPES)}"
        )
    return value


def now_ms() -> int:
    """Current time in epoch ms; ``JOURNAL_INDEX_NOW`` (ISO-8601) fixes it for tests."""
    fixed = os.environ.get("JOURNAL_INDEX_NOW")
    if fixed:
        try:
            moment = datetime.fromisoformat(fixed)
        except ValueError:
            raise ConfigError(
                f"JOURNAL_INDEX_NOW={fixed!r} is not an ISO-8601 time, e.g. 2026-10-01T12:00:00Z"
            ) from None
        if moment.tzinfo is None:
            moment = moment.astimezone()
        return int(moment.timestamp() * 1000)
    return int(time.time() * 1000)
