"""Twenty machines on one box: private homes, their own host names, the same two repositories
checked out at different paths (remotes spelled differently), and private projects not shared.
They push at once; then a search from each finds the shared entries of every host, and never a
private project's."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from journal_index.cli import cli
from tests.hub.conftest import Hub
from tests.hub.hosts import PI_SESSIONS, HostHome, append_user_line, git_checkout, place_other_agents, place_pi

HOSTS = 20
BACKEND = ("github.com/acme/prjct-be", ("git@github.com:acme/prjct-be.git", "https://GitHub.com/acme/prjct-be"))
FRONTEND = ("gitlab.com/acme/fluenty", ("ssh://git@gitlab.com/acme/fluenty.git", "git@gitlab.com:acme/fluenty"))


def build_host(tmp_path: Path, hub: Hub, n: int) -> tuple[HostHome, Path, Path, Path]:
    member = "alice" if n < HOSTS // 2 else "carol"
    machine = HostHome(tmp_path / f"m{n:02d}", f"dev-{n:02d}.example", hub.url(member))
    home = machine.home
    backend = git_checkout(home / ("work" if n % 2 else "src") / f"be-{n}", BACKEND[1][n % 2])
    frontend = git_checkout(home / "code" / f"fl{n}" / "fluenty", FRONTEND[1][n % 2])
    private = home / f"private-{n}"
    private.mkdir()
    placed = [place_pi(home, s, str(backend)) for s in sorted((PI_SESSIONS / "--home-dev-Apps-prjct-prjct-be--")
                                                               .glob("*.jsonl"))]
    append_user_line(placed[0], f"{0xb0000000 + n:08x}", f"simsharedmark from host {n}")
    placed = [place_pi(home, s, str(frontend)) for s in sorted((PI_SESSIONS / "--home-dev-Apps-fluenty--")
                                                                .glob("*.jsonl"))]
    append_user_line(placed[0], f"{0xc0000000 + n:08x}", f"simsecondmark from host {n}")
    placed = [place_pi(home, s, str(private)) for s in sorted((PI_SESSIONS / "--home-dev-notes--").glob("*.jsonl"))]
    append_user_line(placed[0], f"{0xd0000000 + n:08x}", f"simprivatemark from host {n} alembic")
    place_other_agents(home, str(backend))  # Claude Code and Codex sessions in the backend too
    machine.run("hub", "share", str(backend))
    machine.run("hub", "share", str(frontend))
    return machine, backend, frontend, private


def hub_search(machine: HostHome, *args: str) -> dict[str, object]:
    result = CliRunner().invoke(cli, ["search", *args, "--hub", "--json", "--limit", "100"], env=machine.env)
    assert result.exit_code == 0, result.output
    parsed: dict[str, object] = json.loads(result.output)
    return parsed


@pytest.mark.slow
def test_twenty_hosts_push_at_once_and_find_each_other(tmp_path: Path, hub: Hub) -> None:
    hosts = [build_host(tmp_path, hub, n) for n in range(HOSTS)]
    started = time.perf_counter()
    pushes = [machine.popen("hub", "push", "--json") for machine, *_ in hosts]
    outputs = [proc.communicate(timeout=600) for proc in pushes]
    seconds = time.perf_counter() - started
    for proc, (_out, err) in zip(pushes, outputs, strict=True):
        assert proc.returncode == 0, err
    reports = [json.loads(out) for out, _ in outputs]
    names = {machine.host for machine, *_ in hosts}
    per_host = {r["host"]: r["entries"] for r in reports}
    assert set(per_host) == names and len(set(per_host.values())) == 1  # every host the same journals
    assert hub.rows("SELECT count(DISTINCT host) FROM hub_journals")[0][0] == HOSTS
    projects = {r[0] for r in hub.rows("SELECT DISTINCT project FROM hub_journals")}
    assert projects == {BACKEND[0], FRONTEND[0]}  # one project per repository, whatever the path
    assert hub.rows("SELECT count(*) FROM hub_entries WHERE text LIKE '%simprivatemark%'")[0][0] == 0
    total = hub.rows("SELECT count(*) FROM hub_entries")[0][0]
    assert total == sum(per_host.values())
    journals = hub.rows("SELECT count(*) FROM hub_journals")[0][0]
    print(f"\nsimulation: {HOSTS} hosts pushed {total} entries of {journals} journals "
          f"({sum(r['bytes'] for r in reports) / 1e6:.1f} MB of journal) concurrently in {seconds:.1f} s")
    agents = {r[0] for r in hub.rows("SELECT DISTINCT agent FROM hub_journals")}
    assert agents == {"pi", "claude", "codex"}
    for machine, backend, frontend, private in hosts:
        found = hub_search(machine, "simsharedmark", "--cwd", str(backend))
        results = found["results"]
        assert isinstance(results, list)
        assert {h["host"] for h in results} == names, machine.host
        assert {h["project"] for h in results} == {BACKEND[0]}
        second = hub_search(machine, "simsecondmark", "--cwd", str(frontend))["results"]
        assert isinstance(second, list) and {h["host"] for h in second} == names
        # The backend scope holds no frontend entry; nothing private is anywhere on the hub.
        assert hub_search(machine, "simsecondmark", "--cwd", str(backend), "--scope", "project")["results"] == []
        assert hub_search(machine, "simprivatemark", "--scope", "global")["results"] == []
        assert hub_search(machine, "simprivatemark", "--cwd", str(private))["results"] == []
    sessions = CliRunner().invoke(cli, ["sessions", "--hub", "--json", "--scope", "global", "--limit", "1000"],
                                  env=hosts[0][0].env)
    listed = json.loads(sessions.output)["sessions"]
    assert {s["host"] for s in listed} == names and len(listed) == hub.rows("SELECT count(*) FROM hub_journals")[0][0]
