"""The relevance floor: whether a question is answered at all, and by which memories.

"Nothing relevant" is a correct answer. The fused ``sim`` is relative to the candidates (min–max,
best BM25), so it cannot tell a weak best match from a strong one; the floor judges raw evidence.

**By the question's null** (the default; issue 35). A candidate's *standing* is how many spreads its
cosine stands above what unrelated texts reach with this question and with this memory
(:class:`hello_memory.core.null.Null`, measured per embedder and script on the calibration corpus),
plus :data:`LEXICAL_WEIGHT` × its lexical evidence: the idf-weighted share of the question's
*content* terms it holds — time words and question or stop words are no evidence
(:mod:`hello_memory.language.evidence_words`). The question is answered when its best candidate
stands out: its standing plus :data:`LEAD_WEIGHT` × its lead over the next :data:`RUNNERS_UP` (this
user's own memories nearest the question) reaches the margin (``Settings.floor_margin``, default
:data:`MARGIN`). Then every candidate within :data:`BAND` of the best clears the floor, and so does
every candidate whose lexical evidence reaches ``floor_lexical`` (0.35): the pieces of a multi-part
answer each match only part of the question. The
constants were chosen on one floor probe set and checked on the other (``benchmarks.floor_probe``,
BENCHMARKS.md "A floor that judges the question").

**By an absolute floor** (an embedder whose cosines mean nothing, such as the test embedder, or
``floor_cosine`` / ``floor_lexical`` set): a candidate clears it when its cosine reaches the floor
of the query's script (:mod:`hello_memory.core.calibration`) or its lexical evidence reaches
``floor_lexical`` (0.35).

Under both, a candidate also survives when it

- shares a question/answer pair with a survivor (when adjacency is on), or
- fits a time the query names (:data:`TIME_EVIDENCE`) and shares one of its content terms — or the
  query names nothing but the time ("what did I do yesterday?"). A time alone is no evidence of
  topic: "what's the weather like today?" must not return whatever was said today. Or
- is reached through the graph from an entity the query names.

The floor judges questions, not conversations or long texts (the caller passes ``judge=None`` then;
see :data:`hello_memory.core.retrieval.FLOOR_MAX_QUERY_TOKENS`).

What it decides (``Settings.floor_scope``, :func:`admitted`, :func:`behind`): by default whether the
*question* gets an answer at all. When no candidate survives, search returns nothing; when one does,
the survivors rank first, by score, and every other candidate follows them, by score, marked
``below_floor`` — evidence at depth for a ranking, never for a prompt (DESIGN §5). Under ``"memory"``
only the survivors are returned.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from hello_memory.core.calibration import floor_for
from hello_memory.core.null import Null, for_query, nulls
from hello_memory.core.relevance import Floor, has_evidence
from hello_memory.embedders.base import Embedder
from hello_memory.settings import FloorScope, Settings

TIME_EVIDENCE = 0.5  # a memory fitting a time the query names this well may pass the floor
MARGIN = 4.0  # the standing (plus lead) a question's best candidate needs: Settings.floor_margin
LEXICAL_WEIGHT = 3.0  # standing added by lexical evidence 1 (every content term of the question)
LEAD_WEIGHT = 0.5  # weight of the best candidate's lead over the runners-up
RUNNERS_UP = 3
BAND = 3.0  # once answered, the candidates within this standing of the best clear the floor
JUDGED = 20  # candidates judged by standing: the best by cosine, and those holding a content term

MemoryMeans = Callable[[np.ndarray, Sequence[str]], Mapping[str, float]]


@dataclass(frozen=True, slots=True)
class Judge:
    """How one query is judged: by its null(s) when there are any, else by the absolute ``floor``."""

    floor: Floor
    nulls: tuple[Null, ...] = ()
    margin: float = MARGIN


def of(settings: Settings, embedder: Embedder, query: str) -> Judge | None:
    """The judge of ``query`` under ``settings`` for ``embedder`` (``None``: the floor is off)."""
    if not settings.relevance_floor:
        return None
    calibrated = floor_for(embedder, query)
    absolute = Floor(
        calibrated.cosine if settings.floor_cosine is None else settings.floor_cosine,
        calibrated.lexical if settings.floor_lexical is None else settings.floor_lexical,
    )
    by_script = nulls(embedder)
    if by_script is None or settings.floor_cosine is not None or settings.floor_lexical is not None:
        return Judge(absolute)
    margin = MARGIN if settings.floor_margin is None else settings.floor_margin
    return Judge(absolute, tuple(for_query(by_script, query)), margin)


def passes(cosine: float | None, lexical_evidence: float, bar: Floor) -> bool:
    """True when a raw cosine or lexical evidence clears the absolute ``bar``."""
    return has_evidence(cosine, lexical_evidence, bar)


def standings(
    judge: Judge, qvec: np.ndarray, dense: Mapping[str, float], evidence: Mapping[str, float], means: MemoryMeans
) -> dict[str, float]:
    """The standing of the :data:`JUDGED` candidates (by the query's nulls; the lowest when there are
    several). ``means(vector, ids)`` gives ``vector · m`` for each memory ``m`` among ``ids``."""
    if not judge.nulls:
        return {}
    best = sorted(dense, key=lambda k: -dense[k])[:JUDGED]
    lexical = sorted((k for k, ev in evidence.items() if ev > 0 and k in dense), key=lambda k: -evidence[k])
    ids = list(dict.fromkeys([*best, *lexical[:JUDGED]]))
    out: dict[str, float] = {}
    for null in judge.nulls:
        query_mean = float(np.dot(qvec, null.memories))
        memory_means = means(null.questions, ids)
        for k in ids:
            s = null.standing(dense[k], query_mean, memory_means.get(k, query_mean))
            s += LEXICAL_WEIGHT * evidence.get(k, 0.0)
            out[k] = min(s, out.get(k, s))
    return out


def stand_out(standing: Mapping[str, float], margin: float) -> set[str]:
    """The candidates that clear the floor by standing: none unless the best stands out (module docstring).

    Example:
        >>> sorted(stand_out({"a": 4.0, "b": 3.0, "c": 1.0, "d": 0.5}, 3.5))
        ['a', 'b']
        >>> stand_out({"a": 3.2, "b": 3.1, "c": 3.0, "d": 3.0}, 3.5)  # nothing stands out
        set()
    """
    ordered = sorted(standing.values(), reverse=True)
    if not ordered:
        return set()
    runners = ordered[1 : 1 + RUNNERS_UP]
    lead = ordered[0] - sum(runners) / len(runners) if runners else 0.0
    if ordered[0] + LEAD_WEIGHT * lead < margin:
        return set()
    return {k for k, s in standing.items() if s >= ordered[0] - BAND}


def survivors(
    candidates: Collection[str],
    dense: Mapping[str, float],
    evidence: Mapping[str, float],
    pairs: Sequence[tuple[str, str]],
    fits: Mapping[str, float],
    graphed: Collection[str],
    judge: Judge | None,
    *,
    standing: Mapping[str, float] | None = None,
    names_topic: bool = True,
) -> set[str]:
    """The candidates the floor keeps (every one when ``judge`` is ``None``), by the rules above.

    ``standing`` comes from :func:`standings` (a judge with nulls); ``names_topic`` is False when the
    query names nothing but a time.

    Example:
        >>> judge = Judge(Floor(0.8, 0.35))  # an absolute floor
        >>> sorted(survivors(["a", "b", "c"], {"a": 0.9, "b": 0.5}, {"c": 0.6}, [], {}, [], judge))
        ['a', 'c']
        >>> fits = {"a": 1.0, "b": 1.0}  # both fit the time; only "a" shares a content term with the query
        >>> sorted(survivors(["a", "b"], {"a": 0.5, "b": 0.5}, {"a": 0.1}, [], fits, [], judge))
        ['a']
        >>> sorted(survivors(["a", "b"], {"a": 0.5, "b": 0.5}, {"a": 0.1}, [], fits, [], judge, names_topic=False))
        ['a', 'b']
    """
    if judge is None:
        return set(candidates)
    if judge.nulls:
        kept = stand_out(standing or {}, judge.margin)
        if kept:  # an answered question: shared content terms clear it too (a part of a multi-part answer)
            kept |= {k for k, ev in evidence.items() if passes(None, ev, judge.floor)}
    else:
        kept = {k for k in candidates if passes(dense.get(k), 0.0, judge.floor)}
        kept |= {k for k, ev in evidence.items() if passes(None, ev, judge.floor)}
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
