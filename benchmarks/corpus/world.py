"""The fictional user's projects, the models and tools of their sessions, and a session's running state."""

from __future__ import annotations

import base64
from dataclasses import dataclass

from benchmarks.corpus.units import HOME


@dataclass(frozen=True)
class Project:
    cwd: str
    kind: str  # python | web | home | notes | scratch | mono
    pkg: str
    weight: float


PROJECTS: tuple[Project, ...] = (
    Project(HOME, "home", "", 0.05),
    Project(f"{HOME}/notes", "notes", "", 0.04),
    Project(f"{HOME}/code/orbit", "mono", "orbit", 0.07),
    Project(f"{HOME}/code/orbit/orbit-api", "python", "orbit_api", 0.22),
    Project(f"{HOME}/code/orbit/orbit-api/services/billing", "python", "billing", 0.06),
    Project(f"{HOME}/code/orbit/orbit-web", "web", "orbit-web", 0.14),
    Project(f"{HOME}/code/kana-drill", "python", "kana_drill", 0.10),
    Project(f"{HOME}/work/data-pipeline", "python", "pipeline", 0.12),
    Project(f"{HOME}/work/dashboard-ui", "web", "dashboard-ui", 0.06),
    Project("/tmp/scratch-7f3a", "scratch", "scratch", 0.04),
    Project("/tmp/pi-bench/repro_issue_42", "scratch", "repro", 0.02),
)

# provider, model, api, prices per million tokens (input, output, cacheRead, cacheWrite)
MODELS: tuple[tuple[str, str, str, tuple[float, float, float, float], float], ...] = (
    ("anthropic", "claude-sonnet-4-5", "anthropic-messages", (3, 15, 0.3, 3.75), 0.62),
    ("anthropic", "claude-opus-4-5", "anthropic-messages", (5, 25, 0.5, 6.25), 0.08),
    ("anthropic", "claude-haiku-4-5", "anthropic-messages", (1, 5, 0.1, 1.25), 0.07),
    ("openai-codex", "gpt-5.1-codex-max", "openai-codex-responses", (1.25, 10, 0.125, 0), 0.12),
    ("google", "gemini-2.5-pro", "google-generative-ai", (1.25, 10, 0.31, 0), 0.05),
    ("openai", "gpt-5.1", "openai-responses", (1.25, 10, 0.13, 0), 0.04),
    ("deepseek", "deepseek-v4-pro", "openai-completions", (0.435, 0.87, 0.003625, 0), 0.02),
)
THINKING_LEVELS = ("off", "minimal", "low", "medium", "high")
TOOLS = ("read", "bash", "grep", "edit", "write")
TOOL_WEIGHTS = (36, 21, 17, 11, 15)  # fixture tool calls: read 84, bash 49, grep 40, edit 25, write 35
B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
PNG_HEAD = base64.b64encode(
    bytes.fromhex("89504e470d0a1a0a0000000d49484452")
).decode()  # 16 bytes → 24 chars
JPG_HEAD = base64.b64encode(bytes.fromhex("ffd8ffe000104a46494600010100")).decode()  # 14 → 20 chars


@dataclass
class Ctx:
    project: Project
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
