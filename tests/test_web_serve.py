"""`journal-index serve` as a user runs it: a real subprocess on a free port, spoken to over HTTP."""

from __future__ import annotations

import re
import signal
from urllib.parse import urlsplit

import httpx
import pytest

from tests.web_home import WebHome, make_home
from tests.web_server import serve


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> WebHome:
    return make_home(tmp_path_factory.mktemp("serve"))


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT])
def test_serve_prints_its_url_first_and_ends_with_0_on_a_signal(home: WebHome, how: signal.Signals):
    served = serve(home)
    parts = urlsplit(served.url)
    assert parts.scheme == "http" and parts.hostname == "127.0.0.1" and parts.port and parts.port > 0
    assert re.fullmatch(r"t=[A-Za-z0-9_-]{40,}", parts.query), served.url
    with httpx.Client(base_url=served.base) as client:
        assert client.get("/search?q=token").status_code == 401
        opened = client.get(served.url, follow_redirects=True)
        assert opened.status_code == 200 and "<mark>" not in opened.text  # the search page, no query yet
        assert client.get("/api/search", params={"q": "alembic"}).json()["results"]
    status, out, err = served.stop(how)
    assert status == 0, err
    assert out == "" and "Traceback" not in err  # the URL was the only line on stdout
    assert served.url.split("t=")[1] not in err  # the token is in no log


def test_the_api_of_the_real_server_is_the_cli(home: WebHome):
    served = serve(home)
    try:
        with httpx.Client(base_url=served.base) as client:
            client.get(served.url)
            for params, args in [({"q": "rate limit"}, ["search", "rate", "limit"]),
                                 ({"q": "token", "agent": "pi", "limit": "3"},
                                  ["search", "token", "--agent", "pi", "--limit", "3"])]:
                assert client.get("/api/search", params=params).json() == home.cli_json(*args)
    finally:
        assert served.stop()[0] == 0


def test_serve_refuses_another_host_and_each_server_has_its_own_token(home: WebHome):
    one, two = serve(home), serve(home)
    try:
        assert one.port != two.port and one.url.split("t=")[1] != two.url.split("t=")[1]
        with httpx.Client() as client:
            assert client.get(one.url.replace("127.0.0.1", "localhost")).status_code == 403
            assert client.get(one.url, headers={"host": f"attacker.example:{one.port}"}).status_code == 403
            # The other server's token opens nothing here.
            assert client.get(f"{one.base}/?t={two.url.split('t=')[1]}").status_code == 403
            # One browser signed in to both (one cookie jar per host, whatever the port) stays in both.
            assert client.get(one.url, follow_redirects=True).status_code == 200
            assert client.get(two.url, follow_redirects=True).status_code == 200
            assert client.get(f"{one.base}/api/search?q=token").status_code == 200
            assert client.get(f"{two.base}/api/search?q=token").status_code == 200
    finally:
        assert one.stop()[0] == 0 and two.stop()[0] == 0


def test_a_non_loopback_host_warns(home: WebHome):
    served = serve(home, "--host", "0.0.0.0")
    status, _, err = served.stop()
    assert status == 0
    assert "warning" in err and "not a loopback address" in err


def test_a_port_in_use_is_one_line_and_exit_1(home: WebHome):
    served = serve(home)
    try:
        import subprocess
        import sys

        done = subprocess.run([sys.executable, "-m", "journal_index", *home.global_args, "serve", "--no-open",
                               "--port", str(served.port)], cwd=home.cwd, env=home.env(), capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 1 and done.stdout == ""
        assert done.stderr.count("\n") == 1 and "cannot listen on 127.0.0.1:" in done.stderr
    finally:
        served.stop()
