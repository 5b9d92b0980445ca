"""Deterministic generator of realistic pi session journals for benchmarks.

    python -m benchmarks.corpus --size 50MB --out DIR [--seed 1] [--json]
    python -m benchmarks.corpus --measure fixtures/sessions      # mix of an existing corpus

Writes ``DIR/sessions/--<encoded cwd>--/<header timestamp>_<uuid v7>.jsonl`` files in pi's version-3
journal format (the same shapes, key order and escaping as ``fixtures/sessions``, which pi 0.73.1 wrote
itself). The same seed and size give byte-identical files on the same machine: all text comes from this
interpreter's standard library sources, docstrings and ``pydoc_data`` topics, so another Python version
gives different (but equally valid) text.

Sizes: ``500KB``, ``50MB``, ``1GB``, ``2.5GB`` are decimal (powers of 1000); ``KiB``/``MiB``/``GiB``
are binary (powers of 1024); a bare number is bytes.
"""

from __future__ import annotations

import argparse
import base64
import math
import os
import random
import re
import sys
import sysconfig
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from functools import lru_cache
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

HOME = "/home/bench"
PY_PREFIX = f"{HOME}/.pyenv/versions/3.11.7/lib/python3.11"
EPOCH_START_MS = 1_767_600_000_000  # 2026-01-05T08:00:00Z
SPAN_MS = 170 * 86_400_000  # sessions spread over ~5.5 months
READ_MAX_BYTES = 51200
READ_MAX_LINES = 2000

_SIZE_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|TB|KIB|MIB|GIB|TIB)?$")
_UNITS = {
    None: 1,
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "KIB": 2**10,
    "MIB": 2**20,
    "GIB": 2**30,
    "TIB": 2**40,
}


def parse_size(text: str) -> int:
    """``50MB`` → 50_000_000 (decimal units; ``MiB`` etc. are binary). Raises ValueError on bad input."""
    m = _SIZE_RE.match(text.strip().upper())
    if not m:
        raise ValueError(f"invalid size {text!r} (expected e.g. 500KB, 50MB, 2.5GB, 64MiB)")
    value = int(float(m.group(1)) * _UNITS[m.group(2)])
    if value < 10_000:
        raise ValueError(f"size {text!r} is too small (minimum 10KB)")
    return value


def encode_cwd(cwd: str) -> str:
    """pi's session directory name for a cwd: ``/home/a/b`` → ``--home-a-b--``."""
    body = cwd[1:] if cwd.startswith("/") else cwd
    return "--" + re.sub(r"[/\\:]", "-", body) + "--"


def iso_ms(ms: int) -> str:
    dt = datetime.fromtimestamp(ms / 1000, UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def js_number(x: float) -> str:
    """Format a number the way JavaScript's JSON.stringify does (orjson writes 9e-6 and 1.0)."""
    if x == 0:
        return "0"
    if x == int(x) and abs(x) < 1e21:
        return str(int(x))
    sign, digits_t, exp = Decimal(repr(float(x))).as_tuple()
    digits = "".join(map(str, digits_t)).rstrip("0") or "0"
    exp = int(exp) + (len(digits_t) - len(digits))
    k = len(digits)
    n = exp + k  # value = 0.DIGITS * 10**n
    if k <= n <= 21:
        s = digits + "0" * (n - k)
    elif 0 < n <= 21:
        s = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        s = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        s = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + ("+" if e > 0 else "-") + str(abs(e))
    return ("-" if sign else "") + s


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


def _percentiles(lengths: list[int]) -> dict[str, int]:
    if not lengths:
        return {"p50": 0, "p90": 0, "p99": 0, "max": 0}
    s = sorted(lengths)
    n = len(s)
    return {"p50": s[int(n * 0.5)], "p90": s[int(n * 0.9)], "p99": s[int(n * 0.99)], "max": s[-1]}


def _mix(cat_bytes: dict[str, int], total: int) -> dict[str, dict[str, float]]:
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
        "categories": _mix(cat, total),
        "line_length": _percentiles(lengths),
    }


# --------------------------------------------------------------------------------------------------
# Text pools, built once per process from the standard library (seed independent)
# --------------------------------------------------------------------------------------------------
@dataclass
class _Source:
    rel: str
    text: str
    lines: list[str]
    nbytes: int


@dataclass
class _Pools:
    files: list[_Source]
    small: list[_Source]
    big: list[_Source]
    docs: list[_Source]
    defs: list[tuple[int, int, str]]
    sentences: list[str]
    short: list[str]
    snake: list[str]
    pascal: list[str]
    camel: list[str]
    kebab: list[str]
    words: list[str]
    b64: str
    b64url: str
    hexs: str
    alnum: str


