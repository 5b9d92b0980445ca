"""The target mix of a corpus (measured on fixtures/sessions) and how a corpus's mix is measured."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

# --------------------------------------------------------------------------------------------------
# Target mix, measured on the real-format corpus fixtures/sessions (26 files, 888 lines, 3,298,659
# bytes; copied from /work/shared/pi-journals, written by pi 0.73.1) with ``measure_corpus()`` below
# (``python -m benchmarks.corpus --measure fixtures/sessions``). A category counts the JSON-escaped bytes
# of its string values (tool-call arguments and ``details`` objects: their whole JSON); json_overhead is
# everything else (keys, ids, timestamps, usage, punctuation, newlines). Note that one 1.6 MB web_fetch
# result is half of that corpus; without it tool results would be ~68 %.
# --------------------------------------------------------------------------------------------------
TARGET_MIX: dict[str, float] = {
    "tool_result": 0.8248,  # toolResult text + details (diffs, read truncation copies), bashExecution
    "json_overhead": 0.1017,
    "thinking": 0.0279,  # thinking text + thinkingSignature (incl. redacted)
    "assistant_text": 0.0166,
    "tool_call_args": 0.0159,
    "compaction": 0.0075,  # compaction + branch_summary summaries and details
    "user_text": 0.0045,
    "image": 0.0007,  # base64 data of image blocks
    "other": 0.0003,  # custom_message content, errorMessage, ...
}
# Line lengths (bytes incl. newline) of the same corpus: 7 lines > 100 KB, 1 line > 1 MB.
TARGET_LINE_LENGTHS: dict[str, int] = {"p50": 652, "p90": 1836, "p99": 39927, "max": 1684741}
CATEGORIES: tuple[str, ...] = tuple(TARGET_MIX)


# --------------------------------------------------------------------------------------------------
# Measuring the mix (used for the fixture calibration and for the generator's own statistics)
# --------------------------------------------------------------------------------------------------
def _slen(s: Any) -> int:
    return len(orjson.dumps(s)) - 2 if isinstance(s, str) else 0


def _blocks(content: Any, cat: str, acc: dict[str, int]) -> None:
    if isinstance(content, str):
        acc[cat] += _slen(content)
        return
    if not isinstance(content, list):
        return
    for b in content:
        if not isinstance(b, dict):
            continue
        if b.get("type") == "image":
            acc["image"] += _slen(b.get("data"))
        elif b.get("type") == "text":
            acc[cat] += _slen(b.get("text"))


def classify_entry(entry: dict[str, Any]) -> dict[str, int]:
    """Bytes of one parsed journal line per content category (json_overhead is not included)."""
    acc = dict.fromkeys(CATEGORIES, 0)
    t = entry.get("type")
    if t == "message":
        m = entry.get("message") or {}
        role = m.get("role")
        if role == "assistant":
            for b in m.get("content") or []:
                bt = b.get("type")
                if bt == "text":
                    acc["assistant_text"] += _slen(b.get("text"))
                elif bt == "thinking":
                    acc["thinking"] += _slen(b.get("thinking")) + _slen(b.get("thinkingSignature"))
                elif bt == "toolCall":
                    acc["tool_call_args"] += len(orjson.dumps(b.get("arguments")))
            acc["other"] += _slen(m.get("errorMessage"))
        elif role == "toolResult":
            _blocks(m.get("content"), "tool_result", acc)
            if "details" in m:
                acc["tool_result"] += len(orjson.dumps(m["details"]))
        elif role == "bashExecution":
            acc["tool_result"] += _slen(m.get("command")) + _slen(m.get("output"))
        elif role == "user":
            _blocks(m.get("content"), "user_text", acc)
        else:
            _blocks(m.get("content"), "other", acc)
    elif t in ("compaction", "branch_summary"):
        acc["compaction"] += _slen(entry.get("summary")) + len(orjson.dumps(entry.get("details")))
    elif t == "custom_message":
        _blocks(entry.get("content"), "other", acc)
    return acc


def percentiles(lengths: list[int]) -> dict[str, int]:
    if not lengths:
        return {"p50": 0, "p90": 0, "p99": 0, "max": 0}
    s = sorted(lengths)
    n = len(s)
    return {"p50": s[int(n * 0.5)], "p90": s[int(n * 0.9)], "p99": s[int(n * 0.99)], "max": s[-1]}


def mix_shares(cat_bytes: dict[str, int], total: int) -> dict[str, dict[str, float]]:
    return {
        c: {"bytes": cat_bytes[c], "share": round(cat_bytes[c] / total, 4) if total else 0.0}
        for c in CATEGORIES
    }


def measure_corpus(sessions_dir: Path) -> dict[str, Any]:
    """Mix and line lengths of every ``*.jsonl`` under ``sessions_dir`` (how TARGET_MIX was obtained)."""
    cat = dict.fromkeys(CATEGORIES, 0)
    lengths: list[int] = []
    files = sorted(Path(sessions_dir).rglob("*.jsonl"))
    for f in files:
        with f.open("rb") as fh:
            for line in fh:
                lengths.append(len(line))
                acc = classify_entry(orjson.loads(line))
                for k, v in acc.items():
                    cat[k] += v
                cat["json_overhead"] += len(line) - sum(acc.values())
    total = sum(lengths)
    return {
        "bytes": total,
        "files": len(files),
        "lines": len(lengths),
        "categories": mix_shares(cat, total),
        "line_length": percentiles(lengths),
    }
