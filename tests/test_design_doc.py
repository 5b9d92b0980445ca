"""The design document is the repository's own (journal_index/DESIGN.md), and every reference
to it in the code ("DESIGN §5b", "DESIGN §3.4", "DESIGN invariant 12") names something it has."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "journal_index" / "DESIGN.md"
SECTION = re.compile(r"§(\d+[a-z]?)(?:\.(\d+))?")
INVARIANT = re.compile(r"DESIGN invariants? (\d+)")


def _references() -> list[tuple[str, str]]:
    """(where, what) of each reference in the package, the tests and the benchmarks."""
    found = []
    for folder in ("journal_index", "tests", "benchmarks"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.name == Path(__file__).name:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                at = line.find("DESIGN")
                if at < 0:
                    continue
                where = f"{path.relative_to(ROOT)}:{number}"
                found += [(where, f"invariant {m.group(1)}") for m in INVARIANT.finditer(line)]
                tail = line[at:]
                for m in SECTION.finditer(tail):
                    found.append((where, f"§{m.group(1)}" + (f".{m.group(2)}" if m.group(2) else "")))
    return found


def _has(doc: str, reference: str) -> bool:
    sections = set(re.findall(r"^##+ (\d+[a-z]?)\.", doc, re.M))
    invariants = set(re.findall(r"^(\d+)\. \*\*", doc[doc.index("## 3. Invariants"):doc.index("## 4.")], re.M))
    if reference.startswith("invariant "):
        return reference.split()[1] in invariants
    main, _, sub = reference[1:].partition(".")
    if main not in sections:
        return False
    return not sub or (main == "3" and sub in invariants)


def test_the_code_refers_to_the_design_document() -> None:
    assert DOC.is_file()
    assert len(_references()) >= 10  # the check reads real references


def test_every_reference_names_a_section_or_invariant_of_the_document() -> None:
    doc = DOC.read_text(encoding="utf-8")
    missing = [(where, what) for where, what in _references() if not _has(doc, what)]
    assert missing == []


def test_a_missing_section_is_caught() -> None:
    assert not _has("## 1. Flow\n## 3. Invariants\n1. **x**\n## 4. S\n", "§9")
    assert not _has("## 1. Flow\n## 3. Invariants\n1. **x**\n## 4. S\n", "invariant 2")
    assert _has("## 1. Flow\n## 3. Invariants\n1. **x**\n## 4. S\n", "§3.1")
