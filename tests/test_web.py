"""The web view (`journal-index serve`) through Starlette's TestClient, over a real index of real
journals of all three agents (copied to tmp): the guard (Host, methods, token, cookie), the API
against the CLI's own `--json`, the pages, the planted secrets, a rewritten journal."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from starlette.testclient import TestClient

from journal_index.data.store import open_store
from journal_index.indexing.indexer import as_roots, discover, index_files
from journal_index.web.app import create_app
from journal_index.web.security import cookie_name, url_with_token
from tests.conftest import FIXTURES
from tests.helpers import load_secrets
from tests.web_home import NOW, WebHome, make_home

BOUND = "127.0.0.1:8765"
BASE = f"http://{BOUND}"
TOKEN = "test-token-0123456789abcdefABCDEF"
BE = "/home/dev/Apps/prjct/prjct-be"
LONG = "01a05d32-b780-77a8-84b6-ccc1caffba94"  # 180 entries, compactions and a branch summary
GUARDED = ["/", "/search?q=token", "/sessions", f"/session/pi/{LONG}", "/api/search?q=token", "/api/sessions",
           "/static/app.css", "/static/app.js", "/nowhere"]


@pytest.fixture(autouse=True)
def fixed_now(monkeypatch: pytest.MonkeyPatch) -> None:
    """The in-process web view ranks at the moment the CLI's subprocess does (web_home.NOW)."""
    monkeypatch.setenv("JOURNAL_INDEX_NOW", NOW)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> WebHome:
    return make_home(tmp_path_factory.mktemp("web"))


def _client(home: WebHome) -> Iterator[TestClient]:
    service = home.service()
    try:
        with TestClient(create_app(service, TOKEN, BOUND, cwd=str(home.cwd)), base_url=BASE) as client:
            yield client
    finally:
        service.store.close()


@pytest.fixture
def anonymous(home: WebHome) -> Iterator[TestClient]:
    yield from _client(home)


@pytest.fixture
def browser(home: WebHome) -> Iterator[TestClient]:
    """A client that opened the printed URL: it holds the cookie."""
    for client in _client(home):
        assert client.get(url_with_token(BASE, TOKEN)).status_code == 200
        yield client


# -- the guard ----------------------------------------------------------------------------
@pytest.mark.parametrize("path", GUARDED)
def test_without_the_cookie_every_page_and_api_answers_401(anonymous: TestClient, path: str):
    answer = anonymous.get(path, follow_redirects=False)
    assert answer.status_code == 401
    assert "prjct" not in answer.text and "set-cookie" not in answer.headers


def test_a_wrong_token_or_cookie_is_refused(anonymous: TestClient):
    wrong = anonymous.get("/search?t=not-the-token", follow_redirects=False)
    assert wrong.status_code == 403 and "set-cookie" not in wrong.headers
    anonymous.cookies.set(cookie_name(BOUND), TOKEN[:-1] + "x")
    assert anonymous.get("/search?q=token").status_code == 401


def test_the_token_sets_a_strict_httponly_cookie_and_redirects_without_it(anonymous: TestClient):
    first = anonymous.get(f"/search?q=rate+limit&t={TOKEN}&agent=pi", follow_redirects=False)
    assert first.status_code == 303
    target = urlsplit(first.headers["location"])
    assert target.path == "/search" and parse_qs(target.query) == {"q": ["rate limit"], "agent": ["pi"]}
    cookie = first.headers["set-cookie"]
    assert cookie.startswith(f"{cookie_name(BOUND)}={TOKEN};")
    flags = {part.strip().lower() for part in cookie.split(";")[1:]}
    assert {"httponly", "samesite=strict", "path=/"} <= flags
    page = anonymous.get(first.headers["location"])
    assert page.status_code == 200 and "<mark>" in page.text
    for path in GUARDED[:-1]:
        assert anonymous.get(path).status_code == 200, path
    assert anonymous.get("/nowhere").status_code == 404


