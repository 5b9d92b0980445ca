"""Check the eval questions without the indexer: schema, locators, and that answers hold their words.

Run: python -m tests.eval.check_questions [--show ID ...]

For every question of every ``questions*.json``: the fields of the schema (README.md), a known
corpus and class, and for each ``expected`` locator that the file exists in the corpus folder, the
line exists, is of a kind DESIGN §5 indexes, and its text (read here with plain ``json``) holds at
least one of the snippets the note quotes in "double quotes" before ``Superseded:`` (and every
such snippet is in some answer line; mentions of lines that do not answer go in «guillemets»).
A ``facts_changed`` note must name its superseded statements after ``Superseded:``. Old fixture
questions (entry ids) are checked for their ids only. ``--show ID`` prints a question's answer lines.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from functools import cache
from pathlib import Path
from typing import Any

from tests.eval.corpora import HERE, corpora

CLASSES = {
    "facts_changed", "phrase", "tool_context", "precision", "paraphrase",
    "case_diacritics", "inflection", "identifier", "path", "cjk", "compacted", "natural", "error",
}
FIELDS = {"id", "corpus", "query", "category", "scope", "cwd", "expected", "note"}
INDEXED_HEAD, INDEXED_TAIL, INDEX_WHOLE_BELOW = 48_000, 16_000, 64_000


def _blocks(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    parts: list[str] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind in ("text", "output_text", "input_text"):
            parts.append(str(block.get("text", "")))
        elif kind == "thinking" and not block.get("redacted"):
            parts.append(str(block.get("thinking", "")))
        elif kind == "toolCall":
            parts.append(f"{block.get('name')} {json.dumps(block.get('arguments'), ensure_ascii=False)}")
        elif kind == "tool_use":
            parts.append(f"{block.get('name')} {json.dumps(block.get('input'), ensure_ascii=False)}")
        elif kind == "tool_result":
            parts += _blocks(block.get("content"))
        elif kind == "image":
            parts.append("[image]")
    return parts


def pi_text(obj: dict[str, Any]) -> str | None:
    kind = obj.get("type")
    if kind == "message":
        msg = obj.get("message") or {}
        role = msg.get("role")
        if role in ("user", "assistant", "custom", "hookMessage"):
            parts = _blocks(msg.get("content"))
            if role == "assistant" and msg.get("errorMessage"):
                parts.append(str(msg["errorMessage"]))
            return "\n".join(parts)
        if role == "toolResult":
            return "\n".join([str(msg.get("toolName", "")), *_blocks(msg.get("content"))])
        if role == "bashExecution":
            return f"{msg.get('command', '')}\n{msg.get('output', '')}"
        return None
    if kind in ("compaction", "branch_summary"):
        return str(obj.get("summary", ""))
    if kind == "custom_message":
        return "\n".join(_blocks(obj.get("content")))
    if kind == "context_edit" and obj.get("replacement") is not None:
        repl = obj["replacement"]
        return "\n".join(_blocks(repl.get("content") if isinstance(repl, dict) else repl))
    return None


def claude_text(obj: dict[str, Any]) -> str | None:
    if obj.get("type") not in ("user", "assistant") or obj.get("isMeta"):
        return None
    return "\n".join(_blocks((obj.get("message") or {}).get("content")))


def codex_text(obj: dict[str, Any]) -> str | None:
    kind, payload = obj.get("type"), obj.get("payload") or {}
    sub = payload.get("type")
    if kind == "event_msg" and sub == "user_message":
        return str(payload.get("message", ""))
    if kind == "compacted":
        return str(payload.get("message") or "") or None
    if kind != "response_item":
        return None
    if sub == "message":
        return "\n".join(_blocks(payload.get("content"))) if payload.get("role") == "assistant" else None
    if sub == "reasoning":
        return "\n".join(str(s.get("text", "")) for s in payload.get("summary") or []) or None
    if sub in ("function_call", "custom_tool_call"):
        raw = payload.get("arguments", payload.get("input", ""))
        try:  # arguments are a JSON string: search its decoded values too
            decoded = " ".join(str(v) for v in json.loads(raw).values())
        except (ValueError, AttributeError, TypeError):
            decoded = ""
        return f"{payload.get('name')} {raw}\n{decoded}"
    if sub == "web_search_call":
        return json.dumps(payload.get("action"), ensure_ascii=False)
    if sub in ("function_call_output", "custom_tool_call_output"):
        out = payload.get("output")
        return out if isinstance(out, str) else json.dumps(out, ensure_ascii=False)
    return None


TEXT_OF = {"pi": pi_text, "claude": claude_text, "codex": codex_text}


@cache
def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().split(b"\n")


def indexed_text(fmt: str, path: Path, line: int) -> str | None:
    """The text DESIGN §5 indexes for a 1-based line (None: not an indexed line)."""
    lines = lines_of(path)
    if not 1 <= line <= len(lines):
        return None
    raw = lines[line - 1]
    try:
        obj = json.loads(raw)
    except ValueError:  # damaged lines holding two objects: take the first
        try:
            obj, _ = json.JSONDecoder().raw_decode(raw.decode("utf-8"))
        except ValueError:
            return None
    if not isinstance(obj, dict):
        return None
    text = TEXT_OF[fmt](obj)
    if text and len(text) > INDEX_WHOLE_BELOW:
        text = text[:INDEXED_HEAD] + "\n" + text[-INDEXED_TAIL:]
    return text


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).casefold()


def answer_quotes(note: str) -> list[str]:
    return re.findall(r'"([^"]+)"', note.split("Superseded:")[0])


def check(questions: list[dict[str, Any]], show: set[str]) -> list[str]:
    known = corpora()
    problems: list[str] = []
    ids: set[str] = set()
    for q in questions:
        qid = q.get("id", "?")
        if qid in ids:
            problems.append(f"{qid}: duplicate id")
        ids.add(qid)
        corpus = known.get(q.get("corpus", "fixtures"))
        if corpus is None:
            problems.append(f"{qid}: unknown corpus {q.get('corpus')!r}")
            continue
        if q.get("category") not in CLASSES:
            problems.append(f"{qid}: unknown category {q.get('category')!r}")
        if q.get("scope") not in ("global", "project") or (q["scope"] == "project") != bool(q.get("cwd")):
            problems.append(f"{qid}: scope/cwd mismatch")
        if not q.get("expected"):
            problems.append(f"{qid}: nothing expected")
            continue
        if all(isinstance(e, str) for e in q["expected"]):
            continue  # the original fixture questions name entry ids
        missing = FIELDS - set(q)
        if missing:
            problems.append(f"{qid}: missing fields {sorted(missing)}")
        note = q.get("note", "")
        quotes = answer_quotes(note)
        if not quotes:
            problems.append(f"{qid}: the note quotes no key words")
        if q.get("category") == "facts_changed" and "Superseded:" not in note:
            problems.append(f"{qid}: facts_changed without 'Superseded:' in the note")
        found_quotes: set[str] = set()
        for loc in q["expected"]:
            if loc.get("by", "judge") != "judge":
                problems.append(f"{qid}: {loc['file']}:{loc['line']} has an unknown 'by' {loc['by']!r} (only 'judge')")
            path = corpus.base / loc["file"]
            if loc["file"] not in corpus.files or not path.is_file():
                problems.append(f"{qid}: no journal {loc['file']!r} in corpus {corpus.name}")
                continue
            text = indexed_text(corpus.fmt, path, int(loc["line"]))
            if text is None:
                problems.append(f"{qid}: {loc['file']}:{loc['line']} is not an indexed line")
                continue
            held = [s for s in quotes if norm(s) in norm(text)]
            found_quotes.update(held)
            if not held:
                problems.append(f"{qid}: {loc['file']}:{loc['line']} holds none of {quotes}")
            if qid in show:
                print(f"--- {qid} {loc['file']}:{loc['line']} ({len(text)} chars)\n{text[:3000]}\n")
        for s in set(quotes) - found_quotes:
            problems.append(f"{qid}: quoted {s!r} is in no expected line")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--show", nargs="*", default=[], help="print the answer lines of these question ids")
    args = parser.parse_args(argv)
    questions = []
    for path in sorted(HERE.glob("questions*.json")):
        questions += json.loads(path.read_text("utf-8"))
    # A corpus kept out of the repository (fixtures/fresh: its licenses) is checked only where
    # its transcripts have been fetched.
    absent = {name for name, corpus in corpora().items() if not corpus.files}
    for name in sorted(absent & {q.get("corpus", "fixtures") for q in questions}):
        print(f"skipped {name}: no journals in {corpora()[name].base}")
    questions = [q for q in questions if q.get("corpus", "fixtures") not in absent]
    problems = check(questions, set(args.show))
    counts: dict[tuple[str, str], int] = {}
    for q in questions:
        key = (q.get("corpus", "fixtures"), q["category"])
        counts[key] = counts.get(key, 0) + 1
    names = sorted({c for c, _ in counts})
    classes = sorted({k for _, k in counts})
    print(f"{'class':<16}" + "".join(f"{n:>11}" for n in names) + f"{'total':>8}")
    for k in classes:
        row = [counts.get((n, k), 0) for n in names]
        print(f"{k:<16}" + "".join(f"{v:>11}" for v in row) + f"{sum(row):>8}")
    totals = [sum(counts.get((n, k), 0) for k in classes) for n in names]
    print(f"{'total':<16}" + "".join(f"{v:>11}" for v in totals) + f"{sum(totals):>8}")
    print("\n".join(problems) or "all questions check out")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
