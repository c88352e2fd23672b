"""Every formula of docs/design.md §4 against hand-computed values."""

import math

import pytest

from hello_memory.core import scoring
from hello_memory.core.relevance import fuse


def test_importance_weight_maps_to_0_8_to_1_2():
    assert scoring.importance_weight(0.0) == pytest.approx(0.8)
    assert scoring.importance_weight(0.5) == pytest.approx(1.0)
    assert scoring.importance_weight(1.0) == pytest.approx(1.2)


def test_recency_seed_formula_and_floor():
    assert scoring.recency(0) == pytest.approx(1.0)
    assert scoring.recency(24) == pytest.approx(math.exp(-0.1))  # 0.904837
    assert scoring.recency(240) == pytest.approx(math.exp(-1.0))  # 0.367879
    assert scoring.recency(24 * 1000) == pytest.approx(0.1)  # floor
    assert scoring.recency(-5) == pytest.approx(1.0)  # future timestamps count as now


def test_episodic_score_hand_computed():
    # (0.8*0.9 + 0.2*exp(-0.1)) * (0.8 + 0.4*0.7) = (0.72 + 0.180967) * 1.08 = 0.973045
    score, terms = scoring.episodic_score(0.9, 24, 0.7)
    assert score == pytest.approx(0.973045, abs=1e-6)
    assert terms["recency"] == pytest.approx(0.904837, abs=1e-6)
    assert terms["importance_weight"] == pytest.approx(1.08)


def test_semantic_score_hand_computed():
    # (0.7*0.6 + 0.3*0.5) * (0.8 + 0.4*0.2) = 0.57 * 0.88 = 0.5016
    score, terms = scoring.semantic_score(0.6, 0.5, 0.2)
    assert score == pytest.approx(0.5016)
    assert terms["graph"] == 0.5


def test_perceptual_score_equals_episodic_shape():
    # (0.8*0.5 + 0.2*0.1) * 1.2 = 0.42 * 1.2 = 0.504 (age 1000 days -> recency floor 0.1)
    score, _ = scoring.perceptual_score(0.5, 24 * 1000, 1.0)
    assert score == pytest.approx(0.504)


def test_working_score_with_and_without_lexical():
    # lexical > 0: base = 0.7*0.4 + 0.3*0.5 = 0.43; * decay 0.5 * w(0.5)=1.0 -> 0.215
    score, terms = scoring.working_score(0.4, 0.5, 0.5, 0.5)
    assert score == pytest.approx(0.215)
    assert terms["base"] == pytest.approx(0.43)
    # lexical == 0: base = keyword
    score, terms = scoring.working_score(0.0, 0.5, 1.0, 0.0)
    assert score == pytest.approx(0.5 * 0.8)


def test_working_decay_floor():
    assert scoring.working_decay(0, 60) == pytest.approx(1.0)
    assert scoring.working_decay(60, 60) == pytest.approx(math.exp(-1))
    assert scoring.working_decay(10_000, 60) == pytest.approx(0.1)


def test_graph_relevance_by_hops():
    assert [scoring.graph_relevance(h) for h in (0, 1, 2)] == pytest.approx([1.0, 0.5, 1 / 3])


def test_fuse_dense_reproduces_raw_cosine():
    rel = fuse({"a": 0.8, "b": -0.2}, {"a": 3.0}, method="dense", dense_weight=0.5, floor=0.7)
    assert rel["a"].sim == pytest.approx(0.8)
    assert rel["b"].sim == 0.0


def test_fuse_convex_hand_computed():
    # lifted cosines: a (0.85-0.7)/0.3 = 0.5, b (no dense hit) 0 -> min-max over candidates: a 1, b 0,
    # times confidence min(1, 0.5/0.5) = 1; lex' = 2/4 and 4/4
    # a: 0.6*1.0 + 0.4*0.5 = 0.8;  b: 0.6*0 + 0.4*1.0 = 0.4
    rel = fuse({"a": 0.85}, {"a": 2.0, "b": 4.0}, method="convex", dense_weight=0.6, floor=0.7)
    assert rel["a"].sim == pytest.approx(0.8)
    assert rel["b"].sim == pytest.approx(0.4)
    assert (rel["a"].dense, rel["a"].lexical) == (0.85, 0.5)  # the breakdown keeps the raw cosine


def test_fuse_convex_trusts_dense_less_when_no_candidate_is_a_confident_match():
    # best lifted cosine (0.76-0.7)/0.3 = 0.2 < 0.5: the dense side is scaled by 0.2/0.5 = 0.4
    rel = fuse({"a": 0.76, "b": 0.70}, {}, method="convex", dense_weight=0.6, floor=0.7)
    assert rel["a"].sim == pytest.approx(0.6 * 0.4)
    assert rel["b"].sim == 0.0


def test_fuse_convex_equal_cosines_keep_their_absolute_value():
    rel = fuse({"a": 0.85, "b": 0.85}, {}, method="convex", dense_weight=0.6, floor=0.7)
    assert rel["a"].sim == rel["b"].sim == pytest.approx(0.6 * 0.5)


def test_fuse_rrf_top_in_both_is_one():
    rel = fuse({"a": 0.9, "b": 0.1}, {"a": 5.0, "b": 1.0}, method="rrf", dense_weight=0.5, floor=0.0)
    assert rel["a"].sim == pytest.approx(1.0)
    assert rel["b"].sim == pytest.approx((2 / 62) / (2 / 61))


def test_named_participants_whole_words_ignore_case_cjk_substrings():
    from hello_memory.core.relevance import named_participants

    names = ["Caroline", "Carol", "Al", "小明", "李"]
    assert named_participants("what did CAROLINE's sister say?", names) == {"Caroline"}
    assert named_participants("Al and Carol met", names) == {"Al", "Carol"}
    assert named_participants("Alice met Carolina", names) == frozenset()
    assert named_participants("小明去哪了", names) == {"小明"}
    assert named_participants("anything", ["", "  "]) == frozenset()


def test_prefer_participants_keeps_sim_in_unit_range():
    from hello_memory.core.relevance import Relevance, prefer_participants

    rel = {"a": Relevance(1.0, 0.9, 1.0), "b": Relevance(0.0, 0.7, 0.0), "c": Relevance(0.3, 0.8, 0.2)}
    out = prefer_participants(rel, {"a": ("X",), "b": ("X", "Y")}, frozenset({"X"}), 0.25)
    assert (out["a"].sim, out["b"].sim, out["c"].sim) == (1.0, 0.25, pytest.approx(0.225))
    assert (out["a"].participant, out["c"].participant) == (1.0, 0.0)
    assert prefer_participants(rel, {"a": ("X",)}, frozenset(), 0.25) == rel


def test_relevance_judged_keeps_every_other_field():
    import dataclasses

    from hello_memory.core.relevance import Relevance

    values = {f.name: 0.1 * (i + 1) for i, f in enumerate(dataclasses.fields(Relevance))}
    r = Relevance(**values)
    assert r.judged(0.7, None) == dataclasses.replace(r, evidence=0.7, standing=None)
    assert r.judged(0.0, 2.5) == dataclasses.replace(r, evidence=0.0, standing=2.5)
