"""Our tool's answers as pi carried them: what the model was sent, and what pi's journal holds.

Under either exposure a test scripts the same calls (:func:`call`) and reads the answers back
the same way (:func:`answers`):

* ``direct``: the model calls ``mcp__journal_index__memory_context``; pi sends the model our text
  as the tool message, and records ``isError`` in its journal (the model is not told it).
* ``codemode`` (pi 1.6's default): the model writes a script calling
  ``tools.mcp__journal_index__memory_context(...)``; the script returns ``{isError, text}`` as JSON,
  which pi sends the model after its ``Script completed`` preamble.

Each answer is taken from the tool message pi sent to the model (paired with the journal's
toolResult by call id), so a test asserts what the model actually got. Every answer must be
signed (:data:`ANSWER_START` … :data:`ANSWER_END`), and nothing pi sent the model may hold a
doubled ellipsis.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from journal_index.text.entry_text import ANSWER_END, ANSWER_START
from tests.e2e.pi_host import JournalFile, PiRun
from tests.e2e.scripted_model import ToolCall

DIRECT_NAME = "mcp__journal_index__memory_context"
SERVER_LINE = "- mcp__journal_index (codemode)"
EXPOSURES = ("codemode", "direct")
DOUBLED_ELLIPSIS = "……"


def codemode_call(arguments: dict[str, Any]) -> ToolCall:
    """A codemode script that calls our tool once and returns its text and isError as JSON."""
    script = (f"const r = await tools.{DIRECT_NAME}({json.dumps(arguments)});\n"
              "return JSON.stringify({isError: r.isError ?? null, text: r.content[0].text});")
    return ToolCall("codemode", {"code": script})


def call(exposure: str, arguments: dict[str, Any]) -> ToolCall:
    """The model's turn that calls our tool once with ``arguments``, under ``exposure``."""
    if exposure == "codemode":
        return codemode_call(arguments)
    assert exposure == "direct", exposure
    return ToolCall(DIRECT_NAME, arguments)


def script_output(tool_result: str) -> dict[str, Any]:
    """The JSON a ``codemode_call`` script returned, out of codemode's result text."""
    assert tool_result.startswith("Script completed"), tool_result
    return dict(json.loads(tool_result[tool_result.index("{"):]))


def result_text(message: dict[str, Any]) -> str:
    """A journal toolResult's text as pi sends it to the model: its text blocks, joined by newlines."""
    return "\n".join(block["text"] for block in message["content"] if block.get("type") == "text")


@dataclass
class Hit:
    number: int
    kind: str
    entry_id: str
    session_id: str
    excerpt: str
    also_in: list[str] = field(default_factory=list)


_HIT = re.compile(r"^\[(\d+)\] .+? · (\w+) · \w+ · entry (\S+) · session (\S+)(?: · .*)?$")
_COPIES = re.compile(r"^ {4}\(the same text is also in sessions? (.+?)(?: and \d+ more)?\)$")


@dataclass
class Answer:
    """One answer of ours, as pi sent it to the model."""

    call_id: str
    arguments: dict[str, Any]  # what the model asked (the script's call under codemode)
    sent: str  # the tool message content pi sent to the model
    text: str  # our signed answer inside it
    is_error: bool  # as the model's side sees it: the journal's isError (direct), r.isError (codemode)

    @property
    def lines(self) -> list[str]:
        """The answer's lines without the signature."""
        return self.text.splitlines()[1:-1]

    @property
    def body(self) -> str:
        return "\n".join(self.lines)

    @property
    def index_line(self) -> str:
        return next(line for line in self.lines if line.startswith("index: "))

    def hits(self) -> list[Hit]:
        found: list[Hit] = []
        lines = self.lines
        for n, line in enumerate(lines):
            header = _HIT.match(line)
            if header:
                assert n + 1 < len(lines) and lines[n + 1].startswith("    "), self.text
                found.append(Hit(int(header[1]), header[2], header[3], header[4], lines[n + 1][4:]))
                continue
            copies = _COPIES.match(line)
            if copies and found:
                found[-1].also_in = [s.strip() for s in copies[1].split(",")]
        return found

    def describe(self) -> str:
        return f"call {self.arguments} → isError {self.is_error}:\n{self.text}"


def _tool_messages(run: PiRun) -> dict[str, str]:
    """Every tool message pi sent the model in this run, by tool call id."""
    sent: dict[str, str] = {}
    for request in run.requests:
        for call_id, text in request.tool_results():
            sent.setdefault(call_id, text)
    return sent


def answers(run: PiRun, exposure: str, journal: JournalFile | None = None) -> list[Answer]:
    """Our answers of this run, in order, as the model was sent them (checked signed and free of
    doubled ellipses)."""
    journal = journal or run.journal
    sent = _tool_messages(run)
    calls = {c["id"]: c for c in journal.tool_calls()}
    out = []
    for result in journal.tool_results():
        call_id = result["toolCallId"]
        assert call_id in sent, f"pi never sent the model the result of {call_id}"
        text = sent[call_id]
        assert text == result_text(result), "the journal holds another text than pi sent the model"
        assert DOUBLED_ELLIPSIS not in text, f"the model was sent a doubled ellipsis:\n{text}"
        arguments = calls[call_id]["arguments"]
        if exposure == "codemode":
            assert result["toolName"] == "codemode", result
            output = script_output(text)
            ours, is_error = output["text"], output["isError"]
            nested = result["nestedCalls"]["calls"]
            assert [c["name"] for c in nested] == [DIRECT_NAME], nested
            arguments = nested[0]["arguments"]
        else:
            assert result["toolName"] == DIRECT_NAME, result
            ours, is_error = text, result["isError"]
        assert ours.startswith(ANSWER_START + "\n") and ours.endswith("\n" + ANSWER_END), \
            f"the answer is not signed:\n{ours}"
        out.append(Answer(call_id, arguments, text, ours, bool(is_error)))
    return out


def model_texts(run: PiRun) -> list[str]:
    """Every tool message pi sent the model in this run (ours and any other tool's)."""
    return list(_tool_messages(run).values())
