"""Search across tiers: candidates (dense + lexical + graph) → tier formula → one ranked list."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from hello_memory.core import MemoryCore, floor, semantic, upkeep, working
from hello_memory.core.relevance import (
    Relevance,
    dense_floor,
    evidence_text,
    fuse,
    named_participants,
    prefer_participants,
    prefer_times,
    share_adjacent,
)
from hello_memory.core.scoring import episodic_score, graph_relevance, perceptual_score, semantic_score
from hello_memory.errors import InvalidInputError
from hello_memory.language.evidence_words import evidence_terms
from hello_memory.language.queries import MAX_QUERY_CHARS, conversation_query
from hello_memory.language.text import estimate_tokens, lexical_tokens
from hello_memory.language.timeref import TimeWindow, memory_fit, time_windows
from hello_memory.models import MemoryType, ScoredMemory
from hello_memory.pace import unpaced
from hello_memory.stores.records.base import RecordQuery, ScoreRow
from hello_memory.validation import (
    check_datetime,
    check_id,
    check_importance,
    check_limit,
    check_memory_type,
    check_score,
    check_text,
)

logger = logging.getLogger(__name__)
MIN_CANDIDATES = 50
# The relevance floor judges questions, not conversations or long texts: e5-small's cosines between a
# long English text and a short memory are flat (the memories a dialogue query needs score about
# what an unrelated short question reaches), so a floor there drops them (see BENCHMARKS.md).
FLOOR_MAX_QUERY_TOKENS = 64
_QUESTION = re.compile(r"[?？]")


def _types(core: MemoryCore, memory_types: Sequence[Any] | None) -> list[MemoryType]:
    if memory_types is None:
        return list(core.enabled)
    if isinstance(memory_types, str | MemoryType):
        memory_types = [memory_types]
    if not isinstance(memory_types, list | tuple | set | frozenset):
        raise InvalidInputError("memory_types must be a list of memory type names", field="memory_types")
    return list(dict.fromkeys(check_memory_type(t, core.enabled, "memory_types") for t in memory_types))


def _range(time_range: Any) -> tuple[float | None, float | None] | None:
    if time_range is None:
        return None
    if not isinstance(time_range, list | tuple) or len(time_range) != 2:
        raise InvalidInputError("time_range must be a (start, end) pair; use None for an open end")
    lo, hi = (None if v is None else check_datetime(v, "time_range").timestamp() for v in time_range)
    if lo is not None and hi is not None and lo > hi:
        raise InvalidInputError("time_range start is after its end", field="time_range")
    return lo, hi


@unpaced()  # a read gives the GIL to no writer's loop (hello_memory.pace)
def search(
    core: MemoryCore,
    query: Any,
    *,
    user_id: str,
    memory_types: Sequence[Any] | None,
    limit: Any,
    min_importance: Any,
    min_score: float | None,
    time_range: Any,
    session_id: str | None,
    reference_time: Any = None,
) -> list[ScoredMemory]:
    """See :meth:`MemoryManager.search`."""
    if isinstance(query, str):
        query = check_text(query, "query", max_chars=MAX_QUERY_CHARS)
        judged = estimate_tokens(query) <= FLOOR_MAX_QUERY_TOKENS
    else:
        query = conversation_query(query)
        judged = False  # a conversation is never judged by the relevance floor (see FLOOR_MAX_QUERY_TOKENS)
    limit = check_limit(limit)
    min_importance = check_importance(min_importance, "min_importance")
    if session_id is not None:
        check_id(session_id, "session_id")
    types = _types(core, memory_types)
    window = _range(time_range)
    reference = core.now() if reference_time is None else check_datetime(reference_time, "reference_time")
    score_floor = check_score(min_score)
    min_final = core.settings.min_score if score_floor is None else score_floor
    hits: list[ScoredMemory] = []
    if MemoryType.WORKING in types:
        hits += _working(core, query, user_id, session_id, window)
    vector_types = [
        t for t in types if t in (MemoryType.EPISODIC, MemoryType.SEMANTIC, MemoryType.PERCEPTUAL)
    ]
    light: list[_Light] = []
    if vector_types:
        named_times = time_windows(query, reference) if core.settings.time_weight > 0 else []
        light = _vector_tiers(
            core, query, user_id, vector_types, limit, session_id, window, named_times, judged=judged
        )
    ranked: list[tuple[float, str, ScoredMemory | _Light]] = [
        (h.score, h.item.id, h) for h in hits if h.item.importance >= min_importance and h.score >= min_final
    ]
    ranked += [
        (h.score, h.row.id, h) for h in light if h.row.importance >= min_importance and h.score >= min_final
    ]
    # the floor's survivors first (floor.behind), then by score; ties: the newer memory, then the id
    ranked.sort(key=lambda r: (_behind(r[2]), -r[0], -_created_ts(r[2]), r[1]))
    ranked = ranked[:limit]
    found = core.records.read(user_id, [r[1] for r in ranked if isinstance(r[2], _Light)])
    full = {mid: rec.item for mid, rec in found.items()}
    out = []
    for _, mid, h in ranked:  # build whole items only for the hits returned
        if isinstance(h, ScoredMemory):
            out.append(h)
        elif mid in full:
            out.append(ScoredMemory(item=full[mid], score=h.score, breakdown=h.breakdown))
    # access statistics: queued, written when no writer holds the lock (a read never waits for one)
    core.upkeep.accessed(user_id, [h.item.id for h in out], core.now())
    upkeep.after_read(core)
    return out


def _behind(hit: ScoredMemory | _Light) -> bool:
    return isinstance(hit, _Light) and hit.behind


def _created_ts(hit: ScoredMemory | _Light) -> float:
    return hit.row.created_ts if isinstance(hit, _Light) else hit.item.created_at.timestamp()


@dataclass(frozen=True, slots=True)
class _Light:
    """A scored candidate before its whole record is read."""

    row: ScoreRow
    score: float
    breakdown: dict[str, float]
    behind: bool = False  # admitted without clearing the relevance floor itself: ranks after those that did


def _working(
    core: MemoryCore, query: str, user_id: str, session_id: str | None, window: tuple[Any, Any] | None
) -> list[ScoredMemory]:
    core.upkeep.expire(user_id)  # deleted when the lock is free; left out of this read already
    scope = RecordQuery(types=(MemoryType.WORKING,), session_id=session_id, time_range=window)
    items = [it for it in core.records.scan(user_id, scope) if not core.expired(it)]
    return working.score_working(query, items, now=core.now(), ttl_minutes=core.settings.working_ttl_minutes)


def _vector_tiers(
    core: MemoryCore,
    query: str,
    user_id: str,
    types: Sequence[MemoryType],
    limit: int,
    session_id: str | None,
    window: tuple[float | None, float | None] | None,
    named_times: Sequence[TimeWindow] = (),
    *,
    judged: bool = True,
) -> list[_Light]:
    n = max(limit * core.settings.candidate_multiplier, MIN_CANDIDATES)
    terms = lexical_tokens(query)
    # A query that names a time ("two weeks ago") also draws candidates from that time: the
    # memories it means may share few words with it. The phrase stays in the lexical query: memories
    # say "last weekend" too, and keeping it found slightly more evidence (see BENCHMARKS.md).
    scopes = [window] + ([w] if (w := _named_window(named_times, window)) else [])
    asked = _Asked(user_id, types, n, session_id, scopes)
    qvec = core.embedder.embed([query], kind="query")[0]  # no lock is held: searches embed side by side
    dense = _dense(core, qvec, asked)
    lexical = _lexical(core, terms, asked)
    hops = semantic.entity_hops(core.graph, user_id, query) if MemoryType.SEMANTIC in types else {}
    via_graph = semantic.graph_candidates(core.graph, user_id, hops) if hops else []
    rows = core.records.score_rows(list(set(dense) | set(lexical) | set(via_graph)), user_id)
    rows = {k: r for k, r in rows.items() if r.memory_type in types and _in_scope(r, session_id, window)}
    _fill_dense(core, user_id, qvec, rows, dense)
    rel, kept = _relevance(core, query, qvec, user_id, rows, dense, lexical, hops, named_times, judged)
    admitted = floor.admitted(kept, rows, core.settings.floor_scope)
    now = core.now().timestamp()
    out = []
    for mid in admitted:
        below = floor.behind(kept, mid, core.settings.floor_scope)
        out.append(_score(rows[mid], rel.get(mid, Relevance(0.0, 0.0, 0.0)), _graph(rows[mid], hops), now, below))
    return out


@dataclass(frozen=True, slots=True)
class _Asked:
    """What both candidate sources are asked: ``n`` of the user's memories of ``types`` per scope."""

    user_id: str
    types: Sequence[MemoryType]
    n: int
    session_id: str | None
    scopes: Sequence[tuple[float | None, float | None] | None]


