"""The web view in a real headless browser: Debian's chromium and chromium-driver, driven by
selenium, against the real `journal-index serve` in a subprocess. Type a query, see the hit
highlighted, open it, land on the entry in the session view, fold and unfold a tool result; no
token and a wrong Host are refused. Screenshots go to the test's tmp folder and benchmarks/out/."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service as ChromeService
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from tests.conftest import FIXTURES, REPO
from tests.helpers import load_secrets
from tests.web_home import WebHome, make_home
from tests.web_server import Served, serve

pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
OUT = REPO / "benchmarks" / "out"
WAIT = 15


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> WebHome:
    return make_home(tmp_path_factory.mktemp("browser"))


@pytest.fixture(scope="module")
def served(home: WebHome) -> Iterator[Served]:
    server = serve(home)
    yield server
    status, _, err = server.stop()
    assert status == 0, err


def _chromium(profile: Path, javascript: bool = True) -> WebDriver:
    # The browser suite needs them (.ci/run installs them): fail, never skip, when they are missing.
    assert Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists(), \
        "install Debian's chromium and chromium-driver: apt-get install -y chromium chromium-driver"
    options = webdriver.ChromeOptions()
    if not javascript:
        options.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1280,1000",
                 f"--user-data-dir={profile}"):
        options.add_argument(flag)
    browser = webdriver.Chrome(options=options, service=ChromeService(executable_path=CHROMEDRIVER))
    browser.set_page_load_timeout(30)
    return browser


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    browser = _chromium(tmp_path_factory.mktemp("chromium-profile"))
    yield browser
    browser.quit()


def _shot(driver: WebDriver, tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    assert driver.save_screenshot(str(path))
    OUT.mkdir(parents=True, exist_ok=True)
    shutil.copy(path, OUT / name)
    return path


def _body(driver: WebDriver) -> str:
    return driver.find_element(By.TAG_NAME, "body").text


def test_no_token_and_a_wrong_host_are_refused(driver: WebDriver, served: Served):
    driver.get(f"{served.base}/search")
    driver.delete_all_cookies()
    for path in ("/search?q=token", "/sessions", "/api/search?q=token"):
        driver.get(served.base + path)
        assert "not signed in" in _body(driver) and "prjct" not in driver.page_source
    # The same server by another name (what a rebinding page's requests look like), token and all.
    driver.get(served.url.replace("127.0.0.1", "localhost"))
    assert "this server answers only at" in _body(driver) and "prjct" not in driver.page_source
    driver.get(f"{served.base}/?t=wrong")
    assert "wrong token" in _body(driver)


def test_type_a_query_open_the_hit_and_fold_a_tool_result(driver: WebDriver, served: Served, tmp_path: Path):
    driver.get(served.url)
    assert urlsplit(driver.current_url).path == "/search" and "t=" not in driver.current_url  # token dropped
    box = driver.find_element(By.ID, "q")
    box.send_keys("alembic upgrade")
    wait = WebDriverWait(driver, WAIT)
    # As-you-type: results come without pressing Enter, and the URL keeps the query.
    wait.until(lambda d: "alembic upgrade" in (parse_qs(urlsplit(d.current_url).query).get("q") or [""])[0])
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#results .hit mark"))
    marks = [m.text.lower() for m in driver.find_elements(By.CSS_SELECTOR, "#results .hit mark")]
    assert marks and all("alembic" in m or "upgrade" in m for m in marks)
    first = driver.find_element(By.CSS_SELECTOR, "#results .hit")
    meta = first.find_element(By.CSS_SELECTOR, ".meta").text
    assert "pi" in meta and "/home/dev" in meta and "session" in meta
    _shot(driver, tmp_path, "web-search.png")

    link = first.find_element(By.CSS_SELECTOR, "a.hit-link")
    href = urlsplit(link.get_attribute("href") or "")
    entry_id = href.fragment
    link.click()
    wait.until(lambda d: urlsplit(d.current_url).path.startswith("/session/"))
    assert urlsplit(driver.current_url).fragment == entry_id
    target = driver.find_element(By.ID, entry_id)
    assert "target" in (target.get_attribute("class") or "")
    assert target.is_displayed() and "this entry" in target.text
    top = driver.execute_script("return arguments[0].getBoundingClientRect().top", target)
    assert 0 <= top < driver.execute_script("return window.innerHeight")  # scrolled to it
    # The entries around it (8 each side), tool results folded into the turns that called them.
    assert len(driver.find_elements(By.CSS_SELECTOR, "#conversation > li, #conversation details")) >= 9

    folded = next(d for d in driver.find_elements(By.CSS_SELECTOR, "details.tool-result")
                  if d.get_attribute("open") is None)
    text = folded.find_element(By.CSS_SELECTOR, "pre.text")
    assert not text.is_displayed()
    folded.find_element(By.TAG_NAME, "summary").click()
    wait.until(lambda d: folded.get_attribute("open") is not None and text.is_displayed())
    _shot(driver, tmp_path, "web-session.png")
    folded.find_element(By.TAG_NAME, "summary").click()
    wait.until(lambda d: folded.get_attribute("open") is None and not text.is_displayed())


def test_a_long_session_pages_and_a_link_to_a_later_entry_finds_it(driver: WebDriver, served: Served, home: WebHome,
                                                                   tmp_path: Path):
    driver.get(served.url)
    driver.get(f"{served.base}/sessions?scope=global")
    assert len(driver.find_elements(By.CSS_SELECTOR, "table.sessions tbody tr")) == 32
    _shot(driver, tmp_path, "web-sessions.png")
    session = "01a05d32-b780-77a8-84b6-ccc1caffba94"
    whole = home.cli_json("read", "--session", f"pi:{session}", "--offset", "120")
    later = whole["entries"][0]["entryId"]
    # A bare /session/<agent>/<id>#<entry> whose entry is not on the first page: the page asks for it.
    driver.get(f"{served.base}/session/pi/{session}#{later}")
    WebDriverWait(driver, WAIT).until(lambda d: d.find_elements(By.CSS_SELECTOR, f'[id="{later}"].target'))
    # A compaction, marked where it happened.
    driver.get(f"{served.base}/session/pi/{session}?at=f7499c6e#f7499c6e")
    summary = driver.find_element(By.ID, "f7499c6e")
    assert "turn-summary" in (summary.get_attribute("class") or "") and "compacted here" in summary.text
    _shot(driver, tmp_path, "web-compaction.png")
    driver.get(f"{served.base}/session/pi/{session}")
    first = driver.find_element(By.CSS_SELECTOR, "#conversation > li").get_attribute("id")
    assert not driver.find_elements(By.CSS_SELECTOR, 'a[rel="prev"]')  # nothing before the start
    driver.find_element(By.CSS_SELECTOR, 'a[rel="next"]').click()
    WebDriverWait(driver, WAIT).until(lambda d: "offset=" in d.current_url)
    assert "entries" in driver.find_element(By.CSS_SELECTOR, ".where").text
    # And back: the earlier entries are the first page again.
    driver.find_element(By.CSS_SELECTOR, 'a[rel="prev"]').click()
    WebDriverWait(driver, WAIT).until(lambda d: "before=" in d.current_url)
    assert driver.find_element(By.CSS_SELECTOR, "#conversation > li").get_attribute("id") == first


def test_thinking_is_folded_and_unfolds(driver: WebDriver, served: Served, tmp_path: Path):
    driver.get(served.url)
    driver.get(f"{served.base}/session/pi/01a0a9b1-d8c0-7020-b8d6-dc370f1d94dc?at=28d68a1d#28d68a1d")
    folded = driver.find_element(By.CSS_SELECTOR, '[id="28d68a1d"] details.thinking')
    text = folded.find_element(By.CSS_SELECTOR, "pre.text")
    assert folded.get_attribute("open") is None and not text.is_displayed()
    folded.find_element(By.TAG_NAME, "summary").click()
    WebDriverWait(driver, WAIT).until(lambda d: text.is_displayed() and "hardcode" in text.text)
    _shot(driver, tmp_path, "web-thinking.png")


def test_a_planted_secret_is_on_no_page_the_browser_shows(driver: WebDriver, served: Served):
    driver.get(served.url)
    secrets = load_secrets(FIXTURES)
    data = json.loads((FIXTURES / "SECRETS.json").read_text())
    masked = 0
    for item in data["secrets"][:8]:
        place = item["occurrences"][0]
        driver.get(f"{served.base}/session/pi/{place['sessionId']}?at={place['entryId']}")
        source = driver.page_source
        masked += "[REDACTED:" in source
        assert not [s for s in secrets if s in source]
    assert masked >= 6


def test_without_javascript_the_form_searches_and_the_hit_opens(served: Served, tmp_path: Path):
    browser = _chromium(tmp_path / "profile", javascript=False)
    try:
        browser.get(served.url)
        box = browser.find_element(By.ID, "q")
        box.send_keys("alembic upgrade")
        time.sleep(1)  # four times the script's pause: with scripts on, the URL would hold the query by now
        assert "q=" not in browser.current_url and not browser.find_elements(By.CSS_SELECTOR, "#results mark")
        box.submit()
        WebDriverWait(browser, WAIT).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#results .hit mark"))
        assert parse_qs(urlsplit(browser.current_url).query)["q"] == ["alembic upgrade"]
        link = browser.find_element(By.CSS_SELECTOR, "#results a.hit-link")
        entry_id = urlsplit(link.get_attribute("href") or "").fragment
        link.click()
        WebDriverWait(browser, WAIT).until(lambda d: d.find_elements(By.CSS_SELECTOR, f'[id="{entry_id}"].target'))
    finally:
        browser.quit()
