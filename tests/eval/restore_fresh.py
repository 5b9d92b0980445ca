"""Put the fresh held-out transcripts back into fixtures/fresh/{claude,codex} from fetched repositories.

Run: python -m tests.eval.restore_fresh MIRROR_DIR

The transcripts are not kept in this repository (fixtures/fresh/README.md says why). Each row of
fixtures/fresh/SOURCES.md names a repository, a path on its ``entire/checkpoints/v1`` branch and a
commit; with the repositories fetched under MIRROR_DIR as ``owner+name/`` git folders (as the
search tool's ``fetch`` lays them out), this writes each file with ``git show COMMIT:PATH`` and
checks its size against the table. Nothing is fetched here; a missing repository or commit is
one line on stderr and exit 1. The files written are git-ignored.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

FRESH = Path(__file__).resolve().parents[2] / "fixtures" / "fresh"
# | `claude/<file>` or `codex/<file>` | [owner/name](…) | `<path>` | `<commit>` | license | <size> KiB | topic |
ROW = re.compile(r"^\| `(?P<file>(?:claude|codex)/[^`]+)` \| \[(?P<repo>[^\]]+)\][^|]*\| `(?P<path>[^`]+)` \| "
                 r"`(?P<commit>[0-9a-f]{40})` \|[^|]*\| (?P<kib>\d+) KiB \|")


def rows() -> list[dict[str, str]]:
    text = (FRESH / "SOURCES.md").read_text("utf-8")
    return [m.groupdict() for m in map(ROW.match, text.splitlines()) if m]


def git_dir(mirror: Path, repo: str) -> Path | None:
    """The git folder of ``owner/name`` under the mirror (a bare folder, or one holding ``repo``)."""
    folder = mirror / repo.replace("/", "+")
    for candidate in (folder / "repo", folder):
        if (candidate / "HEAD").is_file() or (candidate / ".git").exists():
            return candidate
    return None


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not Path(args[0]).is_dir():
        print("restore_fresh: usage: python -m tests.eval.restore_fresh MIRROR_DIR "
              "(a folder of owner+name git folders)", file=sys.stderr)
        return 2
    mirror, failed = Path(args[0]), 0
    for row in rows():
        where = git_dir(mirror, row["repo"])
        show = ["git", "--git-dir", str(where), "show", f"{row['commit']}:{row['path']}"]
        shown = None if where is None else subprocess.run(show, capture_output=True, check=False)
        if shown is None or shown.returncode != 0:
            print(f"restore_fresh: {row['file']}: {row['repo']} at {row['commit'][:12]} is not under {mirror}",
                  file=sys.stderr)
            failed += 1
            continue
        if round(len(shown.stdout) / 1024) != int(row["kib"]):
            print(f"restore_fresh: {row['file']}: {len(shown.stdout)} bytes, SOURCES.md says {row['kib']} KiB",
                  file=sys.stderr)
            failed += 1
            continue
        target = FRESH / row["file"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(shown.stdout)
        print(f"restored {row['file']} ({len(shown.stdout)} bytes)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
