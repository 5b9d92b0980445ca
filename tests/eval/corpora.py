"""The eval corpora and their questions, without the indexer (the question checker uses this too).

A corpus is a folder of journals of one format. Expected answers name a journal by its path
relative to that folder and a 1-based line; ``Corpus.layout`` says where the runner puts each
journal in its temporary home, the way the agent itself keeps them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.shared_data import shared_dir

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
FIXTURE_SESSIONS = REPO / "fixtures" / "sessions"
EVAL_SESSIONS = REPO / "fixtures" / "eval-sessions"
HELDOUT = REPO / "fixtures" / "heldout"  # blind held-out test set (fixtures/heldout/README.md)
TRAIN_AGENTS = REPO / "fixtures" / "train-agents"  # training set of public transcripts (its README.md)
FRESH = REPO / "fixtures" / "fresh"  # second blind held-out set, test only (its README.md)
TRAIN_MORE = REPO / "fixtures" / "train-more"  # more public training transcripts (its README.md)
TRAIN_THIRD = REPO / "fixtures" / "train-third"  # a third set of public training transcripts (its README.md)
TRAIN_FOURTH = REPO / "fixtures" / "train-fourth"  # older Codex rollouts, for training (its README.md)
TRAIN_FIFTH = REPO / "fixtures" / "train-fifth"  # a fifth training set, Claude Code (its README.md)
TRAIN_SIXTH = REPO / "fixtures" / "train-sixth"  # a sixth training set, Codex only (its README.md)
TRAIN_SEVENTH = REPO / "fixtures" / "train-seventh"  # a seventh training set, Codex in French/Chinese (its README.md)
TRAIN_EIGHTH = REPO / "fixtures" / "train-eighth"  # an eighth training set, Codex in English (its README.md)
# The shared, read-only corpora (real journals): see tests/shared_data.py for where they are.
SHARED = shared_dir()

# Recency is part of the ranking; a fixed "now" keeps it stable. The default is after the newest
# entry of every corpus (the fixtures end 2026-11-20); corpora whose journals end much earlier use
# a "now" three weeks after their last entry, as a user searching weeks later would.
EVAL_NOW_MS = 1_796_083_200_000  # 2026-12-01T00:00:00Z
# The training transcripts end 2026-07-22 (Claude Code) and 2026-07-24 (Codex): three weeks later.
NOW_TRAIN_CLAUDE = 1_786_492_800_000  # 2026-08-12
NOW_TRAIN_CODEX = 1_786_665_600_000  # 2026-08-14
# The fresh held-out transcripts end 2026-03-21 (Claude Code) and 2026-02-02 (Codex): three weeks later.
NOW_FRESH_CLAUDE = 1_775_865_600_000  # 2026-04-11
NOW_FRESH_CODEX = 1_771_804_800_000  # 2026-02-23
# The train-more transcripts end 2026-08-19 (Claude Code) and 2026-08-16 (Codex): three weeks later.
NOW_TRAIN_MORE_CLAUDE = 1_788_998_400_000  # 2026-09-10
NOW_TRAIN_MORE_CODEX = 1_788_739_200_000  # 2026-09-07
# The train-third transcripts (Codex only) end 2026-07-16: three weeks later.
NOW_TRAIN_THIRD_CODEX = 1_786_060_800_000  # 2026-08-07
# The train-fourth transcripts (Codex 0.42-0.73, 2025) end 2025-12-16: three weeks later.
NOW_TRAIN_FOURTH_CODEX = 1_767_744_000_000  # 2026-01-07
# The train-fifth transcripts (Claude Code only) end 2026-01-13: three weeks later.
NOW_TRAIN_FIFTH_CLAUDE = 1_770_076_800_000  # 2026-02-03
# The train-sixth transcripts (Codex 0.34-0.114, Codex only) end 2026-03-13: three weeks later.
NOW_TRAIN_SIXTH_CODEX = 1_775_174_400_000  # 2026-04-03
# The train-seventh transcripts (Codex 0.79 and 0.125, French/Chinese) end 2026-04-28: three weeks later.
NOW_TRAIN_SEVENTH_CODEX = 1_779_148_800_000  # 2026-05-19
# The train-eighth transcripts (Codex 0.106, 0.120 and 1.17, English) end 2026-08-01: three weeks later.
NOW_TRAIN_EIGHTH_CODEX = 1_787_356_800_000  # 2026-08-22


@dataclass(frozen=True)
class Corpus:
    name: str
    fmt: str  # "pi", "claude" or "codex"
    base: Path  # expected locators name files relative to this folder
    files: tuple[str, ...]  # journals, relative to base
    now_ms: int = EVAL_NOW_MS

    def layout(self, rel: str) -> str:
        """Where a journal goes in the temporary home, relative to <tmp>/<corpus name>."""
        if self.fmt == "claude":
            return f"projects/{dashed(first_cwd(self.base / rel))}/{Path(rel).name}"  # <tmp>/claude/projects/...
        if self.fmt == "codex":
            return f"sessions/{rollout_name(self.base / rel)}"  # <tmp>/codex/sessions/YYYY/MM/DD/rollout-…
        if self.name == "pi-shared":
            return f"sessions/{pi_folder(first_cwd(self.base / rel))}/{Path(rel).name}"
        return f"sessions/{rel}"


def dashed(cwd: str) -> str:
    """Claude Code's project folder name: every character of the cwd outside [A-Za-z0-9] becomes `-`."""
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


