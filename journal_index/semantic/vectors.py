"""The semantic layer's vectors, read by meaning: which entries are nearest to a query.

A process keeps a copy of the index's vectors (migration 0011) as unit float32 rows, and reads
only the rows written since it last looked (their ``seq`` grows). :func:`nearest` ranks the
vectors of the journals inside the caller's scope, then keeps those the index still holds inside
all the filters. For :mod:`journal_index.semantic.fusion`; the vectors are written by
:mod:`journal_index.semantic.background`. Needs the `semantic` extra (NumPy and the model).
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field
from typing import Any

from journal_index.data import read_sql
from journal_index.data.store import Store
from journal_index.query.hits import Filters, Hit
from journal_index.semantic import embedder

SCALE = 127.0


def quantize(vectors: Any) -> list[bytes]:
    """Unit float vectors as int8 bytes, each scaled by its own largest component (cosine does
    not depend on the scale, so none is stored)."""
    import numpy as np

    peak = np.maximum(np.abs(vectors).max(axis=1, keepdims=True), 1e-12)
    return [row.tobytes() for row in np.round(vectors / peak * SCALE).astype(np.int8)]


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
        rows = read_sql.vectors_since(store, held.seq)
        if not rows:
            return held
        held.seq = rows[-1][0]
        fresh = [(entry, file_id, blob) for _, entry, file_id, blob in rows if blob is not None]
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
    return read_sql.has_vectors(store)


def nearest(store: Store, asked: Any, filters: Filters, k: int) -> list[Hit]:
    """The ``k`` entries inside ``filters`` closest in meaning to the question's vector ``asked``
    (embedder.Encoder.query), closest first, each
    with its cosine as its score. Candidates are ranked among the vectors in memory, then kept only where the
    index still has them inside the filters (the journals in scope are chosen first; time and kind
    filters, checked after, widen the look until k are found)."""
    import numpy as np

    held = _vectors(store)
    if held.matrix is None or not held.rowids:
        return []
    # Only the journals inside the scope (and session, agents) are ranked: the files table is small.
    parts, values = filters.file_sql()
    inside = np.array(read_sql.file_ids(store, (" AND ".join(parts), values)), dtype=np.int64)
    mask = np.isin(held.files, inside)
    if not mask.any():
        return []
    with embedder.encoder().one_blas_thread():
        scores = np.where(mask, held.matrix @ asked, -np.inf)
    wanted = min(int(mask.sum()), 2 * k)
    where, params = filters.sql()
    while True:
        top = np.argpartition(-scores, wanted - 1)[:wanted] if wanted < len(scores) else np.arange(len(scores))
        top = top[np.argsort(-scores[top], kind="stable")]
        best = {held.rowids[i]: float(scores[i]) for i in top.tolist() if scores[i] > 0.0}
        found = read_sql.hits_among(store, list(best), (where, params))
        if len(found) >= k or wanted >= mask.sum():
            break
        wanted = min(int(mask.sum()), wanted * 4)  # time or kind filters left too few: look further
    for hit in found:
        hit.score, hit.complete = best[hit.rowid], False
    found.sort(key=lambda h: -h.score)
    return found[:k]
