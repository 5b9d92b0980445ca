"""A generated corpus (seed 1) in a folder, indexed: what the hub benchmarks start from."""

from __future__ import annotations

from pathlib import Path

from benchmarks.corpus import generate, parse_size
from journal_index.data.store import Store, open_store
from journal_index.indexing.indexer import discover, index_files


def indexed_corpus(out: Path, size: str) -> tuple[Path, str, Store]:
    """(the sessions folder, the index's path, the open index) under ``out``; the corpus is
    generated only when the folder does not hold one yet, and indexing is incremental."""
    sessions = out / "sessions"
    if not sessions.is_dir():
        generate(out, parse_size(size), seed=1)
    db = str(out / "index.db")
    store = open_store(db)
    index_files(store, discover([sessions]), roots=[sessions])
    return sessions, db, store