@pytest.mark.parametrize("host", ["evil.example", f"evil.example:{BOUND.split(':')[1]}", "localhost:8765",
                                  "127.0.0.1:8766", "127.0.0.1", ""])
def test_a_request_for_another_host_is_refused_even_with_the_cookie(browser: TestClient, host: str):
    """DNS rebinding: a page of another origin reaching this port sends its own name as Host."""
    for path in ("/search?q=token", "/api/search?q=token", f"/?t={TOKEN}"):
        answer = browser.get(path, headers={"host": host}, follow_redirects=False)
        assert answer.status_code == 403, (host, path)
        assert "prjct" not in answer.text and "set-cookie" not in answer.headers


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
def test_no_endpoint_writes(browser: TestClient, method: str):
    for path in ("/search", "/api/search", f"/session/pi/{LONG}"):
        assert browser.request(method, path).status_code == 405


def test_pages_forbid_inline_scripts_framing_referrers_and_caching(browser: TestClient):
    answer = browser.get("/search?q=token")
    policy = answer.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy and "default-src 'none'" in policy
    assert answer.headers["referrer-policy"] == "no-referrer" and answer.headers["cache-control"] == "no-store"
    assert "<script>" not in answer.text and "http://" not in answer.text.split("<main>")[0]  # no CDN


# -- the API is the CLI ---------------------------------------------------------------------
API_CASES = [
    ("q=rate+limit", ["search", "rate", "limit"]),
    ("q=token&agent=pi&kind=assistant&limit=5&offset=2",
     ["search", "token", "--agent", "pi", "--kind", "assistant", "--limit", "5", "--offset", "2"]),
    ("", ["search"]),
    (f"q=pydantic&scope=project&cwd={BE}", ["search", "pydantic", "--scope", "project", "--cwd", BE]),
    ("q=session&since=2026-09-01&until=2026-10-01", ["search", "session", "--since", "2026-09-01",
                                                     "--until", "2026-10-01"]),
    ("q=the&agent=claude&agent=codex", ["search", "the", "--agent", "claude", "--agent", "codex"]),
    ("q=zzqxnotaword", ["search", "zzqxnotaword"]),
    (f"q=token&session=pi:{LONG}", ["search", "token", "--session", f"pi:{LONG}"]),
    ("q=token&since=2d", ["search", "token", "--since", "2d"]),
]


@pytest.mark.parametrize(("query", "args"), API_CASES)
def test_api_search_is_the_cli_search_json(home: WebHome, browser: TestClient, query: str, args: list[str]):
    answer = browser.get(f"/api/search?{query}")
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/json"
    assert answer.json() == home.cli_json(*args)


def test_api_search_finds_something_for_the_cases_that_should(browser: TestClient):
    for query, _ in API_CASES:
        if "zzqxnotaword" not in query and "2d" not in query:
            assert browser.get(f"/api/search?{query}").json()["results"], query


def test_api_sessions_is_the_cli_sessions_json(home: WebHome, browser: TestClient):
    assert browser.get("/api/sessions?scope=global&limit=100").json() == home.cli_json(
        "sessions", "--scope", "global", "--limit", "100")
    assert browser.get("/api/sessions").json() == home.cli_json("sessions")  # the same defaults
    assert browser.get(f"/api/sessions?agent=claude&scope=project&cwd={BE}").json() == home.cli_json(
        "sessions", "--agent", "claude", "--scope", "project", "--cwd", BE)


@pytest.mark.parametrize("query", ["q=x&scope=wide", "q=x&agent=cursor", "q=x&limit=0", "q=x&limit=lots",
                                   "q=x&since=someday", "q=x&since=2026-10-01&until=2026-09-01"])
def test_api_errors_say_what_is_wrong_in_one_line(browser: TestClient, query: str):
    answer = browser.get(f"/api/search?{query}")
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["message"] and error["hint"] and error["code"]


# -- the pages --------------------------------------------------------------------------------
def _hits(page: str) -> list[str]:
    return re.findall(r'<a class="hit-link" href="([^"]+)"', page)