def _dense(core: MemoryCore, qvec: np.ndarray, asked: _Asked) -> dict[str, float]:
    """Raw cosines of the dense candidates of every scope (a memory's best)."""
    dense: dict[str, float] = {}
    for scope in asked.scopes:
        found = core.dense.search(
            asked.user_id, qvec, asked.types, limit=asked.n, session_id=asked.session_id, window=scope
        )
        for mid, score in found.items():
            dense[mid] = max(score, dense.get(mid, -1.0))
    return dense


def _lexical(core: MemoryCore, terms: list[str], asked: _Asked) -> dict[str, float]:
    """Raw BM25 of the lexical candidates of every scope (none when fusion is dense only)."""
    lexical: dict[str, float] = {}
    if core.settings.fusion == "dense":
        return lexical
    types = [t.value for t in asked.types]
    for scope in asked.scopes:
        lexical.update(
            core.records.lexical_search(
                asked.user_id, terms, types=types, limit=asked.n, session_id=asked.session_id, time_range=scope
            )
        )
    return lexical


def _relevance(
    core: MemoryCore,
    query: str,
    qvec: np.ndarray,
    user_id: str,
    rows: dict[str, ScoreRow],
    dense: dict[str, float],
    lexical: dict[str, float],
    hops: dict[str, int],
    named_times: Sequence[TimeWindow],
    judged: bool,
) -> tuple[dict[str, Relevance], set[str]]:
    """Fused relevance of every candidate (how they score), and the survivors of the relevance floor
    (:func:`hello_memory.core.floor.survivors`; everyone when the query is not ``judged``)."""
    settings = core.settings
    rel = fuse(
        {k: dense[k] for k in rows if k in dense},
        {k: lexical[k] for k in rows if k in lexical},
        method=settings.fusion,
        dense_weight=settings.dense_weight,
        floor=dense_floor(core.embedder.name),
    )
    judge = floor.of(settings, core.embedder, query) if judged else None
    evidence: dict[str, float] = {}
    asked: list[str] = []
    standing: dict[str, float] = {}
    if judge is not None:
        asked = evidence_text(query, [w.span for w in named_times])
        evidence, standing = _judged(core, judge, evidence_terms(asked), qvec, user_id, rows, dense, lexical)
        rel = {k: r.judged(evidence.get(k, 0.0), standing.get(k)) for k, r in rel.items()}
    pairs: list[tuple[str, str]] = []
    if settings.adjacency_weight > 0:
        pairs = _question_answer_pairs(core, user_id, rows, rel)
        rel = share_adjacent(rel, pairs, settings.adjacency_weight)
    if settings.participant_weight > 0:
        named = named_participants(query, {p for r in rows.values() for p in r.participants})
        if named:
            rel = prefer_participants(
                rel, {k: r.participants for k, r in rows.items()}, named, settings.participant_weight
            )
    fits = _time_fits(core, user_id, rows, named_times) if named_times else {}
    if named_times:
        rel = prefer_times(rel, fits, settings.time_weight)
    graphed = {k for k, r in rows.items() if hops and _graph(r, hops) > 0}
    kept = floor.survivors(
        rows, dense, evidence, pairs, fits, graphed, judge, standing=standing, names_topic=bool(asked)
    )
    return rel, kept


