"""What a new user meets first: a --db where no index is, empty results, counts, completion."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

READ_ONLY = [
    ["status"],
    ["status", "--json"],
    ["search", "token"],
    ["read", "20147e3f"],
    ["summaries"],
    ["sessions"],
    ["export", "files"],
]


def journal_index(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "journal_index", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120)


@pytest.mark.parametrize("command", READ_ONLY, ids=" ".join)
def test_a_read_only_command_creates_no_index(tmp_path: Path, sessions_root: Path, command: list[str]) -> None:
    folder = tmp_path / "typo"  # neither the file nor its folder exists
    db = folder / "index.db"
    done = journal_index("--db", str(db), "--sessions", str(sessions_root), *command)
    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"no index at {db}" in lines[0] and "journal-index index" in lines[0], lines
    assert done.stdout == ""
    assert not folder.exists()


def test_no_index_from_the_environment_or_an_empty_file(tmp_path: Path, sessions_root: Path) -> None:
    db = tmp_path / "index.db"
    done = journal_index("search", "token", env={"JOURNAL_INDEX_DB": str(db), "JOURNAL_INDEX_SESSIONS":
                                                 str(sessions_root)})
    assert done.returncode == 1 and "no index at" in done.stderr
    for suffix in ("", "-wal", "-shm"):
        assert not Path(f"{db}{suffix}").exists()
    db.write_bytes(b"")  # an empty file (touch) is no index either, and stays as it was
    done = journal_index("--db", str(db), "status")
    assert done.returncode == 1 and "no index at" in done.stderr
    assert db.stat().st_size == 0 and not Path(f"{db}-wal").exists()


def test_index_still_makes_the_index_and_then_reads_work(tmp_path: Path, sessions_root: Path) -> None:
    db = tmp_path / "new" / "index.db"
    assert journal_index("--db", str(db), "--sessions", str(sessions_root), "index").returncode == 0
    done = journal_index("--db", str(db), "--sessions", str(sessions_root), "status")
    assert done.returncode == 0 and "sessions" in done.stdout


BE = "/home/dev/Apps/prjct/prjct-be"


@pytest.fixture
def indexed(tmp_path: Path, sessions_root: Path) -> list[str]:
    base = ["--db", str(tmp_path / "i.db"), "--sessions", str(sessions_root)]
    assert journal_index(*base, "index").returncode == 0
    return base


@pytest.mark.parametrize("extra", [["--cwd", BE], ["--scope", "global"], ["--cwd", BE, "--since", "2030-01-01"],
                                   ["--scope", "global", "--kind", "bash"]], ids=" ".join)
def test_an_empty_search_prints_one_hint(indexed: list[str], extra: list[str]) -> None:
    done = journal_index(*indexed, "search", "zzyzzx", *extra)
    assert done.returncode == 0, done.stderr
    hints = [line for line in done.stdout.splitlines() if line.startswith("hint:")]
    assert len(hints) == 1, done.stdout
    # It names only what would widen this search: no --scope global when it is global already.
    assert ("--scope global" in hints[0]) == ("--scope" not in extra)
    assert ("--since" in hints[0]) == ("--since" in extra)


def test_empty_summaries_print_one_hint(indexed: list[str]) -> None:
    done = journal_index(*indexed, "summaries", "--cwd", BE, "--since", "2030-01-01")
    hints = [line for line in done.stdout.splitlines() if line.startswith("hint:")]
    assert done.returncode == 0 and len(hints) == 1, done.stdout


def test_counts_agree_with_their_number(tmp_path: Path, sessions_root: Path) -> None:
    one = next(p for p in sorted(sessions_root.rglob("*.jsonl")))
    single = tmp_path / "one"
    single.mkdir()
    (single / one.name).write_bytes(one.read_bytes())
    base = ["--db", str(tmp_path / "one.db"), "--sessions", str(single)]
    done = journal_index(*base, "index")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("indexed 1 journal: "), done.stdout
    assert "0 journals reindexed" in done.stdout and "0 lines skipped" in done.stdout
    status = journal_index(*base, "status").stdout
    assert "1 session," in status and "1 sessions" not in status, status


def test_count_words() -> None:
    from journal_index.text.counts import count

    assert [count(n, "journal") for n in (0, 1, 2)] == ["0 journals", "1 journal", "2 journals"]
    assert [count(n, "entry", "entries") for n in (1, 3)] == ["1 entry", "3 entries"]


def test_bash_completion_script_completes_commands_and_choices(tmp_path: Path) -> None:
    """The README's line, run in a real bash: the script is generated, and sourcing it completes."""
    script = Path(sys.executable).parent / "journal-index"  # the console script pip installed
    if not script.exists():
        pytest.skip(f"no console script at {script} (journal-index is not installed in this environment)")
    env = {**os.environ, "PATH": f"{script.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    source = subprocess.run(["journal-index"], env={**env, "_JOURNAL_INDEX_COMPLETE": "bash_source"},
                            capture_output=True, text=True, timeout=60)
    assert source.returncode == 0 and "complete -o nosort -F _journal_index_completion journal-index" in source.stdout
    zsh = subprocess.run(["journal-index"], env={**env, "_JOURNAL_INDEX_COMPLETE": "zsh_source"},
                         capture_output=True, text=True, timeout=60)
    assert zsh.returncode == 0 and "#compdef journal-index" in zsh.stdout
    complete = ('eval "$(_JOURNAL_INDEX_COMPLETE=bash_source journal-index)"\n'
                'ask() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=()\n'
                '        _journal_index_completion journal-index; echo "${COMPREPLY[*]}"; }\n'
                'ask journal-index se\n'
                'ask journal-index search --scope ""\n')
    done = subprocess.run(["bash", "-c", complete], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    commands, scopes = done.stdout.splitlines()
    assert set(commands.split()) == {"search", "serve", "service", "sessions"}
    assert scopes.split() == ["session", "project", "global"]


def test_gc_counts_one_junk_journal_as_one(tmp_path: Path) -> None:
    from tests.test_gc import write_journal

    root = tmp_path / "pi-sessions"
    write_journal(root / "--tmp-x--" / "doomed.jsonl", "/tmp/x")
    write_journal(root / "--proj--" / "keeper.jsonl", "/home/dev/proj")
    base = ["--db", str(tmp_path / "gc.db"), "--sessions", str(root)]
    preview = journal_index(*base, "gc")
    assert preview.returncode == 0, preview.stderr
    assert "1 junk journal, " in preview.stdout and "delete it with" in preview.stdout, preview.stdout
    confirmed = journal_index(*base, "gc", "--confirm")
    assert confirmed.returncode == 0 and "deleted 1 journal, kept 0" in confirmed.stdout, confirmed.stdout
