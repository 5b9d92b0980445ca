"""--since/--until and the tool's since/until: relative times, today/yesterday, days, ISO times."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from journal_index.query.time_bounds import TimeBoundError, parse_time_bound

# A Wednesday noon in UTC; the fixture journals hold entries on 2026-09-14, -15 and -16.
NOW = "2026-09-16T12:00:00Z"
FORMS = ("2d", "3h", "30m", "1w", "today", "yesterday", "2026-09-01", "ISO-8601")


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text).timestamp() * 1000)


@pytest.fixture
def local_zone(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Tokyo (UTC+9, no DST): its midnight is not UTC's, and 20:00 UTC is already tomorrow there."""
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_relative_times_count_back_from_now(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOURNAL_INDEX_NOW", NOW)
    now = ms(NOW)
    assert parse_time_bound("30m", end=False) == now - 30 * 60_000
    assert parse_time_bound("3h", end=True) == now - 3 * 3_600_000
    assert parse_time_bound("2d", end=False) == now - 2 * 86_400_000
    assert parse_time_bound(" 1w ", end=False) == now - 7 * 86_400_000


def test_today_and_yesterday_are_local_midnights(monkeypatch: pytest.MonkeyPatch, local_zone: None) -> None:
    monkeypatch.setenv("JOURNAL_INDEX_NOW", "2026-09-16T20:00:00Z")  # 2026-09-17 05:00 in Tokyo
    today = ms("2026-09-16T15:00:00Z")  # Tokyo's midnight starting 2026-09-17
    assert parse_time_bound("today", end=False) == today
    assert parse_time_bound("today", end=True) == today  # --until today: up to that midnight
    assert parse_time_bound("yesterday", end=False) == today - 86_400_000
    # the ISO forms keep their meaning: a bare day is a local day, a time without a zone is local
    assert parse_time_bound("2026-09-17", end=False) == today
    assert parse_time_bound("2026-09-17", end=True) == today + 86_400_000 - 1
    assert parse_time_bound("2026-09-17T09:00:00", end=False) == today + 9 * 3_600_000
    assert parse_time_bound("2026-09-17T09:00:00Z", end=False) == ms("2026-09-17T09:00:00Z")


@pytest.mark.parametrize("bad", ["last tuesday", "2 days", "2x", "-2d", "3H", "tomorrow", "", "1234567d"])
def test_bad_forms_name_every_accepted_form(bad: str) -> None:
    with pytest.raises(TimeBoundError) as caught:
        parse_time_bound(bad, end=False)
    message = str(caught.value)
    assert all(form in message for form in FORMS), message


def cli(db: Path, sessions: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "JOURNAL_INDEX_NOW": NOW, "TZ": "UTC"}
    return subprocess.run([sys.executable, "-m", "journal_index", "--db", str(db), "--sessions", str(sessions),
                           *args], capture_output=True, text=True, env=env, timeout=120)


def hit_times(done: subprocess.CompletedProcess[str]) -> list[str]:
    assert done.returncode == 0, done.stderr
    return [hit["time"] for hit in json.loads(done.stdout)["results"]]


def test_cli_relative_bounds_select_by_time(tmp_path: Path, sessions_root: Path) -> None:
    db = tmp_path / "i.db"
    assert cli(db, sessions_root, "index").returncode == 0
    listing = ("search", "--scope", "global", "--limit", "400", "--json")
    yesterday = hit_times(cli(db, sessions_root, *listing, "--since", "yesterday", "--until", "today"))
    assert yesterday and all(t.startswith("2026-09-15") for t in yesterday)
    recent = hit_times(cli(db, sessions_root, *listing, "--since", "3d", "--until", "today"))
    assert {t[:10] for t in recent} == {"2026-09-14", "2026-09-15"}
    assert all("2026-09-13T12:00:00" <= t < "2026-09-16" for t in recent)
    hours = hit_times(cli(db, sessions_root, *listing, "--since", "36h", "--until", "30m"))
    assert hours and all("2026-09-15T00:00:00" <= t <= "2026-09-16T11:30:00" for t in hours)
    summaries = cli(db, sessions_root, "summaries", "--scope", "global", "--since", "1w", "--json")
    assert summaries.returncode == 0, summaries.stderr


@pytest.mark.parametrize("command", ["search", "summaries"])
def test_cli_bad_time_is_one_line_and_exit_2(tmp_path: Path, sessions_root: Path, command: str) -> None:
    done = cli(tmp_path / "i.db", sessions_root, command, "--until", "next week")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--until" in lines[0] and "next week" in lines[0], done.stderr
    assert all(form in lines[0] for form in FORMS), lines[0]


def test_the_tool_reads_the_same_forms(tmp_path: Path, sessions_root: Path) -> None:
    db = tmp_path / "i.db"
    base = ["tool", "--cwd", "/home/dev/Apps/prjct/prjct-be", "--max-scope", "global"]
    good = cli(db, sessions_root, *base, json.dumps({"action": "search", "scope": "global",
                                                     "since": "yesterday", "until": "today"}))
    answer = json.loads(good.stdout)
    assert "error" not in answer, answer
    assert answer["result"]["results"]
    assert all(hit["time"].startswith("2026-09-15") for hit in answer["result"]["results"])
    bad = json.loads(cli(db, sessions_root, *base, json.dumps({"action": "search", "since": "a while"})).stdout)
    assert bad["error"]["code"] == "bad_argument"
    assert all(form in bad["error"]["message"] for form in FORMS)


def test_the_tool_schema_names_the_relative_forms() -> None:
    from journal_index.agent.tool_args import INPUT_SCHEMA

    since = INPUT_SCHEMA["properties"]["since"]["description"]
    assert "2d" in since and "today" in since and "yesterday" in since