def _judged(
    core: MemoryCore,
    judge: floor.Judge,
    content: list[str],
    qvec: np.ndarray,
    user_id: str,
    rows: dict[str, ScoreRow],
    dense: dict[str, float],
    lexical: dict[str, float],
) -> tuple[dict[str, float], dict[str, float]]:
    """What the floor judges: the lexical evidence of the query's ``content`` terms held by the lexical
    candidates (under an absolute floor, those the dense side leaves out), and each candidate's
    standing against the query's null (:func:`hello_memory.core.floor.standings`)."""
    asked = [k for k in lexical if k in rows and (judge.nulls or not floor.passes(dense.get(k), 0.0, judge.floor))]
    evidence = core.records.lexical_evidence(user_id, content, asked) if asked and content else {}

    def means(vector: np.ndarray, ids: Sequence[str]) -> dict[str, float]:  # a null's memory means
        return core.dense.similarities(user_id, vector, {k: (rows[k].memory_type, rows[k].modality) for k in ids})

    return evidence, floor.standings(judge, qvec, {k: dense[k] for k in rows if k in dense}, evidence, means)


def _question_answer_pairs(
    core: MemoryCore, user_id: str, rows: dict[str, ScoreRow], rel: dict[str, Relevance]
) -> list[tuple[str, str]]:
    """``(question, answer)`` candidate pairs: a turn and the next one in its session, said by
    different participants, the first asking something (it holds a question mark)."""
    spoken = [mid for mid, r in rows.items() if r.participants and r.session_id and mid in rel]
    if not spoken:
        return []
    before = core.records.previous_in_session(spoken, user_id)
    asked = {q: a for a, q in before.items() if q in rows and rows[q].participants}
    texts = core.records.contents(list(asked), user_id)
    return [
        (q, a)
        for q, a in asked.items()
        if not set(rows[q].participants) & set(rows[a].participants) and _QUESTION.search(texts.get(q, ""))
    ]


