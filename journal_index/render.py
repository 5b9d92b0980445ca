"""Text for people: search hits, read pages, status. JSON output never passes through here."""

from __future__ import annotations

import os
import sys
from typing import Any

from journal_index.query import Hit, SearchResult, iso

BOLD_YELLOW = "\x1b[1;33m"
DIM = "\x1b[2m"
RESET = "\x1b[0m"


def use_color(stream: Any = None) -> bool:
    stream = stream or sys.stdout
    return "NO_COLOR" not in os.environ and hasattr(stream, "isatty") and stream.isatty()


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


def hit_header(hit: Hit) -> str:
    when = (iso(hit.ts) or "?")[:16].replace("T", " ")
    session = (hit.session_id or "?")[:8]
    return f"{when}  {hit.kind:<14} {hit.entry_id}  session {session}  {hit.cwd or '?'}"


def search_text(result: SearchResult, color: bool) -> str:
    lines: list[str] = []
    scope = result.scope
    where = scope.root if scope.kind == "project" else (scope.session_id or "all sessions")
    if result.match == "any":
        lines.append(f"(no entry has every term; showing entries with some of them) {result.hint}")
    if not result.hits:
        lines.append(f"No results in {scope.kind} scope ({where}).")
        if result.hint:
            lines.append(result.hint)
        return "\n".join(lines)
    for hit in result.hits:
        header = hit_header(hit)
        lines.append(DIM + header + RESET if color else header)
        lines.append("  " + highlight(hit.excerpt, hit.spans, color))
        lines.append("")
    lines.append(f"{len(result.hits)} result(s) in {scope.kind} scope ({where}). "
                 "Read one whole with: journal-index read ENTRY_ID")
    return "\n".join(lines)


def read_text(answer: dict[str, Any]) -> str:
    status = answer["status"]
    if status == "ok":
        head = (f"{(answer['time'] or '?')[:19].replace('T', ' ')}  {answer['kind']}  "
                f"{answer['entryId']}  session {answer['sessionId']}  {answer['cwd']}")
        tail = ""
        if answer["nextOffset"] is not None:
            tail = (f"\n[{answer['nextOffset']} of {answer['totalChars']} characters shown; "
                    f"continue with --offset {answer['nextOffset']}]")
        return f"{head}\n\n{answer['text']}{tail}"
    if status == "ambiguous":
        rows = [f"Entry {answer['entryId']} is in several sessions; pick one with --session:"]
        for c in answer["candidates"]:
            rows.append(f"  {c['sessionId']}  {c['time']}  {c['kind']}  {c['cwd']}")
        return "\n".join(rows)
    if status == "not_found":
        return f"No entry {answer['entryId']} in this scope."
    return f"Entry {answer['entryId']} is unavailable: {answer.get('reason')}"


def status_text(info: dict[str, Any]) -> str:
    kinds = ", ".join(f"{k} {v}" for k, v in info["byKind"].items()) or "none"
    rows = [
        f"index        {info['dbPath']} ({info['dbBytes'] / 1e6:.1f} MB, schema {info['schemaVersion']})",
        f"sessions     {info['sessions']}",
        f"entries      {info['entries']} ({kinds})",
        f"summaries    {info['summaries']}",
        f"indexed      {info['indexedBytes'] / 1e6:.1f} MB of journals",
        f"skipped      {info['skippedLines']} lines (malformed or unknown)",
    ]
    backfill = info.get("backfill")
    if backfill:
        state = backfill.get("state") or ("finished" if backfill.get("finishedAt") else "running")
        rows.append(f"backfill     {backfill['done']}/{backfill['total']} journals ({state})")
    rows.append(f"sqlite       {info['sqliteVersion']} (apsw {info['apswVersion']})")
    return "\n".join(rows)
