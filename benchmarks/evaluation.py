"""Turn a system's rankings into per-level, per-category metric reports.

Levels: the task's own unit (``"turn"``, ``"memory"``, ``"span"``) for every query with gold, and
``"session"`` when queries carry session-level gold (LongMemEval): the turn ranking is mapped to
sessions and deduplicated in rank order, so session@k looks at the first k distinct sessions.
Every unit-level query also records ``empty`` (1.0 when nothing was returned for it).

Level ``"unanswerable"`` (:data:`NO_ANSWER_LEVEL`) holds the questions whose answer is not in the
memory (LongMemEval abstention, LoCoMo adversarial): ``no_answer`` is 1.0 when the system returned
nothing — the right answer, higher is better — and ``results`` how many it returned.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from benchmarks.chunking import overlaps, parse_span_id
from benchmarks.datasets.base import Match, Query, RetrievalTask
from benchmarks.metrics import EMPTY, id_matches, mean_metrics, query_metrics

KS = (1, 5, 10, 20)


@dataclass(frozen=True, slots=True)
class LevelReport:
    """Mean metrics at one level, overall and per category."""

    level: str
    n_queries: int
    overall: dict[str, float]
    by_category: dict[str, dict[str, float]] = field(default_factory=dict)
    category_counts: dict[str, int] = field(default_factory=dict)
    per_query: dict[str, dict[str, float]] = field(default_factory=dict, repr=False)


def span_matches(ranked: Sequence[str], gold: frozenset[str]) -> list[frozenset[str]]:
    """Matches for span relevance: the gold spans each retrieved chunk overlaps."""
    spans = {g: parse_span_id(g) for g in gold}
    out: list[frozenset[str]] = []
    for r in ranked:
        chunk = parse_span_id(r)
        out.append(
            frozenset(g for g, s in spans.items() if chunk and s and overlaps(chunk, s)) if chunk else EMPTY
        )
    return out


def session_ranking(ranked: Sequence[str], session_of: Mapping[str, str]) -> list[str]:
    """Distinct sessions of ``ranked`` docs in order of their first appearance."""
    out: list[str] = []
    for doc_id in ranked:
        sid = session_of.get(doc_id)
        if sid is not None and sid not in out:
            out.append(sid)
    return out


def _aggregate(level: str, rows: list[tuple[Query, dict[str, float]]]) -> LevelReport:
    cats = sorted({q.category for q, _ in rows if q.category is not None})
    by_cat = {c: [m for q, m in rows if q.category == c] for c in cats}
    return LevelReport(
        level,
        len(rows),
        mean_metrics([m for _, m in rows]),
        {c: mean_metrics(ms) for c, ms in by_cat.items()},
        {c: len(ms) for c, ms in by_cat.items()},
        {q.qid: m for q, m in rows},
    )


NO_ANSWER_LEVEL = "unanswerable"


def no_answer_metrics(ranked: Sequence[str]) -> dict[str, float]:
    """``no_answer`` (1.0 when ``ranked`` is empty) and ``results`` (its length)."""
    return {"no_answer": 0.0 if ranked else 1.0, "results": float(len(ranked))}


def evaluate(
    task: RetrievalTask, rankings: Mapping[str, Sequence[str]], ks: Sequence[int] = KS
) -> list[LevelReport]:
    """Reports for every level of ``task`` from ``rankings`` (query id -> ranked ids).

    Queries missing from ``rankings`` count as empty rankings (all metrics 0).
    """
    judge = span_matches if task.match is Match.SPAN else id_matches
    unit_rows = []
    for q in task.queries:
        if q.gold:
            ranked = rankings.get(q.qid, [])
            unit_rows.append((q, {**query_metrics(judge(ranked, q.gold), len(q.gold), ks), "empty": float(not ranked)}))
    reports = [_aggregate(task.unit, unit_rows)]
    if task.has_sessions:
        session_of = {d.doc_id: d.session_id for docs in task.corpora.values() for d in docs if d.session_id}
        rows = []
        for q in task.queries:
            if q.gold_sessions:
                ranked = session_ranking(rankings.get(q.qid, []), session_of)
                rows.append((q, query_metrics(id_matches(ranked, q.gold_sessions), len(q.gold_sessions), ks)))
        reports.append(_aggregate("session", rows))
    unanswerable = [(q, no_answer_metrics(rankings.get(q.qid, []))) for q in task.queries if not q.answerable]
    if unanswerable:
        reports.append(_aggregate(NO_ANSWER_LEVEL, unanswerable))
    return reports