_EXCLUDE_DIRS = {
    "site-packages",
    "dist-packages",
    "test",
    "tests",
    "idle_test",
    "__pycache__",
    "lib2to3",
    "turtledemo",
    "ensurepip",
    "config-3.11-x86_64-linux-gnu",
}
_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z`])")
_DOCSTRING = re.compile(r'"""(.+?)"""', re.S)
_COMMENT = re.compile(r"^[ \t]*# ?([A-Z][^\n]{24,})$", re.M)
_DEF = re.compile(r"^[ \t]*(?:def|class) ([A-Za-z_][A-Za-z0-9_]*)", re.M)


def _stdlib_py_files() -> list[Path]:
    root = Path(sysconfig.get_paths()["stdlib"])
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _EXCLUDE_DIRS and not d.startswith("."))
        for fn in sorted(filenames):
            if fn.endswith(".py"):
                p = Path(dirpath) / fn
                try:
                    size = p.stat().st_size
                except OSError:
                    continue
                if 1500 <= size <= 400_000:
                    out.append(p)
    return out


def _sentences_from(text: str) -> Iterable[str]:
    for para in re.split(r"\n\s*\n", text):
        flat = " ".join(para.split())
        for s in _SENT_SPLIT.split(flat):
            if 25 <= len(s) <= 240 and s[0].isupper() and s[-1] in ".!?" and ">>>" not in s:
                letters = sum(ch.isalpha() or ch == " " for ch in s)
                if letters > 0.8 * len(s):
                    yield s


@lru_cache(maxsize=1)
def _pools() -> _Pools:
    root = Path(sysconfig.get_paths()["stdlib"])
    candidates = _stdlib_py_files()
    pick = random.Random(20260105)
    chosen = sorted(pick.sample(candidates, min(360, len(candidates))))
    files: list[_Source] = []
    for p in chosen:
        text = p.read_text(encoding="utf-8", errors="replace").replace("\r\n", "\n").replace("\t", "    ")
        files.append(_Source(p.relative_to(root).as_posix(), text, text.split("\n"), len(text.encode())))
    docs: list[_Source] = []
    topics: dict[str, str] = {}
    try:
        from pydoc_data import topics as pydoc_topics

        topics = dict(pydoc_topics.topics)
    except ImportError:  # pragma: no cover - stripped installs
        pass
    for name in sorted(topics):
        text = topics[name]
        docs.append(_Source(f"docs/python/{name}.md", text, text.split("\n"), len(text.encode())))
    sentences: dict[str, None] = {}
    defs: list[tuple[int, int, str]] = []
    idents: dict[str, None] = {}
    classes: dict[str, None] = {}
    for i, f in enumerate(files):
        for m in _DOCSTRING.finditer(f.text):
            for s in _sentences_from(m.group(1)):
                sentences[s] = None
        for m in _COMMENT.finditer(f.text):
            for s in _sentences_from(m.group(1)):
                sentences[s] = None
        for m in _DEF.finditer(f.text):
            name = m.group(1)
            defs.append((i, f.text.count("\n", 0, m.start()) + 1, name))
            if name[0].isupper():
                classes[name] = None
        for w in re.findall(r"\b[a-z][a-z0-9]+(?:_[a-z0-9]+)+\b", f.text):
            idents[w] = None
    for d in docs:
        for s in _sentences_from(d.text):
            sentences[s] = None
    sent = list(sentences)
    snake = [w for w in idents if 6 <= len(w) <= 32]
    camel = [w.split("_")[0] + "".join(p.capitalize() for p in w.split("_")[1:]) for w in snake]
    kebab = [w.replace("_", "-") for w in snake]
    pascal = [c for c in classes if re.fullmatch(r"_?[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+", c)]
    words = sorted({w.lower() for s in sent[:4000] for w in re.findall(r"[A-Za-z]{4,12}", s)})
    rnd = random.Random(99)
    raw = rnd.randbytes(3 * 1024 * 1024)
    b64 = base64.b64encode(raw).decode()
    b64url = base64.urlsafe_b64encode(raw[: 1024 * 1024]).decode().rstrip("=")
    hexs = raw[:262144].hex()
    alnum = re.sub(r"[^A-Za-z0-9]", "", b64)
    return _Pools(
        files=files,
        small=[f for f in files if f.nbytes <= READ_MAX_BYTES],
        big=[f for f in files if f.nbytes > READ_MAX_BYTES * 1.5],
        docs=docs,
        defs=defs,
        sentences=sent,
        short=[s for s in sent if len(s) <= 90],
        snake=snake,
        pascal=pascal or ["TextWrapper"],
        camel=camel,
        kebab=kebab,
        words=words,
        b64=b64,
        b64url=b64url,
        hexs=hexs,
        alnum=alnum,
    )


# Written for this generator (not copied): CJK, accented and emoji text for prompts, notes and i18n files.
INTL_TEXT: tuple[str, ...] = (
    "この関数はキャッシュを更新する前にロックを取得する必要があります。",
    "設定ファイルの読み込みに失敗しました：権限がありません。",
    "単語カードの復習間隔を少し長くしてください。漢字《かんじ》の読みも表示したいです。",
    "ログイン画面のボタンが小さすぎて、スマホだと押しにくいです。",
    "请把这个函数重构成异步版本，并补充单元测试。",
    "数据库迁移失败了，看起来是外键约束的问题。",
    "日志里有很多重复的警告，能不能先过滤掉？",
    "拼音声调：nǐ hǎo, xiè xie, zài jiàn — 需要正确显示 ü 和 ǚ。",
    "사용자 세션이 만료되면 다시 로그인해야 합니다.",
    "Le déploiement a échoué à cause d'une dépendance manquante ; peux-tu vérifier le fichier de config ?",
    "Les données de l'élève sont réinitialisées après la mise à jour — c'est très gênant.",
    "Die Übersetzung für „Größe“ und „Schließen“ fehlt noch in der Oberfläche.",
    "¿Puedes revisar por qué la función devuelve un año incorrecto en diciembre?",
    "São Paulo, Zürich, Kraków and Ærøskøbing break the slug generator (naïve ASCII folding).",
    "Status: ✅ tests green, 🚧 migration pending, ❌ staging deploy failed, 🎉 release tagged.",
    "Résumé, café, façade, coöperate, jalapeño — keep the diacritics when sorting.",
    "Привет! Проверь, пожалуйста, кодировку в экспортированном CSV.",
    "Ο χρήστης δεν μπορεί να αποθηκεύσει τις ρυθμίσεις του.",
)


@dataclass(frozen=True)
class _Project:
    cwd: str
    kind: str  # python | web | home | notes | scratch | mono
    pkg: str
    weight: float


PROJECTS: tuple[_Project, ...] = (
    _Project(HOME, "home", "", 0.05),
    _Project(f"{HOME}/notes", "notes", "", 0.04),
    _Project(f"{HOME}/code/orbit", "mono", "orbit", 0.07),
    _Project(f"{HOME}/code/orbit/orbit-api", "python", "orbit_api", 0.22),
    _Project(f"{HOME}/code/orbit/orbit-api/services/billing", "python", "billing", 0.06),
    _Project(f"{HOME}/code/orbit/orbit-web", "web", "orbit-web", 0.14),
    _Project(f"{HOME}/code/kana-drill", "python", "kana_drill", 0.10),
    _Project(f"{HOME}/work/data-pipeline", "python", "pipeline", 0.12),
    _Project(f"{HOME}/work/dashboard-ui", "web", "dashboard-ui", 0.06),
    _Project("/tmp/scratch-7f3a", "scratch", "scratch", 0.04),
    _Project("/tmp/pi-bench/repro_issue_42", "scratch", "repro", 0.02),
)

# provider, model, api, prices per million tokens (input, output, cacheRead, cacheWrite)
_MODELS: tuple[tuple[str, str, str, tuple[float, float, float, float], float], ...] = (
    ("anthropic", "claude-sonnet-4-5", "anthropic-messages", (3, 15, 0.3, 3.75), 0.62),
    ("anthropic", "claude-opus-4-5", "anthropic-messages", (5, 25, 0.5, 6.25), 0.08),
    ("anthropic", "claude-haiku-4-5", "anthropic-messages", (1, 5, 0.1, 1.25), 0.07),
    ("openai-codex", "gpt-5.1-codex-max", "openai-codex-responses", (1.25, 10, 0.125, 0), 0.12),
    ("google", "gemini-2.5-pro", "google-generative-ai", (1.25, 10, 0.31, 0), 0.05),
    ("openai", "gpt-5.1", "openai-responses", (1.25, 10, 0.13, 0), 0.04),
    ("deepseek", "deepseek-v4-pro", "openai-completions", (0.435, 0.87, 0.003625, 0), 0.02),
)
_THINKING_LEVELS = ("off", "minimal", "low", "medium", "high")
_TOOLS = ("read", "bash", "grep", "edit", "write")
_TOOL_WEIGHTS = (36, 21, 17, 11, 15)  # fixture tool calls: read 84, bash 49, grep 40, edit 25, write 35
_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_PNG_HEAD = base64.b64encode(
    bytes.fromhex("89504e470d0a1a0a0000000d49484452")
).decode()  # 16 bytes → 24 chars
_JPG_HEAD = base64.b64encode(bytes.fromhex("ffd8ffe000104a46494600010100")).decode()  # 14 → 20 chars


class _Budget(Exception):
    """Raised inside a session when the requested size is reached."""


@dataclass
class _Ctx:
    project: _Project
    model: tuple[str, str, str, tuple[float, float, float, float], float]
    level: str
    t: int
    leaf: str | None
    lines: list[bytes]
    entry_ids: list[str]
    user_ids: list[str]
    stop_ids: list[str]
    read_files: dict[str, None]
    modified_files: dict[str, None]
    goal: str
    done: list[str]
    ctx_bytes: int
    cache_tokens: int
    compact_at: int
    named: bool


class _Generator:
    def __init__(self, out_dir: Path, size_bytes: int, seed: int) -> None:
        self.out = Path(out_dir)
        self.size = size_bytes
        self.seed = seed
        self.rng = random.Random(seed)
        self.p = _pools()
        self.written = 0
        self.cat = dict.fromkeys(CATEGORIES, 0)
        self.lengths: list[int] = []
        self.id_counter = 0
        self.id_key = self.rng.getrandbits(32)
        self.counts: dict[str, int] = {}
        self.files = 0
        self.projects: set[str] = set()
        self.last_start = EPOCH_START_MS
        self.project_weights = [p.weight for p in PROJECTS]

    # ---- small helpers -------------------------------------------------------------------------
    def _count(self, key: str, n: int = 1) -> None:
        self.counts[key] = self.counts.get(key, 0) + n

    def new_id(self) -> str:
        """8-hex ids, unique across the corpus: an invertible 32-bit mix of a counter."""
        x = (self.id_counter ^ self.id_key) & 0xFFFFFFFF
        self.id_counter += 1
        x = (x * 0x9E3779B1) & 0xFFFFFFFF
        x ^= x >> 15
        x = (x * 0x85EBCA77) & 0xFFFFFFFF
        x ^= x >> 13
        return f"{x:08x}"

    def deficit(self, cat: str) -> float:
        return TARGET_MIX[cat] * self.written - self.cat[cat]

    def remaining(self) -> int:
        return self.size - self.written

    def slice(self, pool: str, n: int) -> str:
        n = max(0, min(n, len(pool)))
        off = self.rng.randrange(0, len(pool) - n + 1)
        return pool[off : off + n]

    def rand_b62(self, n: int) -> str:
        return "".join(self.rng.choices(_B62, k=n))

    def sentence(self) -> str:
        return self.rng.choice(self.p.sentences)

    def sentences(self, k: int) -> str:
        return " ".join(self.rng.choices(self.p.sentences, k=k))

    def ident(self) -> str:
        r = self.rng.random()
        if r < 0.5:
            return self.rng.choice(self.p.snake)
        if r < 0.75:
            return self.rng.choice(self.p.camel)
        if r < 0.9:
            return self.rng.choice(self.p.pascal)
        return self.rng.choice(self.p.kebab)

    def intl(self) -> str:
        return self.rng.choice(INTL_TEXT)

    def secret(self) -> str:
        """A fake secret of realistic shape, sometimes with its usual surrounding text."""
        self._count("secrets")
        r = self.rng.randrange(12)
        a = self.p.alnum
        if r == 0:
            return "ghp_" + self.slice(a, 36)
        if r == 1:
            return "github_pat_11" + self.slice(a, 20).upper() + "_" + self.slice(a, 59)
        if r == 2:
            return "AKIA" + "".join(self.rng.choices("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", k=16))
        if r == 3:
            return "aws_secret_access_key = " + self.slice(self.p.b64, 40)
        if r == 4:
            return "sk-ant-api03-" + self.slice(self.p.b64url, 93) + "AA"
        if r == 5:
            return "sk-proj-" + self.slice(self.p.b64url, 156)
        if r == 6:
            return (
                f"xoxb-{self.rng.randrange(10**10, 10**11)}-{self.rng.randrange(10**12, 10**13)}-"
                + self.slice(a, 24)
            )
        if r == 7:
            return f"password={self.slice(a, 10)}!{self.rng.randrange(100)}"
        if r == 8:
            return f"DATABASE_URL=postgres://app:{self.slice(a, 18)}@db.internal:5432/app"
        if r == 9:
            head = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
            body = (
                base64.urlsafe_b64encode(
                    f'{{"sub":"{self.rng.randrange(10**6)}","name":"bench",'
                    f'"iat":{1767600000 + self.rng.randrange(10**7)}}}'.encode()
                )
                .decode()
                .rstrip("=")
            )
            return f"{head}.{body}.{self.slice(self.p.b64url, 43)}"
        if r == 10:
            return "Authorization: Bearer " + self.slice(a, 40)
        body = "\n".join(self.slice(self.p.b64, 64) for _ in range(self.rng.randint(8, 25)))
        return f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"

    def maybe_secret(self, text: str, rate: float) -> str:
        if self.rng.random() < rate:
            return text + ("\n" if text.endswith("\n") else "\n") + self.secret() + "\n"
        return text

    # ---- paths and file contents ---------------------------------------------------------------
    def src_file(self, small: bool | None = None) -> _Source:
        if small is True:
            return self.rng.choice(self.p.small)
        if small is False:
            return self.rng.choice(self.p.big)
        return self.rng.choice(self.p.files)

    def project_path(self, c: _Ctx, src: _Source) -> str:
        kind = c.project.kind
        if kind == "python":
            return f"{c.project.pkg}/{src.rel}" if self.rng.random() < 0.8 else f"{PY_PREFIX}/{src.rel}"
        if kind == "mono":
            return f"orbit-api/orbit_api/{src.rel}"
        if kind == "scratch":
            return src.rel.replace("/", "_")
        if kind == "home":
            return f"{PY_PREFIX}/{src.rel}"
        if kind == "notes":
            return src.rel
        return f"scripts/{src.rel}"

    def ts_file(self, n_lines: int) -> str:
        r = self.rng
        out = [
            f"import {{ {r.choice(self.p.camel)}, {r.choice(self.p.camel)} }} "
            f'from "./{r.choice(self.p.kebab)}";',
            f'import type {{ {r.choice(self.p.pascal)} }} from "../types/{r.choice(self.p.kebab)}";',
            "",
        ]
        while len(out) < n_lines:
            fn, a, b, c = (
                r.choice(self.p.camel),
                r.choice(self.p.camel),
                r.choice(self.p.camel),
                r.choice(self.p.camel),
            )
            ty = r.choice(self.p.pascal)
            if r.random() < 0.3:
                out += [
                    f".{r.choice(self.p.kebab)} {{",
                    f"  color: var(--{r.choice(self.p.kebab)});",
                    f"  margin: 0 {r.randrange(2, 32)}px;",
                    "}",
                    "",
                ]
                continue
            out += [
                f"/** {self.sentence()} */",
                f"export function {fn}({a}: {ty}, {b}?: string): {ty} | undefined {{",
                f"  const {c} = {a}.{r.choice(self.p.camel)} ?? {b};",
                f"  if (!{c}) return undefined;",
                f"  return {{ ...{a}, {r.choice(self.p.camel)}: {c} }};",
                "}",
                "",
            ]
        return "\n".join(out)

    def pick_file(self, c: _Ctx, small: bool | None = None) -> tuple[str, str, list[str] | None]:
        """(path, text, lines-or-None) of a file the agent reads in this project."""
        kind = c.project.kind
        r = self.rng.random()
        if kind == "web" and r < 0.55 and small is not False:
            name = self.rng.choice(self.p.pascal)
            text = self.ts_file(self.rng.randint(20, 180))
            ext = "tsx" if self.rng.random() < 0.6 else "ts"
            return f"src/components/{name}.{ext}", text, None
        if kind in ("notes", "home") and r < 0.5 and small is not False:
            d = self.rng.choice(self.p.docs)
            if kind == "notes" and self.rng.random() < 0.3:
                text = d.text[:4000] + "\n\n" + "\n".join(self.intl() for _ in range(self.rng.randint(2, 8)))
                return f"meetings/{self.rng.choice(self.p.kebab)}.md", text, None
            return (d.rel if kind == "notes" else f".local/share/docs/{d.rel}"), d.text, d.lines
        if r < 0.04:
            text = "\n".join(
                f"{self.rng.choice(self.p.snake).upper()}={self.slice(self.p.alnum, 24)}"
                for _ in range(self.rng.randint(3, 12))
            )
            return ".env", self.maybe_secret(text, 0.5), None
        src = self.src_file(small)
        return self.project_path(c, src), src.text, src.lines

    # ---- tool results --------------------------------------------------------------------------
    def read_result(self, c: _Ctx, big: bool) -> tuple[dict[str, Any], list[dict[str, Any]], Any]:
        """(arguments, content, details-or-None) of a pi ``read`` call."""
        path, text, lines = self.pick_file(c, small=False if big else None)
        if lines is None:
            lines = text.split("\n")
        c.read_files[path] = None
        total = len(lines)
        if not big and total > 60 and self.rng.random() < 0.65:
            limit = self.rng.randint(5, 60)
            offset = self.rng.randint(1, max(1, total - 10))
            chunk = lines[offset - 1 : offset - 1 + limit]
            body = "\n".join(chunk)
            rest = total - (offset - 1 + len(chunk))
            if rest > 0:
                body += f"\n\n[{rest} more lines in file. Use offset={offset + len(chunk)} to continue.]"
            return {"path": path, "offset": offset, "limit": limit}, [{"type": "text", "text": body}], None
        nbytes = len(text.encode())
        if total <= READ_MAX_LINES and nbytes <= READ_MAX_BYTES:
            return {"path": path}, [{"type": "text", "text": self.maybe_secret(text, 0.003)}], None
        out_bytes = 0
        k = 0
        by = "lines"
        for ln in lines:
            b = len(ln.encode()) + (1 if k else 0)
            if k >= READ_MAX_LINES:
                break
            if out_bytes + b > READ_MAX_BYTES:
                by = "bytes"
                break
            out_bytes += b
            k += 1
        content = "\n".join(lines[:k])
        limit_note = " (50.0KB limit)" if by == "bytes" else ""
        body = content + f"\n\n[Showing lines 1-{k} of {total}{limit_note}. Use offset={k + 1} to continue.]"
        details = {
            "truncation": {
                "content": content,
                "truncated": True,
                "truncatedBy": by,
                "totalLines": total,
                "totalBytes": nbytes,
                "outputLines": k,
                "outputBytes": out_bytes,
                "lastLinePartial": False,
                "firstLineExceedsLimit": False,
                "maxLines": READ_MAX_LINES,
                "maxBytes": READ_MAX_BYTES,
            }
        }
        return {"path": path}, [{"type": "text", "text": body}], details

    def grep_result(self, c: _Ctx) -> tuple[dict[str, Any], str]:
        fi, _line, name = self.rng.choice(self.p.defs)
        src = self.p.files[fi]
        out: list[str] = []
        files = [src] + [self.src_file() for _ in range(self.rng.randint(0, 2))]
        for f in files:
            base = f.rel.rsplit("/", 1)[-1]
            for i, ln in enumerate(f.lines):
                if name in ln:
                    out.append(f"{base}:{i + 1}: {ln}")
                    if len(out) >= 30:
                        break
        args: dict[str, Any] = {
            "pattern": name if self.rng.random() < 0.6 else f"def {name}\\b",
            "path": c.project.pkg or ".",
        }
        if self.rng.random() < 0.3:
            args["glob"] = "*.py"
        if self.rng.random() < 0.1:
            args["ignoreCase"] = True
        return args, "\n".join(out) if out else "No matches found"

    def bash_output(self, c: _Ctx) -> tuple[str, str, int]:
        """(command, output, exit code)."""
        r = self.rng
        k = r.randrange(9)
        if k == 0:
            test = f"tests/test_{r.choice(self.p.snake)}.py"
            n = r.randint(3, 60)
            if r.random() < 0.35:
                src = self.src_file()
                i = r.randrange(max(1, len(src.lines) - 8))
                code = "\n".join("    " + ln for ln in src.lines[i : i + r.randint(3, 8)])
                fn = r.choice(self.p.snake)
                out = (
                    "." * r.randint(0, n)
                    + "F"
                    + "\n"
                    + "=" * 30
                    + " FAILURES "
                    + "=" * 30
                    + "\n"
                    + f"{'_' * 20} test_{fn} {'_' * 20}\n\n{code}\n"
                    + f">       assert {fn}() == {r.randint(0, 99)}\n"
                    + f"E       AssertionError: {self.sentence()}\n\n"
                    + f"{test}:{r.randint(5, 400)}: AssertionError\n"
                    + f"FAILED {test}::test_{fn} - AssertionError\n"
                    + f"1 failed, {n} passed in {r.random() * 9:.2f}s\n"
                )
                return f"uv run pytest -q {test}", out, 1
            return f"uv run pytest -q {test}", "." * n + f"\n{n} passed in {r.random() * 5:.2f}s\n", 0
        if k == 1:
            lines = [
                f"{self.slice(self.p.hexs, 7)} {r.choice(['feat', 'fix', 'chore', 'refactor', 'test'])}"
                f"({r.choice(self.p.kebab)}): {r.choice(self.p.short).rstrip('.').lower()}"
                for _ in range(r.randint(3, 15))
            ]
            return "git log --oneline -n 30", "\n".join(lines) + "\n", 0
        if k == 2:
            entries = [
                f"-rw-r--r--  1 bench bench {r.randint(80, 90000):6d} Jan {r.randint(1, 28):2d} "
                f"{r.randint(0, 23):02d}:{r.randint(0, 59):02d} "
                f"{r.choice(self.p.files).rel.rsplit('/', 1)[-1]}"
                for _ in range(r.randint(3, 20))
            ]
            return (
                f"ls -la {c.project.pkg or '.'}",
                f"total {r.randint(8, 400)}\n" + "\n".join(entries) + "\n",
                0,
            )
        if k == 3:
            src = self.src_file()
            i = r.randrange(max(1, len(src.lines) - 40))
            chunk = src.lines[i : i + r.randint(5, 35)]
            return f"sed -n '{i + 1},{i + len(chunk)}p' {src.rel}", "\n".join(chunk) + "\n", 0
        if k == 4:
            src = self.src_file()
            frames = []
            for _ in range(r.randint(2, 4)):
                f = self.src_file()
                j = r.randrange(len(f.lines))
                frames.append(
                    f'  File "{PY_PREFIX}/{f.rel}", line {j + 1}, in {r.choice(self.p.snake)}\n'
                    f"    {f.lines[j].strip()}"
                )
            exc = r.choice(["ValueError", "KeyError", "TypeError", "AttributeError", "RuntimeError"])
            out = "Traceback (most recent call last):\n" + "\n".join(frames) + f"\n{exc}: {self.sentence()}\n"
            return f"uv run python -m {c.project.pkg or 'app'}.{src.rel[:-3].replace('/', '.')}", out, 1
        if k == 5:
            lines = [
                f"2026-{r.randint(1, 6):02d}-{r.randint(1, 28):02d}T{r.randint(0, 23):02d}:"
                f"{r.randint(0, 59):02d}:{r.randint(0, 59):02d}Z "
                f"{r.choice(['INFO', 'WARN', 'ERROR', 'DEBUG'])} "
                f"{r.choice(self.p.kebab)} {self.sentence()}"
                for _ in range(r.randint(2, 20))
            ]
            return (
                f"docker compose logs --tail 80 {r.choice(self.p.kebab)}",
                self.maybe_secret("\n".join(lines) + "\n", 0.01),
                0,
            )
        if k == 6:
            errs = [
                f"src/components/{r.choice(self.p.pascal)}.tsx({r.randint(1, 300)},{r.randint(1, 60)}): "
                f"error TS2322: Type 'string' is not assignable to type '{r.choice(self.p.pascal)}'."
                for _ in range(r.randint(1, 12))
            ]
            return "npx tsc --noEmit", "\n".join(errs) + f"\n\nFound {len(errs)} errors.\n", 2
        if k == 7:
            branch = f"feat/{r.choice(self.p.kebab)}"
            mods = "\n".join(
                f"\tmodified:   {self.project_path(c, self.src_file())}" for _ in range(r.randint(1, 8))
            )
            return (
                "git status",
                (
                    f'On branch {branch}\nChanges not staged for commit:\n  (use "git add <file>..." '
                    f"to update what will be committed)\n{mods}\n\nno changes added to commit\n"
                ),
                0,
            )
        env = "\n".join(
            f"{r.choice(self.p.snake).upper()}={self.slice(self.p.alnum, r.randint(4, 30))}"
            for _ in range(r.randint(3, 12))
        )
        return "env | sort | head -n 40", self.maybe_secret(env + "\n", 0.05), 0

    def edit_parts(self, c: _Ctx) -> tuple[dict[str, Any], str, dict[str, Any]]:
        src = self.src_file()
        path = self.project_path(c, src)
        n = len(src.lines)
        i = self.rng.randrange(max(1, n - 12))
        old = src.lines[i : i + self.rng.randint(1, 6)]
        new = [
            ln.replace(tok, self.rng.choice(self.p.snake), 1) if (tok := ln.strip().split(" ")[-1]) else ln
            for ln in old
        ]
        if self.rng.random() < 0.3:
            new.append(" " * (len(old[0]) - len(old[0].lstrip())) + "# " + self.sentence())
        if self.rng.random() < 0.05:
            new.append(f"# {self.intl()}")
        lo, hi = max(0, i - 3), min(n, i + len(old) + 3)
        w = len(str(hi + len(new)))
        diff = [f" {j + 1:>{w}} {src.lines[j]}" for j in range(lo, i)]
        diff += [f"-{i + 1 + j:>{w}} {ln}" for j, ln in enumerate(old)]
        diff += [f"+{i + 1 + j:>{w}} {ln}" for j, ln in enumerate(new)]
        shift = len(new) - len(old)
        diff += [f" {j + 1 + shift:>{w}} {src.lines[j]}" for j in range(i + len(old), hi)]
        c.modified_files[path] = None
        args = {"path": path, "edits": [{"oldText": "\n".join(old), "newText": "\n".join(new)}]}
        return (
            args,
            f"Successfully replaced 1 block(s) in {path}.",
            {"diff": "\n".join(diff), "firstChangedLine": i + 1},
        )

    def write_parts(self, c: _Ctx) -> tuple[dict[str, Any], str]:
        if c.project.kind == "web":
            path = f"src/hooks/use{self.rng.choice(self.p.pascal)}.ts"
            content = self.ts_file(self.rng.randint(6, 30))
        elif c.project.kind == "notes":
            path = f"{self.rng.choice(self.p.kebab)}.md"
            content = (
                "# "
                + self.sentence()
                + "\n\n"
                + "\n".join(
                    "- " + (self.intl() if self.rng.random() < 0.25 else self.sentence())
                    for _ in range(self.rng.randint(3, 15))
                )
                + "\n"
            )
        else:
            src = self.src_file(small=True)
            path = f"{c.project.pkg or 'tools'}/{self.rng.choice(self.p.snake)}.py"
            i = self.rng.randrange(max(1, len(src.lines) - 20))
            content = "\n".join(src.lines[i : i + self.rng.randint(5, 40)]) + "\n"
        c.modified_files[path] = None
        return {
            "path": path,
            "content": content,
        }, f"Successfully wrote {len(content.encode())} bytes to {path}"

    def web_fetch_text(self, target: int) -> tuple[list[str], str]:
        urls: list[str] = []
        parts: list[str] = []
        size = 0
        while size < target:
            f = self.src_file()
            url = f"https://raw.githubusercontent.com/python/cpython/v3.11.7/Lib/{f.rel}"
            urls.append(url)
            text = f.text if size + f.nbytes <= target else f.text[: target - size]
            parts.append(f"\n\n===== {url} =====\n\n{text}")
            size += len(text) + len(url) + 14
        return urls, "".join(parts)

    def image_b64(self, n: int, png: bool = True) -> tuple[str, str]:
        n -= n % 4
        head = _PNG_HEAD if png else _JPG_HEAD
        return head + self.slice(self.p.b64, max(4, n - len(head))), "image/png" if png else "image/jpeg"

    # ---- entries -------------------------------------------------------------------------------
    def emit(self, c: _Ctx, entry: dict[str, Any], *, parent: bool = True) -> str:
        line = orjson.dumps(entry) + b"\n"
        acc = classify_entry(entry)
        for k, v in acc.items():
            self.cat[k] += v
        n = len(line)
        self.cat["json_overhead"] += n - sum(acc.values())
        self.written += n
        self.lengths.append(n)
        c.lines.append(line)
        eid = str(entry.get("id"))
        if parent:
            c.leaf = eid
        c.entry_ids.append(eid)
        c.ctx_bytes += n
        self._count(entry["type"] if entry["type"] != "message" else "message:" + entry["message"]["role"])
        return eid

    def tick(self, c: _Ctx, lo: int, hi: int) -> int:
        c.t += self.rng.randint(lo, hi)
        return c.t

    def base(self, c: _Ctx, typ: str, lo: int = 1, hi: int = 40) -> dict[str, Any]:
        self.tick(c, lo, hi)
        return {"type": typ, "id": self.new_id(), "parentId": c.leaf, "timestamp": iso_ms(c.t)}

    def usage(self, c: _Ctx, out_tokens: int, error: bool = False) -> orjson.Fragment:
        if error:
            i = o = cr = cw = 0
        else:
            prov = c.model[0]
            new = max(1, c.ctx_bytes // 4 - c.cache_tokens)
            if prov == "anthropic":
                i, cr, cw = self.rng.randint(1, 12), c.cache_tokens, new
            else:
                i, cr, cw = new + self.rng.randint(0, 400), c.cache_tokens, 0
            o = out_tokens
            c.cache_tokens = cr + cw if prov == "anthropic" else (c.ctx_bytes // 4) // 1024 * 1024
        pi_, po, pr, pw = c.model[3]
        costs = [pi_ / 1000000 * i, po / 1000000 * o, pr / 1000000 * cr, pw / 1000000 * cw]
        total = costs[0] + costs[1] + costs[2] + costs[3]
        s = (
            f'{{"input":{i},"output":{o},"cacheRead":{cr},"cacheWrite":{cw},"totalTokens":{i + o + cr + cw},'
            f'"cost":{{"input":{js_number(costs[0])},"output":{js_number(costs[1])},'
            f'"cacheRead":{js_number(costs[2])},"cacheWrite":{js_number(costs[3])},"total":{js_number(total)}}}}}'
        )
        return orjson.Fragment(s)

    def tool_call_id(self, c: _Ctx, name: str, n: int) -> str:
        prov = c.model[0]
        if prov == "anthropic":
            return "toolu_01" + self.rand_b62(22)
        if prov in ("openai-codex", "openai"):
            return f"call_{self.rand_b62(24)}|fc_{self.slice(self.p.hexs, 48)}"
        if prov == "google":
            return f"{name}_{c.t}_{n}"
        return f"call_0{n}_{self.rand_b62(24)}"

    def response_id(self, c: _Ctx) -> str:
        prov = c.model[0]
        if prov == "anthropic":
            return "msg_01" + self.rand_b62(22)
        if prov in ("openai-codex", "openai"):
            return "resp_" + self.slice(self.p.hexs, 48)
        if prov == "google":
            return self.rand_b62(22)
        h = self.slice(self.p.hexs, 32)
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def thinking_block(self, c: _Ctx) -> dict[str, Any]:
        text = self.sentences(self.rng.randint(1, 5))
        prov = c.model[0]
        if prov == "deepseek":
            sig = "reasoning_content"
        elif prov in ("openai-codex", "openai"):
            if prov == "openai-codex" and self.rng.random() < 0.5:
                text = f"**{self.rng.choice(self.p.short).rstrip('.')}**\n\n{text}"
            sig = orjson.dumps(
                {
                    "id": "rs_" + self.slice(self.p.hexs, 48),
                    "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": text}],
                    "encrypted_content": "gAAAAAB" + self.slice(self.p.b64url, self.rng.randint(600, 2400)),
                }
            ).decode()
        else:
            sig = self.slice(self.p.b64, 4 * self.rng.randint(60, 330))
        if prov == "anthropic" and self.rng.random() < 0.02:
            return {
                "type": "thinking",
                "thinking": "",
                "thinkingSignature": self.slice(self.p.b64, 4 * 200),
                "redacted": True,
            }
        return {"type": "thinking", "thinking": text, "thinkingSignature": sig}

    def assistant(
        self, c: _Ctx, content: list[dict[str, Any]], stop: str, *, error: str | None = None
    ) -> str:
        start = c.t
        out_tokens = max(1, len(orjson.dumps(content)) // 4)
        e = self.base(c, "message", 800, 9000 + out_tokens * 8)
        msg: dict[str, Any] = {
            "role": "assistant",
            "content": content,
            "api": c.model[2],
            "provider": c.model[0],
            "model": c.model[1],
            "usage": self.usage(c, out_tokens, error is not None),
            "stopReason": stop,
            "timestamp": start + self.rng.randint(300, 1500),
        }
        if error is None:
            msg["responseId"] = self.response_id(c)
        else:
            msg["errorMessage"] = error
        e["message"] = msg
        eid = self.emit(c, e)
        if stop == "stop":
            c.stop_ids.append(eid)
        return eid

    def tool_result(
        self, c: _Ctx, call_id: str, name: str, content: list[dict[str, Any]], details: Any, is_error: bool
    ) -> None:
        e = self.base(c, "message", 5, 6000)
        msg: dict[str, Any] = {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": name,
            "content": content,
        }
        if details is not None:
            msg["details"] = details
        msg["isError"] = is_error
        msg["timestamp"] = c.t - self.rng.randint(0, 2)
        e["message"] = msg
        self.emit(c, e)

    def user_text(self, c: _Ctx) -> str:
        r = self.rng.random()
        path = self.project_path(c, self.src_file())
        if r < 0.06:
            text = self.intl()
        elif r < 0.35:
            verb = self.rng.choice(
                [
                    "fix",
                    "refactor",
                    "add tests for",
                    "explain",
                    "speed up",
                    "document",
                    "rename and clean up",
                    "review",
                ]
            )
            text = f"{verb} `{self.ident()}` in {path}"
        elif r < 0.55:
            text = (
                f"why does {self.ident()} raise "
                f"{self.rng.choice(['KeyError', 'a TypeError', 'ValueError'])}? " + self.sentence().lower()
            )
        elif r < 0.59:
            text = f"{self.sentence()} see this:\n\n```\n{self.bash_output(c)[1][:700]}```"
        else:
            text = self.sentences(self.rng.randint(1, 2))
            if self.rng.random() < 0.3:
                text = text[0].lower() + text[1:]
        if self.rng.random() < 0.012:
            text += f" (use this: {self.secret()})"
        if not c.goal:
            c.goal = text.split("\n")[0][:160]
        return text

    def user(self, c: _Ctx) -> str:
        self.tick(c, 15_000, 900_000)
        text = self.user_text(c)
        if self.rng.random() < 0.04:
            content: Any = text
        else:
            content = [{"type": "text", "text": text}]
            img_n = int(math.exp(self.rng.uniform(math.log(8_000), math.log(250_000))))
            if self.deficit("image") > img_n and self.remaining() > img_n * 4:
                data, mime = self.image_b64(img_n, self.rng.random() < 0.8)
                content.append({"type": "image", "data": data, "mimeType": mime})
                self._count("images")
        ts = c.t
        e = self.base(c, "message", 1, 6)
        e["message"] = {"role": "user", "content": content, "timestamp": ts}
        eid = self.emit(c, e)
        c.user_ids.append(eid)
        return eid

    # ---- turns ---------------------------------------------------------------------------------
    def tool_round(self, c: _Ctx, n_call: int) -> None:
        """One assistant toolUse message and its tool results."""
        calls: list[dict[str, Any]] = []
        results: list[tuple[str, str, list[dict[str, Any]], Any, bool]] = []
        for j in range(1 if self.rng.random() < 0.9 else 2):
            deficit = self.deficit("tool_result")
            name = self.rng.choices(_TOOLS, _TOOL_WEIGHTS)[0]
            # rare very long lines (an extension tool fetching many files); may overshoot the mix target,
            # the deficit-driven full-file reads below then pause until the other categories catch up
            fetch_cap = min(int(0.05 * self.size), self.remaining() - 50_000)
            big_fetch = fetch_cap >= 100_000 and deficit > 60_000 and self.rng.random() < 0.45
            big_read = (
                not big_fetch and deficit > 60_000 and self.remaining() > 130_000 and self.rng.random() < 0.5
            )
            details: Any = None
            is_error = False
            if big_fetch:
                name = "web_fetch"
                target = int(math.exp(self.rng.uniform(math.log(100_000), math.log(1_500_000))))
                target = min(target, fetch_cap)
                urls, text = self.web_fetch_text(target)
                args: dict[str, Any] = {"urls": urls}
                content = [{"type": "text", "text": text}]
                details = {
                    "fetched": len(urls),
                    "bytes": len(text.encode()),
                    "cached": self.rng.random() < 0.2,
                }
                self._count("long_results")
            elif name == "read" or big_read:
                name = "read"
                if not big_read and self.rng.random() < 0.01 and self.deficit("image") > 20_000:
                    data, mime = self.image_b64(int(self.rng.uniform(8_000, 60_000)))
                    args = {"path": f"docs/{self.rng.choice(self.p.kebab)}.png"}
                    content = [
                        {"type": "text", "text": "Read image file [image/png]"},
                        {"type": "image", "data": data, "mimeType": mime},
                    ]
                    self._count("images")
                else:
                    args, content, details = self.read_result(c, big_read)
            elif name == "bash":
                cmd, out, code = self.bash_output(c)
                args = {"command": cmd}
                if self.rng.random() < 0.05:
                    args["timeout"] = self.rng.choice([60, 120, 300])
                if code:
                    out += f"\n\nCommand exited with code {code}"
                    details, is_error = {}, True
                content = [{"type": "text", "text": out}]
            elif name == "grep":
                args, out = self.grep_result(c)
                content = [{"type": "text", "text": out}]
            elif name == "edit":
                args, out, details = self.edit_parts(c)
                content = [{"type": "text", "text": out}]
            else:
                args, out = self.write_parts(c)
                content = [{"type": "text", "text": out}]
            cid = self.tool_call_id(c, name, n_call + j)
            calls.append({"type": "toolCall", "id": cid, "name": name, "arguments": args})
            results.append((cid, name, content, details, is_error))
        blocks: list[dict[str, Any]] = []
        if c.level != "off" and (self.deficit("thinking") > 0 or self.rng.random() < 0.1):
            blocks.append(self.thinking_block(c))
        if self.rng.random() < 0.05:
            blocks.append({"type": "text", "text": self.sentence()})
        self.assistant(c, blocks + calls, "toolUse")
        for res in results:
            self.tool_result(c, *res)

    def final_answer(self, c: _Ctx) -> None:
        r = self.rng
        blocks: list[dict[str, Any]] = []
        if c.level != "off" and self.deficit("thinking") > 0 and r.random() < 0.4:
            blocks.append(self.thinking_block(c))
        parts = []
        for _ in range(r.randint(1, 2)):
            s = self.sentences(r.randint(1, 3))
            if r.random() < 0.5:
                s = f"In `{self.ident()}`, " + s[0].lower() + s[1:]
            parts.append(s)
        if r.random() < 0.2:
            parts.append("\n".join(f"- `{self.ident()}`: {self.sentence()}" for _ in range(r.randint(2, 4))))
        if r.random() < 0.15:
            src = self.src_file()
            i = r.randrange(max(1, len(src.lines) - 20))
            parts.append("```python\n" + "\n".join(src.lines[i : i + r.randint(3, 20)]) + "\n```")
        if c.project.kind in ("notes",) and r.random() < 0.3:
            parts.append(self.intl())
        text = "\n\n".join(parts)
        if c.model[0] == "openai-codex":
            blocks.append(
                {
                    "type": "text",
                    "text": text,
                    "textSignature": orjson.dumps(
                        {"v": 1, "id": "msg_" + self.slice(self.p.hexs, 48)}
                    ).decode(),
                }
            )
        else:
            blocks.append({"type": "text", "text": text})
        stop = "stop" if r.random() > 0.01 else r.choice(["length", "aborted"])
        self.assistant(c, blocks, stop)

    def compaction(self, c: _Ctx) -> None:
        r = self.rng
        keep = c.user_ids[-1] if c.user_ids else c.entry_ids[-1]
        done = c.done[-r.randint(4, 16) :] or ["(none)"]
        readf = sorted(c.read_files)
        modf = sorted(c.modified_files)
        summary = (
            f"## Goal\n{c.goal}\n\n## Constraints & Preferences\n- {self.sentence()}\n- {self.sentence()}\n\n"
            "## Progress\n### Done\n"
            + "\n".join(f"- [x] {d}" for d in done)
            + f"\n\n### In Progress\n- [ ] {self.sentence()}\n\n### Blocked\n- (none)\n\n## Key Decisions\n"
            + f"- **{self.ident()}**: {self.sentence()}\n\n## Next Steps\n"
            + "\n".join(f"{i + 1}. {self.sentence()}" for i in range(r.randint(1, 4)))
            + "\n\n## Critical Context\n"
            + "\n".join(f"- {self.sentence()}" for _ in range(r.randint(1, 4)))
        )
        if readf:
            summary += "\n\n<read-files>\n" + "\n".join(readf) + "\n</read-files>"
        if modf:
            summary += "\n\n<modified-files>\n" + "\n".join(modf) + "\n</modified-files>"
        e = self.base(c, "compaction", 2_000, 40_000)
        e["summary"] = summary
        e["firstKeptEntryId"] = keep
        e["tokensBefore"] = c.ctx_bytes // 4 + r.randint(2500, 4500)
        if r.random() < 0.1:
            e["details"] = {
                "artifactIndex": {p: self.sentence()[:40] for p in modf[:5]},
                "strategy": "keep-recent",
                "version": 2,
            }
            e["fromHook"] = True
        else:
            e["details"] = {"readFiles": readf, "modifiedFiles": modf}
            e["fromHook"] = False
        self.emit(c, e)
        c.ctx_bytes = len(summary) + 4000
        c.cache_tokens = 0
        c.compact_at = r.randint(20_000, 200_000)

    def branch(self, c: _Ctx) -> None:
        r = self.rng
        target = r.choice(c.stop_ids[:-1])
        c.leaf = target
        if r.random() < 0.6:
            e = self.base(c, "branch_summary", 500, 5000)
            e["fromId"] = target
            e["summary"] = (
                "The user explored a different conversation branch before returning here.\n"
                f"Summary of that exploration:\n\n## Goal\n{c.goal}\n\n## Progress\n### Done\n"
                + "\n".join(f"- [x] {d}" for d in c.done[-4:])
                + f"\n\n## Key Decisions\n- {self.sentence()}"
            )
            e["details"] = {
                "readFiles": sorted(c.read_files)[:6],
                "modifiedFiles": sorted(c.modified_files)[:6],
            }
            e["fromHook"] = False
            self.emit(c, e)
            if r.random() < 0.5:
                self.label(c, c.leaf)

    def label(self, c: _Ctx, target: str | None = None) -> None:
        e = self.base(c, "label", 100, 3000)
        e["targetId"] = target or self.rng.choice(c.entry_ids)
        if self.rng.random() < 0.9:
            e["label"] = self.rng.choice(self.p.kebab)
        self.emit(c, e)

    def side_events(self, c: _Ctx) -> None:
        r = self.rng
        x = r.random()
        if x < 0.06:
            cmd, out, code = self.bash_output(c)
            e = self.base(c, "message", 2_000, 60_000)
            m: dict[str, Any] = {
                "role": "bashExecution",
                "command": cmd,
                "output": out,
                "exitCode": code,
                "cancelled": False,
                "truncated": False,
                "timestamp": c.t,
            }
            if r.random() < 0.1:
                m["excludeFromContext"] = True
            e["message"] = m
            self.emit(c, e)
        elif x < 0.08:
            e = self.base(c, "custom_message", 10, 2000)
            e = {
                "type": "custom_message",
                "customType": r.choice(["cost-meter", "git-footer", "deck-stats"]),
                "content": f"{self.sentence()} ({r.randint(1, 999)} items)",
                "display": r.random() < 0.7,
                "details": {r.choice(self.p.camel): r.randint(0, 5000)},
                "id": e["id"],
                "parentId": e["parentId"],
                "timestamp": e["timestamp"],
            }
            self.emit(c, e)
        elif x < 0.095:
            self.label(c)
        elif x < 0.105:
            e = self.base(c, "custom", 10, 2000)
            e = {
                "type": "custom",
                "customType": "todo-state",
                "data": {
                    "items": [r.choice(self.p.short) for _ in range(r.randint(1, 4))],
                    "done": r.randint(0, 4),
                },
                "id": e["id"],
                "parentId": e["parentId"],
                "timestamp": e["timestamp"],
            }
            self.emit(c, e)
        elif x < 0.125:
            prov = r.choices(_MODELS, [m[4] for m in _MODELS])[0]
            c.model = prov
            e = self.base(c, "model_change", 1_000, 30_000)
            e["provider"], e["modelId"] = prov[0], prov[1]
            self.emit(c, e)
        elif x < 0.14:
            c.level = r.choice(_THINKING_LEVELS)
            e = self.base(c, "thinking_level_change", 1_000, 30_000)
            e["thinkingLevel"] = c.level
            self.emit(c, e)
        if not c.named and r.random() < 0.03:
            e = self.base(c, "session_info", 100, 5000)
            e["name"] = c.goal[:60] if r.random() < 0.7 else f"{r.choice(self.p.kebab)} — {self.intl()[:20]}"
            self.emit(c, e)
            c.named = True

    def turn(self, c: _Ctx) -> None:
        self.side_events(c)
        if c.ctx_bytes > c.compact_at and self.deficit("compaction") > -1500:
            self.compaction(c)
        if len(c.stop_ids) >= 3 and self.rng.random() < 0.025:
            self.branch(c)
        self.user(c)
        if self.rng.random() < 0.004:
            err = (
                '529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},'
                f'"request_id":"req_011C{self.rand_b62(20)}"}}'
            )
            self.assistant(c, [], "error", error=err)
        rounds = min(14, int(self.rng.expovariate(1 / 1.9)))
        for n in range(rounds):
            self.tool_round(c, n + 1)
            if self.written >= self.size:
                break
            if n % 3 == 2:
                c.done.append(
                    f"{self.rng.choice(['Checked', 'Updated', 'Fixed', 'Read'])} "
                    f"`{self.ident()}` in {self.project_path(c, self.src_file())}"
                )
        self.final_answer(c)

    # ---- sessions ------------------------------------------------------------------------------
    def uuid7(self, ms: int) -> str:
        rnd = self.rng.getrandbits(74)
        v = (ms << 80) | (0x7 << 76) | ((rnd >> 62) << 64) | (0b10 << 62) | (rnd & ((1 << 62) - 1))
        h = f"{v:032x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def session(self) -> None:
        r = self.rng
        project = r.choices(PROJECTS, self.project_weights)[0]
        frac = self.written / self.size
        start = EPOCH_START_MS + int(SPAN_MS * frac) + r.randint(0, 6 * 3_600_000)
        start = max(start, self.last_start + r.randint(60_000, 1_800_000))
        start -= start % 1000 if r.random() < 0.7 else 0
        self.last_start = start
        model = r.choices(_MODELS, [m[4] for m in _MODELS])[0]
        level = r.choices(_THINKING_LEVELS, [2, 1, 3, 4, 2])[0]
        c = _Ctx(
            project=project,
            model=model,
            level=level,
            t=start,
            leaf=None,
            lines=[],
            entry_ids=[],
            user_ids=[],
            stop_ids=[],
            read_files={},
            modified_files={},
            goal="",
            done=[],
            ctx_bytes=0,
            cache_tokens=0,
            compact_at=r.randint(60_000, 600_000),
            named=False,
        )
        sid = self.uuid7(start)
        header = {"type": "session", "version": 3, "id": sid, "timestamp": iso_ms(start), "cwd": project.cwd}
        line = orjson.dumps(header) + b"\n"
        c.lines.append(line)
        self.written += len(line)
        self.lengths.append(len(line))
        self.cat["json_overhead"] += len(line)
        c.ctx_bytes = 0
        e = self.base(c, "model_change", 0, 2)
        e["provider"], e["modelId"] = model[0], model[1]
        self.emit(c, e)
        e = self.base(c, "thinking_level_change", 0, 1)
        e["thinkingLevel"] = level
        self.emit(c, e)
        turns = r.choice((1, 1, 2, 2, 3, 3, 4, 5, 6, 8, 10, 13, 18, 26, 40, 60))
        for _ in range(turns):
            self.turn(c)
            if self.written >= self.size:
                break
        d = self.out / "sessions" / encode_cwd(project.cwd)
        d.mkdir(parents=True, exist_ok=True)
        path = d / f"{iso_ms(start).replace(':', '-').replace('.', '-')}_{sid}.jsonl"
        path.write_bytes(b"".join(c.lines))
        os.utime(path, ns=(c.t * 1_000_000, c.t * 1_000_000))
        self.files += 1
        self.projects.add(project.cwd)

    def run(self) -> dict[str, Any]:
        t0 = time.perf_counter()
        sessions = self.out / "sessions"
        if sessions.exists() and any(sessions.iterdir()):
            raise FileExistsError(f"{sessions} is not empty")
        while self.written < self.size:
            self.session()
        elapsed = time.perf_counter() - t0
        total = self.written
        entries = len(self.lengths) - self.files
        return {
            "out_dir": str(self.out),
            "seed": self.seed,
            "size_requested": self.size,
            "bytes": total,
            "files": self.files,
            "projects": len(self.projects),
            "entries": entries,
            "lines": len(self.lengths),
            "categories": _mix(self.cat, total),
            "target_mix": TARGET_MIX,
            "line_length": _percentiles(self.lengths),
            "target_line_length": TARGET_LINE_LENGTHS,
            "counts": dict(sorted(self.counts.items())),
            "elapsed_s": round(elapsed, 3),
            "mb_per_s": round(total / 1e6 / elapsed, 1) if elapsed else 0.0,
        }


def generate(out_dir: Path, size_bytes: int, seed: int = 1) -> dict[str, Any]:
    """Write about ``size_bytes`` of journals under ``out_dir/sessions`` and return the statistics."""
    return _Generator(Path(out_dir), size_bytes, seed).run()


def format_table(stats: dict[str, Any]) -> str:
    out = []
    if "size_requested" in stats:
        out.append(
            f"wrote {stats['bytes']:,} bytes (requested {stats['size_requested']:,}) "
            f"in {stats['files']} files, "
            f"{stats['projects']} projects, {stats['entries']:,} entries; "
            f"{stats['elapsed_s']} s = {stats['mb_per_s']} MB/s"
        )
    else:
        out.append(f"{stats['bytes']:,} bytes in {stats['files']} files, {stats['lines']:,} lines")
    out.append(f"{'category':16} {'bytes':>14} {'share':>8} {'target':>8}")
    for cat, v in stats["categories"].items():
        out.append(f"{cat:16} {v['bytes']:>14,} {v['share'] * 100:7.2f}% {TARGET_MIX[cat] * 100:7.2f}%")
    ll = stats["line_length"]
    out.append(
        "line length      "
        + "  ".join(f"{k}={ll[k]:,}" for k in ("p50", "p90", "p99", "max"))
        + "   (target "
        + "  ".join(f"{k}={v:,}" for k, v in TARGET_LINE_LENGTHS.items())
        + ")"
    )
    if stats.get("counts"):
        out.append("counts           " + ", ".join(f"{k} {v}" for k, v in stats["counts"].items()))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.corpus", description=__doc__.split("\n")[0])
    ap.add_argument("--size", help="output size, e.g. 500KB, 50MB, 1GB, 2.5GB (decimal) or 64MiB (binary)")
    ap.add_argument("--out", type=Path, help="output directory (journals go to OUT/sessions)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="print the statistics as JSON")
    ap.add_argument("--measure", type=Path, metavar="DIR", help="only print the mix of an existing corpus")
    args = ap.parse_args(argv)
    if args.measure:
        stats = measure_corpus(args.measure)
    else:
        if not args.size or not args.out:
            print("corpus: error: --size and --out are required", file=sys.stderr)
            return 2
        try:
            size = parse_size(args.size)
        except ValueError as exc:
            print(f"corpus: error: {exc}", file=sys.stderr)
            return 2
        try:
            stats = generate(args.out, size, args.seed)
        except FileExistsError as exc:
            print(f"corpus: error: {exc}", file=sys.stderr)
            return 2
    if args.json:
        print(orjson.dumps(stats, option=orjson.OPT_INDENT_2).decode())
    else:
        print(format_table(stats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
