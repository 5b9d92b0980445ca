"""Kubernetes Secrets: the data block a `data:`/`stringData:` match heads, and its values when
the block sits in a `kind: Secret` document."""

from __future__ import annotations

import re

from journal_index.redaction.groups import Match, byte_len, slice_of, text_of

_MARK = "[REDACTED:"
_K8S_KIND = re.compile(r"""(?:\\n|\b)kind\\{0,4}["']?\s*:\s*\\{0,4}["']?Secret\b""")
_K8S_YAML_LINE = re.compile(r"([ \t]+(?:- )?[\w.-]+:[ \t]*)(.*)")
_K8S_JSON_VALUE = re.compile(r"""\\{0,4}"(?:[^"\\]|\\[^"\\])*\\{0,4}"\s*:\s*\\{0,4}"((?:[^"\\]|\\u[0-9a-fA-F]{4})+)""")
_LINE_SPLIT = re.compile(r"(\r?\n|\\n)")


# The lines of a YAML data block: each starts with a blank and ends in a newline (the last may
# not), so the loop is unambiguous and linear in Python's re too.
_K8S_BLOCK = re.compile(rb"(?:[ \t][^\r\n]*\r?\n)*(?:[ \t][^\r\n]*)?")
_K8S_BLOCK_ESCAPED = re.compile(rb"(?:[ \t](?:[^\r\n\\]|\\[^n])*\\n)*")


def k8s_block(m: Match) -> tuple[int, int, int]:
    """Start and end of the data block a k8s match heads, and where the whole shape ends."""
    if "blk" in m.re.groupindex:  # JSON: the object is in the match
        return m.start("blk"), m.end("blk"), m.end()
    rx = _K8S_BLOCK_ESCAPED if m.group(0).endswith(b"\\n") else _K8S_BLOCK
    block = rx.match(m.string, m.end(), m.endpos)
    end = m.end() if block is None else block.end()
    return m.end(), end, end


def k8s_spans(m: Match, bs: int, be: int, stop: int) -> list[tuple[int, int]] | None:
    """Spans of the values in a Secret's data/stringData block, or None if this is no Secret."""
    s = m.start()
    if not _K8S_KIND.search(slice_of(m, s - 4000, stop + 4000)):
        return None
    buf = m.string
    found: list[tuple[int, int]] = []
    if text_of(m.group(0)).lstrip("\\").startswith('"'):
        blk = text_of(buf[bs:be])
        for v in _K8S_JSON_VALUE.finditer(blk):
            if _K8S_KIND.search(v.group(0)):
                continue  # `"kind": "Secret"` is evidence, not data (see below)
            a = bs + byte_len(blk[: v.start(1)])
            found.append((a, a + byte_len(v.group(1))))
        return found or None
    # The block ends at the first line indented no deeper than the `data:` line.
    header = text_of(buf[s:bs]).replace("\\n", "\n").rsplit("\n", 2)[-2]
    indent = len(header) - len(header.lstrip(" \t"))
    pos = bs
    for line in _LINE_SPLIT.split(text_of(buf[bs:be])):
        if line.strip() and line not in ("\n", "\r\n", "\\n"):
            if len(line) - len(line.lstrip(" \t")) <= indent:
                break
            kv = _K8S_YAML_LINE.match(line)
            value = kv.group(2).rstrip() if kv else ""
            # (The `kind: Secret` line itself is evidence, not data: redacted, the next pass
            # would find no Secret and judge the block again as ordinary text.)
            if kv and value not in ("", "|", ">", "|-", ">-") and _MARK not in value and not _K8S_KIND.search(line):
                a = pos + byte_len(kv.group(1))
                found.append((a, a + byte_len(value)))
        pos += byte_len(line)
    return found or None

