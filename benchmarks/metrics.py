"""Judge-free ranking metrics: pure functions over one query's ranked results.

Every function takes ``matches``: for each ranked position (best first) the set of gold units
that result matches. With exact ids this is ``{doc_id} & gold`` (see :func:`id_matches`); with
spans one chunk may match several gold spans and several chunks may match the same span. A
position is *relevant* when it matches at least one gold unit; for nDCG it counts only when it
matches a gold unit no earlier position matched, so that nDCG stays within [0, 1] when many
chunks overlap one span (for exact ids the two notions coincide).

Example:
    >>> m = id_matches(["a", "x", "b"], {"a", "b", "c"})
    >>> round(recall_at_k(m, 3, k=3), 3), hit_at_k(m, k=1), reciprocal_rank(m)
    (0.667, 1.0, 1.0)
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence

Matches = Sequence[frozenset[str]]

EMPTY: frozenset[str] = frozenset()


def id_matches(ranked: Sequence[str], gold: Collection[str]) -> list[frozenset[str]]:
    """Matches for exact-id relevance: position ``i`` matches ``{ranked[i]}`` if it is gold."""
    return [frozenset((r,)) if r in gold else EMPTY for r in ranked]


def _covered(matches: Matches, k: int) -> set[str]:
    covered: set[str] = set()
    for m in matches[:k]:
        covered |= m
    return covered


def recall_at_k(matches: Matches, n_gold: int, k: int) -> float:
    """Fraction of the ``n_gold`` gold units matched within the top ``k`` (0 when no gold)."""
    return len(_covered(matches, k)) / n_gold if n_gold else 0.0


def hit_at_k(matches: Matches, k: int) -> float:
    """1.0 when any of the top ``k`` matches a gold unit (a.k.a. recall_any@k), else 0.0."""
    return 1.0 if any(matches[:k]) else 0.0


def all_at_k(matches: Matches, n_gold: int, k: int) -> float:
    """1.0 when the top ``k`` together match every gold unit (a.k.a. recall_all@k)."""
    return 1.0 if n_gold and len(_covered(matches, k)) >= n_gold else 0.0


def ndcg_at_k(matches: Matches, n_gold: int, k: int) -> float:
    """Binary-relevance nDCG@k with the standard ``1 / log2(rank + 1)`` discount.

    The ideal ranking puts ``min(n_gold, k)`` relevant results first. A position is relevant
    when it matches a gold unit not matched earlier (see the module docstring).
    """
    if not n_gold:
        return 0.0
    seen: set[str] = set()
    dcg = 0.0
    for i, m in enumerate(matches[:k]):
        if m - seen:
            dcg += 1.0 / math.log2(i + 2)
            seen |= m
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(n_gold, k)))
    return dcg / ideal


def reciprocal_rank(matches: Matches) -> float:
    """``1 / rank`` of the first relevant position (1-based), 0.0 when none is relevant."""
    for i, m in enumerate(matches):
        if m:
            return 1.0 / (i + 1)
    return 0.0


def query_metrics(matches: Matches, n_gold: int, ks: Sequence[int]) -> dict[str, float]:
    """All metrics of one query: ``recall@k``, ``hit@k``, ``all@k``, ``ndcg@k`` for each k, ``mrr``."""
    out: dict[str, float] = {}
    for k in ks:
        out[f"recall@{k}"] = recall_at_k(matches, n_gold, k)
        out[f"hit@{k}"] = hit_at_k(matches, k)
        out[f"all@{k}"] = all_at_k(matches, n_gold, k)
        out[f"ndcg@{k}"] = ndcg_at_k(matches, n_gold, k)
    out["mrr"] = reciprocal_rank(matches)
    return out


def mean_metrics(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    """Key-wise mean of per-query metric dicts (empty input gives an empty dict)."""
    if not rows:
        return {}
    return {key: sum(r[key] for r in rows) / len(rows) for key in rows[0]}
