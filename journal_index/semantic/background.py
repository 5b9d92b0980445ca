"""The vectors of the optional semantic layer, written in the background.

What is embedded is what was said (a prompt, a reply's words) and summaries, never tool output
or call arguments, and always redacted text: the vectors are derived data of the index, like
its terms, and go with it (migration 0011; an entry forgotten takes its vector along).

:func:`embed_pending` embeds the entries that have no vector yet, newest first, until a time
budget runs out. `watch` and the MCP server's Freshener call it after their passes, so
`journal-index index` never waits for the model. They are read by :mod:`journal_index.semantic.vectors`.
Everything here needs the `semantic` extra
(:func:`journal_index.semantic.embedder.installed`); nothing imports it otherwise.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from journal_index.data import index_sql, read_sql
from journal_index.data.store import Store
from journal_index.formats import Root
from journal_index.query import Reader
from journal_index.query.hits import Hit
from journal_index.redact import redact
from journal_index.semantic import embedder
from journal_index.semantic.vectors import quantize
from journal_index.text.entry_text import strip_our_answers

SAID_KINDS = ("user", "assistant", "compaction", "branch_summary")
TEXT_CHARS = 2_000  # the model is given its first 1,200 characters (embedder.PASSAGE_CHARS): no more is redacted
BATCH = 16  # entries embedded (and committed) together


def _text(reader: Any, hit: Hit) -> str | None:
    """What the entry says, redacted (our own pasted answers cut out first); None when its line
    is not it any more, "" when it says nothing (a reply made only of calls)."""
    said = reader.said_text(hit)
    if said is None:
        return None
    said = strip_our_answers(said[:TEXT_CHARS * 2]).strip()
    return redact(said)[:TEXT_CHARS] if said else ""


def pending_count(store: Store) -> int:
    """How many entries that say something have no vector yet."""
    return read_sql.unembedded_count(store, SAID_KINDS)


def progress(store: Store) -> dict[str, int]:
    """How far the embedding has come: entries with a vector, and entries still without one."""
    return {"embedded": read_sql.vector_count(store), "pending": pending_count(store)}


@dataclass
class EmbedReport:
    embedded: int = 0  # vectors written
    empty: int = 0  # entries that said nothing to embed (marked, not read again)
    seconds: float = 0.0
    done: bool = False  # nothing is left to embed

    def as_json(self) -> dict[str, Any]:
        return {"embedded": self.embedded, "empty": self.empty, "seconds": round(self.seconds, 3), "done": self.done}


def embed_pending(store: Store, budget_seconds: float, roots: Sequence[Root | str] | None = None,
                  stop: Any = None) -> EmbedReport:
    """Embed entries without a vector, newest first, a batch per transaction, until
    ``budget_seconds`` have passed (a batch started is finished) or ``stop()`` says so. Journals
    are only read inside ``roots`` (None: wherever the index says). Safe beside other writers:
    a batch whose entries were forgotten meanwhile writes nothing for them."""
    started = time.monotonic()
    report = EmbedReport()
    model = embedder.bulk_encoder()
    reader = Reader(store, roots)
    below: int | None = None  # the rowid under which this call looks next (newest first)
    while time.monotonic() - started < budget_seconds and not (stop is not None and stop()):
        hits = read_sql.unembedded_hits(store, SAID_KINDS, below, BATCH)
        if not hits:
            report.done = True
            break
        below = min(h.rowid for h in hits)
        texts = {h.rowid: _text(reader, h) for h in hits}
        said = [r for r, t in texts.items() if t]
        found = model.passages([texts[r] or "" for r in said], embedder.BACKGROUND_THREADS)  # none: no model call
        vectors = dict(zip(said, quantize(found), strict=True))
        with store.write():
            # A line that moved is left: its journal is reindexed by the next pass, then embedded.
            index_sql.write_vectors(store, [(h.rowid, vectors.get(h.rowid)) for h in hits
                                            if texts[h.rowid] is not None])
        report.embedded += len(vectors)
        report.empty += sum(1 for t in texts.values() if t == "")
    report.seconds = time.monotonic() - started
    return report


