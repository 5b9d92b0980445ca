"""Who may talk to the web view: the one browser that opened the printed URL, at the bound address.

It is a server on the user's machine, so any web page the user visits could try to reach it.
Three checks, in this order, before any route runs:

1. The ``Host`` header must be the bound ``address:port`` exactly. A page on an attacker's
   domain that re-points its name at 127.0.0.1 (DNS rebinding) sends its own name as Host.
2. Only GET and HEAD: no endpoint writes, so nothing else has a meaning here.
3. The first URL carries a random token (``?t=…``); it sets an HttpOnly, SameSite=Strict cookie
   and redirects to the same page without the token (so it leaves no trace in history or a
   Referer). Without that cookie every page and API answers 401; a wrong token answers 403.
   SameSite=Strict keeps another site's links and forms from carrying the cookie.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

from journal_index.redact import redact

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

TOKEN_PARAM = "t"
COOKIE = "journal_index_web"  # + the port: browsers keep one cookie jar per host whatever the port,
# so two servers on one machine each need a name of their own (or signing in to one signs out the other)
SAFE_METHODS = frozenset({"GET", "HEAD"})
# Sent with every answer: no inline script or outside origin may run (every asset is ours), no
# framing (clickjacking), no Referer, nothing cached (pages hold journal text).
HEADERS = [
    (b"content-security-policy",
     b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
     b"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-resource-policy", b"same-origin"),
]


def new_token(base_url: str) -> str:
    """A random token that the output redaction leaves as it is in the printed URL (the URL is
    printed through the redacting stdout, and a token it rewrote would open nothing)."""
    while True:
        token = secrets.token_urlsafe(32)
        if redact(url_with_token(base_url, token)) == url_with_token(base_url, token):
            return token


def url_with_token(base_url: str, token: str) -> str:
    return f"{base_url}/?{TOKEN_PARAM}={token}"


def cookie_name(allowed_host: str) -> str:
    return f"{COOKIE}_{allowed_host.rsplit(':', 1)[-1]}"


def host_header(host: str, port: int) -> str:
    """The Host a browser sends for this address (IPv6 literals in brackets)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@dataclass
class Guard:
    """ASGI middleware in front of the whole app: the three checks of the module docstring."""

    app: ASGIApp
    token: str
    allowed_host: str  # "127.0.0.1:8123"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # no websockets here
            return
        headers = _headers(scope)
        if headers.get("host") != self.allowed_host:
            await _refuse(send, 403, f"this server answers only at http://{self.allowed_host}/")
            return
        if scope["method"] not in SAFE_METHODS:
            await _refuse(send, 405, "this view only reads: GET and HEAD", [(b"allow", b"GET, HEAD")])
            return
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = [v for k, v in query if k == TOKEN_PARAM]
        if given:
            if not hmac.compare_digest(given[-1].encode(), self.token.encode()):
                await _refuse(send, 403, "wrong token: open the URL `journal-index serve` printed")
                return
            await _redirect_with_cookie(send, scope["path"], [(k, v) for k, v in query if k != TOKEN_PARAM],
                                        cookie_name(self.allowed_host), self.token)
            return
        given_cookie = _cookie(headers.get("cookie", ""), cookie_name(self.allowed_host))
        if not hmac.compare_digest(given_cookie.encode(), self.token.encode()):
            await _refuse(send, 401, "not signed in: open the URL `journal-index serve` printed")
            return
        await self.app(scope, receive, _with_headers(send))


def _headers(scope: Scope) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in scope.get("headers", []):
        key = name.decode("latin-1").lower()
        # Two Host headers are one too many: keep an impossible value so the check fails.
        out[key] = "\0" if key == "host" and key in out else value.decode("latin-1")
    return out


def _cookie(header: str, name: str) -> str:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(header)
    except Exception:  # a malformed Cookie header is simply no cookie
        return ""
    morsel = jar.get(name)
    return morsel.value if morsel is not None else ""


def _with_headers(send: Send) -> Send:
    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [*message.get("headers", []), *HEADERS]
        await send(message)

    return wrapped


async def _refuse(send: Send, status: int, text: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = (text + "\n").encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()), *(extra or []), *HEADERS]})
    await send({"type": "http.response.body", "body": body})


async def _redirect_with_cookie(send: Send, path: str, query: list[tuple[str, str]], name: str, token: str) -> None:
    target = quote(path) + (f"?{urlencode(query)}" if query else "")
    cookie = f"{name}={token}; Path=/; HttpOnly; SameSite=Strict"
    await send({"type": "http.response.start", "status": 303,
                "headers": [(b"location", target.encode()), (b"set-cookie", cookie.encode()),
                            (b"content-length", b"0"), *HEADERS]})
    await send({"type": "http.response.body", "body": b""})