def rollout_name(path: Path) -> str:
    """Where Codex keeps a rollout: ``YYYY/MM/DD/rollout-<time>-<thread id>.jsonl`` (from its session_meta)."""
    with path.open("rb") as fh:
        meta = json.loads(fh.readline())["payload"]
    stamp = meta["timestamp"][:19].replace(":", "-")
    return f"{stamp[:4]}/{stamp[5:7]}/{stamp[8:10]}/rollout-{stamp}-{meta['id']}.jsonl"


def pi_folder(cwd: str) -> str:
    return "--" + cwd.strip("/").replace("/", "-").replace("\\", "-").replace(":", "-") + "--"


def first_cwd(path: Path) -> str:
    """The first cwd a journal names (pi header, Claude line, Codex session_meta)."""
    with path.open("rb") as fh:
        for raw in fh:
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(obj, dict):
                continue
            payload = obj.get("payload")
            for holder in (obj, payload if isinstance(payload, dict) else {}):
                cwd = holder.get("cwd")
                if isinstance(cwd, str) and cwd:
                    return cwd
    return "/unknown"


def _jsonl_under(base: Path, *folders: str) -> tuple[str, ...]:
    found = []
    for folder in folders:
        root = base / folder
        if root.is_dir():
            found += [p.relative_to(base).as_posix() for p in root.rglob("*.jsonl")]
    return tuple(sorted(found))


def _agent_corpus(name: str, fmt: str, base: Path, now_ms: int) -> Corpus:
    """A folder of one agent's transcripts, every journal under it."""
    return Corpus(name, fmt, base, _jsonl_under(base, "."), now_ms=now_ms)


def corpora() -> dict[str, Corpus]:
    agents = SHARED / "agent-journals-real"
    found = [
        Corpus("fixtures", "pi", FIXTURE_SESSIONS, _jsonl_under(FIXTURE_SESSIONS, ".")),
        Corpus("eval", "pi", EVAL_SESSIONS, _jsonl_under(EVAL_SESSIONS, "."), now_ms=1_784_332_800_000),  # 2026-07-18
        Corpus("pi-shared", "pi", SHARED, _jsonl_under(SHARED, "pi-journals-real", "pi-journals-1.6/sessions")),
        _agent_corpus("claude", "claude", agents / "claude-code", 1_771_113_600_000),  # 2026-02-15
        _agent_corpus("codex", "codex", agents / "codex", 1_784_505_600_000),  # 2026-07-20
        _agent_corpus("heldout-claude", "claude", HELDOUT / "claude", 1_786_752_000_000),  # 2026-08-15
        _agent_corpus("heldout-codex", "codex", HELDOUT / "codex", 1_785_628_800_000),  # 2026-08-02
        _agent_corpus("train-claude", "claude", TRAIN_AGENTS / "claude", NOW_TRAIN_CLAUDE),
        _agent_corpus("train-codex", "codex", TRAIN_AGENTS / "codex", NOW_TRAIN_CODEX),
        _agent_corpus("fresh-claude", "claude", FRESH / "claude", NOW_FRESH_CLAUDE),
        _agent_corpus("fresh-codex", "codex", FRESH / "codex", NOW_FRESH_CODEX),
        _agent_corpus("train-more-claude", "claude", TRAIN_MORE / "claude", NOW_TRAIN_MORE_CLAUDE),
        _agent_corpus("train-more-codex", "codex", TRAIN_MORE / "codex", NOW_TRAIN_MORE_CODEX),
        _agent_corpus("train-third-codex", "codex", TRAIN_THIRD / "codex", NOW_TRAIN_THIRD_CODEX),
        _agent_corpus("train-fourth-codex", "codex", TRAIN_FOURTH / "codex", NOW_TRAIN_FOURTH_CODEX),
        _agent_corpus("train-fifth-claude", "claude", TRAIN_FIFTH / "claude", NOW_TRAIN_FIFTH_CLAUDE),
        _agent_corpus("train-sixth-codex", "codex", TRAIN_SIXTH / "codex", NOW_TRAIN_SIXTH_CODEX),
        _agent_corpus("train-seventh-codex", "codex", TRAIN_SEVENTH / "codex", NOW_TRAIN_SEVENTH_CODEX),
        _agent_corpus("train-eighth-codex", "codex", TRAIN_EIGHTH / "codex", NOW_TRAIN_EIGHTH_CODEX),
    ]
    return {corpus.name: corpus for corpus in found}


def load_questions(corpus: str | None = "fixtures", only_original: bool = True) -> list[dict[str, Any]]:
    """Questions of one corpus (None: all). ``only_original`` keeps the first 69 (questions.json)."""
    files = [HERE / "questions.json"] if only_original else sorted(HERE.glob("questions*.json"))
    questions = []
    for path in files:
        for q in json.loads(path.read_text("utf-8")):
            q.setdefault("corpus", "fixtures")
            if corpus is None or q["corpus"] == corpus:
                questions.append(q)
    return questions


def load_all_questions(corpus: str | None = None) -> list[dict[str, Any]]:
    return load_questions(corpus, only_original=False)


def as_written(question: dict[str, Any]) -> dict[str, Any]:
    """The question with only the answer lines its writer listed: lines a judge added later
    (``"by": "judge"``, README "Stop 35") left out, for ``run_eval --strict``."""
    expected = [e for e in question["expected"] if not (isinstance(e, dict) and e.get("by") == "judge")]
    return {**question, "expected": expected}
