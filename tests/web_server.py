"""The real `journal-index serve` in a subprocess: started, its first line read, stopped by a signal."""

from __future__ import annotations

import selectors
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from tests.web_home import WebHome

START_SECONDS = 30


@dataclass
class Served:
    proc: subprocess.Popen[bytes]
    url: str  # the first line: http://HOST:PORT/?t=TOKEN
    stderr: list[bytes] = field(default_factory=list)

    @property
    def base(self) -> str:
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}"

    @property
    def port(self) -> int:
        port = urlsplit(self.url).port
        assert port is not None
        return port

    def stop(self, how: signal.Signals = signal.SIGTERM) -> tuple[int, str, str]:
        """Send ``how``; the exit status and what was left on stdout and stderr."""
        if self.proc.poll() is None:
            self.proc.send_signal(how)
        try:
            out, err = self.proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
        return self.proc.returncode, out.decode(), (b"".join(self.stderr) + err).decode()


def serve(home: WebHome, *args: str) -> Served:
    """Start ``journal-index serve --no-open ARGS`` in ``home.cwd`` and wait for its first line."""
    proc = subprocess.Popen([sys.executable, "-m", "journal_index", *home.global_args, "serve", "--no-open", *args],
                            cwd=home.cwd, env=home.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL)
    assert proc.stdout is not None and proc.stderr is not None
    served = Served(proc, "")
    chooser = selectors.DefaultSelector()
    chooser.register(proc.stdout, selectors.EVENT_READ)
    chooser.register(proc.stderr, selectors.EVENT_READ)
    line = b""
    deadline = time.monotonic() + START_SECONDS
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or proc.poll() is not None:
            proc.kill()
            raise AssertionError(f"serve printed no URL (exit {proc.poll()}): {b''.join(served.stderr)!r}")
        for key, _ in chooser.select(timeout=min(left, 0.5)):
            if key.fileobj is proc.stdout:
                line += proc.stdout.read1(1) if hasattr(proc.stdout, "read1") else proc.stdout.read(1)
            else:
                served.stderr.append(proc.stderr.read1(4096) if hasattr(proc.stderr, "read1") else b"")
    chooser.close()
    served.url = line.decode().strip()
    return served
