"""What pi's tools return: read, grep, bash, edit and write calls with their arguments and output."""

from __future__ import annotations

import random
from typing import Any

from benchmarks.corpus.pools import Pools
from benchmarks.corpus.text import Text
from benchmarks.corpus.units import PY_PREFIX, READ_MAX_BYTES, READ_MAX_LINES
from benchmarks.corpus.world import Ctx


class ToolOutputs:
    """The arguments and results of pi's built-in tools, in the project of the session."""

    def __init__(self, rng: random.Random, pools: Pools, text: Text) -> None:
        self.rng = rng
        self.p = pools
        self.text = text

    def read_result(self, c: Ctx, big: bool) -> tuple[dict[str, Any], list[dict[str, Any]], Any]:
        """(arguments, content, details-or-None) of a pi ``read`` call."""
        path, text, lines = self.text.pick_file(c, small=False if big else None)
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
            return {"path": path}, [{"type": "text", "text": self.text.maybe_secret(text, 0.003)}], None
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

    def grep_result(self, c: Ctx) -> tuple[dict[str, Any], str]:
        fi, _line, name = self.rng.choice(self.p.defs)
        src = self.p.files[fi]
        out: list[str] = []
        files = [src] + [self.text.src_file() for _ in range(self.rng.randint(0, 2))]
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

    def bash_output(self, c: Ctx) -> tuple[str, str, int]:
        """(command, output, exit code)."""
        r = self.rng
        k = r.randrange(9)
        if k == 0:
            test = f"tests/test_{r.choice(self.p.snake)}.py"
            n = r.randint(3, 60)
            if r.random() < 0.35:
                src = self.text.src_file()
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
                    + f"E       AssertionError: {self.text.sentence()}\n\n"
                    + f"{test}:{r.randint(5, 400)}: AssertionError\n"
                    + f"FAILED {test}::test_{fn} - AssertionError\n"
                    + f"1 failed, {n} passed in {r.random() * 9:.2f}s\n"
                )
                return f"uv run pytest -q {test}", out, 1
            return f"uv run pytest -q {test}", "." * n + f"\n{n} passed in {r.random() * 5:.2f}s\n", 0
        if k == 1:
            lines = [
                f"{self.text.slice(self.p.hexs, 7)} {r.choice(['feat', 'fix', 'chore', 'refactor', 'test'])}"
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
            src = self.text.src_file()
            i = r.randrange(max(1, len(src.lines) - 40))
            chunk = src.lines[i : i + r.randint(5, 35)]
            return f"sed -n '{i + 1},{i + len(chunk)}p' {src.rel}", "\n".join(chunk) + "\n", 0
        if k == 4:
            src = self.text.src_file()
            frames = []
            for _ in range(r.randint(2, 4)):
                f = self.text.src_file()
                j = r.randrange(len(f.lines))
                frames.append(
                    f'  File "{PY_PREFIX}/{f.rel}", line {j + 1}, in {r.choice(self.p.snake)}\n'
                    f"    {f.lines[j].strip()}"
                )
            exc = r.choice(["ValueError", "KeyError", "TypeError", "AttributeError", "RuntimeError"])
            out = "Traceback (most recent call last):\n" + "\n".join(frames) + f"\n{exc}: {self.text.sentence()}\n"
            return f"uv run python -m {c.project.pkg or 'app'}.{src.rel[:-3].replace('/', '.')}", out, 1
        if k == 5:
            lines = [
                f"2026-{r.randint(1, 6):02d}-{r.randint(1, 28):02d}T{r.randint(0, 23):02d}:"
                f"{r.randint(0, 59):02d}:{r.randint(0, 59):02d}Z "
                f"{r.choice(['INFO', 'WARN', 'ERROR', 'DEBUG'])} "
                f"{r.choice(self.p.kebab)} {self.text.sentence()}"
                for _ in range(r.randint(2, 20))
            ]
            return (
                f"docker compose logs --tail 80 {r.choice(self.p.kebab)}",
                self.text.maybe_secret("\n".join(lines) + "\n", 0.01),
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
                f"\tmodified:   {self.text.project_path(c, self.text.src_file())}" for _ in range(r.randint(1, 8))
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
            f"{r.choice(self.p.snake).upper()}={self.text.slice(self.p.alnum, r.randint(4, 30))}"
            for _ in range(r.randint(3, 12))
        )
        return "env | sort | head -n 40", self.text.maybe_secret(env + "\n", 0.05), 0

    def edit_parts(self, c: Ctx) -> tuple[dict[str, Any], str, dict[str, Any]]:
        src = self.text.src_file()
        path = self.text.project_path(c, src)
        n = len(src.lines)
        i = self.rng.randrange(max(1, n - 12))
        old = src.lines[i : i + self.rng.randint(1, 6)]
        new = [
            ln.replace(tok, self.rng.choice(self.p.snake), 1) if (tok := ln.strip().split(" ")[-1]) else ln
            for ln in old
        ]
        if self.rng.random() < 0.3:
            new.append(" " * (len(old[0]) - len(old[0].lstrip())) + "# " + self.text.sentence())
        if self.rng.random() < 0.05:
            new.append(f"# {self.text.intl()}")
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

    def write_parts(self, c: Ctx) -> tuple[dict[str, Any], str]:
        if c.project.kind == "web":
            path = f"src/hooks/use{self.rng.choice(self.p.pascal)}.ts"
            content = self.text.ts_file(self.rng.randint(6, 30))
        elif c.project.kind == "notes":
            path = f"{self.rng.choice(self.p.kebab)}.md"
            content = (
                "# "
                + self.text.sentence()
                + "\n\n"
                + "\n".join(
                    "- " + (self.text.intl() if self.rng.random() < 0.25 else self.text.sentence())
                    for _ in range(self.rng.randint(3, 15))
                )
                + "\n"
            )
        else:
            src = self.text.src_file(small=True)
            path = f"{c.project.pkg or 'tools'}/{self.rng.choice(self.p.snake)}.py"
            i = self.rng.randrange(max(1, len(src.lines) - 20))
            content = "\n".join(src.lines[i : i + self.rng.randint(5, 40)]) + "\n"
        c.modified_files[path] = None
        return {
            "path": path,
            "content": content,
        }, f"Successfully wrote {len(content.encode())} bytes to {path}"
