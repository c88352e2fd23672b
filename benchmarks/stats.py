"""Bootstrap intervals for benchmark means, by query or by corpus (conversation, user).

Queries of one conversation are not independent: a system that suits one conversation's style
finds most of its evidence. When a task has at least :data:`MIN_CLUSTERS` corpora holding queries
(LoCoMo's conversations), the interval resamples whole corpora (a cluster bootstrap: the spread
between conversations is what a new conversation meets); otherwise (MADial: two users; the pooled
LongMemEval corpus: one; docs_qa: one) it resamples queries. :func:`scheme` names the choice, and
every report states it next to the interval.

Example:
    >>> lo, hi = bootstrap_interval([1.0, 0.0, 1.0, 1.0], seed=0)
    >>> 0.0 <= lo <= 0.75 <= hi <= 1.0
    True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

MIN_CLUSTERS = 5
RESAMPLES = 2000
LEVEL = 0.95


@dataclass(frozen=True, slots=True)
class Estimate:
    """A mean with its bootstrap interval.

    Attributes:
        mean: the mean over queries.
        low, high: the 95 % percentile interval.
        n: how many queries.
        scheme: what was resampled (``"queries"`` or ``"corpora"``).
    """

    mean: float
    low: float
    high: float
    n: int
    scheme: str

    def text(self, digits: int = 3) -> str:
        """``"0.801 [0.77, 0.83]"``."""
        return f"{self.mean:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"

    def as_json(self) -> dict[str, float | int | str]:
        """A JSON-serialisable dict."""
        return {"mean": round(self.mean, 4), "low": round(self.low, 4), "high": round(self.high, 4),
                "n": self.n, "scheme": self.scheme}  # fmt: skip


def scheme(groups: Sequence[str] | None) -> str:
    """``"corpora"`` when ``groups`` name at least :data:`MIN_CLUSTERS` distinct corpora, else ``"queries"``."""
    if groups is not None and len(set(groups)) >= MIN_CLUSTERS and len(set(groups)) < len(groups):
        return "corpora"
    return "queries"


def _resample_indices(groups: Sequence[str] | None, n: int, rng: np.random.Generator, times: int) -> list[np.ndarray]:
    if scheme(groups) == "queries" or groups is None:
        return [rng.integers(0, n, n) for _ in range(times)]
    members: dict[str, list[int]] = {}
    for i, g in enumerate(groups):
        members.setdefault(g, []).append(i)
    blocks = [np.asarray(v) for v in members.values()]
    out = []
    for _ in range(times):
        picked = rng.integers(0, len(blocks), len(blocks))
        out.append(np.concatenate([blocks[j] for j in picked]))
    return out


def bootstrap_interval(
    values: Sequence[float],
    groups: Sequence[str] | None = None,
    *,
    baseline: Sequence[float] | None = None,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> tuple[float, float]:
    """95 % percentile interval of ``mean(values)`` (or of ``mean(values − baseline)``, paired).

    Args:
        values: one value per query.
        groups: each query's corpus; resampled as clusters when :func:`scheme` says so.
        baseline: per-query values of another configuration on the same queries: the interval is
            then of the paired difference.
        resamples: bootstrap resamples.
        seed: the generator's seed (results are reproducible).
    """
    x = np.asarray(values, dtype=np.float64)
    if baseline is not None:
        x = x - np.asarray(baseline, dtype=np.float64)
    if len(x) == 0:
        return 0.0, 0.0
    rng = np.random.default_rng(seed)
    means = [float(x[idx].mean()) for idx in _resample_indices(groups, len(x), rng, resamples)]
    tail = (1 - LEVEL) / 2 * 100
    return float(np.percentile(means, tail)), float(np.percentile(means, 100 - tail))


def estimate(
    values: Sequence[float],
    groups: Sequence[str] | None = None,
    *,
    baseline: Sequence[float] | None = None,
    seed: int = 0,
) -> Estimate:
    """Mean (or paired mean difference) with its bootstrap interval."""
    x = np.asarray(values, dtype=np.float64)
    if baseline is not None:
        x = x - np.asarray(baseline, dtype=np.float64)
    low, high = bootstrap_interval(x.tolist(), groups, seed=seed)
    return Estimate(float(x.mean()) if len(x) else 0.0, low, high, len(x), scheme(groups))


def metric_estimate(
    per_query: Mapping[str, Mapping[str, float]],
    metric: str,
    corpus_of: Mapping[str, str],
    *,
    baseline: Mapping[str, Mapping[str, float]] | None = None,
    seed: int = 0,
) -> Estimate:
    """:func:`estimate` of ``metric`` over the queries of ``per_query`` (query id → metrics)."""
    qids = sorted(per_query)
    values = [per_query[q][metric] for q in qids]
    base = [baseline[q][metric] for q in qids] if baseline is not None else None
    return estimate(values, [corpus_of[q] for q in qids], baseline=base, seed=seed)
