"""Recall by meaning: reciprocal-rank fusion of the lexical ranking with the entries nearest in
meaning (the optional semantic layer: journal_index/semantic/background.py writes the vectors,
journal_index/semantic/vectors.py reads them).

The first KEEP lexical hits stay where they are: the model cannot tell an answer from the
entries around it better than the words do (tests/eval/README.md "Stop 42"), but it brings
answers that hold few of the question's words into the first five. Without the `semantic`
extra, with no vectors in the index, or with ``JOURNAL_INDEX_SEMANTIC=off``, the ranking is
returned as it came, the same list.

``JOURNAL_INDEX_SEMANTIC``: ``off`` (the default: the layer is opt-in), ``on`` (every query is
fused), ``gated`` (only a query whose best hits do not hold every word; the setting chosen for
the first model, kept for comparison). With it off, `watch` and the MCP server embed nothing.
"""

from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from journal_index.config import ConfigError
from journal_index.data.store import Store
from journal_index.semantic import embedder

if TYPE_CHECKING:  # the query side imports this module: a run-time import back would be a cycle
    from journal_index.query.hits import Filters, Hit

MODES = ("off", "on", "gated")
# Off unless asked for: it costs an install and a core in the background, and gains recall at 5,
# not first places (benchmarks/semantic_results/README.md).
DEFAULT_MODE = "off"
ENV = "JOURNAL_INDEX_SEMANTIC"
DEPTH = 50  # the nearest by meaning fused with the lexical ranking (the lexical top 3 kept apart)
RRF_K = 60  # 1 / (RRF_K + rank): the usual constant; a rank's weight falls slowly
# Chosen on the train split (stop 42, among 1, 0.5 and 0.25 with 0 or 3 kept, gated or not): equal
# weight moved tool results the question named below said words that merely sound alike.
SEMANTIC_WEIGHT = 0.25  # a rank by meaning counts this much against one by words
KEEP = 3  # the first lexical hits stay in place, above the fusion
KEPT_STEP = 0.001  # between a kept hit lifted by ``kept`` and the hit below it: their order, nothing more
# One thread embeds questions ahead (start): the model takes one question at a time anyway.
_ASKING = ThreadPoolExecutor(max_workers=1, thread_name_prefix="journal-index-question")


@dataclass(frozen=True)
class Setting:
    """The mode asked for (``JOURNAL_INDEX_SEMANTIC``, else the default), the one that runs, and,
    when the two differ, why (the extra is missing here)."""

    asked: str
    mode: str
    why_off: str | None = None

    def warning(self) -> str | None:
        """A line for a log when the layer was asked for but cannot run here; else None."""
        if self.why_off is None:
            return None
        return f"{ENV}={self.asked}, but {self.why_off}: searching by words only"


def setting() -> Setting:
    """The layer's setting: the environment's choice, or "off" where the extra cannot run."""
    asked = os.environ.get(ENV, DEFAULT_MODE).strip().lower()
    if asked not in MODES:
        raise ConfigError(f"{ENV}={asked!r}: expected one of {', '.join(MODES)}")
    if asked == "off":
        return Setting(asked, "off")
    missing = embedder.missing()
    return Setting(asked, "off", missing) if missing else Setting(asked, asked)


def mode() -> str:
    """The layer's mode that runs: "off" unless asked for and the extra is installed."""
    return setting().mode


def words_fall_short(ranked: list[Hit], limit: int) -> bool:
    """Whether none of the hits a page would show holds every word (the match would be "any")."""
    return not any(h.complete for h in ranked[:limit])


def start(store: Store, query: str) -> Future[Any] | None:
    """With the layer ``on``, the question's vector begun in another thread, so that the model
    reads it while the words are ranked (the engine runs outside the GIL); else None (``gated``
    waits for its gate, and the model is not asked for a question it may not need)."""
    if mode() != "on" or not query.strip():
        return None
    from journal_index.semantic import vectors

    if not vectors.has_vectors(store):
        return None
    # one core is left to the ranking of words, which runs meanwhile (on two cores: 23-32 ms p50
    # against 33-52 ms for embedding after ranking, benchmarks/semantic_results/README.md)
    return _ASKING.submit(embedder.encoder().query, query, max(1, embedder.QUERY_THREADS - 1))


def fuse(store: Store, ranked: list[Hit], query: str, filters: Filters, limit: int,
         asked: Future[Any] | None = None) -> list[Hit]:
    """The lexical ranking, or (the layer on, and for ``gated`` the gate open) its first KEEP hits, then
    the rest of it and the DEPTH nearest by meaning in weighted reciprocal-rank fusion. A fused
    hit's score is its fusion score, the order's key: its factors are ``words`` and ``meaning``,
    each rank's part (``Hit.fused`` keeps the ranks and the cosine, for --explain)."""
    chosen = mode()
    if chosen == "off" or not query.strip() or (chosen == "gated" and not words_fall_short(ranked, limit)):
        return ranked
    from journal_index.semantic import vectors  # NumPy and the model load only when used

    if asked is None and not vectors.has_vectors(store):  # start() looked already when it began one
        return ranked
    kept = ranked[:KEEP]
    held = {h.rowid for h in kept}
    vector = asked.result() if asked is not None else embedder.encoder().query(query)
    near = [h for h in vectors.nearest(store, vector, filters, DEPTH + KEEP) if h.rowid not in held][:DEPTH]
    cosine = {h.rowid: h.score for h in near}
    parts: dict[int, dict[str, float]] = {}
    hit_of: dict[int, Hit] = {}
    # Past DEPTH the words still count, alone: the order of the lexical tail stays as it was.
    for hits, weight, part in ((ranked[KEEP:], 1.0, "words"), (near, SEMANTIC_WEIGHT, "meaning")):
        for rank, hit in enumerate(hits, 1):
            parts.setdefault(hit.rowid, {})[part] = weight / (RRF_K + rank)
            hit_of.setdefault(hit.rowid, hit)  # the lexical hit, with what ranking found, when both have it
    words_rank = {h.rowid: rank for rank, h in enumerate(ranked, 1)}
    meaning_rank = {h.rowid: rank for rank, h in enumerate(near, 1)}
    for rowid, hit in hit_of.items():
        hit.explain = parts[rowid]
        hit.score = sum(hit.explain.values())
        hit.fused = _ranks(words_rank.get(rowid), meaning_rank.get(rowid), cosine.get(rowid))
    fused = sorted(hit_of.values(), key=lambda h: -h.score)
    below = fused[0].score if fused else float("-inf")
    for hit in reversed(kept):  # kept in place: lifted above what follows where its own score is not
        if hit.score <= below:
            hit.explain["kept"] = hit.explain.get("kept", 0.0) + below + KEPT_STEP - hit.score
            hit.score = below + KEPT_STEP
        hit.fused = _ranks(words_rank[hit.rowid], None, None)
        below = hit.score
    return kept + fused


def _ranks(words: int | None, meaning: int | None, cosine: float | None) -> dict[str, float]:
    """A hit's places in the two lists fused (1-based; absent where it is not in one) and its cosine."""
    out: dict[str, float] = {}
    if words is not None:
        out["wordsRank"] = words
    if meaning is not None:
        out["meaningRank"] = meaning
    if cosine is not None:
        out["cosine"] = round(cosine, 4)
    return out
