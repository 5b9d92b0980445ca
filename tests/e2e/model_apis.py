"""The three model APIs the scripted model speaks: how to read a request, how to stream a reply.

* ``chat``: OpenAI chat completions (``POST …/chat/completions``), what pi sends;
* ``anthropic``: the Anthropic Messages API (``POST …/v1/messages``), what Claude Code sends;
* ``responses``: the OpenAI Responses API (``POST …/v1/responses``), what Codex 0.171 sends.

For each, :class:`ApiReader` gives one view of a request body (declared tools, system text,
user texts, tool results) and the stream functions turn a scripted answer into the server-sent
events that API's clients parse. Standard library only.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

# Path endings of the model requests, per API.
API_PATHS = {"chat": "/chat/completions", "anthropic": "/messages", "responses": "/responses"}


@dataclass(frozen=True)
class ToolCall:
    """The model calls a tool. ``arguments`` is a JSON object, or a raw string sent as is.

    ``namespace`` is the Responses API's tool namespace (Codex puts an MCP server's tools in
    ``mcp__<server>``); the other APIs have none.
    """

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    call_id: str | None = None
    namespace: str | None = None

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


Answer = list[ToolCall] | Reply


def api_of(path: str) -> str | None:
    """Which API a POST path belongs to (None: not a model request)."""
    clean = path.split("?", 1)[0].rstrip("/")
    for api, ending in API_PATHS.items():
        if clean.endswith(ending):
            return api
    return None


def text_of(content: Any) -> str:
    """The text of a message's content: a string, or a list of parts with ``text``."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            parts.append(part["text"])
    return "\n".join(parts)


