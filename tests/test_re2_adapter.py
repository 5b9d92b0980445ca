"""The RE2 adapter against the installed google-re2: what the redaction engine relies on.

The adapter drives google-re2 through private names (``re2._re2.RE2``, ``re2._re2.Set``,
``re2._Anchor``, Latin-1 ``Options``); a release that renames or reshapes any of them fails here
before it fails a redaction silently.
"""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest

from journal_index.redaction.re2_adapter import AnchoredSet, Finder

ROOT = Path(__file__).resolve().parent.parent


def test_search_gives_byte_offsets_within_the_range() -> None:
    finder = Finder("abc")
    assert finder.search(b"xxabcxx", 0, 7) == (2, 5)
    assert finder.search(b"abcabc", 1, 6) == (3, 6)  # from pos on
    assert finder.search(b"abcabc", 0, 2) == (-1, -1)  # a match must end by `end`
    assert finder.search(b"nothing here", 0, 12) == (-1, -1)
    # Latin-1 mode on UTF-8 bytes: offsets count bytes, and `.` is one byte.
    assert Finder("b").search("äb".encode(), 0, 3) == (2, 3)
    assert Finder(".").search("é".encode(), 0, 2) == (0, 1)


def test_search_is_leftmost_first_as_the_table_reads() -> None:
    """The first alternative wins, not the longest: a candidate ends where the winner's match does."""
    assert Finder("a|ab").search(b"ab", 0, 2) == (0, 1)
    assert Finder("ab|a").search(b"ab", 0, 2) == (0, 2)


def test_text_before_pos_is_context_for_anchors() -> None:
    """Scanning resumes mid-text: `\\b` and `(?m:^)` must see the byte before ``pos``."""
    assert Finder(r"\bab").search(b"xab", 1, 3) == (-1, -1)
    assert Finder(r"\bab").search(b" ab", 1, 3) == (1, 3)
    assert Finder(r"(?m:^)ab").search(b"xab", 1, 3) == (-1, -1)
    assert Finder(r"(?m:^)ab").search(b"\nab", 1, 3) == (1, 3)


def test_a_pattern_re2_cannot_compile_is_an_error() -> None:
    with pytest.raises(ValueError, match="do not compile in RE2"):
        Finder("(unclosed")
    with pytest.raises(ValueError):
        Finder(r"(?<=look)behind")  # RE2 has no look-around


def test_anchored_set_names_the_patterns_matching_at_the_start() -> None:
    patterns = AnchoredSet(["ab", "a", "b", "x*", "c"])
    assert sorted(patterns.matching(b"abc")) == [0, 1, 3]  # "b" and "c" match only later
    assert sorted(patterns.matching(b"cab")) == [3, 4]
    assert patterns.matching(b"") == [3]


def test_the_adapter_alone_imports_re2() -> None:
    """Every google-re2 call goes through the adapter (benchmarks may compare engines directly)."""
    importers = [
        path.relative_to(ROOT).as_posix()
        for path in sorted((ROOT / "journal_index").rglob("*.py"))
        if re.search(r"^\s*(?:import re2\b|from re2\b)", path.read_text(), re.M)
    ]
    assert importers == ["journal_index/redaction/re2_adapter.py"]


def test_installed_google_re2_is_within_the_declared_bound() -> None:
    """pyproject.toml bounds google-re2 below its next major version, and what runs satisfies it."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (spec,) = [d for d in deps if d.startswith("google-re2")]
    m = re.fullmatch(r"google-re2>=([0-9.]+),<([0-9]+)", spec)
    assert m is not None, f"google-re2 needs a lower and an upper (major) bound, got {spec!r}"
    installed = tuple(int(x) for x in version("google-re2").split(".")[:2])
    low = tuple(int(x) for x in m.group(1).split(".")[:2])
    assert low <= installed and installed[0] < int(m.group(2))
