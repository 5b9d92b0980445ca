"""What the index holds and how fresh it is."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

import apsw

from journal_index.data import read_sql
from journal_index.data.store import Store
from journal_index.formats import Root
from journal_index.indexing.backfill import LEASE_KEY, parse_lease


def db_bytes(path: str) -> int:
    total = 0
    for suffix in ("", "-wal", "-shm"):
        try:
            total += os.path.getsize(path + suffix)
        except OSError:
            pass
    return total


def _lease_alive(store: Store) -> bool:
    """Whether some backfiller holds an unexpired lease."""
    lease = parse_lease(store.get_meta(LEASE_KEY))
    return lease is not None and lease[1] > time.time()


def backfill_progress(store: Store) -> dict[str, Any] | None:
    """The progress the backfill last stored: {"done", "total", "finishedAt", "state"}.

    ``state`` is "finished", "running" (a live lease backs it) or "interrupted" (the
    backfiller stopped or died mid-pass; the next `watch` or `index` completes it).
    """
    raw = store.get_meta("backfill_progress")
    if not raw:
        return None
    done, _, rest = raw.partition("/")
    total, _, finished = rest.partition("@")
    try:
        progress: dict[str, Any] = {"done": int(done), "total": int(total),
                                    "finishedAt": int(finished) if finished else None}
    except ValueError:
        return None
    if progress["finishedAt"] is not None:
        progress["state"] = "finished"
    else:
        progress["state"] = "running" if _lease_alive(store) else "interrupted"
    return progress


def semantic_status(store: Store) -> dict[str, Any]:
    """The semantic layer: the mode asked for and the one that runs (with why, when they differ),
    its model, and how far the background has embedded (counted only when the layer runs or
    vectors are left from when it ran)."""
    from journal_index.semantic import background, embedder, fusion

    chosen = fusion.setting()
    out: dict[str, Any] = {"asked": chosen.asked, "mode": chosen.mode, "whyOff": chosen.why_off,
                           "installed": embedder.installed(), "model": embedder.MODEL_NAME,
                           "embedded": None, "pending": None}
    if chosen.mode != "off" or read_sql.has_vectors(store):
        out.update(background.progress(store))
    return out


def status(store: Store, roots: Sequence[Root] = ()) -> dict[str, Any]:
    totals = read_sql.index_totals(store)
    by_kind = totals.by_kind
    by_agent = {agent: {"sessions": t.sessions, "entries": t.entries, "bytes": t.bytes}
                for agent, t in totals.by_agent.items()}
    return {
        "sessions": totals.sessions,
        "entries": sum(by_kind.values()),
        "summaries": by_kind.get("compaction", 0) + by_kind.get("branch_summary", 0),
        "byKind": by_kind,
        "byAgent": by_agent,
        "roots": [{"path": str(r.path), "agent": r.format, "exists": r.path.is_dir()} for r in roots],
        "indexedBytes": totals.indexed_bytes,
        "skippedLines": totals.skipped_lines,
        "lastIndexedAt": totals.last_indexed,
        "dbBytes": db_bytes(store.path) if store.path != ":memory:" else 0,
        "dbPath": store.path,
        "schemaVersion": store.schema_version,
        "backfill": backfill_progress(store),
        "semantic": semantic_status(store),
        "sqliteVersion": apsw.sqlite_lib_version(),
        "apswVersion": apsw.apsw_version(),
    }