def _flat_tools(tools: Sequence[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(name the model calls, spec) of every declared tool; a namespace's tools are
    ``<namespace>__<name>``, which is how Codex names them to the MCP-aware reader too."""
    for tool in tools:
        if tool.get("type") == "namespace":
            for inner in tool.get("tools") or []:
                yield f"{tool.get('name')}__{inner.get('name')}", dict(inner)
            continue
        spec = tool.get("function") or tool.get("custom") or tool
        yield str(spec.get("name")), dict(spec)


def _arguments(raw: Any) -> dict[str, Any]:
    """A tool call's arguments: a JSON object, or a JSON text of one (anything else: empty)."""
    if isinstance(raw, dict):
        return raw
    try:
        parsed = json.loads(raw or "{}")
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


@dataclass(frozen=True)
class ApiReader:
    """One API's view of a request body."""

    api: str
    body: dict[str, Any]

    @property
    def tools(self) -> list[dict[str, Any]]:
        return list(self.body.get("tools") or [])

    def tool_names(self) -> list[str]:
        return [name for name, _ in _flat_tools(self.tools)]

    def tool(self, name: str) -> dict[str, Any] | None:
        return next((spec for found, spec in _flat_tools(self.tools) if found == name), None)

    def namespace(self, name: str) -> dict[str, Any] | None:
        """A Responses API tool namespace (its description and tools), by name."""
        return next((dict(t) for t in self.tools if t.get("type") == "namespace" and t.get("name") == name), None)

    def _items(self) -> list[dict[str, Any]]:
        """The conversation: ``messages`` (chat, anthropic) or ``input`` items (responses)."""
        key = "input" if self.api == "responses" else "messages"
        items = self.body.get(key) or []
        return [{"type": "message", "role": "user", "content": items}] if isinstance(items, str) else list(items)

    def system_text(self) -> str:
        """The system prompt: system/developer messages, Anthropic's ``system``, Responses' ``instructions``."""
        texts = []
        if self.api == "anthropic":
            texts.append(text_of(self.body.get("system")))
        if self.api == "responses":
            texts.append(text_of(self.body.get("instructions")))
        texts += [text_of(m.get("content")) for m in self._items() if m.get("role") in ("system", "developer")]
        return "\n\n".join(t for t in texts if t)

    def user_texts(self) -> list[str]:
        """The user messages' texts (without Anthropic's tool results)."""
        out = []
        for item in self._items():
            if item.get("role") != "user":
                continue
            content = item.get("content")
            if isinstance(content, list):
                content = [b for b in content if not (isinstance(b, dict) and b.get("type") == "tool_result")]
            out.append(text_of(content))
        return out

    def tool_results(self) -> list[tuple[str, str]]:
        """(call id, text) of every tool result in the conversation, oldest first."""
        out: list[tuple[str, str]] = []
        for item in self._items():
            if self.api == "chat" and item.get("role") == "tool":
                out.append((str(item.get("tool_call_id")), text_of(item.get("content"))))
            elif self.api == "anthropic" and isinstance(item.get("content"), list):
                out += [(str(b.get("tool_use_id")), text_of(b.get("content"))) for b in item["content"]
                        if isinstance(b, dict) and b.get("type") == "tool_result"]
            elif self.api == "responses" and str(item.get("type", "")).endswith("call_output"):
                out.append((str(item.get("call_id")), text_of(item.get("output"))))
        return out

    def tool_calls(self) -> list[tuple[str, str, dict[str, Any]]]:
        """(call id, tool name, arguments) of every tool call the model made in the conversation.
        A Responses API call in a namespace is named ``<namespace>__<name>``, as in :meth:`tool_names`."""
        out: list[tuple[str, str, dict[str, Any]]] = []
        for item in self._items():
            if self.api == "chat" and item.get("role") == "assistant":
                for call in item.get("tool_calls") or []:
                    out.append((str(call.get("id")), str(call["function"]["name"]),
                                _arguments(call["function"].get("arguments"))))
            elif self.api == "anthropic" and item.get("role") == "assistant" and isinstance(item.get("content"), list):
                out += [(str(b.get("id")), str(b.get("name")), dict(b.get("input") or {})) for b in item["content"]
                        if isinstance(b, dict) and b.get("type") == "tool_use"]
            elif self.api == "responses" and item.get("type") == "function_call":
                name = str(item.get("name"))
                if item.get("namespace"):
                    name = f"{item['namespace']}__{name}"
                out.append((str(item.get("call_id")), name, _arguments(item.get("arguments"))))
        return out

    def tool_result_errors(self) -> dict[str, bool]:
        """Anthropic's ``is_error`` of each tool result, by call id (the other APIs have no such flag)."""
        return {str(b.get("tool_use_id")): bool(b.get("is_error")) for item in self._items()
                if isinstance(item.get("content"), list) for b in item["content"]
                if isinstance(b, dict) and b.get("type") == "tool_result"}


# -- streaming ---------------------------------------------------------------------------------


def _pieces(text: str, size: int = 64) -> Iterator[str]:
    for start in range(0, len(text), size):
        yield text[start: start + size]


def _prompt_tokens(answer: Answer) -> int:
    return answer.prompt_tokens if isinstance(answer, Reply) else 10


def _sse(event: str | None, payload: dict[str, Any]) -> bytes:
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + json.dumps(payload).encode() + b"\n\n"


def _chat_chunk(model: str, created: int, delta: dict[str, Any] | None, finish: str | None = None,
                usage: dict[str, int] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"id": f"chatcmpl-scripted-{created}", "object": "chat.completion.chunk",
                           "created": created, "model": model,
                           "choices": [] if delta is None else [{"index": 0, "delta": delta,
                                                                 "finish_reason": finish}]}
    if usage is not None:
        out["usage"] = usage
    return out


def chat_usage(answer: Answer) -> dict[str, int]:
    prompt = _prompt_tokens(answer)
    return {"prompt_tokens": prompt, "completion_tokens": 5, "total_tokens": prompt + 5}


def chat_stream(answer: Answer, model: str, include_usage: bool) -> Iterator[bytes]:
    """The SSE of one chat-completions reply, the way OpenAI streams them."""
    created = int(time.time())
    chunks = [_chat_chunk(model, created, {"role": "assistant", "content": ""})]
    if isinstance(answer, Reply):
        chunks += [_chat_chunk(model, created, {"content": piece}) for piece in _pieces(answer.text)]
        finish = "stop"
    else:
        for n, call in enumerate(answer):
            opening = {"index": n, "id": call.call_id, "type": "function",
                       "function": {"name": call.name, "arguments": ""}}
            chunks.append(_chat_chunk(model, created, {"tool_calls": [opening]}))
            chunks += [_chat_chunk(model, created, {"tool_calls": [{"index": n, "function": {"arguments": piece}}]})
                       for piece in _pieces(call.arguments_text())]
        finish = "tool_calls"
    chunks.append(_chat_chunk(model, created, {}, finish))
    if include_usage:
        chunks.append(_chat_chunk(model, created, None, usage=chat_usage(answer)))
    for chunk in chunks:
        yield _sse(None, chunk)
    yield b"data: [DONE]\n\n"


def chat_completion(answer: Answer, model: str) -> dict[str, Any]:
    """The non-streaming chat-completions reply."""
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if isinstance(answer, Reply):
        message["content"] = answer.text
        finish = "stop"
    else:
        message["tool_calls"] = [{"id": c.call_id, "type": "function",
                                  "function": {"name": c.name, "arguments": c.arguments_text()}} for c in answer]
        finish = "tool_calls"
    return {"id": "chatcmpl-scripted", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": chat_usage(answer)}


def anthropic_blocks(answer: Answer) -> list[dict[str, Any]]:
    if isinstance(answer, Reply):
        return [{"type": "text", "text": answer.text}]
    return [{"type": "tool_use", "id": c.call_id, "name": c.name,
             "input": c.arguments if isinstance(c.arguments, dict) else json.loads(c.arguments)} for c in answer]


def anthropic_message(answer: Answer, model: str) -> dict[str, Any]:
    """The non-streaming Messages API reply."""
    return {"id": "msg_scripted", "type": "message", "role": "assistant", "model": model,
            "content": anthropic_blocks(answer), "stop_reason": "end_turn" if isinstance(answer, Reply) else "tool_use",
            "stop_sequence": None, "usage": {"input_tokens": _prompt_tokens(answer), "output_tokens": 5}}


def anthropic_stream(answer: Answer, model: str) -> Iterator[bytes]:
    """The SSE of one Messages API reply: message_start, one block after another, message_stop."""
    start = anthropic_message(answer, model)
    start.update(content=[], stop_reason=None, usage={"input_tokens": _prompt_tokens(answer), "output_tokens": 1})
    yield _sse("message_start", {"type": "message_start", "message": start})
    for n, block in enumerate(anthropic_blocks(answer)):
        if block["type"] == "text":
            yield _sse("content_block_start", {"type": "content_block_start", "index": n,
                                               "content_block": {"type": "text", "text": ""}})
            for piece in _pieces(block["text"]):
                yield _sse("content_block_delta", {"type": "content_block_delta", "index": n,
                                                   "delta": {"type": "text_delta", "text": piece}})
        else:
            yield _sse("content_block_start", {"type": "content_block_start", "index": n, "content_block": {
                "type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}})
            for piece in _pieces(json.dumps(block["input"])):
                yield _sse("content_block_delta", {"type": "content_block_delta", "index": n,
                                                   "delta": {"type": "input_json_delta", "partial_json": piece}})
        yield _sse("content_block_stop", {"type": "content_block_stop", "index": n})
    stop = "end_turn" if isinstance(answer, Reply) else "tool_use"
    yield _sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                 "usage": {"output_tokens": 5}})
    yield _sse("message_stop", {"type": "message_stop"})


def _responses_items(answer: Answer, tag: str) -> list[dict[str, Any]]:
    if isinstance(answer, Reply):
        return [{"type": "message", "id": f"msg_scripted_{tag}", "role": "assistant", "status": "completed",
                 "content": [{"type": "output_text", "text": answer.text, "annotations": []}]}]
    items = []
    for n, call in enumerate(answer):
        item: dict[str, Any] = {"type": "function_call", "id": f"fc_scripted_{tag}_{n}", "status": "completed",
                                "name": call.name, "arguments": call.arguments_text(), "call_id": call.call_id}
        if call.namespace:
            item["namespace"] = call.namespace
        items.append(item)
    return items


def responses_stream(answer: Answer, model: str, tag: str) -> Iterator[bytes]:
    """The SSE of one Responses API reply: created, each output item added and done, completed.
    ``tag`` makes the ids of the response and its items unique."""
    response: dict[str, Any] = {"id": f"resp_scripted_{tag}", "object": "response", "model": model,
                                "status": "in_progress", "output": []}
    yield _sse("response.created", {"type": "response.created", "response": response})
    items = _responses_items(answer, tag)
    for n, item in enumerate(items):
        yield _sse("response.output_item.added", {"type": "response.output_item.added", "output_index": n,
                                                  "item": {**item, "status": "in_progress"}})
        if item["type"] == "message":
            for piece in _pieces(item["content"][0]["text"]):
                yield _sse("response.output_text.delta", {"type": "response.output_text.delta", "output_index": n,
                                                          "item_id": item["id"], "content_index": 0, "delta": piece})
        yield _sse("response.output_item.done", {"type": "response.output_item.done", "output_index": n,
                                                 "item": item})
    prompt = _prompt_tokens(answer)
    done = {**response, "status": "completed", "output": items,
            "usage": {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
                      "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": prompt + 5}}
    yield _sse("response.completed", {"type": "response.completed", "response": done})
