"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, for driving a real agent host.

The server plays a script: one turn per model request, in order. A turn is a tool call
(:class:`ToolCall`), several tool calls in one reply (a list of them), a final text
(:class:`Reply`), or a callable that gets the request (:class:`ModelRequest`) and returns one of
those, so a turn can depend on what the host sent (the tool result of the previous call, say).

Every request body is recorded, in arrival order, so a test can assert exactly what the host
sent to the model: the system prompt, the declared tools, and the tool results.

Replies stream as server-sent events when the request asks for ``"stream": true`` (pi always
does), else they are one ``chat.completion`` JSON object. Standard library only.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL_ID = "scripted"
EXHAUSTED_TEXT = "[scripted model: the script has no more turns]"


@dataclass(frozen=True)
class ToolCall:
    """The model calls a tool. ``arguments`` is a JSON object, or a raw string sent as is."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    call_id: str | None = None

    def arguments_text(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


@dataclass(frozen=True)
class Reply:
    """The model answers with text and stops.

    ``prompt_tokens`` is the usage reported for the request (default 10): a figure near the
    context window makes the host believe its context is full, so it compacts (pi does so before
    the next prompt), the way a long session would.
    """

    text: str
    prompt_tokens: int = 10


def _usage(answer: list[ToolCall] | Reply) -> dict[str, int]:
    prompt = answer.prompt_tokens if isinstance(answer, Reply) else 10
    return {"prompt_tokens": prompt, "completion_tokens": 5, "total_tokens": prompt + 5}


Turn = ToolCall | Reply | Sequence[ToolCall] | Callable[["ModelRequest"], Any]


def _text_of(content: Any) -> str:
    """The text of a chat message's content: a string, or a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            parts.append(part["text"])
    return "\n".join(parts)


@dataclass
class ModelRequest:
    """One request the host sent, as received."""

    path: str
    body: dict[str, Any]
    received_at: float = field(default_factory=time.monotonic)  # time.monotonic() on arrival

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    @property
    def tools(self) -> list[dict[str, Any]]:
        return list(self.body.get("tools") or [])

    def tool_names(self) -> list[str]:
        names = []
        for tool in self.tools:
            spec = tool.get("function") or tool.get("custom") or tool
            names.append(str(spec.get("name")))
        return names

    def tool(self, name: str) -> dict[str, Any] | None:
        for tool in self.tools:
            spec = tool.get("function") or tool.get("custom") or tool
            if spec.get("name") == name:
                return dict(spec)
        return None

    def system_text(self) -> str:
        """Every system or developer message, joined (pi may append more than one)."""
        return "\n\n".join(_text_of(m.get("content")) for m in self.messages
                           if m.get("role") in ("system", "developer"))

    def user_texts(self) -> list[str]:
        return [_text_of(m.get("content")) for m in self.messages if m.get("role") == "user"]

    def tool_results(self) -> list[tuple[str, str]]:
        """(tool_call_id, text) of every tool message, oldest first."""
        return [(str(m.get("tool_call_id")), _text_of(m.get("content")))
                for m in self.messages if m.get("role") == "tool"]

    def last_tool_result(self) -> str | None:
        results = self.tool_results()
        return results[-1][1] if results else None

    def everything_text(self) -> str:
        """The whole request as JSON text, to ask whether some text reached the model at all."""
        return json.dumps(self.body, ensure_ascii=False)


class ScriptedModel:
    """Serve ``script`` on 127.0.0.1 (a free port); use as a context manager or start()/stop()."""

    def __init__(self, script: Sequence[Turn], model_id: str = MODEL_ID) -> None:
        self.script: list[Turn] = list(script)
        self.model_id = model_id
        self.requests: list[ModelRequest] = []
        self.other_requests: list[tuple[str, str]] = []  # (method, path) of anything else asked
        self.exhausted = 0  # requests that came after the last turn
        self.errors: list[str] = []  # turns that raised
        self._next = 0
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
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def turns_played(self) -> int:
        return self._next

    # -- the script ----------------------------------------------------------------
    def _play(self, request: ModelRequest) -> list[ToolCall] | Reply:
        with self._lock:
            self.requests.append(request)
            index = self._next
            self._next += 1
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
        return [c if c.call_id else ToolCall(c.name, c.arguments, f"call_{index}_{n}")
                for n, c in enumerate(calls)]


def _chunk(model: str, created: int, delta: dict[str, Any] | None, finish: str | None = None,
           usage: dict[str, int] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"id": f"chatcmpl-scripted-{created}", "object": "chat.completion.chunk",
                           "created": created, "model": model,
                           "choices": [] if delta is None else [{"index": 0, "delta": delta,
                                                                 "finish_reason": finish}]}
    if usage is not None:
        out["usage"] = usage
    return out


def _pieces(text: str, size: int = 64) -> Iterator[str]:
    for start in range(0, len(text), size):
        yield text[start: start + size]


def stream_chunks(answer: list[ToolCall] | Reply, model: str, include_usage: bool) -> Iterator[dict[str, Any]]:
    """The SSE chunks of one reply, the way OpenAI streams them."""
    created = int(time.time())
    yield _chunk(model, created, {"role": "assistant", "content": ""})
    if isinstance(answer, Reply):
        for piece in _pieces(answer.text):
            yield _chunk(model, created, {"content": piece})
        finish = "stop"
    else:
        for n, call in enumerate(answer):
            yield _chunk(model, created, {"tool_calls": [{"index": n, "id": call.call_id, "type": "function",
                                                          "function": {"name": call.name, "arguments": ""}}]})
            for piece in _pieces(call.arguments_text()):
                yield _chunk(model, created, {"tool_calls": [{"index": n, "function": {"arguments": piece}}]})
        finish = "tool_calls"
    yield _chunk(model, created, {}, finish)
    if include_usage:
        yield _chunk(model, created, None, usage=_usage(answer))


def completion(answer: list[ToolCall] | Reply, model: str) -> dict[str, Any]:
    """The non-streaming reply."""
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if isinstance(answer, Reply):
        message["content"] = answer.text
        finish = "stop"
    else:
        message["tool_calls"] = [{"id": c.call_id, "type": "function",
                                  "function": {"name": c.name, "arguments": c.arguments_text()}} for c in answer]
        finish = "tool_calls"
    return {"id": "chatcmpl-scripted", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": _usage(answer)}


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

        def do_GET(self) -> None:
            model.other_requests.append(("GET", self.path))
            if self.path.rstrip("/").endswith("/models"):
                self._send_json(200, {"object": "list", "data": [{"id": model.model_id, "object": "model",
                                                                  "owned_by": "scripted"}]})
            else:
                self._send_json(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if not self.path.rstrip("/").endswith("/chat/completions"):
                model.other_requests.append(("POST", self.path))
                self._send_json(404, {"error": {"message": f"no route {self.path}"}})
                return
            try:
                body = json.loads(raw)
            except ValueError:
                self._send_json(400, {"error": {"message": "the body is not JSON"}})
                return
            answer = model._play(ModelRequest(self.path, body))
            if not body.get("stream"):
                self._send_json(200, completion(answer, model.model_id))
                return
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            for chunk in stream_chunks(answer, model.model_id, include_usage):
                self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()

    return Handler
