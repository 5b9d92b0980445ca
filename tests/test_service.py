"""The service layer: what every front end gets from one request — pages that continue each
other, the agent's boundary, time bounds in either form, and a rewritten journal redone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from journal_index.data.store import Store
from journal_index.service import Caller, ReadRequest, Request, RequestError, Service

PERSON = Caller(cwd="/")
WORDS = ("token", "alembic heads", "rate limit", "")  # "": the newest entries


def _ids(page_hits: list) -> list[tuple[str, str | None]]:
    return [(h.entry_id, h.session_id) for h in page_hits]


@pytest.mark.parametrize("words", WORDS)
def test_pages_are_slices_of_one_ranked_list(indexed_store: Store, words: str) -> None:
    service = Service(indexed_store)
    whole = service.search(Request(words, scope="global", limit=12), PERSON)
    assert len(whole.result.hits) == 12  # enough hits for the pages to mean something
    pages: list = []
    offset: int | None = 0
    while offset is not None and offset < 12:
        page = service.search(Request(words, scope="global", limit=4, offset=offset), PERSON)
        assert page.offset == offset
        pages += page.result.hits
        offset = page.next_offset
    assert _ids(pages) == _ids(whole.result.hits)


def test_the_last_page_says_there_is_no_next(indexed_store: Store) -> None:
    service = Service(indexed_store)
    found = service.search(Request("selectinload", scope="global", limit=400), PERSON)
    assert found.next_offset is None
    assert 0 < len(found.result.hits) < 400


def test_a_page_past_the_candidates_is_refused(indexed_store: Store) -> None:
    with pytest.raises(RequestError, match="400 candidates"):
        Service(indexed_store).search(Request("token", limit=10, offset=395), PERSON)


def test_time_bounds_in_text_or_epoch_ms_are_the_same(indexed_store: Store) -> None:
    service = Service(indexed_store)
    as_text = service.resolve(Request("", since="2026-09-01", until="2026-09-30"), PERSON).filters
    as_ms = service.resolve(Request("", since=as_text.since, until=as_text.until), PERSON).filters
    assert as_text.since is not None and as_text.until is not None and as_text.since < as_text.until
    assert (as_text.since, as_text.until) == (as_ms.since, as_ms.until)


def test_an_agent_never_gets_a_scope_wider_than_its_limit(indexed_store: Store) -> None:
    agent = Caller(cwd="/home/dev/Apps/prjct/prjct-be", person=False, max_scope="project")
    with pytest.raises(RequestError) as refused:
        Service(indexed_store).search(Request("token", scope="global"), agent)
    assert refused.value.code == "scope_not_allowed"
    with pytest.raises(RequestError) as refused_read:
        Service(indexed_store).read(ReadRequest("whatever", scope="global"), agent)
    assert refused_read.value.code == "scope_not_allowed"


def test_an_agent_without_its_journal_has_no_session_scope(indexed_store: Store) -> None:
    agent = Caller(cwd="/home/dev/Apps/prjct/prjct-be", person=False, max_scope="session")
    with pytest.raises(RequestError) as refused:
        Service(indexed_store).search(Request("token"), agent)
    assert refused.value.code == "missing_argument"


def test_a_person_in_a_folder_without_sessions_sees_every_project(indexed_store: Store) -> None:
    resolved = Service(indexed_store).resolve(Request("token"), Caller(cwd="/nowhere/at/all"))
    assert resolved.filters.scope.kind == "global"
    assert resolved.note is not None and "/nowhere/at/all" in resolved.note
    kept = Service(indexed_store).resolve(Request("token", scope="project"), Caller(cwd="/nowhere/at/all"))
    assert kept.filters.scope.kind == "project" and kept.note is None


def test_a_rewritten_journal_is_redone_before_the_answer(indexed_store: Store, sessions_root: Path) -> None:
    service = Service(indexed_store)
    hit = service.search(Request("selectinload", scope="global", limit=1), PERSON).result.hits[0]
    journal = Path(hit.path)
    lines = journal.read_bytes().splitlines(keepends=True)
    # Same length, same place, another entry id: only the id check can tell.
    old = hit.entry_id.encode()
    lines = [line.replace(old, old[:-1] + (b"0" if old[-1:] != b"0" else b"1")) for line in lines]
    journal.write_bytes(b"".join(lines))
    answer = service.read(ReadRequest(hit.entry_id, scope="global"), PERSON)
    assert answer["status"] in {"not_found", "unavailable"}
    assert hit.entry_id not in json.dumps(indexed_store.rows(
        "SELECT entry_id FROM entries WHERE file_id = ?", (hit.file_id,)))  # the journal was indexed again
