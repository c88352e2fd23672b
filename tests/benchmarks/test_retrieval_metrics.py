"""Retrieval metrics and evaluation levels against hand-computed values."""

from __future__ import annotations

import math

import pytest

from benchmarks import metrics
from benchmarks.chunking import fixed_chunks, overlaps, parse_span_id
from benchmarks.datasets.base import Doc, Match, Query, RetrievalTask
from benchmarks.evaluation import evaluate, session_ranking, span_matches

# ---------------------------------------------------------------- metrics, hand-computed


def test_recall_hit_all_on_partial_ranking():
    m = metrics.id_matches(["a", "x", "b", "y"], {"a", "b", "c"})
    assert metrics.recall_at_k(m, 3, 1) == pytest.approx(1 / 3)
    assert metrics.recall_at_k(m, 3, 2) == pytest.approx(1 / 3)
    assert metrics.recall_at_k(m, 3, 5) == pytest.approx(2 / 3)
    assert metrics.hit_at_k(m, 1) == 1.0
    assert metrics.all_at_k(m, 3, 20) == 0.0
    assert metrics.all_at_k(metrics.id_matches(["b", "a"], {"a", "b"}), 2, 2) == 1.0
    assert metrics.all_at_k(metrics.id_matches(["b", "a"], {"a", "b"}), 2, 1) == 0.0


def test_ndcg_binary_log2():
    m = metrics.id_matches(["a", "x", "b", "y"], {"a", "b", "c"})
    # DCG = 1/log2(2) + 1/log2(4) = 1.5; IDCG(3 gold) = 1 + 1/log2(3) + 1/log2(4)
    assert metrics.ndcg_at_k(m, 3, 5) == pytest.approx(1.5 / (1.5 + 1 / math.log2(3)))
    # one gold at rank 3: DCG = 1/log2(4) = 0.5, IDCG = 1
    assert metrics.ndcg_at_k(metrics.id_matches(["x", "y", "a"], {"a"}), 1, 3) == pytest.approx(0.5)
    assert metrics.ndcg_at_k(metrics.id_matches(["x", "y", "a"], {"a"}), 1, 2) == 0.0
    assert metrics.ndcg_at_k(metrics.id_matches(["a", "b"], {"a", "b"}), 2, 10) == pytest.approx(1.0)


def test_mrr_and_empty():
    assert metrics.reciprocal_rank(metrics.id_matches(["x", "y", "a"], {"a"})) == pytest.approx(1 / 3)
    assert metrics.reciprocal_rank(metrics.id_matches(["x"], {"a"})) == 0.0
    assert metrics.reciprocal_rank([]) == 0.0
    assert metrics.recall_at_k([], 0, 5) == 0.0
    assert metrics.hit_at_k([], 5) == 0.0


def test_query_metrics_keys_and_mean():
    row = metrics.query_metrics(metrics.id_matches(["a"], {"a", "b"}), 2, (1, 5))
    assert row["recall@1"] == 0.5 and row["hit@5"] == 1.0 and row["all@5"] == 0.0 and row["mrr"] == 1.0
    mean = metrics.mean_metrics([{"x": 1.0}, {"x": 0.0}, {"x": 0.5}])
    assert mean == {"x": 0.5}


def test_span_matches_do_not_inflate_ndcg():
    gold = frozenset({"g#100-200"})
    ranked = ["g#0-150", "g#150-300", "h#100-200", "g#200-300"]
    m = span_matches(ranked, gold)
    assert [bool(x) for x in m] == [True, True, False, False]  # [200,300) touches, does not overlap
    assert metrics.ndcg_at_k(m, 1, 10) == pytest.approx(1.0)  # second chunk matches nothing new
    assert metrics.recall_at_k(m, 1, 1) == 1.0


def test_spans_and_chunks():
    assert parse_span_id("a#b#3-10") == ("a#b", 3, 10)
    assert parse_span_id("D1:3") is None
    assert overlaps(("d", 0, 10), ("d", 9, 20)) and not overlaps(("d", 0, 10), ("d", 10, 20))
    assert not overlaps(("d", 0, 10), ("e", 0, 10))
    chunks = fixed_chunks([Doc("d", "abcdefg")], 3)
    assert [c.doc_id for c in chunks] == ["d#0-3", "d#3-6", "d#6-7"]
    assert "".join(c.text for c in chunks) == "abcdefg"


# ---------------------------------------------------------------- evaluation levels


def _task(queries: list[Query], docs: list[Doc], match: Match = Match.ID) -> RetrievalTask:
    return RetrievalTask("t", {"c": docs}, queries, match=match, unit="turn")


def test_evaluate_per_category_and_session_level():
    docs = [
        Doc("s1:0", "a", session_id="s1"),
        Doc("s1:2", "b", session_id="s1"),
        Doc("s2:0", "c", session_id="s2"),
    ]
    queries = [
        Query("q1", "?", "c", frozenset({"s1:2"}), "x", gold_sessions=frozenset({"s1"})),
        Query("q2", "?", "c", frozenset({"s2:0"}), "y", gold_sessions=frozenset({"s2"})),
        Query("q3", "?", "c", frozenset(), "y", gold_sessions=frozenset({"s2"})),  # session gold only
    ]
    rankings = {"q1": ["s1:0", "s1:2", "s2:0"], "q2": ["s1:0", "s1:2", "s2:0"], "q3": ["s2:0"]}
    unit, session = evaluate(_task(queries, docs), rankings, ks=(1, 2))
    assert unit.level == "turn" and unit.n_queries == 2
    assert unit.overall["hit@1"] == 0.0 and unit.overall["hit@2"] == 0.5
    assert unit.by_category["x"]["recall@2"] == 1.0 and unit.category_counts == {"x": 1, "y": 1}
    assert session.level == "session" and session.n_queries == 3
    assert session.overall["hit@1"] == pytest.approx(2 / 3)  # q1 s1 first, q2 s1 first, q3 s2 first
    assert session.overall["hit@2"] == 1.0
    assert session_ranking(["s1:0", "s1:2", "s2:0"], {"s1:0": "s1", "s1:2": "s1", "s2:0": "s2"}) == [
        "s1",
        "s2",
    ]