def test_search_page_shows_every_hit_with_its_place_and_matched_words_marked(browser: TestClient):
    page = browser.get("/search?q=rate+limit&scope=global").text
    api = browser.get("/api/search?q=rate+limit&scope=global&limit=20").json()["results"]
    links = [html.unescape(link) for link in _hits(page)]
    assert len(links) == len(api) > 3
    for link, hit in zip(links, api, strict=True):
        parts = urlsplit(link)
        assert parts.path == f"/session/{hit['agent']}/{hit['sessionId']}" and parts.fragment == hit["entryId"]
        assert parse_qs(parts.query) == {"at": [hit["entryId"]]}
    marks = {m.lower() for m in re.findall(r"<mark>([^<]*)</mark>", page)}
    assert marks and all("rate" in m or "limit" in m for m in marks), marks
    first = page.split('<li class="hit')[1]
    assert api[0]["cwd"] in first and api[0]["time"][:10] in first and api[0]["kind"] in first


def test_search_page_works_as_a_plain_form_and_keeps_the_filters(browser: TestClient):
    page = browser.get("/search?q=token&agent=pi&kind=user&since=2026-09-01").text
    assert '<form id="search" class="search" action="/search" method="get"' in page
    assert 'value="token"' in page and '<option value="pi" selected>' in page
    assert '<option value="user" selected>' in page and 'value="2026-09-01"' in page
    assert all("kind-user" in item for item in page.split('<li class="hit')[1:])


def test_the_partial_results_are_the_full_pages_results(browser: TestClient):
    whole = browser.get("/search?q=alembic").text
    part = browser.get("/search?q=alembic&partial=1").text
    assert "<html" not in part and _hits(part) == _hits(whole) and _hits(part)


def test_a_hit_opens_its_entry_highlighted_with_the_turns_around_it(browser: TestClient):
    api = browser.get("/api/search?q=alembic+upgrade+head&scope=global&kind=tool_result").json()["results"]
    hit = api[0]
    page = browser.get(f"/session/{hit['agent']}/{hit['sessionId']}?at={hit['entryId']}").text
    target = re.search(rf'<details class="tool-result target" id="{hit["entryId"]}" open>', page)
    assert target, "a tool result opened from a hit is unfolded and marked"
    assert page.count("◀ this entry") == 1 and page.count('class="turn ') >= 5
    # A tool result is folded under the assistant turn that called it.
    turn = page[:target.start()].rsplit('<li class="turn', 1)[1]
    assert turn.startswith(' turn-assistant')


def test_a_session_reads_as_a_conversation_with_summaries_marked(browser: TestClient):
    page = browser.get(f"/session/pi/{LONG}").text
    assert 'class="turn turn-user' in page and 'class="turn turn-assistant' in page
    assert '<details class="tool-result"' in page and " open>" not in page  # results folded
    everything = _all_pages(browser, f"/session/pi/{LONG}")
    assert "the conversation was compacted here" in everything and "a branch was left here" in everything


def _all_pages(client: TestClient, url: str) -> str:
    pages = []
    while url:
        page = client.get(url).text
        pages.append(page)
        found = re.search(r'<a href="([^"]+)" rel="next">', page)
        url = html.unescape(found.group(1)) if found else ""
    return "\n".join(pages)


def test_a_long_session_comes_in_pages_holding_every_entry_once(home: WebHome, browser: TestClient):
    everything = _all_pages(browser, f"/session/pi/{LONG}")
    assert everything.count("<!doctype html>") > 3
    shown = re.findall(r'(?:<li class="turn [^"]*"|<details class="tool-result[^"]*") id="([^"]+)"', everything)
    journal = []
    offset: int | None = 0
    while offset is not None:
        page = home.cli_json("read", "--session", f"pi:{LONG}", "--offset", str(offset))
        journal += [e["entryId"] for e in page["entries"]]
        offset = page["nextOffset"]
    assert shown == journal and len(shown) == 180


