"""The README's generated parts match the code (cog), and the check would notice a drift."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from cogapp import Cog

README = Path(__file__).resolve().parent.parent / "README.md"


def _check(path: Path) -> int:
    """cog's verdict on ``path``: 0 when every generated block is what the code makes now."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return Cog().main(["cog", "--check", "-I", str(README.parent), str(path)])


def test_the_cli_reference_is_what_the_commands_say() -> None:
    assert _check(README) == 0, "run `cog -r README.md` and commit the README"


def test_a_stale_reference_is_caught(tmp_path: Path) -> None:
    text = README.read_text(encoding="utf-8")
    assert "Usage: journal-index search" in text
    stale = tmp_path / "README.md"
    stale.write_text(text.replace("Usage: journal-index search", "Usage: journal-index find", 1), encoding="utf-8")
    assert _check(stale) != 0
