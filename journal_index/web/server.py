"""``journal-index serve``: bind, print the URL with its token, serve until SIGINT/SIGTERM.

The socket is bound before anything is printed, so that the port (a free one by default) and
the Host the guard accepts are known, and the printed URL answers at once.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import signal
import socket
import sys
import threading
import webbrowser
from collections.abc import Iterator

import click
import uvicorn

from journal_index.service import Service
from journal_index.web.app import create_app
from journal_index.web.security import host_header, new_token, url_with_token

HANDLED = (signal.SIGINT, signal.SIGTERM)


class _Server(uvicorn.Server):
    """uvicorn, except for signals: :func:`serve` installs the handlers itself, before the URL is
    printed (a signal sent as soon as the URL is read must stop the server, not kill it), and a
    SIGINT/SIGTERM ends it with exit 0 (uvicorn raises the signal again once it has shut down,
    which would end the process as killed by it)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name: it may be reachable from anywhere


def has_screen() -> bool:
    """Whether a graphical browser can open: without one (a Linux box over SSH), Python's
    webbrowser falls back to a text browser in this very terminal, on top of the server's output."""
    if sys.platform.startswith("linux") or "bsd" in sys.platform:
        return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return True


def bind(host: str, port: int) -> socket.socket:
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        raise click.ClickException(f"cannot listen on {host}:{port} ({exc.strerror or exc}); "
                                   "give another --port, or --port 0 for a free one") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve(service: Service, host: str, port: int, open_browser: bool) -> int:
    """Serve the web view over ``service``; returns the exit status (0 after SIGINT/SIGTERM)."""
    if not is_loopback(host):
        click.echo(f"journal-index: warning: serving on {host}, not a loopback address: other machines may reach "
                   "this view of your journals (the token still guards it)", err=True)
    sock = bind(host, port)
    bound = host_header(host, sock.getsockname()[1])
    base = f"http://{bound}"
    token = new_token(base)
    url = url_with_token(base, token)
    config = uvicorn.Config(create_app(service, token, bound), log_level="warning", access_log=False, lifespan="on",
                            server_header=False, timeout_graceful_shutdown=5)
    server = _Server(config)
    for sig in HANDLED:
        signal.signal(sig, server.handle_exit)
    click.echo(url)  # the first line on stdout: tests and scripts read it
    sys.stdout.flush()
    if open_browser and has_screen():
        threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()
    server.run(sockets=[sock])
    return 0
