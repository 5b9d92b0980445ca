"""The one way out of the process: every byte written to stdout or stderr is redacted first.

Journal text is redacted where it is read, but much else that gets printed comes from the
journals too: paths (a Claude project folder is named after its cwd, which may hold a token),
session names, error messages quoting a line, tracebacks. Rather than trust every ``echo``,
log line, warning and library message to remember, :func:`install` replaces ``sys.stdout`` and
``sys.stderr`` with streams that redact what passes through them. click, ``print``, the
``watch`` log, ``warnings``, ``logging`` handlers and Python's traceback printer all write to
those objects, so none of them can forget.

A stream redacts whole lines: it holds text until a newline (or a flush) so a secret is never
cut in two before the scan. ``click.echo`` writes a message in one call and flushes, so each
message is scanned whole, multi-line secrets included.

A secret found here (one the sources missed) becomes its ``[REDACTED:kind]`` marker followed by
the quotes and backslash escapes it spanned: JSON on stdout (``--json``, ``tool``) stays valid
JSON. (The one stream not passing here is the MCP wire: the SDK writes it to its own duplicate
of the stdout descriptor. What it carries are the tool's answers, redacted as they are made.)
"""

from __future__ import annotations

import io
import logging
import re
import sys
import threading
from typing import IO, Any

from journal_index.redact import secret_spans

# What a span must give back to keep the text around it well formed: escape pairs, quotes, and a
# backslash the span ends on (its escaped character lies past the span).
_STRUCTURE = re.compile(r'\\.|\\\Z|"', re.DOTALL)


def scrub(text: str) -> str:
    """``text`` with every secret replaced by its marker, keeping quotes and escapes (see above)."""
    spans = secret_spans(text)
    if not spans:
        return text
    out: list[str] = []
    last = 0
    for start, end, kind in spans:
        secret = text[start:end]
        kept = "".join(_STRUCTURE.findall(secret)) if '"' in secret or "\\" in secret else ""
        out += (text[last:start], f"[REDACTED:{kind}]", kept)
        last = end
    out.append(text[last:])
    return "".join(out)


class RedactingBinary(io.BufferedIOBase):
    """A binary stream that redacts each complete line (UTF-8) before passing it on."""

    def __init__(self, raw: IO[bytes]) -> None:
        super().__init__()
        self.raw = raw
        self._pending = b""
        self._lock = threading.RLock()

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        data = bytes(data)
        cut = data.rfind(b"\n")
        with self._lock:
            if cut < 0:
                self._pending += data
            else:
                line, self._pending = self._pending + data[: cut + 1], data[cut + 1 :]
                self._emit(line)
        return len(data)

    def _emit(self, data: bytes) -> None:
        if data:
            text = data.decode("utf-8", "surrogateescape")
            self.raw.write(scrub(text).encode("utf-8", "surrogateescape"))

    def flush(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, b""
            try:
                self._emit(pending)
                self.raw.flush()
            except (OSError, ValueError):
                pass  # as RedactingStream.flush

    def fileno(self) -> int:
        return self.raw.fileno()

    def isatty(self) -> bool:
        return self.raw.isatty()


class RedactingStream(io.TextIOBase):
    """A text stream that redacts each complete line before it reaches the wrapped stream."""

    def __init__(self, wrapped: IO[str]) -> None:
        super().__init__()
        self.wrapped = wrapped
        self._pending = ""
        self._lock = threading.RLock()  # watch logs from several threads
        raw = getattr(wrapped, "buffer", None)
        self._buffer = RedactingBinary(raw) if raw is not None else None

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.wrapped, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self.wrapped, "errors", None) or "strict"

    @property
    def buffer(self) -> RedactingBinary:
        """The bytes under this stream, redacted too (``export`` and the MCP server write there)."""
        if self._buffer is None:
            raise AttributeError("buffer")
        self.flush()  # text written before comes out before these bytes
        return self._buffer

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        cut = text.rfind("\n")
        with self._lock:
            if cut < 0:
                self._pending += text
            else:
                line, self._pending = self._pending + text[: cut + 1], text[cut + 1 :]
                self._emit(line)
        return len(text)

    def _emit(self, text: str) -> None:
        if text:
            self.wrapped.write(scrub(text))

    def flush(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, ""
            try:
                self._emit(pending)
                self.wrapped.flush()
            except (OSError, ValueError):
                pass  # a closed stderr (a detached service) must never stop the program

    def fileno(self) -> int:
        return self.wrapped.fileno()

    def isatty(self) -> bool:
        return self.wrapped.isatty()


def redacting(stream: IO[str]) -> IO[str]:
    """``stream``, redacting: as it is if it already does, else wrapped."""
    if isinstance(stream, RedactingStream):
        return stream
    return RedactingStream(stream)  # type: ignore[return-value]


def install() -> None:
    """Route the process's stdout and stderr through redaction (once; later calls do nothing).

    Logging handlers made before (a library's, at import) hold the old streams: they are
    pointed at the new ones. Handlers made later find the new ones in ``sys``.
    """
    out_before, err_before = sys.stdout, sys.stderr
    sys.stdout = redacting(out_before)
    sys.stderr = redacting(err_before)
    moved = {id(out_before): sys.stdout, id(err_before): sys.stderr}
    loggers = [logging.getLogger(), *(v for v in logging.Logger.manager.loggerDict.values()
                                      if isinstance(v, logging.Logger))]
    for logger in loggers:
        for handler in logger.handlers:
            if isinstance(handler, logging.StreamHandler) and id(handler.stream) in moved:
                handler.setStream(moved[id(handler.stream)])
