"""The relevance floor: who is returned at all, decided apart from how candidates score.

"Nothing relevant" is a correct answer. The fused ``sim`` is relative to the candidates (min–max,
best BM25), so it cannot tell a weak best match from a strong one; the floor judges each
candidate's *raw* evidence instead (:class:`~hello_memory.core.relevance.Floor`, calibrated per
embedder). A candidate survives when

1. its cosine clears the floor, or
2. its lexical evidence (the idf-weighted share of the query's terms its text holds) does, or
3. it shares a question/answer pair with a survivor of 1–2 (when adjacency is on), or
4. it fits a time the query names (:data:`TIME_EVIDENCE`), or
5. it is reached through the graph from an entity the query names.

The floor judges questions, not conversations or long texts (the caller passes ``bar=None``
then; see :data:`hello_memory.core.retrieval.FLOOR_MAX_QUERY_TOKENS`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from hello_memory.core.relevance import Floor, calibrated_floor, has_evidence
from hello_memory.settings import Settings

TIME_EVIDENCE = 0.5  # a memory fitting a time the query names this well passes the relevance floor


def of(settings: Settings, embedder_name: str) -> Floor | None:
    """The floor under ``settings`` for the embedder ``embedder_name`` (``None``: off)."""
    if not settings.relevance_floor:
        return None
    calibrated = calibrated_floor(embedder_name)
    return Floor(
        calibrated.cosine if settings.floor_cosine is None else settings.floor_cosine,
        calibrated.lexical if settings.floor_lexical is None else settings.floor_lexical,
    )


def passes(cosine: float | None, lexical_evidence: float, bar: Floor) -> bool:
    """True when a raw cosine or lexical evidence clears ``bar``."""
    return has_evidence(cosine, lexical_evidence, bar)


def survivors(
    candidates: Collection[str],
    dense: Mapping[str, float],
    evidence: Mapping[str, float],
    pairs: Sequence[tuple[str, str]],
    fits: Mapping[str, float],
    graphed: Collection[str],
    bar: Floor | None,
) -> set[str]:
    """The candidates the floor keeps (every one when ``bar`` is ``None``), by the rules above, in order.

    Example:
        >>> sorted(survivors(["a", "b", "c"], {"a": 0.9, "b": 0.5}, {"c": 0.6}, [], {}, [], Floor(0.8, 0.35)))
        ['a', 'c']
    """
    if bar is None:
        return set(candidates)
    kept = {k for k in candidates if passes(dense.get(k), 0.0, bar)}
    kept |= {k for k, ev in evidence.items() if passes(None, ev, bar)}
    kept |= {m for q, a in pairs if q in kept or a in kept for m in (q, a)}
    kept |= {k for k, fit in fits.items() if fit >= TIME_EVIDENCE}
    kept |= set(graphed)
    return kept
