"""Write fixtures/eval-sessions/: pi v3 journals of a fictional user whose facts change over weeks.

Run: python -m tests.eval.make_eval_sessions [--out DIR]

Ines works on `ledgerline` (a Django + Celery invoicing service) and its cluster config in
`infra`, from May to late June 2026. Over nine sessions several facts change two or three times
(login lifetime, who reviews migrations, the Stripe API version, Celery concurrency, the
pgbouncer pool, the Python version, the error tracker, the deploy day, the staging URL, the
webhook retry policy), so the eval can ask for "the current X" and expect only the newest
statement. Tool results are realistic files and command output that mention the same terms in
passing. Everything is deterministic: ids, times and usage come from fixed seeds, so running
this again writes the same bytes. The format copies what pi 0.73 writes (see fixtures/sessions).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.eval.eval_session_texts import SESSIONS

OUT = Path(__file__).resolve().parent.parent.parent / "fixtures" / "eval-sessions"
B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def parse_ms(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


class Journal:
    """One pi session journal being written, entry by entry, on a fake clock."""

    def __init__(self, cwd: str, start: str, seed: int, model: str = "claude-sonnet-4-5",
                 thinking: str = "medium") -> None:
        self.cwd = cwd
        self.rng = random.Random(seed)
        self.now = parse_ms(start)
        self.start = self.now
        hex12 = f"{self.now:012x}"
        rand = "".join(self.rng.choice("0123456789abcdef") for _ in range(19))
        self.session_id = f"{hex12[:8]}-{hex12[8:]}-7{rand[:3]}-{'89ab'[self.rng.randrange(4)]}{rand[3:6]}-{rand[6:18]}"
        self.model = model
        self.lines: list[dict[str, Any]] = [
            {"type": "session", "version": 3, "id": self.session_id, "timestamp": iso(self.now), "cwd": cwd}]
        self.count = 0
        self.parent: str | None = None
        self.last_user: str | None = None
        self._entry({"type": "model_change", "provider": "anthropic", "modelId": model}, advance=(2, 2))
        self._entry({"type": "thinking_level_change", "thinkingLevel": thinking}, advance=(0, 0))

    # -- plumbing -------------------------------------------------------------------------

    def _new_id(self) -> str:
        self.count += 1
        return hashlib.sha256(f"{self.session_id}:{self.count}".encode()).hexdigest()[:8]

    def _tick(self, lo: float, hi: float) -> int:
        self.now += int(self.rng.uniform(lo, hi) * 1000) + self.rng.randrange(1000)
        return self.now

    def _entry(self, body: dict[str, Any], advance: tuple[float, float] = (1, 4)) -> str:
        entry_id = self._new_id()
        self._tick(*advance)
        obj = {"type": body.pop("type"), "id": entry_id, "parentId": self.parent, "timestamp": iso(self.now), **body}
        self.lines.append(obj)
        self.parent = entry_id
        return entry_id

    def _usage(self, output: int) -> dict[str, Any]:
        inp = self.rng.randrange(1, 9)
        read = self.rng.randrange(3000, 40000)
        write = self.rng.randrange(20, 900)
        cost = {"input": inp * 3e-6, "output": output * 1.5e-5, "cacheRead": read * 3e-7, "cacheWrite": write * 3.75e-6}
        cost["total"] = sum(cost.values())
        return {"input": inp, "output": output, "cacheRead": read, "cacheWrite": write,
                "totalTokens": inp + output + read + write, "cost": cost}

    def _call_id(self) -> str:
        return "toolu_01" + "".join(self.rng.choice(B62) for _ in range(22))

    def _message(self, message: dict[str, Any], advance: tuple[float, float]) -> str:
        message["timestamp"] = self.now + int(advance[0] * 1000)
        return self._entry({"type": "message", "message": message}, advance=advance)

    # -- what a session does --------------------------------------------------------------

    def user(self, text: str) -> str:
        entry_id = self._message({"role": "user", "content": [{"type": "text", "text": text}]}, advance=(20, 140))
        self.last_user = entry_id
        return entry_id

    def assistant(self, text: str | None = None, calls: list[tuple[str, dict[str, Any]]] | None = None,
                  thinking: str | None = None) -> list[str]:
        content: list[dict[str, Any]] = []
        if thinking:
            sig = "".join(self.rng.choice(B62 + "+/") for _ in range(180))
            content.append({"type": "thinking", "thinking": thinking, "thinkingSignature": sig})
        if text:
            content.append({"type": "text", "text": text})
        ids = []
        for name, args in calls or []:
            call_id = self._call_id()
            ids.append(call_id)
            content.append({"type": "toolCall", "id": call_id, "name": name, "arguments": args})
        words = sum(len(str(c.get("text", c.get("thinking", c.get("arguments", ""))))) for c in content)
        self._message({
            "role": "assistant", "content": content, "api": "anthropic-messages", "provider": "anthropic",
            "model": self.model, "usage": self._usage(max(8, words // 4)),
            "stopReason": "toolUse" if calls else "stop",
            "responseId": "msg_01" + "".join(self.rng.choice(B62) for _ in range(22)),
        }, advance=(2, 9) if calls else (4, 25))
        return ids

    def result(self, call_id: str, tool: str, text: str, error: bool = False) -> str:
        return self._message({"role": "toolResult", "toolCallId": call_id, "toolName": tool,
                              "content": [{"type": "text", "text": text}], "details": {}, "isError": error},
                             advance=(0.2, 3))

    def tool(self, name: str, args: dict[str, Any], output: str, text: str | None = None,
             thinking: str | None = None, error: bool = False) -> None:
        (call_id,) = self.assistant(text, [(name, args)], thinking)
        self.result(call_id, name, output, error)

    def bash(self, command: str, output: str, exit_code: int = 0) -> str:
        """A command the user ran with `!` (pi's bashExecution message)."""
        return self._message({"role": "bashExecution", "command": command, "output": output, "exitCode": exit_code,
                              "cancelled": False, "truncated": False}, advance=(5, 30))

    def compact(self, summary: str, read: list[str], modified: list[str], tokens_before: int) -> str:
        files = ""
        if read:
            files += "\n\n<read-files>\n" + "\n".join(read) + "\n</read-files>"
        if modified:
            files += "\n\n<modified-files>\n" + "\n".join(modified) + "\n</modified-files>"
        return self._entry({"type": "compaction", "summary": summary + files, "firstKeptEntryId": self.last_user,
                            "tokensBefore": tokens_before, "details": {"readFiles": read, "modifiedFiles": modified},
                            "fromHook": False}, advance=(8, 20))

    def idle(self, minutes: float) -> None:
        self.now += int(minutes * 60_000)

    # -- output ---------------------------------------------------------------------------

    def path(self) -> str:
        folder = "--" + self.cwd.strip("/").replace("/", "-") + "--"
        stamp = iso(self.start).replace(":", "-").replace(".", "-")
        return f"{folder}/{stamp}_{self.session_id}.jsonl"

    def dump(self) -> bytes:
        return "".join(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n"
                       for line in self.lines).encode("utf-8")


def build() -> dict[str, tuple[bytes, int]]:
    """Every journal: path relative to the corpus folder -> (bytes, time of its last entry in ms)."""
    out = {}
    for index, script in enumerate(SESSIONS):
        journal = Journal(script.cwd, script.start, seed=1000 + index)
        script.play(journal)
        out[journal.path()] = (journal.dump(), journal.now)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=OUT, help=f"corpus folder (default {OUT})")
    args = parser.parse_args(argv)
    journals = build()
    for rel, (data, last_ms) in sorted(journals.items()):
        target = args.out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        os.utime(target, ns=(last_ms * 1_000_000, last_ms * 1_000_000))  # as pi leaves it; git drops mtimes
        print(f"{rel}  {len(data):>7} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
