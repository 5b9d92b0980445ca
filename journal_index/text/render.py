"""Text for people and for models: search hits, read pages, errors, status.

One renderer serves the CLI and the agent tool; they differ in presentation only (colour and
short session ids for people; numbered hits, full ids, ``read more`` calls and a signature for
the model). JSON output never passes through here. Every string shown was redacted by the
query layer or is redacted here (cwds come from journals).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

import orjson

from journal_index.query import Hit, SearchResult, iso, short_entry_id
from journal_index.query.scope import scope_words
from journal_index.redact import redact
from journal_index.text.counts import count
from journal_index.text.entry_text import ANSWER_END, ANSWER_START

BOLD_YELLOW = "\x1b[1;33m"
DIM = "\x1b[2m"
RESET = "\x1b[0m"
SHORT_ID = 8


@dataclass(frozen=True)
class Style:
    for_model: bool = False
    color: bool = False


PEOPLE = Style()
MODEL = Style(for_model=True)


def use_color(stream: Any = None) -> bool:
    stream = stream or sys.stdout
    return "NO_COLOR" not in os.environ and hasattr(stream, "isatty") and stream.isatty()


# Fields that hold text already redacted as entry text (redacting twice costs, it is not wrong).
_REDACTED_FIELDS = frozenset({"text", "excerpt"})


def redact_json(value: Any) -> Any:
    """Every string in a JSON value redacted: ids, cwds, paths, tool and session names come
    from journals too (DESIGN invariant 5)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_json(v) for v in value]
    if isinstance(value, dict):
        return {k: v if k in _REDACTED_FIELDS else redact_json(v) for k, v in value.items()}
    return value


def signed(text: str) -> str:
    """An answer for the model, signed so that no host's wrapper can get it indexed."""
    return f"{ANSWER_START}\n{text}\n{ANSWER_END}"


def as_json_line(value: Any) -> str:
    return orjson.dumps(value).decode()


def highlight(text: str, spans: list[tuple[int, int]], color: bool) -> str:
    if not color or not spans:
        return text
    out, last = [], 0
    for start, end in sorted(spans):
        if start < last:
            continue
        out.append(text[last:start])
        out.append(BOLD_YELLOW + text[start:end] + RESET)
        last = end
    out.append(text[last:])
    return "".join(out)


def _session(session_id: str | None, style: Style) -> str:
    if not session_id:
        return "?"
    return session_id if style.for_model else session_id[:SHORT_ID]


def _entry(entry_id: str, style: Style) -> str:
    """Full ids for the model (it copies them into calls); for people every agent's id the
    same short way, which ``read`` takes back."""
    return entry_id if style.for_model else short_entry_id(entry_id)


def where(result: SearchResult) -> str:
    return scope_words(result.scope)


def hit_header(hit: Hit, style: Style, root: str | None = None) -> str:
    """One line naming a hit; redacted whole (ids, cwds and tool names come from journals)."""
    when = (iso(hit.ts) or "?")[:16].replace("T", " ")
    if style.for_model:
        # The project root is in the answer's first line; a sub-folder is worth its tokens.
        place = "" if hit.cwd == root else f" · {hit.cwd or '?'}"
        line = f"{when} · {hit.kind} · {hit.format} · entry {hit.entry_id} · session {hit.session_id}{place}"
    else:
        line = (f"{when}  {hit.kind:<14} {_entry(hit.entry_id, style):<8}  session {_session(hit.session_id, style)}  "
                f"{hit.format}  {hit.cwd or '?'}")
    return redact(line)


def _copies(hit: Hit, style: Style) -> str | None:
    if not hit.also_in:
        return None
    ids = ", ".join(_session(s, style) for s in hit.also_in[:4])
    more = f" and {len(hit.also_in) - 4} more" if len(hit.also_in) > 4 else ""
    return redact(f"(the same text is also in session{'s' if len(hit.also_in) > 1 else ''} {ids}{more})")


def explain_line(hit: Hit) -> str:
    """Each ranking factor's part of the hit's score (they sum to it), and the field matched."""
    factors = " ".join(f"{name} {value:+.4f}" if hit.fused else f"{name} {value:+.3f}"
                       for name, value in hit.explain.items())
    notes = [f"field: {hit.matched_field}"] if hit.matched_field else []
    if hit.fused:
        ranks = {"wordsRank": "words rank", "meaningRank": "meaning rank", "cosine": "cosine"}
        notes.append("fused: " + ", ".join(f"{ranks[k]} {v:g}" for k, v in hit.fused.items()))
    return f"score {hit.score:.4f} = {factors}" + (f" ({'; '.join(notes)})" if notes else "")


