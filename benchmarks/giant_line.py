"""Peak memory of indexing, searching and reading one journal line of many megabytes.

    python -m benchmarks.giant_line --mb 200

Writes a pi journal (a short line, one tool result of ``--mb`` MB, a short line) in a temporary
folder, then runs ``index``, ``search`` and ``read`` through the CLI, each in a subprocess whose
peak RSS (with its workers) is sampled every 10 ms.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from pathlib import Path

import orjson

from tests.reliability_helpers import run_cli

CWD = "/home/dev/Apps/giant"


def write_journal(path: Path, megabytes: int) -> None:
    """A pi journal whose second entry is a tool result of about ``megabytes`` MB of words."""
    rng = random.Random(7)
    words = " ".join(f"w{rng.randrange(10**6)}" for _ in range(20_000)).encode()
    with path.open("wb") as out:
        out.write(orjson.dumps({"type": "session", "version": 3, "id": "giant-session",
                                "timestamp": "2026-03-01T10:00:00.000Z", "cwd": CWD}) + b"\n")
        out.write(orjson.dumps({"type": "message", "id": "before01", "parentId": None,
                                "timestamp": "2026-03-01T10:01:00.000Z",
                                "message": {"role": "user", "content": "beforegiantword"}}) + b"\n")
        out.write(b'{"type":"message","id":"giant001","parentId":"before01","timestamp":"2026-03-01T10:02:00.000Z",'
                  b'"message":{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text",'
                  b'"text":"giantheadword ')
        written = 0
        while written < megabytes * 1_000_000:
            out.write(words + b" ")
            written += len(words) + 1
        out.write(b'gianttailword"}],"isError":false,"timestamp":1772359320000}}\n')
        out.write(orjson.dumps({"type": "message", "id": "after001", "parentId": "giant001",
                                "timestamp": "2026-03-01T10:03:00.000Z",
                                "message": {"role": "user", "content": "aftergiantword"}}) + b"\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "sessions"
        folder = root / "--home-dev-Apps-giant--"
        folder.mkdir(parents=True)
        write_journal(folder / "giant.jsonl", args.mb)
        db = Path(tmp) / "index.db"
        index = run_cli(db, root, "index", "--json", timeout=900)
        report = json.loads(index.stdout) if index.returncode == 0 else index.stderr
        print(f"index:  peak RSS {index.peak_rss_mb:6.0f} MB  exit {index.returncode}  {report}")
        for word in ("giantheadword", "gianttailword"):
            found = run_cli(db, root, "search", word, "--scope", "global", "--json", timeout=300)
            ids = [r["entryId"] for r in json.loads(found.stdout)["results"]] if found.returncode == 0 else found.stderr
            print(f"search {word}: peak RSS {found.peak_rss_mb:6.0f} MB  {ids}")
        page = run_cli(db, root, "read", "giant001", "--scope", "global", "--json", timeout=300)
        answer = json.loads(page.stdout) if page.returncode in (0, 1) else {}
        print(f"read:   peak RSS {page.peak_rss_mb:6.0f} MB  status {answer.get('status')}  "
              f"totalChars {answer.get('totalChars')}")


if __name__ == "__main__":
    main()
