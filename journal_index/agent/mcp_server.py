"""``journal-index mcp``: the ``memory_context`` tool over MCP stdio, written by hand.

MCP over stdio is JSON-RPC 2.0, one message per line. Hosts wait for the ``initialize`` reply
before they list tools, and Codex sends its first model request about a second after spawning
its servers, answered or not; so the handshake is answered with the standard library alone, and
the tool (the index, the query layer, apsw) is imported by the worker thread after that reply.

Threads. The main thread reads stdin and answers everything but tool calls at once (a ping
too, while a search runs); the worker answers tool calls one at a time, in order (one apsw
connection). Every reply is one whole line, written under a lock. The tool also starts a
:class:`journal_index.agent.freshness.Freshener`, which indexes new and grown journals in the
background (a pass a moment after each call), so the index stays fresh without ``watch``.

A call's result is the signed text only. Claude Code and Codex show the model a result's
``structuredContent`` instead of its text when both are there; machines get the JSON from
``journal-index tool``.

Stopping: when stdin closes, the calls already received are answered, the store is closed and
the process exits 0. SIGINT or SIGTERM interrupts the call in progress, closes the store and
exits 0 within :data:`STOP_SECONDS` (plus the time to close).
"""

from __future__ import annotations

import json
import queue
import signal
import sys
import threading
from collections.abc import Callable

from journal_index import __version__
from journal_index.agent.tool_text import INSTRUCTIONS, TOOL_NAME

TYPE_CHECKING = False  # typing itself costs milliseconds before the handshake
if TYPE_CHECKING:
    from types import FrameType
    from typing import IO, Any

    from journal_index.agent.tool import MemoryTool

# The revisions that start with an initialize handshake, oldest first; the newest is offered
# to a client asking for one we do not know.
PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
STOP_SECONDS = 1.0  # how long a stop waits for the call in progress after interrupting it
DRAIN_SECONDS = 30.0  # how long closed stdin waits for the calls already received


class Stop(Exception):
    """Raised in the main thread by a signal handler: stop serving."""


def tool_listing() -> dict[str, Any]:
    from journal_index.agent.tool_args import DESCRIPTION, INPUT_SCHEMA

    return {"name": TOOL_NAME, "description": DESCRIPTION, "inputSchema": INPUT_SCHEMA}


def initialize_result(params: dict[str, Any]) -> dict[str, Any]:
    asked = params.get("protocolVersion")
    return {
        "protocolVersion": asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1],
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "journal-index", "version": __version__},
        "instructions": INSTRUCTIONS,
    }


def text_result(text: str, is_error: bool) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


def _line(message: dict[str, Any]) -> bytes:
    """One message as one line (json escapes newlines inside strings)."""
    try:
        return json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n"
    except UnicodeEncodeError:  # a lone surrogate from a journal: \u-escape everything
        return json.dumps(message).encode("ascii") + b"\n"