def test_sessions_page_lists_every_session_with_a_link(home: WebHome, browser: TestClient):
    page = browser.get("/sessions?scope=global").text
    api = browser.get("/api/sessions?scope=global&limit=50").json()["sessions"]
    for session in api:
        assert f'href="/session/{session["agent"]}/{session["sessionId"]}"' in page
    assert {"pi", "claude", "codex"} <= {s["agent"] for s in api}


def test_an_unknown_session_or_entry_is_a_404_page(browser: TestClient):
    assert browser.get("/session/pi/nosuchsession").status_code == 404
    assert browser.get("/session/cursor/x").status_code == 404
    assert browser.get(f"/session/pi/{LONG}?at=ffffffff").status_code == 404
    assert browser.get(f"/session/pi/{LONG}?offset=-1").status_code == 400


# -- what must never be shown ---------------------------------------------------------------------
def test_a_planted_secret_appears_on_no_page(browser: TestClient):
    secrets = load_secrets(FIXTURES)
    data = json.loads((FIXTURES / "SECRETS.json").read_text())
    bodies = [browser.get("/sessions?scope=global").text, browser.get("/api/sessions?scope=global&limit=100").text]
    for session in browser.get("/api/sessions?scope=global&limit=100").json()["sessions"]:
        bodies.append(_all_pages(browser, f"/session/{session['agent']}/{session['sessionId']}"))
    opened = 0
    for item in data["secrets"]:
        # The results only: the page itself shows the words typed (here, the secret) back in the form.
        bodies.append(browser.get("/search", params={"q": item["value"], "scope": "global", "partial": "1"}).text)
        bodies.append(browser.get("/search", params={"q": item["kind"].replace("_", " "), "scope": "global"}).text)
        bodies.append(browser.get("/api/search", params={"q": item["value"], "scope": "global"}).text)
        for place in item["occurrences"]:
            answer = browser.get(f"/session/pi/{place['sessionId']}", params={"at": place["entryId"]})
            opened += answer.status_code == 200 and "[REDACTED:" in answer.text
            bodies.append(answer.text)
    assert opened > 10  # the entries holding secrets were shown, masked
    for body in bodies:
        for secret in secrets:
            assert secret not in body and html.escape(secret) not in body


def test_a_rewritten_journal_shows_no_stale_line(tmp_path: Path):
    folder = tmp_path / "s" / "--w--"
    folder.mkdir(parents=True)
    path = folder / "j.jsonl"

    def line(entry_id: str, text: str) -> str:
        return json.dumps({"type": "message", "id": entry_id, "parentId": None, "timestamp": "2026-09-01T10:00:01.000Z",
                           "message": {"role": "user", "content": text}})

    header = json.dumps({"type": "session", "version": 3, "id": "s1", "timestamp": "2026-09-01T10:00:00.000Z",
                         "cwd": "/w"})
    path.write_text("\n".join([header, line("old00001", "walrus original"), line("old00002", "second line")]) + "\n")
    home = WebHome(tmp_path, tmp_path / "index.db", [tmp_path / "s"], tmp_path)
    for client in _client(home):
        assert client.get(url_with_token(BASE, TOKEN)).status_code == 200
        link = html.unescape(_hits(client.get("/search?q=walrus").text)[0])
        assert "walrus original" in client.get(link).text
        path.write_text("\n".join([header, line("new00001", "penguin replace"), line("new00002", "second line")])
                        + "\n")
        after = [client.get(link), client.get("/search?q=walrus"), client.get("/session/pi/s1"),
                 client.get("/api/search?q=walrus"), client.get("/sessions?scope=global")]
        for answer in after:
            assert "walrus original" not in answer.text
        assert "penguin replace" in client.get("/session/pi/s1").text


