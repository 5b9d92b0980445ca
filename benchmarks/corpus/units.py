"""Sizes as given on the command line, and pi's names, times and numbers as pi writes them."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Decimal

HOME = "/home/bench"
PY_PREFIX = f"{HOME}/.pyenv/versions/3.11.7/lib/python3.11"
EPOCH_START_MS = 1_767_600_000_000  # 2026-01-05T08:00:00Z
SPAN_MS = 170 * 86_400_000  # sessions spread over ~5.5 months
READ_MAX_BYTES = 51200
READ_MAX_LINES = 2000

_SIZE_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|TB|KIB|MIB|GIB|TIB)?$")
_UNITS = {
    None: 1,
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "KIB": 2**10,
    "MIB": 2**20,
    "GIB": 2**30,
    "TIB": 2**40,
}


def parse_size(text: str) -> int:
    """``50MB`` → 50_000_000 (decimal units; ``MiB`` etc. are binary). Raises ValueError on bad input."""
    m = _SIZE_RE.match(text.strip().upper())
    if not m:
        raise ValueError(f"invalid size {text!r} (expected e.g. 500KB, 50MB, 2.5GB, 64MiB)")
    value = int(float(m.group(1)) * _UNITS[m.group(2)])
    if value < 10_000:
        raise ValueError(f"size {text!r} is too small (minimum 10KB)")
    return value


def encode_cwd(cwd: str) -> str:
    """pi's session directory name for a cwd: ``/home/a/b`` → ``--home-a-b--``."""
    body = cwd[1:] if cwd.startswith("/") else cwd
    return "--" + re.sub(r"[/\\:]", "-", body) + "--"


def iso_ms(ms: int) -> str:
    dt = datetime.fromtimestamp(ms / 1000, UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def js_number(x: float) -> str:
    """Format a number the way JavaScript's JSON.stringify does (orjson writes 9e-6 and 1.0)."""
    if x == 0:
        return "0"
    if x == int(x) and abs(x) < 1e21:
        return str(int(x))
    sign, digits_t, exp = Decimal(repr(float(x))).as_tuple()
    digits = "".join(map(str, digits_t)).rstrip("0") or "0"
    exp = int(exp) + (len(digits_t) - len(digits))
    k = len(digits)
    n = exp + k  # value = 0.DIGITS * 10**n
    if k <= n <= 21:
        s = digits + "0" * (n - k)
    elif 0 < n <= 21:
        s = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        s = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        s = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + ("+" if e > 0 else "-") + str(abs(e))
    return ("-" if sign else "") + s
