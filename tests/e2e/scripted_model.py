"""A scripted model server on 127.0.0.1, for driving a real agent host.

The server plays a script: one turn per model request, in order. A turn is a tool call
(:class:`ToolCall`), several tool calls in one reply (a list of them), a final text
(:class:`Reply`), or a callable that gets the request (:class:`ModelRequest`) and returns one of
those, so a turn can depend on what the host sent (the tool result of the previous call, say).

It speaks the three APIs of :mod:`tests.e2e.model_apis` at once, each on its own path: OpenAI
chat completions (pi), the Anthropic Messages API (Claude Code) and the OpenAI Responses API
(Codex). Replies stream as server-sent events when the request asks for ``"stream": true``.

Every request body is kept, in arrival order, so a test can assert exactly what the host sent
to the model: the system prompt, the declared tools, and the tool results. With ``log`` every
body is also appended to that file as it arrives (one JSON line each), so a failing test shows
what the model saw. Standard library only.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.e2e.model_apis import (
    Answer,
    ApiReader,
    Reply,
    ToolCall,
    anthropic_message,
    anthropic_stream,
    api_of,
    chat_completion,
    chat_stream,
    responses_stream,
)

__all__ = ["EXHAUSTED_TEXT", "MODEL_ID", "ModelRequest", "Reply", "ScriptedModel", "ToolCall", "Turn"]

MODEL_ID = "scripted"
EXHAUSTED_TEXT = "[scripted model: the script has no more turns]"

Turn = ToolCall | Reply | Sequence[ToolCall] | Callable[["ModelRequest"], Any]


@dataclass
class ModelRequest:
    """One request the host sent, as received."""

    path: str
    body: dict[str, Any]
    received_at: float = field(default_factory=time.monotonic)  # time.monotonic() on arrival

    @property
    def api(self) -> str:
        return api_of(self.path) or "chat"

    @property
    def reader(self) -> ApiReader:
        return ApiReader(self.api, self.body)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    @property
    def tools(self) -> list[dict[str, Any]]:
        return self.reader.tools

    def tool_names(self) -> list[str]:
        return self.reader.tool_names()

    def tool(self, name: str) -> dict[str, Any] | None:
        return self.reader.tool(name)

    def system_text(self) -> str:
        """Every system or developer text, joined (pi may append more than one)."""
        return self.reader.system_text()

    def user_texts(self) -> list[str]:
        return self.reader.user_texts()

    def tool_results(self) -> list[tuple[str, str]]:
        """(tool call id, text) of every tool result, oldest first."""
        return self.reader.tool_results()

    def last_tool_result(self) -> str | None:
        results = self.tool_results()
        return results[-1][1] if results else None

    def everything_text(self) -> str:
        """The whole request as JSON text, to ask whether some text reached the model at all."""
        return json.dumps(self.body, ensure_ascii=False)


class ScriptedModel:
    """Serve ``script`` on 127.0.0.1 (a free port); use as a context manager or start()/stop()."""

    def __init__(self, script: Sequence[Turn], model_id: str = MODEL_ID, *, log: Path | None = None) -> None:
        self.script: list[Turn] = list(script)
        self.model_id = model_id
        self.log = log
        self.requests: list[ModelRequest] = []
        self.other_requests: list[tuple[str, str]] = []  # (method, path) of anything else asked
        self.exhausted = 0  # requests that came after the last turn
        self.errors: list[str] = []  # turns that raised
        self._next = 0
        # Call ids unique across models: a resumed session holds the calls of earlier runs too.
        self._ids = uuid.uuid4().hex[:8]
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------
    def start(self) -> ScriptedModel:
        handler = _handler_for(self)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="scripted-model", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def __enter__(self) -> ScriptedModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "the server is not running"
        return int(self._server.server_address[1])

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    @property
    def turns_played(self) -> int:
        return self._next

    def describe(self) -> str:
        """For assertion messages: where the request bodies are."""
        where = f"request bodies in {self.log}" if self.log else "request bodies not logged"
        return (f"scripted model: {len(self.requests)} requests, {self.exhausted} past the script, "
                f"errors {self.errors}, other {self.other_requests[:10]}; {where}")

    # -- the script ----------------------------------------------------------------
    def _take(self, request: ModelRequest) -> int:
        """Keep the request (and log its body); return its turn's index."""
        with self._lock:
            index = self._next
            self._next += 1
            self.requests.append(request)
            if self.log is not None:
                with open(self.log, "a") as handle:
                    handle.write(json.dumps({"turn": index, "path": request.path, "body": request.body},
                                            ensure_ascii=False) + "\n")
            return index

    def _play(self, request: ModelRequest) -> tuple[int, Answer]:
        index = self._take(request)
        return index, self._answer(index, request)

    def _answer(self, index: int, request: ModelRequest) -> Answer:
        if index >= len(self.script):
            self.exhausted += 1
            return Reply(EXHAUSTED_TEXT)
        turn: Any = self.script[index]
        try:
            while callable(turn) and not isinstance(turn, ToolCall | Reply):
                turn = turn(request)
        except Exception as exc:  # the host gets a text; the test sees the error
            self.errors.append(f"turn {index}: {type(exc).__name__}: {exc}")
            return Reply(f"[scripted model: turn {index} failed: {exc}]")
        if isinstance(turn, Reply):
            return turn
        calls = [turn] if isinstance(turn, ToolCall) else list(turn)
        prefix = "toolu_scripted" if request.api == "anthropic" else "call"
        return [c if c.call_id else ToolCall(c.name, c.arguments, f"{prefix}_{self._ids}_{index}_{n}", c.namespace)
                for n, c in enumerate(calls)]


def _handler_for(model: ScriptedModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read model.requests
            pass

        def _send_json(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_HEAD(self) -> None:  # connectivity probes
            model.other_requests.append(("HEAD", self.path))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self) -> None:
            model.other_requests.append(("GET", self.path))
            if self.path.split("?", 1)[0].rstrip("/").endswith("/models"):
                self._send_json(200, {"object": "list", "data": [{"id": model.model_id, "object": "model",
                                                                  "owned_by": "scripted"}]})
            else:
                self._send_json(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            api = api_of(self.path)
            if api is None:
                model.other_requests.append(("POST", self.path))
                self._send_json(404, {"error": {"type": "not_found_error", "message": f"no route {self.path}"}})
                return
            try:
                body = json.loads(raw)
            except ValueError:
                self._send_json(400, {"error": {"message": "the body is not JSON"}})
                return
            turn, answer = model._play(ModelRequest(self.path, body))
            if not body.get("stream"):
                reply = (anthropic_message(answer, model.model_id) if api == "anthropic"
                         else chat_completion(answer, model.model_id))
                self._send_json(200, reply)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            if api == "anthropic":
                events = anthropic_stream(answer, model.model_id)
            elif api == "responses":
                events = responses_stream(answer, model.model_id, f"{model._ids}_{turn}")
            else:
                include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
                events = chat_stream(answer, model.model_id, include_usage)
            for event in events:
                self.wfile.write(event)
            self.wfile.flush()

    return Handler
