"""A stand-in MCP stdio server that records what its host gives it (standard library only).

Run as ``python probe_mcp_server.py LOG [INSTRUCTIONS]``. It appends JSON lines to LOG: first its
argv, cwd, environment and parent-process chain (from /proc), then every message it receives,
with the time since start. After ``notifications/initialized`` it asks the host for
``roots/list`` and records the answer. It offers one tool, ``probe``, whose result echoes the call
and the roots the host reported, and records the host's other children (argv, cwd, environment
from /proc: the other MCP servers); ``initialize`` answers with INSTRUCTIONS (default: two lines
starting with ``PROBE-INSTRUCTIONS``) as the server instructions.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

TOOL = "probe"
DEFAULT_INSTRUCTIONS = "PROBE-INSTRUCTIONS first line: the probe server.\nPROBE-INSTRUCTIONS second line."


def parent_chain(limit: int = 4) -> list[dict[str, Any]]:
    """This process and its ancestors: pid and argv, from /proc (Linux)."""
    chain: list[dict[str, Any]] = []
    pid = os.getpid()
    for _ in range(limit):
        try:
            with open(f"/proc/{pid}/stat") as handle:
                ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                argv = [part.decode(errors="replace") for part in handle.read().split(b"\0") if part]
        except (OSError, ValueError, IndexError):
            break
        chain.append({"pid": pid, "argv": argv})
        if ppid <= 1:
            break
        pid = ppid
    return chain


def siblings() -> list[dict[str, Any]]:
    """The other children of this process's parent (the host's other MCP servers): argv, cwd, env."""
    parent = os.getppid()
    found = []
    for name in sorted(os.listdir("/proc"), key=lambda n: (len(n), n)) if os.path.isdir("/proc") else []:
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/stat") as handle:
                if int(handle.read().rsplit(")", 1)[1].split()[1]) != parent:
                    continue
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                argv = [part.decode(errors="replace") for part in handle.read().split(b"\0") if part]
            with open(f"/proc/{name}/environ", "rb") as handle:
                pairs = [part.decode(errors="replace") for part in handle.read().split(b"\0") if part]
            cwd = os.readlink(f"/proc/{name}/cwd")
        except (OSError, ValueError, IndexError):
            continue
        env = dict(pair.split("=", 1) for pair in pairs if "=" in pair)
        found.append({"pid": int(name), "argv": argv, "cwd": cwd, "env": env})
    return found


def main() -> None:
    log_path = sys.argv[1]
    instructions = sys.argv[2] if len(sys.argv) > 2 else DEFAULT_INSTRUCTIONS
    started = time.monotonic()
    roots: Any = None

    def record(entry: dict[str, Any]) -> None:
        entry["t"] = round(time.monotonic() - started, 4)
        with open(log_path, "a") as handle:
            handle.write(json.dumps(entry) + "\n")

    def send(message: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    record({"argv": sys.argv, "cwd": os.getcwd(), "env": dict(os.environ), "chain": parent_chain(),
            "pid": os.getpid()})
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        record({"received": message})
        method, mid = message.get("method"), message.get("id")
        if method is None and mid == "probe-roots":  # the host's answer to our roots/list
            roots = message.get("result", message.get("error"))
            continue
        if method == "notifications/initialized":
            send({"jsonrpc": "2.0", "id": "probe-roots", "method": "roots/list"})
            continue
        if mid is None:
            continue
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}}, "serverInfo": {"name": "probe", "version": "0"},
                "instructions": instructions}
        elif method == "tools/list":
            result = {"tools": [{"name": TOOL, "description": "PROBE-DESCRIPTION: echoes its call.",
                                 "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}}]}
        elif method == "tools/call":
            text = "PROBE-RESULT " + json.dumps({"params": message.get("params"), "roots": roots})
            record({"siblings": siblings()})
            result = {"content": [{"type": "text", "text": text}]}
        elif method == "ping":
            result = {}
        else:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": f"no method {method}"}})
            continue
        send({"jsonrpc": "2.0", "id": mid, "result": result})
    record({"eof": True})


if __name__ == "__main__":
    main()
