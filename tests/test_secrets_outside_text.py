"""Secrets outside message text (DESIGN invariant 5): a token in a header cwd, a tool name, a
session name or an entry id, and one cut across two text blocks, never leaves the process —
not through search, read, summaries, status or export — and never becomes a term."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from journal_index.data.store import open_store
from tests.helpers import secret_is_searchable

TOKEN = "ghp_" + "Zq8Lw3Rt6Yp1Mx4Nv7Kb2Hd5Gf9Js0Ac3Ee6"  # the shape of a GitHub token
CWD = f"/home/dev/work/{TOKEN}/app"
SPLIT = "ghp_" + "Tm4Wq7Zr2Kx9Lp6Nb3Vd8Hc5Fj1Gs0Ay4Ue7"


def _lines() -> list[dict]:
    base = {"parentId": None, "timestamp": "2026-10-20T10:00:00.000Z"}
    return [
        {"type": "session", "version": 3, "id": "sess-secret-1", "timestamp": "2026-10-20T09:59:00.000Z",
         "cwd": CWD},
        {"type": "session_info", "id": "n1", **base, "name": f"deploy with {TOKEN}"},
        {"type": "message", "id": f"id-{TOKEN}", **base,
         "message": {"role": "user", "content": "entry whose id carries the token zebrafinch"}},
        {"type": "message", "id": "a1", **base, "message": {"role": "assistant", "content": [
            {"type": "toolCall", "id": "call-1", "name": TOKEN, "arguments": {"path": "x.py"}}]}},
        {"type": "message", "id": "r1", **base, "message": {
            "role": "toolResult", "toolCallId": "call-1", "toolName": TOKEN,
            "content": [{"type": "text", "text": "tool output kingfisher"}]}},
        {"type": "message", "id": "s1", **base, "message": {"role": "user", "content": [
            {"type": "text", "text": f"the split key starts {SPLIT[:15]}"},
            {"type": "text", "text": f"{SPLIT[15:]} and ends here warbler"}]}},
        {"type": "compaction", "id": "c1", **base, "summary": "summary mentions kingfisher",
         "firstKeptEntryId": "s1", "tokensBefore": 1000},
    ]


def _cli(db: Path, root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "journal_index", "--db", str(db), "--sessions", str(root), *args],
                          capture_output=True, text=True, timeout=60, cwd="/")


def test_tokens_outside_message_text_never_leave_and_are_never_terms(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    folder = root / "--home-dev-work--"
    folder.mkdir(parents=True)
    (folder / "s.jsonl").write_text("".join(json.dumps(line) + "\n" for line in _lines()))
    db = tmp_path / "index.db"
    assert _cli(db, root, "index").returncode == 0
    outputs = []
    for args in (["search", "zebrafinch", "--scope", "global"], ["search", "zebrafinch", "--scope", "global", "--json"],
                 ["search", "kingfisher", "--scope", "global"], ["search", "kingfisher", "--scope", "global", "--json"],
                 ["search", "warbler", "--scope", "global", "--json"], ["search", "--scope", "global", "--json"],
                 ["read", "r1", "--json"], ["read", "r1"], ["read", "s1", "--json"], ["read", "a1", "--json"],
                 ["summaries", "--scope", "global"], ["summaries", "--scope", "global", "--json"],
                 ["status"], ["status", "--json"],
                 ["export", "files"], ["export", "entries", "--format", "csv"], ["export", "meta", "--format", "nl"]):
        done = _cli(db, root, *args)
        assert done.returncode == 0, (args, done.stderr)
        outputs.append(done.stdout + done.stderr)
    hits = json.loads(outputs[1])["results"]
    assert hits, "the entry whose id holds the token is found"
    everything = "\n".join(outputs)
    assert "[REDACTED:" in everything
    for secret in (TOKEN, SPLIT, SPLIT[:15] + SPLIT[15:]):
        assert secret not in everything
    assert SPLIT[15:] not in everything  # the second half alone is not shown either
    store = open_store(str(db))
    try:
        for secret in (TOKEN, SPLIT):
            assert secret_is_searchable(store, secret) is None
    finally:
        store.close()
