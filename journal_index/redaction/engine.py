"""The scan: RE2 finds candidates, the checks judge them, verdicts are cached by context;
invisible characters and long texts handled; secret spans become ``[REDACTED:kind]``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from journal_index.redaction.checks import accept
from journal_index.redaction.groups import Match, value_span
from journal_index.redaction.invisible import original, without_invisible
from journal_index.redaction.k8s import k8s_block, k8s_spans
from journal_index.redaction.pieces import MARGIN, PIECE_SIZE, pieces
from journal_index.redaction.rules import RULES, Rule
from journal_index.redaction.table import Table


@dataclass(frozen=True, slots=True)
class Hit:
    kind: str
    start: int  # in the output text: the span of the ``[REDACTED:kind]`` marker
    end: int

_CONTEXT: Final = 256  # bytes before a match that a verdict may read (look-backs use ≤ 200)
_CACHE_SIZE: Final = 4096

class Engine:
    """The rule table compiled once: RE2 finds, Python judges. ``cache`` keeps verdicts by context."""

    def __init__(self, cache: bool = True) -> None:
        self.cache = cache
        self.full = Table(RULES)
        self._tokens: Table | None = None
        self._k8s_plain: tuple[bytes, int] | None = None  # the last data block that was no Secret
        self.disagreements = 0  # finder and resolver differing (should stay 0; tests check)

    @property
    def tokens(self) -> Table:
        """The provider-token rules alone, for rescanning a rejected value (built on first use)."""
        if self._tokens is None:
            self._tokens = Table([r for r in RULES if r.check in ("token", "generic")])
        return self._tokens

    def _matches(self, buf: bytes, pos: int, end: int, table: Table) -> list[tuple[str, list[tuple[int, int]]]]:
        """(kind, secret spans) left to right, non-overlapping."""
        out: list[tuple[str, list[tuple[int, int]]]] = []
        verdicts = table.verdicts
        while pos < end:
            s, e = table.find(buf, pos, end)
            if s < 0:
                break
            # A verdict depends only on the text from _CONTEXT before the match to just past it
            # (k8s verdicts, which look further, are never stored). Hostile input repeats the
            # same candidate over and over (`token: token: …`); the cache makes that cheap.
            lo = max(0, s - _CONTEXT)
            key = (s - lo, buf[lo : e + 2])  # where the match starts within the window matters
            cached = verdicts.get(key) if self.cache else None
            if cached is None:
                stop, advance, found, cacheable = self._judge(buf, s, e, end, table)
                if cacheable and self.cache:
                    if len(verdicts) >= _CACHE_SIZE:
                        verdicts.clear()
                    verdicts[key] = (s, stop, advance, found)
            else:
                at, stop, advance, found = cached
                if at != s:  # the same verdict, found at another offset
                    d = s - at
                    stop, advance = stop + d, advance + d
                    found = [(k, [(a + d, b + d) for a, b in sp]) for k, sp in found]
            mark = _marker_in(buf, s, stop)
            if mark is not None:
                # The match reaches into an earlier [REDACTED:kind]. Text before the marker is
                # judged as if it ended there, as a second pass over this output would see it.
                if mark[0] > s:
                    out += self._matches(buf, s, mark[0], table)
                pos = max(mark[1], s + 1)
                continue
            out += found
            pos = advance if advance > s else s + 1
        return out

    def _judge(
        self, buf: bytes, s: int, e: int, end: int, table: Table
    ) -> tuple[int, int, list[tuple[str, list[tuple[int, int]]]], bool]:
        """The candidate at ``s``: where its match ends, where to resume, what to redact, and
        whether the verdict may be cached."""
        won = table.resolve(buf, s, e, end)
        if won is None:
            self.disagreements += 1
            return s, s + 1, [], False
        rule, one = table.rules[won[0]], won[1]
        if rule.check == "k8s":
            return self._judge_k8s(buf, rule, one)
        found = accept(rule, one)
        if found is not None:
            if rule.rescan and table is self.full and len(found[1]) == 1 and found[1][0][1] - found[1][0][0] >= 20:
                # `STRIPE_KEY=sk_live_…`: name the provider when the value is exactly its token
                # (every provider token is at least 20 characters long).
                vs, ve = found[1][0]
                named = self._matches(buf, vs, ve, self.tokens)
                if len(named) == 1 and named[0][1] == [(vs, ve)]:
                    found = named[0]
            return one.end(), one.end(), [found], True
        inner = []
        if rule.rescan and table is self.full:
            value = value_span(one)
            if value is not None:
                # A rejected value may still hold a provider token: scan just that span with
                # the token rules (no name=value rules, so no nesting; still linear).
                inner = self._matches(buf, value[1], value[2], self.tokens)
        return one.end(), one.end(), inner, True

    def _judge_k8s(
        self, buf: bytes, rule: Rule, one: Match
    ) -> tuple[int, int, list[tuple[str, list[tuple[int, int]]]], bool]:
        """A Kubernetes data block: its values if it sits in a Secret. Never cached: the check
        reads 4000 bytes around the block. A block that is no Secret is ordinary text: the scan
        goes on from its first line."""
        plain = self._k8s_plain
        yaml = "blk" not in one.re.groupindex
        if yaml and plain is not None and plain[0] is buf and one.start() < plain[1]:
            # A `data:` line inside a block already found to be no Secret: its own block ends no
            # later, so its window holds no `kind: Secret` either. (Else hostile `data:\n data:\n
            # data:…` would judge the rest of the block once per line.)
            return one.end(), one.end(), [], False
        bs, be, stop = k8s_block(one)
        spans = k8s_spans(one, bs, be, stop)
        if spans is None:
            if yaml:
                self._k8s_plain = (buf, be)
            return bs, bs, [], False
        return stop, stop, [(rule.kind, spans)], False

    def spans(self, text: str) -> list[tuple[int, int, str]]:
        """(start, end, kind) of every secret in ``text``, in characters, sorted, disjoint.

        A text with invisible characters (zero-width, bidi controls, soft hyphens) is scanned
        twice: as it is, where such a character may separate two words, and without them, so
        ``AKIA\\u200b…`` (a zero-width space inside) is a key. Spans of the second scan are
        mapped back to ``text`` and cover the whole key, the invisible characters inside it
        included; overlapping spans of the two scans are one secret.
        """
        if text.isascii() and "\\u" not in text:
            return self._visible_spans(text)
        visible, runs = without_invisible(text)
        if not runs[0]:
            return self._visible_spans(text)
        found = self._visible_spans(text) + [
            (original(s, runs), original(e - 1, runs) + 1, kind)
            for s, e, kind in self._visible_spans(visible)
        ]
        found.sort()
        merged: list[tuple[int, int, str]] = []
        for s, e, kind in found:
            if merged and s < merged[-1][1]:
                ms, me, mkind = merged[-1]
                merged[-1] = (ms, max(me, e), mkind)
            else:
                merged.append((s, e, kind))
        return merged

    def _visible_spans(self, text: str) -> list[tuple[int, int, str]]:
        n = len(text)
        if n <= PIECE_SIZE:  # most texts: one piece, no margins
            buf = text.encode("utf-8", "surrogatepass")
            return self._piece_spans(text, buf, 0, 0, len(buf), text.isascii())
        out: list[tuple[int, int, str]] = []
        ascii_only = text.isascii()
        for lo, hi in pieces(text):
            # Each piece is scanned with some text either side, which matches may not enter but
            # checks may read (`kind: Secret` above a `data:` block, the start of a line).
            m_lo, m_hi = max(0, lo - MARGIN), min(n, hi + MARGIN)
            before = text[m_lo:lo].encode("utf-8", "surrogatepass")
            body = text[lo:hi].encode("utf-8", "surrogatepass")
            buf = before + body + text[hi:m_hi].encode("utf-8", "surrogatepass")
            out += self._piece_spans(text, buf, m_lo, len(before), len(before) + len(body), ascii_only)
        return out

    def _piece_spans(
        self, text: str, buf: bytes, origin: int, start: int, end: int, ascii_only: bool
    ) -> list[tuple[int, int, str]]:
        """Secrets in buf[start:end], where buf holds text from character ``origin`` on."""
        out: list[tuple[int, int, str]] = []
        # Byte offsets become character offsets walking forward; spans never split a character
        # (each starts and ends next to an ASCII byte).
        b_at, c_at = 0, origin
        last = start
        for kind, found in self._matches(buf, start, end, self.full):
            for s, e in sorted(found) if len(found) > 1 else found:
                if s < last:
                    continue
                if ascii_only:
                    cs, ce = origin + s, origin + e
                else:
                    cs = c_at + len(buf[b_at:s].decode("utf-8", "surrogatepass"))
                    ce = cs + len(buf[s:e].decode("utf-8", "surrogatepass"))
                    b_at, c_at = e, ce
                out.append((cs, ce, kind))
                last = e
        return out

    def redact(self, text: str, want_hits: bool = False) -> tuple[str, list[Hit]]:
        """The text with each secret span masked, and (if wanted) where the markers went."""
        spans = self.spans(text)
        if not spans:
            return text, []
        out: list[str] = []
        hits: list[Hit] = []
        last = size = 0  # size: characters written so far
        for s, e, kind in spans:
            marker = f"[REDACTED:{kind}]"
            out += (text[last:s], marker)
            size += s - last
            if want_hits:
                hits.append(Hit(kind, size, size + len(marker)))
            size += len(marker)
            last = e
        out.append(text[last:])
        return "".join(out), hits

_MARKER = re.compile(rb"\[REDACTED:[a-z0-9_]*\]")

def _marker_in(buf: bytes, s: int, e: int) -> tuple[int, int] | None:
    """The first earlier ``[REDACTED:kind]`` overlapping ``[s, e)``, if any.

    A match that reaches into a marker would redact it again (`://[REDACTED:github_token]@`
    looks like user:password@, `[REDACTED:password] :x` like a key), breaking idempotence.
    """
    i = buf.find(b"[REDACTED:", max(0, s - 40), e)
    while i != -1:
        m = _MARKER.match(buf, i)
        if m is not None and m.end() > s:
            return m.span()
        i = buf.find(b"[REDACTED:", i + 1, e)
    return None

