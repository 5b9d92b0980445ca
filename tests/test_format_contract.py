"""What every journal format must honour, whichever agent it reads (DESIGN §3, §5).

One suite, run for each registered format and for a toy format registered here by a fixture
(the way a plugin hook is proven with a mock plugin): if a format module satisfies the
protocol, the indexer, reads and searches keep their promises for it. Each format gets the
same short session from tests/format_samples.py.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from journal_index import formats
from journal_index.data.store import Store, open_store
from journal_index.formats import (
    FORMATS,
    AgentHints,
    Entry,
    Header,
    Parsed,
    Skip,
    ToolCall,
    first_object,
    is_own_tool_name,
    load_object,
    parse_time,
)
from journal_index.indexing.indexer import index_file
from journal_index.query import Filters, search
from journal_index.query.scope import resolve_scope
from tests import format_samples as samples
from tests.helpers import index_tokens, scratch_snapshot, served_hits, served_read, snapshot, vocabulary

# -- a toy format, registered only for this suite ----------------------------------------------


class ToyFormat:
    """Lines ``{"toy": kind, "id", "at", "text", "call"?, "answers"?}`` after a header line."""

    NAME = "toy"
    LABEL = "Toy"
    COLLECTABLE = False

    def default_roots(self, env: Mapping[str, str], home: Path) -> list[Path]:
        return [home / ".toy"]

    def env_vars(self) -> tuple[str, ...]:
        return ()

    def owns(self, path: str) -> bool:
        return path.endswith(samples.TOY_SUFFIX)

    def sniff(self, head: bytes) -> bool:
        obj = first_object(head)
        return obj is not None and "toy" in obj

    def read_header(self, path: str, head: bytes) -> Header | None:
        obj = first_object(head)
        if obj is None or obj.get("toy") != "header":
            return None
        return Header(obj.get("session"), obj.get("cwd"), parse_time(obj.get("at")))

    def parse_line(self, line: bytes, offset: int) -> Parsed:
        obj = load_object(line)
        if obj is None or not isinstance(obj.get("toy"), str):
            return Skip.MALFORMED
        kind = obj["toy"]
        if kind == "header":
            return Skip.NOT_INDEXED
        text, ts = obj.get("text", ""), parse_time(obj.get("at"))
        if kind == "user":
            return Entry(obj["id"], None, ts, "user", "user", None, [text])
        if kind == "compaction":
            return Entry(obj["id"], None, ts, "compaction", None, None, [text])
        if kind == "result":
            return Entry(obj["id"], None, ts, "tool_result", "tool", None, [], answers=obj.get("answers"),
                         output=[text])
        if kind == "assistant":
            calls = []
            call = obj.get("call")
            if isinstance(call, dict):
                calls.append(ToolCall(call["id"], call["name"], call["args"], shown=not self.is_own_tool(call["name"])))
            return Entry(obj["id"], None, ts, "assistant", "assistant", None, [text], calls=calls)
        return Skip.UNKNOWN

    def is_own_tool(self, name: str) -> bool:
        return is_own_tool_name(name)

    def is_host(self, argv: Sequence[str]) -> bool:
        return False

    def current_journals(self, roots: Sequence[Path], cwd: str, hints: AgentHints) -> list[str]:
        return []


@pytest.fixture
def toy_format() -> Iterator[ToyFormat]:
    toy = ToyFormat()
    formats.register(toy)
    try:
        yield toy
    finally:
        FORMATS.pop(toy.NAME, None)


BUILTIN = sorted(FORMATS)
ALL = [*BUILTIN, "toy"]


@pytest.fixture(params=ALL)
def sample(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[samples.Sample]:
    name = request.param
    if name == "toy":
        request.getfixturevalue("toy_format")
    made = samples.WRITERS[name](tmp_path / "journals")
    made.write()
    yield made


def test_the_suite_covers_every_registered_format() -> None:
    assert set(BUILTIN) <= set(samples.WRITERS), "a registered format has no sample journal to test"


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[Store]:
    store = open_store(str(tmp_path / "contract.db"))
    yield store
    store.close()


def _rows(store: Store) -> list[tuple[Any, ...]]:
    return store.rows("SELECT e.entry_id, e.kind, e.tool, f.session_id, e.offset, f.format FROM entries e "
                      "JOIN files f ON f.id = e.file_id ORDER BY e.offset")


def _global(store: Store) -> Filters:
    return Filters(resolve_scope(store, "global"))


def _read(store: Store, entry_id: str) -> dict[str, Any]:
    return served_read(store, entry_id)


def _texts(store: Store, words: str) -> list[str]:
    return [hit.excerpt for hit in served_hits(store, words, limit=50)]


def test_the_format_is_recognized_and_indexed(fresh: Store, sample: samples.Sample) -> None:
    result = index_file(fresh, sample.path)
    assert result.error is None and result.entries > 0
    assert {row[5] for row in _rows(fresh)} == {sample.fmt}
    kinds = {row[1] for row in _rows(fresh)}
    assert {"user", "assistant", "tool_result", "compaction"} <= kinds


def test_every_entry_reads_back_with_its_own_text(fresh: Store, sample: samples.Sample) -> None:
    index_file(fresh, sample.path)
    expected = {"user": [samples.USER_WORDS, samples.LATER_WORDS], "compaction": [samples.COMPACTION_WORDS],
                "tool_result": [samples.RESULT_WORDS]}
    seen: dict[str, list[str]] = {}
    for entry_id, kind, _tool, _session, _offset, _fmt in _rows(fresh):
        answer = _read(fresh, entry_id)
        assert answer["status"] == "ok", answer
        assert answer["entryId"] == entry_id and answer["kind"] == kind
        seen.setdefault(kind, []).append(answer["text"])
    for kind, words in expected.items():
        for text in words:
            assert any(text in t for t in seen[kind]), (kind, text, seen.get(kind))
    assert any(samples.ASSISTANT_WORDS in t for t in seen["assistant"])


def test_a_tool_result_is_led_by_its_call(fresh: Store, sample: samples.Sample) -> None:
    index_file(fresh, sample.path)
    results = [row for row in _rows(fresh) if row[1] == "tool_result"]
    assert len(results) == 1, results  # our own answer is not among them
    entry_id, _kind, tool, *_ = results[0]
    assert tool == sample.call_name
    text = _read(fresh, entry_id)["text"]
    assert text.startswith(f"{sample.call_name} {samples.CALL_KEY}\n"), text
    assert samples.RESULT_WORDS in text
    # the call's key argument finds the result (it is part of the result's indexed text)
    hits = search(fresh, "zymurgy_module zymurgyplanet", _global(fresh), limit=10).hits
    assert [h.entry_id for h in hits if h.kind == "tool_result"] == [entry_id]


def test_our_own_tool_is_never_indexed(fresh: Store, sample: samples.Sample) -> None:
    index_file(fresh, sample.path)
    terms = vocabulary(fresh)
    for words in (samples.OWN_ANSWER, samples.OWN_QUERY):
        tokens = index_tokens(fresh, words)
        assert tokens and not set(tokens) & terms, (words, set(tokens) & terms)
    assert search(fresh, samples.OWN_ANSWER, _global(fresh)).hits == []
    # and the rest of the session is
    assert set(index_tokens(fresh, samples.USER_WORDS + " " + samples.RESULT_WORDS)) <= terms


def test_two_passes_index_nothing_twice(fresh: Store, sample: samples.Sample) -> None:
    sample.write(len(sample.lines) - 2)
    index_file(fresh, sample.path)
    index_file(fresh, sample.path)
    sample.write()
    os.utime(sample.path, ns=(1, 1))  # a changed mtime alone must not index again either
    index_file(fresh, sample.path)
    index_file(fresh, sample.path)
    places = fresh.rows("SELECT file_id, offset FROM entries")
    assert len(places) == len(set(places))
    assert snapshot(fresh) == scratch_snapshot([sample.path])


def _boundaries(sample: samples.Sample) -> list[int]:
    return list(range(1, len(sample.lines) + 1))


def test_resuming_anywhere_equals_indexing_from_scratch(fresh: Store, sample: samples.Sample) -> None:
    """A pass may stop at any complete line (a crash, the agent still writing): the next passes
    must end where one pass over the whole journal ends."""
    for count in _boundaries(sample):
        sample.write(count)
        index_file(fresh, sample.path)
    assert snapshot(fresh) == scratch_snapshot([sample.path])


def test_half_written_lines_are_waited_for(tmp_path: Path, sample: samples.Sample) -> None:
    store = open_store(str(tmp_path / "halves.db"))
    try:
        for count in range(len(sample.lines)):
            half = sample.lines[count][: len(sample.lines[count]) // 2]
            sample.write(count, tail=half)  # the agent is in the middle of writing a line
            index_file(store, sample.path)
            sample.write(count + 1)
            index_file(store, sample.path)
        assert snapshot(store) == scratch_snapshot([sample.path])
    finally:
        store.close()


def _rewrite_user_entry(sample: samples.Sample) -> tuple[bytes, str | None]:
    """The journal with the user entry replaced in place by another of the same length (other
    words, and another id where ids are written); returns the new line and its id."""
    index = next(i for i, line in enumerate(sample.lines)
                 if samples.USER_WORDS.encode() in line and _is_indexed(sample, line))
    old = sample.lines[index]
    new = old.replace(samples.USER_WORDS.encode(), samples.REWRITTEN_WORDS.encode())
    if sample.user_id is not None:
        other = sample.user_id[:-1] + ("0" if sample.user_id[-1] != "0" else "1")
        new = new.replace(sample.user_id.encode(), other.encode())
    assert len(new) == len(old) and new != old
    data = sample.path.read_bytes()
    at = data.index(old + b"\n")
    with open(sample.path, "r+b") as handle:  # in place: same size, same inode
        handle.seek(at)
        handle.write(new)
    parsed = formats.get_format(sample.fmt).parse_line(new, at)
    assert isinstance(parsed, Entry)
    return new, parsed.entry_id


def _is_indexed(sample: samples.Sample, line: bytes) -> bool:
    return isinstance(formats.get_format(sample.fmt).parse_line(line, 0), Entry)


@pytest.mark.parametrize("keep_mtime", [False, True], ids=["mtime-changed", "mtime-kept"])
def test_a_same_length_rewrite_never_yields_a_stale_line(fresh: Store, sample: samples.Sample,
                                                         keep_mtime: bool) -> None:
    index_file(fresh, sample.path)
    old_id = next(row[0] for row in _rows(fresh) if row[1] == "user")
    before = sample.path.stat()
    _new_line, new_id = _rewrite_user_entry(sample)
    if keep_mtime:  # the worst case: nothing about the file tells the rewrite
        os.utime(sample.path, ns=(before.st_atime_ns, before.st_mtime_ns))
    else:
        index_file(fresh, sample.path)
    # searching the old words may find the entry only with its current text, never the old
    for text in _texts(fresh, samples.USER_WORDS):
        assert samples.USER_WORDS not in text
    answer = _read(fresh, old_id)
    if answer["status"] == "ok":  # the id survived the rewrite (it is written in the line)
        assert samples.USER_WORDS not in answer["text"]
        assert old_id == new_id
    else:
        assert answer["status"] in ("not_found", "unavailable")
    # the new words are found and read back as they are now
    assert any(samples.REWRITTEN_WORDS in t for t in _texts(fresh, samples.REWRITTEN_WORDS))
    assert new_id is not None
    again = _read(fresh, new_id)
    assert again["status"] == "ok" and samples.REWRITTEN_WORDS in again["text"]
