"""The ``memory_context`` contract: its JSON arguments, checked (its name, description and
instructions are in :mod:`journal_index.agent.tool_text`, re-exported here).

Kept apart from the tool's work so that the MCP server can list the tool before anything
heavier is imported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from journal_index.agent.tool_text import DESCRIPTION, INSTRUCTIONS, TOOL_NAME  # noqa: F401 (re-exported)
from journal_index.config import AGENT_SCOPES, CANDIDATES
from journal_index.formats import KINDS

ACTIONS = ("search", "read", "summaries")

SEARCH_LIMIT = 8  # hits per answer: with capped excerpts, well under ~2,000 tokens
MAX_RESULT_OFFSET = CANDIDATES - SEARCH_LIMIT  # ranking looks at this many candidates at most
MAX_TEXT_OFFSET = 1 << 31
MAX_QUERY_CHARS = 2_000
MAX_ID_CHARS = 200
# A session id or a prefix of it, optionally qualified by its agent ("claude:5a3ce17f").
_SESSION_ID = re.compile(r"^(?:[a-z]{1,16}:)?[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": list(ACTIONS),
                   "description": "search: find entries by words; read: one entry's full text; "
                                  "summaries: compaction and branch summaries, newest first."},
        "query": {"type": "string", "maxLength": MAX_QUERY_CHARS,
                  "description": "search: words to find (all words, else any). Omit to list the newest."},
        "entryId": {"type": "string", "maxLength": MAX_ID_CHARS,
                    "description": "read: the entry id of a search hit."},
        "sessionId": {"type": "string", "maxLength": 128,
                      "description": "A hit's session (a unique prefix is enough; agent:id when two agents share "
                                     "an id): read the entry there, or search that session with scope "
                                     "'session' (default: your own)."},
        "since": {"type": "string",
                  "description": "From: 2d, 3h, 30m, 1w (ago), today, yesterday, 2026-09-01 (local day) "
                                 "or an ISO-8601 time."},
        "until": {"type": "string",
                  "description": "Up to: the same forms (2026-09-30: the whole local day)."},
        "scope": {"type": "string", "enum": list(AGENT_SCOPES),
                  "description": "Which sessions: this session, this project (default), all, or team: "
                                 "what the team hub shares (hits name their host); the operator may forbid "
                                 "wider ones (team is off unless allowed)."},
        "kind": {"type": "string", "enum": list(KINDS), "description": "Only entries of this kind."},
        "offset": {"type": "integer", "minimum": 0,
                   "description": "read: character offset of the page; search, summaries: results to skip."},
    },
    "required": ["action"],
    "additionalProperties": False,
}


class ToolError(Exception):
    """An answer-worthy failure: a code for programs, a message and a hint for the model."""

    def __init__(self, code: str, message: str, hint: str) -> None:
        super().__init__(message)
        self.code, self.message, self.hint = code, message, hint

    def as_json(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message, "hint": self.hint}


@dataclass
class Args:
    action: str
    query: str | None = None
    entry_id: str | None = None
    session_id: str | None = None
    since: str | None = None
    until: str | None = None
    scope: str | None = None
    kind: str | None = None
    offset: int = 0


def bad_argument(message: str, hint: str) -> ToolError:
    return ToolError("bad_argument", message, hint)


def _string(raw: dict[str, Any], key: str, max_chars: int) -> str | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise bad_argument(f"{key} must be a string, not {type(value).__name__}", f'e.g. "{key}": "…"')
    if len(value) > max_chars:
        raise bad_argument(f"{key} is longer than {max_chars} characters", f"shorten {key}")
    return value


def parse_args(raw: Any) -> Args:
    """Check the arguments against INPUT_SCHEMA by hand, with a hint for each mistake."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise bad_argument("the arguments must be a JSON object", '{"action": "search", "query": "…"}')
    unknown = sorted(set(raw) - set(INPUT_SCHEMA["properties"]))
    if unknown:
        raise bad_argument(f"unknown argument(s): {', '.join(map(str, unknown))}",
                   f"use only {', '.join(INPUT_SCHEMA['properties'])}")
    action = raw.get("action")
    if action is None:
        raise ToolError("missing_argument", "action is required", 'e.g. {"action": "search", "query": "…"}')
    if action not in ACTIONS:
        raise bad_argument(f"unknown action {action!r}", f"use one of {', '.join(ACTIONS)}")
    args = Args(action=action)
    args.query = _string(raw, "query", MAX_QUERY_CHARS)
    args.entry_id = _string(raw, "entryId", MAX_ID_CHARS)
    args.session_id = _string(raw, "sessionId", 128)
    if args.session_id is not None and not _SESSION_ID.match(args.session_id):
        raise bad_argument("sessionId is not a session id", "pass the id from a hit's header, or omit it")
    args.session_id = args.session_id or None
    args.since = _string(raw, "since", 64)
    args.until = _string(raw, "until", 64)
    args.scope = _string(raw, "scope", 16)
    if args.scope is not None and args.scope not in AGENT_SCOPES:
        raise bad_argument(f"unknown scope {args.scope!r}", f"use one of {', '.join(AGENT_SCOPES)}")
    args.kind = _string(raw, "kind", 32)
    if args.kind is not None and args.kind not in KINDS:
        raise bad_argument(f"unknown kind {args.kind!r}", f"use one of {', '.join(KINDS)}")
    offset = raw.get("offset", 0)
    if offset is None:
        offset = 0
    if isinstance(offset, float) and offset.is_integer():
        offset = int(offset)
    if not isinstance(offset, int) or isinstance(offset, bool):
        raise bad_argument(f"offset must be an integer, not {type(offset).__name__}", '"offset": 8')
    limit = MAX_TEXT_OFFSET if action == "read" else MAX_RESULT_OFFSET
    if not 0 <= offset <= limit:
        raise bad_argument(f"offset {offset} is out of range (0–{limit})",
                   "use the offset a previous answer suggested" if offset > 0 else "offset starts at 0")
    args.offset = offset
    if action == "read" and not args.entry_id:
        raise ToolError("missing_argument", "read needs an entryId",
                        'take one from a search hit: {"action": "read", "entryId": "…"}')
    return args
