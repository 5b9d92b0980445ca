"""Text pools, built once per process from this interpreter's standard library (seed independent)."""

from __future__ import annotations

import base64
import os
import random
import re
import sysconfig
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from benchmarks.corpus.units import READ_MAX_BYTES


# --------------------------------------------------------------------------------------------------
# Text pools, built once per process from the standard library (seed independent)
# --------------------------------------------------------------------------------------------------
@dataclass
class Source:
    rel: str
    text: str
    lines: list[str]
    nbytes: int


@dataclass
class Pools:
    files: list[Source]
    small: list[Source]
    big: list[Source]
    docs: list[Source]
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
def text_pools() -> Pools:
    root = Path(sysconfig.get_paths()["stdlib"])
    candidates = _stdlib_py_files()
    pick = random.Random(20260105)
    chosen = sorted(pick.sample(candidates, min(360, len(candidates))))
    files: list[Source] = []
    for p in chosen:
        text = p.read_text(encoding="utf-8", errors="replace").replace("\r\n", "\n").replace("\t", "    ")
        files.append(Source(p.relative_to(root).as_posix(), text, text.split("\n"), len(text.encode())))
    docs: list[Source] = []
    topics: dict[str, str] = {}
    try:
        from pydoc_data import topics as pydoc_topics

        topics = dict(pydoc_topics.topics)
    except ImportError:  # pragma: no cover - stripped installs
        pass
    for name in sorted(topics):
        text = topics[name]
        docs.append(Source(f"docs/python/{name}.md", text, text.split("\n"), len(text.encode())))
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
    return Pools(
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
