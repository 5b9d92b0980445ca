"""The vectors of the optional semantic layer: written in the background, read by meaning.

What is embedded is what was said (a prompt, a reply's words) and summaries, never tool output
or call arguments, and always redacted text: the vectors are derived data of the index, like
its terms, and go with it (migration 0010; an entry forgotten takes its vector along).

:func:`embed_pending` embeds the entries that have no vector yet, newest first, until a time
budget runs out. `watch` and the MCP server's Freshener call it after their passes, so
`journal-index index` never waits for the model. :func:`nearest` returns the entries closest
in meaning to a query inside the caller's filters (scope, time, kinds), for
:mod:`journal_index.fusion`. Everything here needs the `semantic` extra
(:func:`journal_index.embedder.installed`); nothing imports it otherwise.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from journal_index import embedder
from journal_index.entry_text import strip_our_answers
from journal_index.formats import Root
from journal_index.hits import HIT_COLUMNS, Filters, Hit, hits_of
from journal_index.redact import redact
from journal_index.store import Store

SAID_KINDS = ("user", "assistant", "compaction", "branch_summary")
TEXT_CHARS = 2_000  # the model reads its first 256 tokens (about 1,000 characters): no more is redacted
BATCH = 16  # entries embedded (and committed) together
SCALE = 127.0


def _said_kinds_sql() -> str:
    return "e.kind IN (" + ",".join(f"'{k}'" for k in SAID_KINDS) + ")"


def quantize(vectors: Any) -> list[bytes]:
    """Unit float vectors as int8 bytes, each scaled by its own largest component (cosine does
    not depend on the scale, so none is stored)."""
    import numpy as np

    peak = np.maximum(np.abs(vectors).max(axis=1, keepdims=True), 1e-12)
    return [row.tobytes() for row in np.round(vectors / peak * SCALE).astype(np.int8)]


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
    return int(store.value(
        f"SELECT count(*) FROM entries e LEFT JOIN entry_vectors v ON v.entry = e.rowid "
        f"WHERE v.entry IS NULL AND {_said_kinds_sql()}", default=0))


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
    from journal_index.query import Reader  # query imports fusion, which imports this module

    started = time.monotonic()
    report = EmbedReport()
    model = embedder.bulk_encoder()
    reader = Reader(store, roots)
    below: int | None = None  # the rowid under which this call looks next (newest first)
    while time.monotonic() - started < budget_seconds and not (stop is not None and stop()):
        where = "" if below is None else f"AND e.rowid < {int(below)}"
        rows = store.rows(f"SELECT {HIT_COLUMNS} FROM entries e JOIN files f ON f.id = e.file_id "
                          f"LEFT JOIN entry_vectors v ON v.entry = e.rowid "
                          f"WHERE v.entry IS NULL AND {_said_kinds_sql()} {where} ORDER BY e.rowid DESC LIMIT ?",
                          (BATCH,))
        if not rows:
            report.done = True
            break
        hits = hits_of(rows)
        below = min(h.rowid for h in hits)
        texts = {h.rowid: _text(reader, h) for h in hits}
        said = [r for r, t in texts.items() if t]
        vectors = dict(zip(said, quantize(model.encode([texts[r] or "" for r in said])), strict=True)) if said else {}
        with store.write():
            for hit in hits:
                if texts[hit.rowid] is None:
                    continue  # its line moved: the journal is reindexed by the next pass, then embedded
                # Written only while the entry is still there (a pass may have forgotten it meanwhile).
                store.conn.execute("INSERT OR IGNORE INTO entry_vectors(entry, vector) "
                                   "SELECT rowid, ? FROM entries WHERE rowid = ?",
                                   (vectors.get(hit.rowid), hit.rowid))
        report.embedded += len(vectors)
        report.empty += sum(1 for t in texts.values() if t == "")
    report.seconds = time.monotonic() - started
    return report


@dataclass
class _Vectors:
    """A process's copy of one index's vectors, unit float32 rows, grown by the rows written since."""

    seq: int = 0
    rowids: list[int] = field(default_factory=list)
    files: Any = None  # each row's journal (files.id), to narrow to a scope before ranking
    matrix: Any = None  # n × 384 float32, unit rows (a row of zeros: superseded)
    where: dict[int, int] = field(default_factory=dict)  # entry rowid -> row
    lock: threading.Lock = field(default_factory=threading.Lock)


_CACHE: weakref.WeakKeyDictionary[Store, _Vectors] = weakref.WeakKeyDictionary()


def _vectors(store: Store) -> _Vectors:
    import numpy as np

    held = _CACHE.setdefault(store, _Vectors())
    with held.lock:
        rows = store.rows("SELECT v.seq, v.entry, e.file_id, v.vector FROM entry_vectors v "
                          "JOIN entries e ON e.rowid = v.entry WHERE v.seq > ? ORDER BY v.seq", (held.seq,))
        if not rows:
            return held
        held.seq = int(rows[-1][0])
        fresh = [(int(entry), int(file_id), blob) for _, entry, file_id, blob in rows if blob is not None]
        if not fresh:
            return held
        raw = np.frombuffer(b"".join(b for _, _, b in fresh), dtype=np.int8).reshape(len(fresh), -1)
        block = raw.astype(np.float32)
        block /= np.maximum(np.linalg.norm(block, axis=1, keepdims=True), 1e-12)
        start = len(held.rowids)
        matrix = block if held.matrix is None else np.concatenate([held.matrix, block])
        files = np.array([f for _, f, _ in fresh], dtype=np.int64)
        held.files = files if held.files is None else np.concatenate([held.files, files])
        for i, (entry, _, _) in enumerate(fresh):
            old = held.where.get(entry)
            if old is not None:  # the rowid came back for another entry: its old vector is void
                matrix[old] = 0.0
            held.where[entry] = start + i
            held.rowids.append(entry)
        held.matrix = matrix
    return held


def has_vectors(store: Store) -> bool:
    """Whether the index holds any vector (one seek; no model is loaded)."""
    return store.one("SELECT 1 FROM entry_vectors WHERE vector IS NOT NULL LIMIT 1") is not None


def nearest(store: Store, query: str, filters: Filters, k: int) -> list[Hit]:
    """The ``k`` entries inside ``filters`` closest in meaning to ``query``, closest first, each
    with its cosine as its score. Candidates are ranked among the vectors in memory, then kept only where the
    index still has them inside the filters (the journals in scope are chosen first; time and kind
    filters, checked after, widen the look until k are found)."""
    import numpy as np

    held = _vectors(store)
    if held.matrix is None or not held.rowids:
        return []
    # Only the journals inside the scope (and session, agents) are ranked: the files table is small.
    parts, values = filters.file_sql()
    inside = np.array([r[0] for r in store.rows(f"SELECT f.id FROM files f WHERE {' AND '.join(parts)}", values)],
                      dtype=np.int64)
    mask = np.isin(held.files, inside)
    if not mask.any():
        return []
    model = embedder.encoder()
    q = model.encode([query])[0]
    with model.one_blas_thread():
        scores = np.where(mask, held.matrix @ q, -np.inf)
    wanted = min(int(mask.sum()), 2 * k)
    where, params = filters.sql()
    while True:
        top = np.argpartition(-scores, wanted - 1)[:wanted] if wanted < len(scores) else np.arange(len(scores))
        top = top[np.argsort(-scores[top], kind="stable")]
        best = {held.rowids[i]: float(scores[i]) for i in top.tolist() if scores[i] > 0.0}
        marks = ",".join("?" * len(best))
        found = hits_of(store.rows(f"SELECT {HIT_COLUMNS} FROM entries e JOIN files f ON f.id = e.file_id "
                                   f"WHERE e.rowid IN ({marks}) AND {where}", [*best, *params])) if best else []
        if len(found) >= k or wanted >= mask.sum():
            break
        wanted = min(int(mask.sum()), wanted * 4)  # time or kind filters left too few: look further
    for hit in found:
        hit.score, hit.complete = best[hit.rowid], False
    found.sort(key=lambda h: -h.score)
    return found[:k]
