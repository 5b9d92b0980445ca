"""Where the shared, read-only data lives (real journals of each agent, reference notes).

One place decides: ``$JOURNAL_INDEX_SHARED``, else ``<repo>/../shared``, else ``/work/shared``.
The tests need these files; when none of the places holds them, they fail saying so rather
than pass by testing nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ENV = "JOURNAL_INDEX_SHARED"
# What a shared folder must hold to be the one meant.
_MARKER = "agent-journals-real"


class SharedDataMissing(RuntimeError):
    pass


def shared_dir() -> Path:
    """The shared data folder. Raises SharedDataMissing (with where it looked) if there is none."""
    given = os.environ.get(ENV)
    if given:
        path = Path(given).expanduser()
        if (path / _MARKER).is_dir():
            return path
        raise SharedDataMissing(f"{ENV}={given!r} does not hold {_MARKER}/: point it at a copy of the shared "
                                "data folder (real agent journals), or unset it")
    candidates = [REPO.parent / "shared", Path("/work/shared")]
    for path in candidates:
        if (path / _MARKER).is_dir():
            return path
    raise SharedDataMissing(
        "the shared data folder (real agent journals, required by these tests) was not found in "
        + " or ".join(str(p) for p in candidates) + f"; set {ENV} to where it is")


def agent_journals(agent_folder: str) -> list[Path]:
    """The real journals of one agent (``claude-code`` or ``codex``), sorted by name."""
    found = sorted((shared_dir() / _MARKER / agent_folder).glob("*.jsonl"))
    if not found:
        raise SharedDataMissing(f"no journals in {shared_dir() / _MARKER / agent_folder}")
    return found