def _time_fits(
    core: MemoryCore, user_id: str, rows: dict[str, ScoreRow], named: Sequence[TimeWindow]
) -> dict[str, float]:
    """Each candidate's :func:`memory_fit`, its time taken in the timezone the query was asked in."""
    tz = named[0].start.tzinfo
    texts = core.records.contents(list(rows), user_id)
    return {
        mid: memory_fit(named, datetime.fromtimestamp(row.created_ts, tz), texts.get(mid, ""))
        for mid, row in rows.items()
    }


def _named_window(
    named: Sequence[TimeWindow], window: tuple[float | None, float | None] | None
) -> tuple[float | None, float | None] | None:
    """The span of the named windows (with their slack), inside the caller's ``time_range``."""
    if not named:
        return None
    lo, hi = min(w.bounds[0] for w in named), max(w.bounds[1] for w in named)
    if window is not None:
        lo = lo if window[0] is None else max(lo, window[0])
        hi = hi if window[1] is None else min(hi, window[1])
    return (lo, hi) if lo <= hi else None


def _graph(row: ScoreRow, hops: dict[str, int]) -> float:
    reached = [hops[e] for e in row.entity_ids if e in hops]
    return graph_relevance(min(reached)) if reached else 0.0


def _in_scope(row: ScoreRow, session_id: str | None, window: Any) -> bool:
    if session_id is not None and row.session_id != session_id:
        return False
    if window is None:
        return True
    ts = row.created_ts
    return (window[0] is None or ts >= window[0]) and (window[1] is None or ts <= window[1])


def _fill_dense(
    core: MemoryCore, user_id: str, qvec: np.ndarray, rows: dict[str, ScoreRow], dense: dict[str, float]
) -> None:
    """Exact cosine for candidates found only lexically or through the graph."""
    missing = {mid: (row.memory_type, row.modality) for mid, row in rows.items() if mid not in dense}
    if missing:
        dense.update(core.dense.similarities(user_id, qvec, missing))


def _score(row: ScoreRow, rel: Relevance, graph: float, now_ts: float, below: bool) -> _Light:
    age_h = (now_ts - row.created_ts) / 3600.0
    if row.memory_type == MemoryType.SEMANTIC:
        score, terms = semantic_score(rel.sim, graph, row.importance)
        if row.valid_to_ts is not None:
            score *= semantic.SUPERSEDED_FACTOR
            terms["superseded"] = 1.0
    elif row.memory_type == MemoryType.PERCEPTUAL:
        score, terms = perceptual_score(rel.sim, age_h, row.importance)
    else:
        score, terms = episodic_score(rel.sim, age_h, row.importance)
    relevance = {
        "dense": rel.dense,
        "lexical": rel.lexical,
        "lexical_evidence": rel.evidence,
        **({"standing": rel.standing} if rel.standing is not None else {}),
        "participant": rel.participant,
        "time": rel.time,
        "adjacent": rel.adjacent,
    }
    return _Light(row, score, {**relevance, **terms, "below_floor": float(below)}, below)
