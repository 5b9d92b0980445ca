"""Journal entries as pi writes them: ids, usage and costs, assistant, tool result and user messages."""

from __future__ import annotations

import math
import random
from typing import Any

import orjson

from benchmarks.corpus.mix import classify_entry
from benchmarks.corpus.pools import Pools
from benchmarks.corpus.tally import Tally
from benchmarks.corpus.text import Text
from benchmarks.corpus.tool_outputs import ToolOutputs
from benchmarks.corpus.units import iso_ms, js_number
from benchmarks.corpus.world import Ctx


class Entries:
    """Writes entries into a session (``Ctx``) and counts them in the tally."""

    def __init__(self, rng: random.Random, pools: Pools, tally: Tally, text: Text, tools: ToolOutputs) -> None:
        self.rng = rng
        self.p = pools
        self.tally = tally
        self.text = text
        self.tools = tools
        self.id_counter = 0
        self.id_key = self.rng.getrandbits(32)

    def new_id(self) -> str:
        """8-hex ids, unique across the corpus: an invertible 32-bit mix of a counter."""
        x = (self.id_counter ^ self.id_key) & 0xFFFFFFFF
        self.id_counter += 1
        x = (x * 0x9E3779B1) & 0xFFFFFFFF
        x ^= x >> 15
        x = (x * 0x85EBCA77) & 0xFFFFFFFF
        x ^= x >> 13
        return f"{x:08x}"

    def emit(self, c: Ctx, entry: dict[str, Any], *, parent: bool = True) -> str:
        line = orjson.dumps(entry) + b"\n"
        acc = classify_entry(entry)
        for k, v in acc.items():
            self.tally.cat[k] += v
        n = len(line)
        self.tally.cat["json_overhead"] += n - sum(acc.values())
        self.tally.written += n
        self.tally.lengths.append(n)
        c.lines.append(line)
        eid = str(entry.get("id"))
        if parent:
            c.leaf = eid
        c.entry_ids.append(eid)
        c.ctx_bytes += n
        self.tally.count(entry["type"] if entry["type"] != "message" else "message:" + entry["message"]["role"])
        return eid

    def tick(self, c: Ctx, lo: int, hi: int) -> int:
        c.t += self.rng.randint(lo, hi)
        return c.t

    def base(self, c: Ctx, typ: str, lo: int = 1, hi: int = 40) -> dict[str, Any]:
        self.tick(c, lo, hi)
        return {"type": typ, "id": self.new_id(), "parentId": c.leaf, "timestamp": iso_ms(c.t)}

    def usage(self, c: Ctx, out_tokens: int, error: bool = False) -> orjson.Fragment:
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

    def tool_call_id(self, c: Ctx, name: str, n: int) -> str:
        prov = c.model[0]
        if prov == "anthropic":
            return "toolu_01" + self.text.rand_b62(22)
        if prov in ("openai-codex", "openai"):
            return f"call_{self.text.rand_b62(24)}|fc_{self.text.slice(self.p.hexs, 48)}"
        if prov == "google":
            return f"{name}_{c.t}_{n}"
        return f"call_0{n}_{self.text.rand_b62(24)}"

    def response_id(self, c: Ctx) -> str:
        prov = c.model[0]
        if prov == "anthropic":
            return "msg_01" + self.text.rand_b62(22)
        if prov in ("openai-codex", "openai"):
            return "resp_" + self.text.slice(self.p.hexs, 48)
        if prov == "google":
            return self.text.rand_b62(22)
        h = self.text.slice(self.p.hexs, 32)
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def thinking_block(self, c: Ctx) -> dict[str, Any]:
        text = self.text.sentences(self.rng.randint(1, 5))
        prov = c.model[0]
        if prov == "deepseek":
            sig = "reasoning_content"
        elif prov in ("openai-codex", "openai"):
            if prov == "openai-codex" and self.rng.random() < 0.5:
                text = f"**{self.rng.choice(self.p.short).rstrip('.')}**\n\n{text}"
            sig = orjson.dumps(
                {
                    "id": "rs_" + self.text.slice(self.p.hexs, 48),
                    "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": text}],
                    "encrypted_content": "gAAAAAB" + self.text.slice(self.p.b64url, self.rng.randint(600, 2400)),
                }
            ).decode()
        else:
            sig = self.text.slice(self.p.b64, 4 * self.rng.randint(60, 330))
        if prov == "anthropic" and self.rng.random() < 0.02:
            return {
                "type": "thinking",
                "thinking": "",
                "thinkingSignature": self.text.slice(self.p.b64, 4 * 200),
                "redacted": True,
            }
        return {"type": "thinking", "thinking": text, "thinkingSignature": sig}

    def assistant(
        self, c: Ctx, content: list[dict[str, Any]], stop: str, *, error: str | None = None
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
        self, c: Ctx, call_id: str, name: str, content: list[dict[str, Any]], details: Any, is_error: bool
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

    def user_text(self, c: Ctx) -> str:
        r = self.rng.random()
        path = self.text.project_path(c, self.text.src_file())
        if r < 0.06:
            text = self.text.intl()
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
            text = f"{verb} `{self.text.ident()}` in {path}"
        elif r < 0.55:
            text = (
                f"why does {self.text.ident()} raise "
                f"{self.rng.choice(['KeyError', 'a TypeError', 'ValueError'])}? " + self.text.sentence().lower()
            )
        elif r < 0.59:
            text = f"{self.text.sentence()} see this:\n\n```\n{self.tools.bash_output(c)[1][:700]}```"
        else:
            text = self.text.sentences(self.rng.randint(1, 2))
            if self.rng.random() < 0.3:
                text = text[0].lower() + text[1:]
        if self.rng.random() < 0.012:
            text += f" (use this: {self.text.secret()})"
        if not c.goal:
            c.goal = text.split("\n")[0][:160]
        return text

    def user(self, c: Ctx) -> str:
        self.tick(c, 15_000, 900_000)
        text = self.user_text(c)
        if self.rng.random() < 0.04:
            content: Any = text
        else:
            content = [{"type": "text", "text": text}]
            img_n = int(math.exp(self.rng.uniform(math.log(8_000), math.log(250_000))))
            if self.tally.deficit("image") > img_n and self.tally.remaining() > img_n * 4:
                data, mime = self.text.image_b64(img_n, self.rng.random() < 0.8)
                content.append({"type": "image", "data": data, "mimeType": mime})
                self.tally.count("images")
        ts = c.t
        e = self.base(c, "message", 1, 6)
        e["message"] = {"role": "user", "content": content, "timestamp": ts}
        eid = self.emit(c, e)
        c.user_ids.append(eid)
        return eid
