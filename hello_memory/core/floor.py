"""The relevance floor: who is returned at all, decided apart from how candidates score.

"Nothing relevant" is a correct answer. The fused ``sim`` is relative to the candidates (min–max,
best BM25), so it cannot tell a weak best match from a strong one; the floor judges each
candidate's *raw* evidence instead (:class:`~hello_memory.core.relevance.Floor`, calibrated per
embedder and per script of the query: :mod:`hello_memory.core.calibration`). A candidate survives when

1. its cosine clears the floor, or
2. its lexical evidence (the idf-weighted share of the query's terms its text holds) does, or
3. it shares a question/answer pair with a survivor of 1–2 (when adjacency is on), or
4. it fits a time the query names (:data:`TIME_EVIDENCE`) and shares at least one of the query's
   other terms (lexical evidence > 0) — or the query names nothing but the time ("what did I do
   yesterday?": no term is left once the time phrase is removed). A time alone is no evidence of
   topic: "what's the weather like today?" must not return whatever was said today. (A time fit
   plus a cosine above a quantile of the embedder's unrelated pairs was measured too: below their
   99th percentile it let Chinese off-topic questions through; at it, it kept nothing more than
   shared words do; BENCHMARKS.md, "Relevance floor per script".) Or
5. it is reached through the graph from an entity the query names.

The floor judges questions, not conversations or long texts (the caller passes ``bar=None``
then; see :data:`hello_memory.core.retrieval.FLOOR_MAX_QUERY_TOKENS`).

What it decides (``Settings.floor_scope``, :func:`admitted`, :func:`behind`): by default whether the
*question* gets an answer at all. When no candidate survives the rules above, search returns
nothing; when one does, the survivors rank first, by score, and every other candidate follows them,
by score. The floor is set where about one unrelated memory in 500 clears it: right for "is
anything here about this?", too strict for "is this memory part of the answer?" — the other pieces
of a multi-part answer ("how old was I when Alex was born?": a birthday, a birth) each match only
part of the question, and a floor on every memory cut them from the list. Whether a question gets
an answer is decided the same way under both scopes, so the no-answer rate does not change, and the
list returned under ``"memory"`` (the survivors only, the earlier behaviour) is the beginning of the
list returned under ``"question"``. Ranking the others among the survivors instead let memories
that share only a named participant or time with the question, which the floor used to drop,
outrank evidence (BENCHMARKS.md, "Every piece of evidence").
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from hello_memory.core.calibration import floor_for
from hello_memory.core.relevance import Floor, has_evidence
from hello_memory.embedders.base import Embedder
from hello_memory.settings import FloorScope, Settings

TIME_EVIDENCE = 0.5  # a memory fitting a time the query names this well passes the floor (rule 4)


def of(settings: Settings, embedder: Embedder, query: str) -> Floor | None:
    """The floor that judges ``query`` under ``settings`` for ``embedder`` (``None``: off).

    ``floor_cosine`` and ``floor_lexical``, when set, replace the calibrated values for every script.
    """
    if not settings.relevance_floor:
        return None
    calibrated = floor_for(embedder, query)
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
    *,
    names_topic: bool = True,
) -> set[str]:
    """The candidates the floor keeps (every one when ``bar`` is ``None``), by the rules above, in order.

    ``names_topic`` is False when the query names nothing but a time (rule 4).

    Example:
        >>> bar = Floor(0.8, 0.35)
        >>> sorted(survivors(["a", "b", "c"], {"a": 0.9, "b": 0.5}, {"c": 0.6}, [], {}, [], bar))
        ['a', 'c']
        >>> fits = {"a": 1.0, "b": 1.0}  # both fit the time; only "a" shares a word with the query
        >>> sorted(survivors(["a", "b"], {"a": 0.5, "b": 0.5}, {"a": 0.1}, [], fits, [], bar))
        ['a']
        >>> sorted(survivors(["a", "b"], {"a": 0.5, "b": 0.5}, {"a": 0.1}, [], fits, [], bar, names_topic=False))
        ['a', 'b']
    """
    if bar is None:
        return set(candidates)
    kept = {k for k in candidates if passes(dense.get(k), 0.0, bar)}
    kept |= {k for k, ev in evidence.items() if passes(None, ev, bar)}
    kept |= {m for q, a in pairs if q in kept or a in kept for m in (q, a)}
    kept |= {
        k
        for k, fit in fits.items()
        if fit >= TIME_EVIDENCE and (not names_topic or evidence.get(k, 0.0) > 0)
    }
    kept |= set(graphed)
    return kept


def admitted(kept: set[str], candidates: Collection[str], scope: FloorScope) -> set[str]:
    """Who is returned, given the floor's survivors ``kept`` (see the module docstring).

    Example:
        >>> sorted(admitted({"a"}, ["a", "b"], "question")), sorted(admitted({"a"}, ["a", "b"], "memory"))
        (['a', 'b'], ['a'])
        >>> admitted(set(), ["a", "b"], "question")  # nothing clears the floor: no answer
        set()
    """
    if scope == "memory" or not kept:
        return kept
    return set(candidates)


def behind(kept: Collection[str], candidate: str, scope: FloorScope) -> bool:
    """True when ``candidate`` was admitted without clearing the floor itself: it ranks after every
    survivor (each group by score).

    Example:
        >>> behind({"a"}, "b", "question"), behind({"a"}, "a", "question")
        (True, False)
    """
    return scope == "question" and candidate not in kept
