"""Generated text: sentences, identifiers, fake secrets, file contents and paths, base64 payloads."""

from __future__ import annotations

import base64
import random

from benchmarks.corpus.pools import INTL_TEXT, Pools, Source
from benchmarks.corpus.tally import Tally
from benchmarks.corpus.units import PY_PREFIX
from benchmarks.corpus.world import B62, JPG_HEAD, PNG_HEAD, Ctx


class Text:
    """Text drawn from the pools with the corpus's one seeded generator."""

    def __init__(self, rng: random.Random, pools: Pools, tally: Tally) -> None:
        self.rng = rng
        self.p = pools
        self.tally = tally

    def slice(self, pool: str, n: int) -> str:
        n = max(0, min(n, len(pool)))
        off = self.rng.randrange(0, len(pool) - n + 1)
        return pool[off : off + n]

    def rand_b62(self, n: int) -> str:
        return "".join(self.rng.choices(B62, k=n))

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
        self.tally.count("secrets")
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
    def src_file(self, small: bool | None = None) -> Source:
        if small is True:
            return self.rng.choice(self.p.small)
        if small is False:
            return self.rng.choice(self.p.big)
        return self.rng.choice(self.p.files)

    def project_path(self, c: Ctx, src: Source) -> str:
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

    def pick_file(self, c: Ctx, small: bool | None = None) -> tuple[str, str, list[str] | None]:
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
        head = PNG_HEAD if png else JPG_HEAD
        return head + self.slice(self.p.b64, max(4, n - len(head))), "image/png" if png else "image/jpeg"
