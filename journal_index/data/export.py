"""`journal-index export`: one plain table read through sqlite-utils, redacted on the way out.

sqlite-utils reads with Python's own sqlite3, a second SQLite library beside apsw's. Two SQLite
libraries must never hold one database file open in one process at the same time: POSIX locks
belong to the process, so when one library closes the file it drops the locks the other still
holds, and another process may then write under a reader that thinks itself protected. The
export therefore opens the index only when no apsw connection in this process has it open
(``export_table`` checks, and refuses), and closes it before it returns.

The output is what ``sqlite-utils rows DB TABLE [--nl|--csv|--tsv]`` prints, line for line
(tests/test_cli.py compares the two). Every line is redacted as it is written: paths, cwds and ids
come from journals.
"""

from __future__ import annotations

import base64
import csv
import io
import itertools
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, BinaryIO

import apsw
import sqlite_utils
from sqlite_utils.db import quote_identifier

from journal_index.redact import redact

FORMATS = ("json", "nl", "csv", "tsv")


class StillOpen(RuntimeError):
    """The index is open through apsw in this process; sqlite3 must not open it beside it."""


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def export_table(db_path: str, table: str, fmt: str, out: BinaryIO) -> None:
    """Write ``table`` of the index at ``db_path`` to ``out`` in ``fmt`` (one of FORMATS), redacted."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r} (expected one of {', '.join(FORMATS)})")
    if any(_same_file(conn.filename, db_path) for conn in apsw.connections()):
        raise StillOpen(f"{db_path} is still open through apsw in this process; close it before exporting")
    db = sqlite_utils.Database(db_path)
    try:
        # What `sqlite-utils rows` runs: the header comes from the cursor, as generated columns
        # (entries.entry_id, kind, role) are in `select *` but not in the table's column list.
        cursor = db.execute(f"select * from {quote_identifier(table)}")
        headers = [d[0] for d in cursor.description]
        if fmt in ("csv", "tsv"):
            chunks = _delimited(headers, cursor, fmt)
        else:
            chunks = _json((dict(zip(headers, row, strict=True)) for row in cursor), fmt)
        for chunk in chunks:
            # One line at a time, streamed: a CSV value may hold newlines, and each line is
            # redacted whole, as the subprocess's output was.
            for line in _lines(chunk):
                out.write(redact(line).encode("utf-8"))
    finally:
        db.close()
    out.flush()


def _lines(chunk: str) -> Iterator[str]:
    """``chunk`` cut after each "\\n" (only there: str.splitlines also cuts at \\r, \\x1c, \\u2028...)."""
    start = 0
    while start < len(chunk):
        nl = chunk.find("\n", start)
        end = len(chunk) if nl == -1 else nl + 1
        yield chunk[start:end]
        start = end


def _binary(value: Any) -> Any:
    """A BLOB in JSON, as sqlite-utils writes it."""
    if isinstance(value, bytes):
        return {"$base64": True, "encoded": base64.b64encode(value).decode("latin-1")}
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _json(rows: Iterable[dict[str, Any]], fmt: str) -> Iterator[str]:
    """A JSON array, one row a line (``[{…},`` `` {…},`` `` {…}]``), or JSON lines for "nl"."""
    pending: str | None = None
    first = True
    for row in rows:
        line = json.dumps(row, default=_binary, ensure_ascii=False)
        if fmt == "nl":
            yield line + "\n"
            first = False
            continue
        if pending is not None:
            yield ("[" if first else " ") + pending + ",\n"
            first = False
        pending = line
    if pending is not None:
        yield ("[" if first else " ") + pending + "]\n"
    elif first:
        yield "[]\n"  # no rows (sqlite-utils prints this for --nl too)


def _delimited(headers: list[str], rows: Iterable[Sequence[Any]], fmt: str) -> Iterator[str]:
    """CSV (Excel dialect) or TSV (excel-tab): a header line, then the rows."""
    buf = io.StringIO()
    writer = csv.writer(buf, dialect="excel-tab" if fmt == "tsv" else "excel")
    for values in itertools.chain([headers], rows):
        writer.writerow(values)
        yield buf.getvalue()
        buf.seek(0)
        buf.truncate()
