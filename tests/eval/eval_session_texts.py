"""What happens in the authored eval sessions (see make_eval_sessions.py), read from tests/eval/stories/.

Everything there is invented for the eval: the user (Ines), her colleagues, the `ledgerline`
service and its `infra` repo. File contents are written to look like real project files so the
search has the same kind of noise it meets in real journals.

One story file per session, in the order of SESSIONS (its place seeds the session's ids). A file
opens with ``cwd:`` and ``start:`` lines, then lists what the session does, one call of
make_eval_sessions.Journal per ``::: method`` line (``::: tool NAME`` for a tool call), each argument
a ``:: name`` line followed by its value: the text exactly as it stands up to the next ``::`` line,
less the one newline before it, or JSON for ``:: name (json)``. No value has a line starting with ``::``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STORIES = Path(__file__).resolve().parent / "stories"


@dataclass
class Script:
    cwd: str
    start: str
    play: Callable[[Any], None]


Call = tuple[str, dict[str, Any]]


def parse_story(text: str) -> tuple[dict[str, str], list[Call]]:
    """The header fields and the calls of one story file."""
    header: dict[str, str] = {}
    calls: list[Call] = []
    field: tuple[str, bool] | None = None  # the argument being read, and whether it is JSON
    body: list[str] = []

    def close() -> None:
        if field is not None:
            value = "\n".join(body)  # (the newline that ends every value went with the split)
            calls[-1][1][field[0]] = json.loads(value) if field[1] else value

    for line in text.split("\n")[:-1]:  # the file ends in a newline
        if line.startswith("::: "):
            close()
            field = None
            method, _, name = line[4:].partition(" ")
            calls.append((method, {"name": name} if name else {}))
        elif line.startswith(":: "):
            close()
            name = line[3:]
            field = (name.removesuffix(" (json)"), name.endswith(" (json)"))
            body = []
        elif field is not None:
            body.append(line)
        elif not calls and line.strip():
            key, _, value = line.partition(": ")
            header[key] = value
        elif line.strip():
            raise ValueError(f"story text outside an argument: {line[:60]!r}")
    close()
    return header, calls


def _player(calls: list[Call]) -> Callable[[Any], None]:
    def play(journal: Any) -> None:
        for method, args in calls:
            getattr(journal, method)(**args)

    return play


def load(folder: Path = STORIES) -> list[Script]:
    scripts = []
    for path in sorted(folder.glob("*.txt")):
        header, calls = parse_story(path.read_text(encoding="utf-8"))
        scripts.append(Script(header["cwd"], header["start"], _player(calls)))
    return scripts


SESSIONS = load()
