"""Recall by meaning where words fall short: reciprocal-rank fusion of the lexical ranking with
the entries nearest in meaning (the optional semantic layer, journal_index/semantic.py).

It applies only when the lexical ranking's best hits do not hold every word of the question
(its match is not "all"): a question whose words are all found is answered by them, and an
identifier or an exact phrase keeps its rank. Without the `semantic` extra, with no vectors in
the index, or with ``JOURNAL_INDEX_SEMANTIC=off``, the ranking is returned as it came, the
same list.

``JOURNAL_INDEX_SEMANTIC``: ``off``; ``gated`` (the default once the extra is installed);
``ungated`` fuses every query (for measuring the gate only).
"""

from __future__ import annotations

import os

from journal_index import embedder
from journal_index.hits import Filters, Hit
from journal_index.store import Store

MODES = ("off", "gated", "ungated")
DEFAULT_MODE = "gated"
ENV = "JOURNAL_INDEX_SEMANTIC"
DEPTH = 50  # the lexical candidates fused, and as many nearest by meaning
RRF_K = 60  # 1 / (RRF_K + rank): the usual constant; a rank's weight falls slowly
SEMANTIC_WEIGHT = 1.0  # a rank by meaning counts this much against one by words


def mode() -> str:
    """The layer's mode: "off" unless the extra is installed; else the environment's choice."""
    chosen = os.environ.get(ENV, DEFAULT_MODE).strip().lower()
    if chosen not in MODES:
        raise ValueError(f"{ENV}={chosen!r}: expected one of {', '.join(MODES)}")
    return chosen if chosen == "off" or embedder.installed() else "off"


def words_fall_short(ranked: list[Hit], limit: int) -> bool:
    """Whether none of the hits a page would show holds every word (the match would be "any")."""
    return not any(h.complete for h in ranked[:limit])


def fuse(store: Store, ranked: list[Hit], query: str, filters: Filters, limit: int) -> list[Hit]:
    """The lexical ranking, or (the layer on, and the gate open) its first DEPTH candidates and
    the DEPTH nearest by meaning in reciprocal-rank fusion, then the rest of it. A fused hit's
    score is its fusion score, the order's key."""
    chosen = mode()
    if chosen == "off" or not query.strip() or (chosen == "gated" and not words_fall_short(ranked, limit)):
        return ranked
    from journal_index import semantic  # NumPy and the model load only when used

    if not semantic.has_vectors(store):
        return ranked
    lexical = ranked[:DEPTH]
    near = semantic.nearest(store, query, filters, DEPTH)
    score: dict[int, float] = {}
    hit_of: dict[int, Hit] = {}
    for hits, weight in ((lexical, 1.0), (near, SEMANTIC_WEIGHT)):
        for rank, hit in enumerate(hits, 1):
            score[hit.rowid] = score.get(hit.rowid, 0.0) + weight / (RRF_K + rank)
            hit_of.setdefault(hit.rowid, hit)  # the lexical hit, with what ranking found, when both have it
    fused = sorted(hit_of.values(), key=lambda h: -score[h.rowid])
    for hit in fused:
        hit.score = score[hit.rowid]
    return fused + [h for h in ranked[DEPTH:] if h.rowid not in hit_of]