class Server:
    """One host's connection: reads requests from ``inp``, writes replies to ``out``."""

    def __init__(self, make_tool: Callable[[], MemoryTool], inp: IO[bytes], out: IO[bytes]) -> None:
        self.make_tool = make_tool
        self.inp, self.out = inp, out
        self._write_lock = threading.Lock()
        self._calls: queue.Queue[tuple[Any, dict[str, Any]] | None] = queue.Queue()
        self._worker: threading.Thread | None = None
        self._tool: MemoryTool | None = None
        self._tool_failed: str | None = None
        self._stopping = threading.Event()

    # -- writing ----------------------------------------------------------------
    def send(self, message: dict[str, Any]) -> None:
        data = _line(message)
        with self._write_lock:
            try:
                self.out.write(data)
                self.out.flush()
            except (BrokenPipeError, ValueError, OSError):  # the host is gone; stdin's end stops us
                pass

    def reply(self, request_id: Any, result: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def error(self, request_id: Any, code: int, message: str) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})

    # -- reading ----------------------------------------------------------------
    def serve(self) -> None:
        """Answer lines until stdin closes (a signal handler may raise :class:`Stop` meanwhile)."""
        while True:
            line = self.inp.readline()
            if not line:
                return
            if line.strip():
                self.handle(line)

    def handle(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:  # not JSON, or not UTF-8: say so and go on reading
            self.error(None, PARSE_ERROR, "parse error: the line is not a JSON value")
            return
        if not isinstance(message, dict):
            self.error(None, INVALID_REQUEST, "invalid request: expected one JSON-RPC object per line")
            return
        request_id = message.get("id")
        method = message.get("method")
        if "id" in message and (isinstance(request_id, bool) or not isinstance(request_id, (str, int))):
            self.error(None, INVALID_REQUEST, "invalid request: id must be a string or an integer")
            return
        if method is None and ("result" in message or "error" in message):
            return  # a reply to a request of ours; we send none
        if message.get("jsonrpc") != "2.0" or not isinstance(method, str):
            self.error(request_id, INVALID_REQUEST, 'invalid request: needs "jsonrpc": "2.0" and a method')
            return
        params = message.get("params", {})
        if params is None:
            params = {}
        if "id" not in message:
            return  # a notification (initialized, cancelled, …): nothing to answer
        if not isinstance(params, dict):
            self.error(request_id, INVALID_PARAMS, "invalid params: params must be an object")
            return
        self.request(request_id, method, params)

    def request(self, request_id: Any, method: str, params: dict[str, Any]) -> None:
        if method == "initialize":
            self.reply(request_id, initialize_result(params))
        elif method == "ping":
            self.reply(request_id, {})
        elif method == "tools/list":
            self.reply(request_id, {"tools": [tool_listing()]})
            # The heavy imports begin once the host knows our tool (they would slow this reply).
            self.start_worker()
        elif method == "tools/call":
            name = params.get("name")
            if name != TOOL_NAME:
                self.reply(request_id, text_result(
                    f"unknown tool {name!r}; this server has only {TOOL_NAME}", True))
                return
            self.start_worker()
            self._calls.put((request_id, params))
        else:
            self.error(request_id, METHOD_NOT_FOUND, f"method not found: {method}")

    # -- the worker: tool calls, one at a time ------------------------------------
    def start_worker(self) -> None:
        if self._worker is None:
            self._worker = threading.Thread(target=self._work, name="memory_context", daemon=True)
            self._worker.start()

    def _work(self) -> None:
        try:
            self._tool = self.make_tool()
            self._tool.keep_fresh()
        except Exception as exc:  # every call says why, the server keeps answering
            self._tool_failed = f"{type(exc).__name__}: {exc}"
        while not self._stopping.is_set():
            item = self._calls.get()
            if item is None:
                return
            request_id, params = item
            self.reply(request_id, self._call(params))
            if self._tool is not None:
                self._tool.freshen_soon()  # after the reply: a pass never delays an answer

    def _call(self, params: dict[str, Any]) -> dict[str, Any]:
        if self._tool is None:
            return text_result(f"error (internal_error): the tool could not start ({self._tool_failed})\n"
                               "hint: check the server's command line and its stderr", True)
        meta = params.get("_meta")
        answer = self._tool.call(params.get("arguments"), meta if isinstance(meta, dict) else {})
        return text_result(answer.text, answer.is_error)

    # -- stopping -----------------------------------------------------------------
    def drain(self) -> None:
        """stdin closed: answer what was asked, then stop the worker."""
        if self._worker is not None:
            self._calls.put(None)
            self._worker.join(DRAIN_SECONDS)

    def interrupt(self) -> None:
        """A signal: stop the call in progress and wait a moment for the worker to let go."""
        self._stopping.set()
        if self._worker is not None:
            self._calls.put(None)
            if self._tool is not None:
                self._tool.interrupt()
            self._worker.join(STOP_SECONDS)

    def close(self) -> None:
        if self._tool is not None:
            self._tool.close()


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    raise Stop(signal.Signals(signum).name)


def run(make_tool: Callable[[], MemoryTool]) -> int:
    """Serve on stdin/stdout until stdin closes or SIGINT/SIGTERM comes; 0 after closing the store."""
    server = Server(make_tool, sys.stdin.buffer, sys.stdout.buffer)
    sys.stdout = sys.stderr  # a stray print anywhere must not break the protocol's lines
    previous = {sig: signal.signal(sig, _raise_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        try:
            server.serve()
            server.drain()
        except (Stop, KeyboardInterrupt):
            server.interrupt()
        finally:
            # A second signal during the clean-up must not cut the store's close short.
            for sig in previous:
                signal.signal(sig, signal.SIG_IGN)
            server.close()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0
