"""The corpus driver: sessions of turns (tool rounds, answers, compactions, branches) until the size is reached."""

from __future__ import annotations

import math
import os
import random
import time
from pathlib import Path
from typing import Any

import orjson

from benchmarks.corpus.entries import Entries
from benchmarks.corpus.mix import TARGET_LINE_LENGTHS, TARGET_MIX, mix_shares, percentiles
from benchmarks.corpus.pools import text_pools
from benchmarks.corpus.tally import Tally
from benchmarks.corpus.text import Text
from benchmarks.corpus.tool_outputs import ToolOutputs
from benchmarks.corpus.units import EPOCH_START_MS, SPAN_MS, encode_cwd, iso_ms
from benchmarks.corpus.world import MODELS, PROJECTS, THINKING_LEVELS, TOOL_WEIGHTS, TOOLS, Ctx


class Generator:
    """One corpus: sessions until the tally reaches the size, all from one seeded generator."""

    def __init__(self, out_dir: Path, size_bytes: int, seed: int) -> None:
        self.out = Path(out_dir)
        self.seed = seed
        self.rng = random.Random(seed)
        self.p = text_pools()
        self.tally = Tally(size_bytes)
        self.text = Text(self.rng, self.p, self.tally)
        self.tools = ToolOutputs(self.rng, self.p, self.text)
        # (draws the id key: the first use of the seeded generator)
        self.entries = Entries(self.rng, self.p, self.tally, self.text, self.tools)
        self.files = 0
        self.projects: set[str] = set()
        self.last_start = EPOCH_START_MS
        self.project_weights = [p.weight for p in PROJECTS]

    # ---- turns ---------------------------------------------------------------------------------
    def tool_round(self, c: Ctx, n_call: int) -> None:
        """One assistant toolUse message and its tool results."""
        calls: list[dict[str, Any]] = []
        results: list[tuple[str, str, list[dict[str, Any]], Any, bool]] = []
        for j in range(1 if self.rng.random() < 0.9 else 2):
            deficit = self.tally.deficit("tool_result")
            name = self.rng.choices(TOOLS, TOOL_WEIGHTS)[0]
            # rare very long lines (an extension tool fetching many files); may overshoot the mix target,
            # the deficit-driven full-file reads below then pause until the other categories catch up
            fetch_cap = min(int(0.05 * self.tally.size), self.tally.remaining() - 50_000)
            big_fetch = fetch_cap >= 100_000 and deficit > 60_000 and self.rng.random() < 0.45
            big_read = (
                not big_fetch and deficit > 60_000 and self.tally.remaining() > 130_000 and self.rng.random() < 0.5
            )
            details: Any = None
            is_error = False
            if big_fetch:
                name = "web_fetch"
                target = int(math.exp(self.rng.uniform(math.log(100_000), math.log(1_500_000))))
                target = min(target, fetch_cap)
                urls, text = self.text.web_fetch_text(target)
                args: dict[str, Any] = {"urls": urls}
                content = [{"type": "text", "text": text}]
                details = {
                    "fetched": len(urls),
                    "bytes": len(text.encode()),
                    "cached": self.rng.random() < 0.2,
                }
                self.tally.count("long_results")
            elif name == "read" or big_read:
                name = "read"
                if not big_read and self.rng.random() < 0.01 and self.tally.deficit("image") > 20_000:
                    data, mime = self.text.image_b64(int(self.rng.uniform(8_000, 60_000)))
                    args = {"path": f"docs/{self.rng.choice(self.p.kebab)}.png"}
                    content = [
                        {"type": "text", "text": "Read image file [image/png]"},
                        {"type": "image", "data": data, "mimeType": mime},
                    ]
                    self.tally.count("images")
                else:
                    args, content, details = self.tools.read_result(c, big_read)
            elif name == "bash":
                cmd, out, code = self.tools.bash_output(c)
                args = {"command": cmd}
                if self.rng.random() < 0.05:
                    args["timeout"] = self.rng.choice([60, 120, 300])
                if code:
                    out += f"\n\nCommand exited with code {code}"
                    details, is_error = {}, True
                content = [{"type": "text", "text": out}]
            elif name == "grep":
                args, out = self.tools.grep_result(c)
                content = [{"type": "text", "text": out}]
            elif name == "edit":
                args, out, details = self.tools.edit_parts(c)
                content = [{"type": "text", "text": out}]
            else:
                args, out = self.tools.write_parts(c)
                content = [{"type": "text", "text": out}]
            cid = self.entries.tool_call_id(c, name, n_call + j)
            calls.append({"type": "toolCall", "id": cid, "name": name, "arguments": args})
            results.append((cid, name, content, details, is_error))
        blocks: list[dict[str, Any]] = []
        if c.level != "off" and (self.tally.deficit("thinking") > 0 or self.rng.random() < 0.1):
            blocks.append(self.entries.thinking_block(c))
        if self.rng.random() < 0.05:
            blocks.append({"type": "text", "text": self.text.sentence()})
        self.entries.assistant(c, blocks + calls, "toolUse")
        for res in results:
            self.entries.tool_result(c, *res)

    def final_answer(self, c: Ctx) -> None:
        r = self.rng
        blocks: list[dict[str, Any]] = []
        if c.level != "off" and self.tally.deficit("thinking") > 0 and r.random() < 0.4:
            blocks.append(self.entries.thinking_block(c))
        parts = []
        for _ in range(r.randint(1, 2)):
            s = self.text.sentences(r.randint(1, 3))
            if r.random() < 0.5:
                s = f"In `{self.text.ident()}`, " + s[0].lower() + s[1:]
            parts.append(s)
        if r.random() < 0.2:
            parts.append("\n".join(f"- `{self.text.ident()}`: {self.text.sentence()}" for _ in range(r.randint(2, 4))))
        if r.random() < 0.15:
            src = self.text.src_file()
            i = r.randrange(max(1, len(src.lines) - 20))
            parts.append("```python\n" + "\n".join(src.lines[i : i + r.randint(3, 20)]) + "\n```")
        if c.project.kind in ("notes",) and r.random() < 0.3:
            parts.append(self.text.intl())
        text = "\n\n".join(parts)
        if c.model[0] == "openai-codex":
            blocks.append(
                {
                    "type": "text",
                    "text": text,
                    "textSignature": orjson.dumps(
                        {"v": 1, "id": "msg_" + self.text.slice(self.p.hexs, 48)}
                    ).decode(),
                }
            )
        else:
            blocks.append({"type": "text", "text": text})
        stop = "stop" if r.random() > 0.01 else r.choice(["length", "aborted"])
        self.entries.assistant(c, blocks, stop)

    def compaction(self, c: Ctx) -> None:
        r = self.rng
        keep = c.user_ids[-1] if c.user_ids else c.entry_ids[-1]
        done = c.done[-r.randint(4, 16) :] or ["(none)"]
        readf = sorted(c.read_files)
        modf = sorted(c.modified_files)
        summary = (
            f"## Goal\n{c.goal}\n\n## Constraints & Preferences\n- {self.text.sentence()}\n- {self.text.sentence()}\n\n"
            "## Progress\n### Done\n"
            + "\n".join(f"- [x] {d}" for d in done)
            + f"\n\n### In Progress\n- [ ] {self.text.sentence()}\n\n### Blocked\n- (none)\n\n## Key Decisions\n"
            + f"- **{self.text.ident()}**: {self.text.sentence()}\n\n## Next Steps\n"
            + "\n".join(f"{i + 1}. {self.text.sentence()}" for i in range(r.randint(1, 4)))
            + "\n\n## Critical Context\n"
            + "\n".join(f"- {self.text.sentence()}" for _ in range(r.randint(1, 4)))
        )
        if readf:
            summary += "\n\n<read-files>\n" + "\n".join(readf) + "\n</read-files>"
        if modf:
            summary += "\n\n<modified-files>\n" + "\n".join(modf) + "\n</modified-files>"
        e = self.entries.base(c, "compaction", 2_000, 40_000)
        e["summary"] = summary
        e["firstKeptEntryId"] = keep
        e["tokensBefore"] = c.ctx_bytes // 4 + r.randint(2500, 4500)
        if r.random() < 0.1:
            e["details"] = {
                "artifactIndex": {p: self.text.sentence()[:40] for p in modf[:5]},
                "strategy": "keep-recent",
                "version": 2,
            }
            e["fromHook"] = True
        else:
            e["details"] = {"readFiles": readf, "modifiedFiles": modf}
            e["fromHook"] = False
        self.entries.emit(c, e)
        c.ctx_bytes = len(summary) + 4000
        c.cache_tokens = 0
        c.compact_at = r.randint(20_000, 200_000)

    def branch(self, c: Ctx) -> None:
        r = self.rng
        target = r.choice(c.stop_ids[:-1])
        c.leaf = target
        if r.random() < 0.6:
            e = self.entries.base(c, "branch_summary", 500, 5000)
            e["fromId"] = target
            e["summary"] = (
                "The user explored a different conversation branch before returning here.\n"
                f"Summary of that exploration:\n\n## Goal\n{c.goal}\n\n## Progress\n### Done\n"
                + "\n".join(f"- [x] {d}" for d in c.done[-4:])
                + f"\n\n## Key Decisions\n- {self.text.sentence()}"
            )
            e["details"] = {
                "readFiles": sorted(c.read_files)[:6],
                "modifiedFiles": sorted(c.modified_files)[:6],
            }
            e["fromHook"] = False
            self.entries.emit(c, e)
            if r.random() < 0.5:
                self.label(c, c.leaf)

    def label(self, c: Ctx, target: str | None = None) -> None:
        e = self.entries.base(c, "label", 100, 3000)
        e["targetId"] = target or self.rng.choice(c.entry_ids)
        if self.rng.random() < 0.9:
            e["label"] = self.rng.choice(self.p.kebab)
        self.entries.emit(c, e)

    def side_events(self, c: Ctx) -> None:
        r = self.rng
        x = r.random()
        if x < 0.06:
            cmd, out, code = self.tools.bash_output(c)
            e = self.entries.base(c, "message", 2_000, 60_000)
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
            self.entries.emit(c, e)
        elif x < 0.08:
            e = self.entries.base(c, "custom_message", 10, 2000)
            e = {
                "type": "custom_message",
                "customType": r.choice(["cost-meter", "git-footer", "deck-stats"]),
                "content": f"{self.text.sentence()} ({r.randint(1, 999)} items)",
                "display": r.random() < 0.7,
                "details": {r.choice(self.p.camel): r.randint(0, 5000)},
                "id": e["id"],
                "parentId": e["parentId"],
                "timestamp": e["timestamp"],
            }
            self.entries.emit(c, e)
        elif x < 0.095:
            self.label(c)
        elif x < 0.105:
            e = self.entries.base(c, "custom", 10, 2000)
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
            self.entries.emit(c, e)
        elif x < 0.125:
            prov = r.choices(MODELS, [m[4] for m in MODELS])[0]
            c.model = prov
            e = self.entries.base(c, "model_change", 1_000, 30_000)
            e["provider"], e["modelId"] = prov[0], prov[1]
            self.entries.emit(c, e)
        elif x < 0.14:
            c.level = r.choice(THINKING_LEVELS)
            e = self.entries.base(c, "thinking_level_change", 1_000, 30_000)
            e["thinkingLevel"] = c.level
            self.entries.emit(c, e)
        if not c.named and r.random() < 0.03:
            e = self.entries.base(c, "session_info", 100, 5000)
            e["name"] = c.goal[:60] if r.random() < 0.7 else f"{r.choice(self.p.kebab)} — {self.text.intl()[:20]}"
            self.entries.emit(c, e)
            c.named = True

    def turn(self, c: Ctx) -> None:
        self.side_events(c)
        if c.ctx_bytes > c.compact_at and self.tally.deficit("compaction") > -1500:
            self.compaction(c)
        if len(c.stop_ids) >= 3 and self.rng.random() < 0.025:
            self.branch(c)
        self.entries.user(c)
        if self.rng.random() < 0.004:
            err = (
                '529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},'
                f'"request_id":"req_011C{self.text.rand_b62(20)}"}}'
            )
            self.entries.assistant(c, [], "error", error=err)
        rounds = min(14, int(self.rng.expovariate(1 / 1.9)))
        for n in range(rounds):
            self.tool_round(c, n + 1)
            if self.tally.written >= self.tally.size:
                break
            if n % 3 == 2:
                c.done.append(
                    f"{self.rng.choice(['Checked', 'Updated', 'Fixed', 'Read'])} "
                    f"`{self.text.ident()}` in {self.text.project_path(c, self.text.src_file())}"
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
        frac = self.tally.written / self.tally.size
        start = EPOCH_START_MS + int(SPAN_MS * frac) + r.randint(0, 6 * 3_600_000)
        start = max(start, self.last_start + r.randint(60_000, 1_800_000))
        start -= start % 1000 if r.random() < 0.7 else 0
        self.last_start = start
        model = r.choices(MODELS, [m[4] for m in MODELS])[0]
        level = r.choices(THINKING_LEVELS, [2, 1, 3, 4, 2])[0]
        c = Ctx(
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
        self.tally.written += len(line)
        self.tally.lengths.append(len(line))
        self.tally.cat["json_overhead"] += len(line)
        c.ctx_bytes = 0
        e = self.entries.base(c, "model_change", 0, 2)
        e["provider"], e["modelId"] = model[0], model[1]
        self.entries.emit(c, e)
        e = self.entries.base(c, "thinking_level_change", 0, 1)
        e["thinkingLevel"] = level
        self.entries.emit(c, e)
        turns = r.choice((1, 1, 2, 2, 3, 3, 4, 5, 6, 8, 10, 13, 18, 26, 40, 60))
        for _ in range(turns):
            self.turn(c)
            if self.tally.written >= self.tally.size:
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
        while self.tally.written < self.tally.size:
            self.session()
        elapsed = time.perf_counter() - t0
        total = self.tally.written
        entries = len(self.tally.lengths) - self.files
        return {
            "out_dir": str(self.out),
            "seed": self.seed,
            "size_requested": self.tally.size,
            "bytes": total,
            "files": self.files,
            "projects": len(self.projects),
            "entries": entries,
            "lines": len(self.tally.lengths),
            "categories": mix_shares(self.tally.cat, total),
            "target_mix": TARGET_MIX,
            "line_length": percentiles(self.tally.lengths),
            "target_line_length": TARGET_LINE_LENGTHS,
            "counts": dict(sorted(self.tally.counts.items())),
            "elapsed_s": round(elapsed, 3),
            "mb_per_s": round(total / 1e6 / elapsed, 1) if elapsed else 0.0,
        }


def generate(out_dir: Path, size_bytes: int, seed: int = 1) -> dict[str, Any]:
    """Write about ``size_bytes`` of journals under ``out_dir/sessions`` and return the statistics."""
    return Generator(Path(out_dir), size_bytes, seed).run()
