"""The CLI as users run it: exit codes, one-line errors, JSON shapes, the demo."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from journal_index.cli import cli
from tests.conftest import REPO


def run(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def test_index_then_status_json(tmp_path: Path, sessions_root: Path) -> None:
    db = str(tmp_path / "i.db")
    result = run("--db", db, "--sessions", str(sessions_root), "index", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert set(report) >= {"files", "entries", "bytes", "seconds", "skippedLines", "resetFiles"}
    assert report["files"] == 26 and report["entries"] > 700 and report["resetFiles"] == 0
    again = json.loads(run("--db", db, "--sessions", str(sessions_root), "index", "--json").output)
    assert again["entries"] == 0 and again["bytes"] == 0
    status = json.loads(run("--db", db, "status", "--json").output)
    assert status["sessions"] == 26 and status["entries"] == report["entries"]
    assert status["summaries"] == 14 and status["schemaVersion"] >= 1
    assert status["indexedBytes"] == report["bytes"] and status["dbPath"] == db


def test_sessions_from_the_environment(tmp_path: Path, sessions_root: Path) -> None:
    env = {"JOURNAL_INDEX_DB": str(tmp_path / "e.db"), "JOURNAL_INDEX_SESSIONS": str(sessions_root)}
    result = run("index", "--json", env=env)
    assert json.loads(result.output)["files"] == 26
    assert (tmp_path / "e.db").exists()


def test_pi_agent_dir_is_the_default_root(tmp_path: Path, sessions_root: Path) -> None:
    env = {"PI_CODING_AGENT_DIR": str(sessions_root.parent), "JOURNAL_INDEX_DB": str(tmp_path / "p.db")}
    assert json.loads(run("index", "--json", env=env).output)["files"] == 26


def test_index_given_paths_only(tmp_path: Path, sessions_root: Path) -> None:
    one = next(sessions_root.rglob("*.jsonl"))
    result = run("--db", str(tmp_path / "i.db"), "index", str(one), "--json")
    assert json.loads(result.output)["files"] == 1


def test_missing_root_is_one_line_and_nonzero(tmp_path: Path) -> None:
    result = run("--db", str(tmp_path / "i.db"), "--sessions", str(tmp_path / "nope"), "index")
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "does not exist" in lines[0] and "JOURNAL_INDEX_SESSIONS" in lines[0]


def test_missing_file_is_one_line_and_nonzero(tmp_path: Path) -> None:
    result = run("--db", str(tmp_path / "i.db"), "index", str(tmp_path / "none.jsonl"))
    assert result.exit_code == 1 and "is not a readable file" in result.output


def test_an_unknown_semantic_mode_is_one_line_and_nonzero(tmp_path: Path, sessions_root: Path) -> None:
    db = str(tmp_path / "i.db")
    assert run("--db", db, "--sessions", str(sessions_root), "index").exit_code == 0
    result = CliRunner().invoke(cli, ["--db", db, "--sessions", str(sessions_root), "search", "alembic"],
                                env={"JOURNAL_INDEX_SEMANTIC": "sometimes"})
    lines = result.output.strip().splitlines()
    assert result.exit_code == 1 and len(lines) == 1, result.output
    assert "JOURNAL_INDEX_SEMANTIC='sometimes'" in lines[0] and "off, on, gated" in lines[0]


def test_bad_option_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "i.db"), "search", "x", "--scope", "galaxy"])
    assert result.exit_code == 2 and "galaxy" in result.output


def test_rebuild_deletes_and_reindexes(tmp_path: Path, sessions_root: Path) -> None:
    db = tmp_path / "i.db"
    run("--db", str(db), "--sessions", str(sessions_root), "index")
    first = json.loads(run("--db", str(db), "status", "--json").output)["entries"]
    result = run("--db", str(db), "--sessions", str(sessions_root), "rebuild", "--json")
    assert result.exit_code == 0
    assert json.loads(result.output)["entries"] == first  # everything was indexed again


def test_redact_command_json_shape(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["redact", "--json"], input="nothing secret here\n")
    data = orjson.loads(result.output)
    assert set(data) == {"text", "hits"} and data["text"] == "nothing secret here\n"


def test_python_dash_m_works() -> None:
    out = subprocess.run([sys.executable, "-m", "journal_index", "--help"], capture_output=True, text=True,
                         check=True)
    for command in ("index", "status", "rebuild", "demo", "search", "read", "summaries"):
        assert command in out.stdout


def test_demo_runs_on_the_bundled_journals(tmp_path: Path) -> None:
    env = {**os.environ, "NO_COLOR": "1", "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-m", "journal_index", "demo"], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    for marker in ("indexed 26 journals", "sessions     26", "search: results 1–3 in project", "summaries"):
        assert marker in out.stdout
    assert "Traceback" not in out.stderr


def test_every_command_has_help_text() -> None:
    for name, command in cli.commands.items():
        assert command.help, f"{name} has no help text"
        assert run(name, "--help").exit_code == 0


def test_readme_starts_with_the_two_commands() -> None:
    head = (REPO / "README.md").read_text().splitlines()[:15]
    text = "\n".join(head)
    assert "journal-index demo" in text and "pytest" in text


def test_export_dumps_plain_tables_through_sqlite_utils(tmp_path: Path, sessions_root: Path) -> None:
    db = str(tmp_path / "x.db")
    run("--db", db, "--sessions", str(sessions_root), "index")
    out = subprocess.run([sys.executable, "-m", "journal_index", "--db", db, "export", "files", "--format", "nl"],
                         capture_output=True, text=True, check=True)
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(rows) == 26 and {"path", "cursor", "session_id", "cwd"} <= set(rows[0])
    bad = CliRunner().invoke(cli, ["--db", db, "export", "entries_fts"])
    assert bad.exit_code == 2


EXPORT_TOKEN = "ghp_" + "R4nd0mLooking" + "Tok3nF0rExp0rtTest" + "s12345"


def _sqlite_utils_rows(db: str, table: str, fmt: str) -> bytes:
    flags = {"json": [], "nl": ["--nl"], "csv": ["--csv"], "tsv": ["--tsv"]}[fmt]
    done = subprocess.run([sys.executable, "-m", "sqlite_utils", "rows", db, table, *flags],
                          capture_output=True, check=True)
    return done.stdout


def test_export_prints_what_sqlite_utils_prints_redacted(tmp_path: Path, sessions_root: Path) -> None:
    """Every table, every format: the lines of `sqlite-utils rows`, each redacted; no secret gets out."""
    from journal_index.redact import redact

    folder = sessions_root / f"--home-dev-{EXPORT_TOKEN}--"
    folder.mkdir()
    header = {"type": "session", "version": 3, "id": "0199aaaa-0000-7000-8000-000000000001",
              "timestamp": "2026-01-05T08:00:00.000Z", "cwd": f"/home/dev/{EXPORT_TOKEN}"}
    (folder / "2026-01-05T08-00-00-000Z_0199aaaa-0000-7000-8000-000000000001.jsonl").write_text(
        json.dumps(header) + "\n")
    (tmp_path / "no-journals").mkdir()
    empty = str(tmp_path / "empty.db")  # no rows in files and entries: `[]`, and a header alone
    assert run("--db", empty, "--sessions", str(tmp_path / "no-journals"), "index").exit_code == 0
    full = str(tmp_path / "x.db")
    assert run("--db", full, "--sessions", str(sessions_root), "index").exit_code == 0
    for db in (full, empty):
        for table in ("files", "entries", "meta"):
            for fmt in ("json", "nl", "csv", "tsv"):
                raw = _sqlite_utils_rows(db, table, fmt)
                expected = b"".join(redact(line.decode()).encode() for line in raw.splitlines(keepends=True))
                ours = CliRunner().invoke(cli, ["--db", db, "export", table, "--format", fmt])
                assert ours.exit_code == 0, ours.output
                assert ours.stdout_bytes == expected, (db, table, fmt)
                assert EXPORT_TOKEN not in ours.output
    assert EXPORT_TOKEN.encode() in _sqlite_utils_rows(full, "files", "nl")  # the token is in the table


def test_export_never_opens_the_index_beside_an_open_apsw_connection(tmp_path: Path, sessions_root: Path) -> None:
    """Two SQLite libraries in one process must not hold one file open: export refuses while apsw has it."""
    import io

    import apsw

    from journal_index.data.export import StillOpen, export_table
    from journal_index.data.store import open_store

    db = str(tmp_path / "x.db")
    assert run("--db", db, "--sessions", str(sessions_root), "index").exit_code == 0
    store = open_store(db)
    out = io.BytesIO()
    try:
        with pytest.raises(StillOpen):
            export_table(db, "files", "nl", out)
    finally:
        store.close()
    assert out.getvalue() == b""
    export_table(db, "files", "nl", out)  # once it is closed
    assert len(out.getvalue().splitlines()) == 26
    result = run("--db", db, "export", "meta")
    assert result.exit_code == 0 and json.loads(result.output)
    assert [c for c in apsw.connections() if Path(c.filename) == Path(db)] == []


def test_every_command_is_in_the_readme() -> None:
    readme = (REPO / "README.md").read_text()
    missing = [name for name in cli.commands if f"journal-index {name}" not in readme]
    assert missing == []


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "journal_index", *args], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)


def test_db_pointing_at_something_else_is_refused_untouched(tmp_path: Path, sessions_root: Path) -> None:
    import apsw

    text = tmp_path / "notes.txt"
    text.write_text("notes\n")
    places = tmp_path / "places.sqlite"
    conn = apsw.Connection(str(places))
    conn.execute("CREATE TABLE moz_places(id INTEGER PRIMARY KEY, url TEXT); INSERT INTO moz_places(url) VALUES('x')")
    conn.close()
    for target in (text, places, Path("/dev/null"), tmp_path):
        before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
        for command in (["status"], ["index"], ["search", "x"], ["rebuild"], ["export", "files"]):
            done = _cli("--db", str(target), "--sessions", str(sessions_root), *command)
            lines = done.stderr.strip().splitlines()
            assert done.returncode == 1, (target, command, done.stderr)
            assert len(lines) == 1 and str(target) in lines[0] and "refusing to touch it" in lines[0], lines
            assert "Traceback" not in done.stderr
        assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before


def test_export_of_a_missing_index_creates_nothing(tmp_path: Path) -> None:
    done = _cli("--db", str(tmp_path / "none.db"), "export", "files")
    assert done.returncode == 1 and "no index at" in done.stderr
    assert not list(tmp_path.iterdir())


# -- what a new user meets ------------------------------------------------------------------

BE_CWD = "/home/dev/Apps/prjct/prjct-be"


def _indexed(tmp_path: Path, sessions_root: Path) -> list[str]:
    base = ["--db", str(tmp_path / "i.db"), "--sessions", str(sessions_root)]
    assert _cli(*base, "index").returncode == 0
    return base


def test_the_read_hint_after_a_global_search_works_as_printed_from_anywhere(tmp_path: Path,
                                                                             sessions_root: Path) -> None:
    base = _indexed(tmp_path, sessions_root)
    done = _cli(*base, "search", "openai", "tts", "--scope", "global", "--cwd", BE_CWD)
    hint = next(line for line in done.stdout.splitlines() if line.startswith("read one whole: "))
    command = hint.removeprefix("read one whole: journal-index ").split()
    elsewhere = subprocess.run([sys.executable, "-m", "journal_index", *base, *command], capture_output=True,
                               text=True, cwd="/", timeout=60)
    assert elsewhere.returncode == 0, (hint, elsewhere.stdout, elsewhere.stderr)
    assert "characters 0–" in elsewhere.stdout


def test_a_session_prefix_is_accepted_and_implies_the_session_scope(tmp_path: Path, sessions_root: Path) -> None:
    base = _indexed(tmp_path, sessions_root)
    session = "01a066a0-b2cd-76ec-8039-f893567c84c9"
    done = _cli(*base, "search", "token", "--session", session[:8], "--cwd", "/", "--json")
    assert done.returncode == 0, done.stderr
    found = orjson.loads(done.stdout)
    assert found["results"] and {r["sessionId"] for r in found["results"]} == {session}
    read = _cli(*base, "read", found["results"][0]["entryId"], "--session", session[:8], "--json")
    assert read.returncode == 0 and orjson.loads(read.stdout)["sessionId"] == session
    unknown = _cli(*base, "search", "token", "--session", "ffffffff")
    assert unknown.returncode == 1 and "no session 'ffffffff'" in unknown.stderr


def test_a_folder_without_sessions_searches_everything_and_says_so(tmp_path: Path, sessions_root: Path) -> None:
    base = _indexed(tmp_path, sessions_root)
    done = _cli(*base, "search", "rate", "limit", "--cwd", str(tmp_path))
    assert done.returncode == 0
    assert "showing all projects" in done.stdout and "results 1–" in done.stdout
    strict = _cli(*base, "search", "rate", "limit", "--cwd", str(tmp_path), "--scope", "project")
    assert "nothing in project" in strict.stdout and "--scope global" in strict.stdout


def test_a_partial_match_gives_its_advice_once(tmp_path: Path, sessions_root: Path) -> None:
    base = _indexed(tmp_path, sessions_root)
    done = _cli(*base, "search", "rate", "limit", "zzqxunheardof", "--scope", "global")
    assert done.returncode == 0
    assert done.stdout.count("narrow it down") == 1, done.stdout


def test_limit_above_the_candidates_is_refused_with_the_bound(tmp_path: Path, sessions_root: Path) -> None:
    base = _indexed(tmp_path, sessions_root)
    done = _cli(*base, "search", "token", "--limit", "1000")
    assert done.returncode == 2 and "400" in done.stderr


def test_tool_call_arguments_read_without_json_escapes(tmp_path: Path, sessions_root: Path) -> None:
    base = _indexed(tmp_path, sessions_root)
    done = _cli(*base, "search", "grep", "--kind", "assistant", "--scope", "global", "--limit", "20", "--json")
    excerpts = [r["excerpt"] for r in orjson.loads(done.stdout)["results"]]
    assert any("pattern: " in e or "command: " in e for e in excerpts), excerpts  # calls are shown
    assert not any('\\n' in e or '\\"' in e for e in excerpts), excerpts


def test_a_random_looking_token_matches_whole_or_not_at_all(tmp_path: Path, sessions_root: Path) -> None:
    base = _indexed(tmp_path, sessions_root)
    done = _cli(*base, "search", "AKIATRXHZA6E", "--scope", "global", "--json")
    assert orjson.loads(done.stdout)["results"] == []  # not every entry holding an "e"


def test_service_without_print_says_what_it_needs() -> None:
    done = _cli("service")
    assert done.returncode == 2 and "--print systemd or --print launchd" in done.stderr


def test_a_long_query_is_cut_and_answers_quickly(tmp_path: Path, sessions_root: Path) -> None:
    import time

    from journal_index.text.text_forms import MAX_GROUP_TERMS, MAX_QUERY_GROUPS, query_groups

    (camel,) = query_groups("aB" * 5000)  # one word: one group, its terms capped
    assert len(camel) <= MAX_GROUP_TERMS
    assert query_groups("a " * 999) == [["a"]]
    assert len(query_groups(" ".join(f"w{n}x" for n in range(2000)))) == MAX_QUERY_GROUPS
    base = _indexed(tmp_path, sessions_root)
    for query in ("aB" * 5000, "a " * 5000, " ".join(f"w{n}x" for n in range(2000))):
        started = time.monotonic()
        done = _cli(*base, "search", "--scope", "global", "--", query)
        assert done.returncode == 0, done.stderr
        assert time.monotonic() - started < 30  # a guard against a hang, not a speed target