def test_a_project_link_lists_that_projects_sessions_only(browser: TestClient):
    page = browser.get("/sessions?scope=global").text
    link = html.unescape(re.findall(r'<td class="project"[^>]*><a href="([^"]+)"', page)[0])
    cwd = parse_qs(urlsplit(link).query)["cwd"][0]
    listed = browser.get(link).text
    api = browser.get("/api/sessions", params={"scope": "project", "cwd": cwd}).json()
    assert api["scope"]["kind"] == "project" and api["sessions"]
    assert all(s["cwd"].startswith(api["scope"]["root"]) for s in api["sessions"])
    rows = re.findall(r'<td class="project" title="([^"]*)"', listed)
    assert sorted(html.unescape(r) for r in rows) == sorted(s["cwd"] for s in api["sessions"])


def test_assets_are_ours_and_nothing_outside_them_is_served(browser: TestClient):
    page = browser.get("/search?q=token").text
    assets = re.findall(r'(?:src|href)="(/static/[^"]+)"', page)
    assert sorted(assets) == ["/static/app.css", "/static/app.js"]
    assert not re.findall(r'(?:src|href)="(?:https?:)?//', page)  # no CDN, no other origin
    for asset in assets:
        assert browser.get(asset).status_code == 200
    for path in ("/static/%2e%2e/app.py", "/static/..%2fapp.py", "/static/%2e%2e/%2e%2e/service.py"):
        answer = browser.get(path)
        assert answer.status_code == 404 and "import" not in answer.text


def test_a_cut_entry_reads_whole_page_by_page_as_the_cli_reads_it(home: WebHome, browser: TestClient):
    session, entry = "01a0e742-a660-7416-842f-037c70ed5f55", "b6005626"
    page = browser.get(f"/session/pi/{session}", params={"at": entry}).text
    link = re.search(rf'<a href="(/session/pi/{session}/entry/{entry})">read it whole</a>', page)
    assert link, "a cut entry links to its whole text"
    texts, url = [], link.group(1)
    while url:
        shown = browser.get(url).text
        texts.append(html.unescape(re.search(r'<pre class="text">(.*?)</pre>', shown, re.S).group(1)))  # type: ignore[union-attr]
        found = re.search(r'<a href="([^"]+)" rel="next">', shown)
        url = html.unescape(found.group(1)) if found else ""
    whole, offset = [], 0
    while offset is not None:
        answer = home.cli_json("read", entry, "--session", f"pi:{session}", "--offset", str(offset))
        whole.append(answer["text"])
        offset = answer["nextOffset"]
    assert texts == whole and len(texts) == 4


def test_search_pages_go_forward_and_back_through_one_ranked_list(browser: TestClient):
    api = browser.get("/api/search?q=token&scope=global&limit=60").json()["results"]
    first = browser.get("/search?q=token&scope=global").text
    after = html.unescape(re.search(r'<a href="([^"]+)" rel="next">', first).group(1))  # type: ignore[union-attr]
    second = browser.get(after).text
    back = html.unescape(re.search(r'<a href="([^"]+)" rel="prev">', second).group(1))  # type: ignore[union-attr]
    assert 'rel="prev"' not in first and _hits(browser.get(back).text) == _hits(first)
    shown = [urlsplit(html.unescape(h)).fragment for h in _hits(first) + _hits(second)]
    assert shown == [hit["entryId"] for hit in api[:40]]


def test_head_answers_as_get_without_a_body(browser: TestClient, anonymous: TestClient):
    for path in ("/search?q=token", "/api/search?q=token", f"/session/pi/{LONG}", "/sessions"):
        answer = browser.head(path)
        assert answer.status_code == 200 and answer.content == b"", path
        assert anonymous.head(path).status_code == 401


def test_the_sessions_list_offers_more_when_it_is_full(browser: TestClient):
    few = browser.get("/sessions?scope=global&limit=5").text
    assert few.count("<tr>") == 6  # the header and five sessions
    more = html.unescape(re.search(r'<a href="([^"]+)" rel="next">more sessions</a>', few).group(1))  # type: ignore[union-attr]
    assert parse_qs(urlsplit(more).query) == {"scope": ["global"], "limit": ["10"]}
    assert browser.get(more).text.count("<tr>") == 11
    assert 'rel="next"' not in browser.get("/sessions?scope=global&limit=100").text