def search_text(result: SearchResult, style: Style, *, what: str = "search", first: int = 1,
                next_offset: int | None = None, explain: bool = False) -> str:
    """The hits of a search (or of summaries), a header line, and how to go on."""
    root = result.scope.root if result.scope.kind == "project" else None
    if not result.hits:
        lines = [f"{what}: nothing in {where(result)}."]
        if result.hint:
            lines.append(f"hint: {result.hint}")
        return "\n".join(lines)
    last = first + len(result.hits) - 1
    lines = [f"{what}: results {first}–{last} in {where(result)}"]
    if result.hint:
        lines.append(f"note: {result.hint}")
    for n, hit in enumerate(result.hits, start=first):
        header = hit_header(hit, style, root)
        if style.for_model:
            lines.append(f"[{n}] {header}")
            lines.append("    " + hit.excerpt)
        else:
            lines.append(DIM + header + RESET if style.color else header)
            lines.append("  " + highlight(hit.excerpt, hit.spans, style.color))
        copies = _copies(hit, style)
        if copies:
            lines.append(("    " if style.for_model else "  ") + copies)
        if explain:
            lines.append(("    " if style.for_model else "  ") + explain_line(hit))
    best = result.hits[0]
    if style.for_model:
        more = {"action": "read", "entryId": best.entry_id}
        if best.session_id:
            more["sessionId"] = best.session_id
        lines.append(redact(f"read more: {as_json_line(more)}"))
        if next_offset is not None:
            lines.append(f'next page: the same call with "offset": {next_offset}')
    else:
        lines.append("")
        # The session by agent too: two agents' sessions may carry the same id.
        lines.append(redact(f"read one whole: journal-index read {_entry(best.entry_id, style)}"
                            + (f" --session {best.format}:{_session(best.session_id, style)}"
                               if best.session_id else "")))
        if next_offset is not None:
            lines.append(f"next page: the same command with --offset {next_offset}")
    return "\n".join(lines)


def read_text(answer: dict[str, Any], style: Style) -> str:
    """One entry's page (or why there is none)."""
    status = answer["status"]
    if status == "ok":
        when = (answer["time"] or "?")[:19].replace("T", " ")
        head = redact(f"{when} · {answer['kind']} · {answer.get('agent', '?')} · "
                      f"entry {_entry(answer['entryId'], style)} · "
                      f"session {_session(answer['sessionId'], style)} · {answer['cwd'] or '?'}")
        end = answer["offset"] + len(answer["text"])
        lines = [head, f"(characters {answer['offset']}–{end} of {answer['totalChars']})", "", answer["text"]]
        if answer["nextOffset"] is not None:
            if style.for_model:
                more = {"action": "read", "entryId": answer["entryId"], "offset": answer["nextOffset"]}
                if answer.get("sessionId"):
                    more["sessionId"] = answer["sessionId"]
                lines.append(redact(f"read more: {as_json_line(more)}"))
            else:
                lines.append(f"[continue with --offset {answer['nextOffset']}]")
        return "\n".join(lines)
    if status == "ambiguous" and answer.get("what") == "entryId":
        how = "call read again with one entryId" if style.for_model else "give more of the id"
        rows = [f"entry id {answer['entryId']!r} is the start of several entries' ids; {how}:"]
        for c in answer["candidates"]:
            rows.append(f"  entry {c['entryId']} · {c.get('agent') or '?'} · session {_session(c['sessionId'], style)}"
                        f" · {c['time']} · {c['kind']} · {c['cwd'] or '?'}")
        return redact("\n".join(rows))
    if status == "ambiguous":
        how = "call read again with one sessionId" if style.for_model else "pick one with --session"
        rows = [f"entry {answer['entryId']} is in several sessions; {how}:"]
        for c in answer["candidates"]:
            session = _session(c["sessionId"], style)
            if not style.for_model and c.get("agent"):
                session = f"{c['agent']}:{session}"
            rows.append(f"  session {session} · {c['time']} · {c['kind']} · {c['cwd'] or '?'}")
        return redact("\n".join(rows))
    if status == "not_found":
        return redact(f"no entry {answer['entryId']} in {answer.get('where', 'this scope')}.")
    return redact(f"entry {answer['entryId']} is unavailable: {answer.get('reason')}")


def error_text(code: str, message: str, hint: str) -> str:
    return f"error ({code}): {message}\nhint: {hint}"


