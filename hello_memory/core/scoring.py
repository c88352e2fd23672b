"""The tier formulas of docs/design.md §4, as pure functions.

All defaults reproduce the seed exactly; weights are parameters so a profile can change them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


def importance_weight(importance: float) -> float:
    """``w(imp) = 0.8 + 0.4·imp``: importance adjusts the score by ±20 %, never dominates."""
    return 0.8 + 0.4 * importance


def recency(age_hours: float) -> float:
    """``max(0.1, exp(-0.1 · age_h / 24))``; future timestamps count as age 0."""
    return max(0.1, math.exp(-0.1 * max(0.0, age_hours) / 24.0))


def working_decay(age_minutes: float, ttl_minutes: float) -> float:
    """Working-memory time decay: ``max(0.1, exp(-age / ttl))`` (0.37 at the TTL)."""
    return max(0.1, math.exp(-max(0.0, age_minutes) / ttl_minutes))


@dataclass(frozen=True, slots=True)
class TierWeights:
    """Weights of one tier's formula (defaults = the seed)."""

    sim: float = 0.8
    other: float = 0.2  # recency (episodic, perceptual) or graph (semantic)


EPISODIC = TierWeights(0.8, 0.2)
SEMANTIC = TierWeights(0.7, 0.3)
PERCEPTUAL = TierWeights(0.8, 0.2)


def working_score(
    lexical: float, keyword: float, decay: float, importance: float
) -> tuple[float, dict[str, float]]:
    """``base·decay·w(imp)``, ``base = 0.7·lexical + 0.3·keyword`` if lexical > 0 else ``keyword``."""
    base = 0.7 * lexical + 0.3 * keyword if lexical > 0 else keyword
    w = importance_weight(importance)
    score = base * decay * w
    return score, {
        "lexical": lexical,
        "keyword": keyword,
        "base": base,
        "decay": decay,
        "importance": importance,
        "importance_weight": w,
    }


def episodic_score(
    sim: float, age_hours: float, importance: float, weights: TierWeights = EPISODIC
) -> tuple[float, dict[str, float]]:
    """``(0.8·sim + 0.2·recency) · w(imp)``."""
    return _tier_score(sim, "recency", recency(age_hours), importance, weights)


def semantic_score(
    sim: float, graph: float, importance: float, weights: TierWeights = SEMANTIC
) -> tuple[float, dict[str, float]]:
    """``(0.7·sim + 0.3·graph) · w(imp)``."""
    return _tier_score(sim, "graph", graph, importance, weights)


def _tier_score(
    sim: float, other_name: str, other: float, importance: float, weights: TierWeights
) -> tuple[float, dict[str, float]]:
    """``(weights.sim·sim + weights.other·other) · w(imp)``, with its terms by name (``other`` as ``other_name``)."""
    w = importance_weight(importance)
    score = (weights.sim * sim + weights.other * other) * w
    return score, {"sim": sim, other_name: other, "importance": importance, "importance_weight": w}


def perceptual_score(
    sim: float, age_hours: float, importance: float, weights: TierWeights = PERCEPTUAL
) -> tuple[float, dict[str, float]]:
    """``(0.8·sim + 0.2·recency) · w(imp)`` (same shape as episodic)."""
    return episodic_score(sim, age_hours, importance, weights)


def graph_relevance(hops: int) -> float:
    """Relevance of a memory reached through an entity ``hops`` away from a query entity."""
    return 1.0 / (1.0 + hops)