# -- thinking, and paging back --------------------------------------------------------------
# thinking, then a call; "hardcode" only in its thinking (another session's thinking says "hardcoded")
THOUGHT = ("01a0a9b1-d8c0-7020-b8d6-dc370f1d94dc", "28d68a1d")


def test_thinking_is_folded_in_its_turn_and_still_found(browser: TestClient):
    session_id, entry_id = THOUGHT
    hits = browser.get("/api/search?q=hardcode&scope=global").json()["results"]
    assert entry_id in [h["entryId"] for h in hits]  # a word said only in thinking is searchable
    page = browser.get(f"/session/pi/{session_id}").text
    turn = page.split(f'id="{entry_id}">', 1)[1].split("</li>", 1)[0]
    folded = re.search(r'<details class="thinking"><summary>thinking</summary><pre class="text">(.*?)</pre></details>',
                       turn, re.S)
    assert folded and "hardcode the key" in html.unescape(folded.group(1))
    rest = turn[:folded.start()] + turn[folded.end():]
    assert "hardcode" not in rest and 'class="text"' in rest  # shown once, folded; the call beside it
    # Opened from the hit, the same fold.
    at = browser.get(f"/session/pi/{session_id}?at={entry_id}").text
    assert at.count('<details class="thinking">') == page.count('<details class="thinking">') >= 1


def _ids(page: str) -> list[str]:
    return re.findall(r'(?:<li class="turn [^"]*"|<details class="tool-result[^"]*") id="([^"]+)"', page)


def _link(page: str, rel: str) -> str | None:
    found = re.search(rf'<a href="([^"]+)" rel="{rel}">', page)
    return html.unescape(found.group(1)) if found else None


def test_a_long_session_opened_in_the_middle_pages_back_and_forth_without_gap_or_overlap(tmp_path: Path):
    folder = tmp_path / "s" / "--w--"
    folder.mkdir(parents=True)
    order = [f"{i:08x}" for i in range(2_500)]
    lines = [json.dumps({"type": "session", "version": 3, "id": "long1", "timestamp": "2026-09-01T10:00:00.000Z",
                         "cwd": "/w"})]
    lines += [json.dumps({"type": "message", "id": e, "parentId": None, "timestamp": "2026-09-01T10:00:01.000Z",
                          "message": {"role": "user", "content": f"step {i} " + "of a long task " * 12}})
              for i, e in enumerate(order)]
    (folder / "j.jsonl").write_text("\n".join(lines) + "\n")
    home = WebHome(tmp_path, tmp_path / "index.db", [tmp_path / "s"], tmp_path)
    store = open_store(str(home.db))
    try:
        assert index_files(store, discover(home.folders), roots=as_roots(home.folders)).errors == []
    finally:
        store.close()
    for client in _client(home):
        assert client.get(url_with_token(BASE, TOKEN)).status_code == 200
        middle = order[1_250]
        opened = client.get(f"/session/pi/long1?at={middle}").text
        shown = _ids(opened)
        assert middle in shown and shown == order[order.index(shown[0]):order.index(shown[0]) + len(shown)]
        earlier, later = _link(opened, "prev"), _link(opened, "next")
        assert earlier and later and "earlier entries" in opened
        seen = list(shown)
        while earlier:  # back to the start: each page ends just before the one after it
            page = client.get(earlier).text
            ids = _ids(page)
            assert ids and order.index(ids[-1]) + 1 == order.index(seen[0])
            seen = ids + seen
            earlier = _link(page, "prev")
        while later:  # and on to the end
            page = client.get(later).text
            ids = _ids(page)
            assert ids and order.index(ids[0]) == order.index(seen[-1]) + 1
            seen += ids
            later = _link(page, "next")
        assert seen == order
        assert len(seen) > 10 * len(shown)  # many pages each way, not one