def status_text(info: dict[str, Any]) -> str:
    kinds = ", ".join(f"{k} {v}" for k, v in info["byKind"].items()) or "none"
    rows = [
        f"index        {info['dbPath']} ({info['dbBytes'] / 1e6:.1f} MB, schema {info['schemaVersion']})",
        f"sessions     {info['sessions']}",
        f"entries      {info['entries']} ({kinds})",
        f"summaries    {info['summaries']}",
        f"indexed      {info['indexedBytes'] / 1e6:.1f} MB of journals",
        f"skipped      {count(info['skippedLines'], 'line')} (malformed or unknown)",
    ]
    for agent, counts in info.get("byAgent", {}).items():
        rows.append(f"  {agent:<10} {count(counts['sessions'], 'session')}, "
                    f"{count(counts['entries'], 'entry', 'entries')}")
    for root in info.get("roots", []):
        state = "found" if root["exists"] else "not found"
        rows.append(f"root         {root['path']} ({root['agent'] or 'any agent'}, {state})")
    backfill = info.get("backfill")
    if backfill:
        state = backfill.get("state") or ("finished" if backfill.get("finishedAt") else "running")
        rows.append(f"backfill     {backfill['done']}/{backfill['total']} journals ({state})")
    semantic = info.get("semantic")
    if semantic:
        rows.append(f"semantic     {semantic_text(semantic)}")
    rows.append(f"sqlite       {info['sqliteVersion']} (apsw {info['apswVersion']})")
    return "\n".join(rows)


def semantic_text(semantic: dict[str, Any]) -> str:
    """One line on the semantic layer (indexing.status.semantic_status): what runs, and how far
    the background has embedded."""
    if semantic["whyOff"]:
        return f"off: JOURNAL_INDEX_SEMANTIC={semantic['asked']}, but {semantic['whyOff']}"
    if semantic["mode"] == "off":
        line = ("off (JOURNAL_INDEX_SEMANTIC=on searches by meaning too)" if semantic["installed"]
                else "off (not installed)")
    else:
        line = f"{semantic['mode']}, {semantic['model']}"
    if semantic["embedded"] is not None:
        line += (f"; {count(semantic['embedded'], 'entry', 'entries')} embedded, "
                 f"{semantic['pending']} to go")
    return line


def sessions_text(sessions: list[Any], scope_name: str, style: Style) -> str:
    """One line per session (``sessions.SessionRow``): agent, id, start → last activity, entries,
    folder, first user words; redacted whole (ids, folders and words come from journals)."""
    if not sessions:
        return f"sessions: none in {scope_name}."
    lines = [f"sessions: {len(sessions)} in {scope_name}, newest activity first"]
    for s in sessions:
        start = (iso(s.started) or "?")[:16].replace("T", " ")
        last = (iso(s.last_activity) or "?")[:16].replace("T", " ")
        if last[:10] == start[:10]:
            last = last[11:]  # the same day: its time is enough
        words = f'  "{s.first_words}"' if s.first_words else ""
        line = (f"{s.agent:<6} {_session(s.session_id, style)}  {start} → {last:<16} "
                f"{count(s.entries, 'entry', 'entries'):>11}  {s.cwd or '?'}")
        lines.append(redact(DIM + line + RESET if style.color else line) + redact(words))
    return "\n".join(lines)


def _said_by(entry: dict[str, Any]) -> str:
    """kind/role, the role only where it says more than the kind (``custom/hookMessage``)."""
    kind, role = entry["kind"], entry.get("role")
    label = kind if not role or role.lower() == kind.replace("_", "") else f"{kind}/{role}"
    return label + (f" ({entry['tool']})" if entry.get("tool") else "")


def conversation_text(answer: dict[str, Any], style: Style) -> str:
    """Entries of one session in order (an entry in its context, or a page of a session): who
    said what when, long texts cut with a note on how to read them whole."""
    if answer["status"] != "ok" and "entryId" not in answer:  # a session page that could not be read
        return redact(f"session {answer.get('sessionId')} is unavailable: {answer.get('reason')}")
    if answer["status"] != "ok":
        return read_text(answer, style)
    session = f"{answer.get('agent') or '?'}:{_session(answer.get('sessionId'), style)}"
    entries = answer["entries"]
    if "context" in answer:
        n = answer["context"]
        what = f"entry {_entry(answer['entryId'], style)} with {n} {'entry' if n == 1 else 'entries'} before and after"
    else:
        first = answer["offset"] + 1
        what = (f"entries {first}–{answer['offset'] + len(entries)} of {answer['totalEntries']}"
                if entries else "no entries")
    lines = [redact(f"session {session} · {answer.get('cwd') or '?'} · {what}")]
    # An answer from the team hub names its host: the whole entry is read there too.
    read_whole = f"--session {answer['host']}:{session} --hub" if answer.get("host") else f"--session {session}"
    for entry in entries:
        when = (entry["time"] or "?")[:19].replace("T", " ")
        mark = "  ◀ this entry" if entry.get("target") else ""
        lines.append("")
        lines.append(redact(f"── {when} · {_said_by(entry)} · {_entry(entry['entryId'], style)}{mark}"))
        lines.append(entry["text"])
        if entry["cut"]:
            more = entry["totalChars"] - len(entry["text"])
            lines.append(redact(f"   [… {more:,} more characters: journal-index read "
                                f"{_entry(entry['entryId'], style)} {read_whole}]"))
    if answer.get("nextOffset") is not None:
        lines.append("")
        lines.append(f"[continue with --offset {answer['nextOffset']}]")
    return "\n".join(lines)
