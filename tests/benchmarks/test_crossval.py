"""Cross-validation, bootstrap intervals and the no-answer rate, on synthetic rankings (no model)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import pytest

from benchmarks.crossval import Evaluator, Setting, choose, make_folds, parse_sweep, run_crossval
from benchmarks.datasets.base import Doc, Query, RetrievalTask
from benchmarks.evaluation import NO_ANSWER_LEVEL, evaluate
from benchmarks.report import intervals, to_json, to_markdown
from benchmarks.runner import SystemRun
from benchmarks.stats import bootstrap_interval, estimate, scheme


def _task(corpora: int = 4, per: int = 5, unanswerable: int = 1) -> RetrievalTask:
    docs = {f"c{c}": [Doc(f"c{c}-d{i}", f"doc {i}") for i in range(3)] for c in range(corpora)}
    queries = []
    for c in range(corpora):
        queries += [Query(f"c{c}-q{i}", f"q{i}", f"c{c}", frozenset({f"c{c}-d0"})) for i in range(per)]
        queries += [Query(f"c{c}-u{i}", "?", f"c{c}", frozenset(), "adversarial", answerable=False)
                    for i in range(unanswerable)]  # fmt: skip
    return RetrievalTask("synthetic", docs, queries, unit="doc")


def _runner(task: RetrievalTask, good: dict[str, Any], calls: list[dict[str, Any]]) -> Any:
    """Rankings that put the gold first only for the settings in ``good`` (and, in corpus c3, only
    for ``w=2``); the floor ``f`` empties the unanswerable rankings at f >= 1 and the answerable
    ones of corpus c0 at f >= 2."""

    def run(config: dict[str, Any]) -> dict[str, list[str]]:
        calls.append(config)
        out = {}
        for q in task.queries:
            hit = all(config.get(k) == v for k, v in good.items())
            if q.corpus_id == "c3":
                hit = config.get("w") == 2
            ranked = [f"{q.corpus_id}-d0", f"{q.corpus_id}-d1"] if hit else [f"{q.corpus_id}-d1"]
            f = config.get("f", 0)
            if (not q.answerable and f >= 1) or (q.corpus_id == "c0" and f >= 2):
                ranked = []
            out[q.qid] = ranked
        return out

    return run


def test_folds_split_by_corpus_or_query_and_cover_every_query_once():
    task = _task()
    folds, by = make_folds(task, 3)
    assert by == "corpus" and len(folds) == 3
    assert sorted(q for f in folds for q in f) == sorted(q.qid for q in task.queries)
    corpus_of = {q.qid: q.corpus_id for q in task.queries}
    assert all(len({corpus_of[q] for q in f} & {corpus_of[q] for q in g}) == 0
               for i, f in enumerate(folds) for g in folds[i + 1:])  # fmt: skip
    assert len(make_folds(task, 10)[0]) == 4  # at most one fold per corpus
    folds, by = make_folds(task, 5, "query")
    assert by == "query" and len(folds) == 5
    one = RetrievalTask("pooled", {"p": []}, [Query(f"q{i}", "x", "p", frozenset({"d"})) for i in range(6)])
    assert make_folds(one, 3)[1] == "query"  # a single corpus is split by question
    with pytest.raises(ValueError, match="at least 2 folds"):
        make_folds(RetrievalTask("t", {"p": []}, [Query("q", "x", "p", frozenset({"d"}))]), 2)


def test_choose_takes_the_best_value_on_the_training_queries_and_keeps_ties_at_the_default():
    task = _task()
    calls: list[dict[str, Any]] = []
    ev = Evaluator(task, _runner(task, {"w": 2}, calls))
    sweep = [Setting("w", (0, 1, 2)), Setting("u", (0, 1))]  # u changes nothing: stays at its default
    train = {q.qid for q in task.queries}
    assert choose(ev, sweep, {"w": 1, "u": 1}, train) == {"w": 2, "u": 1}
    n = len(calls)
    choose(ev, sweep, {"w": 1, "u": 1}, train)
    assert len(calls) == n  # every configuration runs once


def test_the_floor_is_chosen_for_no_answers_within_one_point_of_the_headline():
    task = _task()
    ev = Evaluator(task, _runner(task, {"w": 2}, []))
    sweep = [Setting("w", (0, 1, 2)), Setting("f", (0, 1, 2), off=0, objective="no_answer")]
    everyone = {q.qid for q in task.queries}
    # f=2 would answer nothing at all, but it costs corpus c0's recall: f=1 is chosen
    assert choose(ev, sweep, {"w": 0, "f": 0}, everyone) == {"w": 2, "f": 1}


def test_two_floor_settings_together_cost_at_most_one_point():
    """Each step alone costs 0.8 points against the one before; together they cost 1.6: the second
    is refused, because the cost counts against the floor switched off."""
    task = RetrievalTask("t", {"c": []}, [Query(f"q{i}", "x", "c", frozenset({"d"})) for i in range(125)]
                         + [Query(f"u{i}", "?", "c", frozenset(), answerable=False) for i in range(2)])  # fmt: skip

    def run(config: dict[str, Any]) -> dict[str, list[str]]:
        steps = (config["a"] > 0) + (config["a"] > 0 and config["b"] > 0)  # one query lost per step
        out = {q.qid: (["d"] if int(q.qid[1:]) >= steps else []) for q in task.queries if q.answerable}
        out.update({f"u{i}": ([] if steps > i else ["d"]) for i in range(2)})  # one more answered per step
        return out

    sweep = [Setting("a", (0, 1), off=0, objective="no_answer"), Setting("b", (0, 1), objective="no_answer")]
    assert choose(Evaluator(task, run), sweep, {"a": 0, "b": 0}, {q.qid for q in task.queries}) == {"a": 1, "b": 0}


def test_crossvalidation_reports_held_out_scores_and_feature_effects():
    task = _task()
    calls: list[dict[str, Any]] = []
    sweep = [Setting("w", (0, 1, 2), off=0), Setting("f", (0, 1), off=0, objective="no_answer")]
    cv = run_crossval(task, _runner(task, {"w": 2}, calls), {"w": 0, "f": 0}, k=4, sweep=sweep)
    assert cv.fold_by == "corpus" and len(cv.folds) == 4
    assert all(f.chosen == {"w": 2, "f": 1} for f in cv.folds)
    assert cv.held_out["headline"].mean == 1.0 and cv.held_out["no_answer"].mean == 1.0
    assert cv.default["headline"].mean == 0.0 and cv.default["no_answer"].mean == 0.0  # in-sample defaults
    effect = cv.effects["w"]["headline"]
    assert effect["delta"].mean == 1.0 and effect["folds_helped"] == 4 and effect["folds_hurt"] == 0
    assert cv.effects["f"]["no_answer"]["delta"].mean == 1.0
    assert cv.effects["w"]["chosen"] == [2, 2, 2, 2]


def test_a_setting_good_on_training_folds_only_shows_up_held_out():
    """Corpus c3 needs w=2; the others need w=1. Held out, c3's fold is scored with w=1 (chosen on
    the other three), so the held-out mean is below the in-sample best."""
    task = _task()
    cv = run_crossval(task, _runner(task, {"w": 1}, []), {"w": 0}, k=4, sweep=[Setting("w", (0, 1, 2))])
    held = {f.fold: f for f in cv.folds}
    assert sorted(f.chosen["w"] for f in held.values()) == [1, 1, 1, 1]
    assert cv.held_out["headline"].mean == pytest.approx(0.75)
    assert cv.in_sample_best_headline == pytest.approx(0.75)


def test_parse_sweep():
    (s,) = parse_sweep(["floor_cosine=0,0.8"])
    assert s.values == (0, 0.8) and s.objective == "no_answer" and s.off == 0.0
    assert parse_sweep(["new_thing=a,b"])[0].values == ("a", "b")
    with pytest.raises(ValueError):
        parse_sweep(["dense_weight"])


def test_bootstrap_is_reproducible_and_resamples_corpora_when_there_are_enough():
    values = [1.0] * 10 + [0.0] * 10
    assert bootstrap_interval(values, seed=3) == bootstrap_interval(values, seed=3)
    lo, hi = bootstrap_interval(values)
    assert lo < 0.5 < hi
    assert scheme(["a", "b"] * 5) == "queries"  # two users: too few to resample
    groups = [f"c{i // 4}" for i in range(20)]
    assert scheme(groups) == "corpora"
    assert scheme([f"q{i}" for i in range(20)]) == "queries"  # one query per corpus: the same thing
    # all the variance is between corpora: clusters give a wider interval than queries
    clustered = [1.0 if g in ("c0", "c1") else 0.0 for g in groups]
    assert (bootstrap_interval(clustered, groups)[1] - bootstrap_interval(clustered, groups)[0]
            > bootstrap_interval(clustered)[1] - bootstrap_interval(clustered)[0])  # fmt: skip
    paired = estimate([1.0, 1.0, 0.0], baseline=[0.0, 1.0, 0.0])
    assert paired.mean == pytest.approx(1 / 3) and paired.n == 3


def test_no_answer_rate_and_intervals_reach_json_and_markdown():
    task = _task(corpora=5)
    rankings = {q.qid: ([f"{q.corpus_id}-d0"] if q.answerable else []) for q in task.queries}
    rankings["c0-u0"] = ["c0-d1"]  # one unanswerable question answered anyway
    rankings["c1-q0"] = []  # one answerable question with nothing returned
    run = SystemRun("sys", {}, rankings, reports=evaluate(task, rankings, (1, 10)))
    unanswerable = next(r for r in run.reports if r.level == NO_ANSWER_LEVEL)
    assert unanswerable.n_queries == 5 and unanswerable.overall["no_answer"] == pytest.approx(0.8)
    assert run.reports[0].overall["empty"] == pytest.approx(1 / 25)
    est = intervals(task, run)
    assert est["no_answer"].mean == pytest.approx(0.8) and est["no_answer"].scheme == "queries"  # 1 per corpus
    assert est["recall@10"].scheme == "corpora" and est["recall@10"].mean == pytest.approx(24 / 25)
    data = to_json(task, [run], {}, {})
    assert data["systems"]["sys"]["intervals"]["no_answer"]["mean"] == 0.8
    assert "per_query" not in json.dumps(data)
    md = to_markdown(task, [run], {})
    assert "no-answer rate (unanswerable)" in md and "in-sample" in md and "0.800 [" in md


def test_cli_folds_runs_hello_memory_once_per_configuration(tmp_path: Path, monkeypatch):
    """End to end on a tiny LoCoMo file: one index, a configuration per swept value, the report."""
    from benchmarks import crossval_report
    from benchmarks.retrieval import main
    from tests.benchmarks.test_retrieval_harness import _locomo_file

    class Tiny:  # the HelloMemorySystem surface --folds uses, without a model
        configured: ClassVar[list[dict[str, Any]]] = []

        def __init__(self) -> None:
            self.indexed: list[str] = []

        def config(self) -> dict[str, Any]:
            return {"tiny": True}

        def index(self, corpus_id: str, docs: list[Doc]) -> None:
            self.indexed.append(corpus_id)

        def configure(self, config: dict[str, Any]) -> None:
            Tiny.configured.append(config)

        def search(self, corpus_id: str, query: Query, k: int) -> list[str]:
            return ["D1:1", "D1:2"] if query.answerable else []

        def close(self) -> None:
            pass

    monkeypatch.setattr(crossval_report, "build_system", lambda *a, **k: Tiny())
    monkeypatch.setattr(crossval_report, "setting_defaults", lambda system, sweep: {"time_weight": 0.3})
    out, md = tmp_path / "cv.json", tmp_path / "cv.md"
    code = main(["--dataset", "locomo", "--data", str(_locomo_file(tmp_path)), "--system", "hello_memory",
                 "--folds", "2", "--fold-by", "query", "--sweep", "time_weight=0,0.3",
                 "--json", str(out), "--markdown", str(md)])  # fmt: skip
    assert code == 0
    data = json.loads(out.read_text())
    assert data["fold_by"] == "query" and len(data["folds"]) == 2
    assert data["held_out"]["no_answer"]["mean"] == 1.0  # the adversarial question got nothing
    assert {json.dumps(c, sort_keys=True) for c in Tiny.configured} == {
        json.dumps({"time_weight": v}) for v in (0, 0.3)
    }
    assert "Cross-validation" in md.read_text() and "time_weight" in md.read_text()
    scores = json.loads((tmp_path / "cv.scores.json").read_text())  # per-query scores of every config
    assert len(scores["configs"]) == 2 and set(scores["configs"][0]["no_answer"]) == {"conv-1/4"}


def test_off_topic_questions_are_asked_of_every_corpus():
    from benchmarks.datasets.offtopic import QUESTIONS, with_off_topic

    task = with_off_topic(_task(corpora=3, unanswerable=0))
    off = [q for q in task.queries if q.category == "off-topic"]
    assert len(off) == 3 * len(QUESTIONS) and not any(q.answerable or q.gold for q in off)
    assert {q.corpus_id for q in off} == {"c0", "c1", "c2"} and task.notes


def test_metric_chooses_what_settings_are_chosen_and_reported_by():
    """``--metric``: w=1 finds every piece of gold lower down, w=0 only the first one at rank 1."""
    docs = {f"c{c}": [Doc(f"c{c}-d{i}", f"doc {i}") for i in range(3)] for c in range(4)}
    queries = [Query(f"c{c}-q", "q", f"c{c}", frozenset({f"c{c}-d0", f"c{c}-d1"})) for c in range(4)]
    task = RetrievalTask("synthetic", docs, queries, unit="doc")

    def run(config: dict[str, Any]) -> dict[str, list[str]]:
        return {
            q.qid: [f"{q.corpus_id}-d{i}" for i in ((2, 0, 1) if config["w"] else (0, 2))] for q in task.queries
        }

    sweep = [Setting("w", (0, 1), off=0)]
    by_hit = run_crossval(task, run, {"w": 0}, k=4, sweep=sweep, metric="hit@1")
    by_recall = run_crossval(task, run, {"w": 0}, k=4, sweep=sweep, metric="recall@10")
    assert by_hit.metric == "hit@1" and all(f.chosen == {"w": 0} for f in by_hit.folds)
    assert by_recall.metric == "recall@10" and all(f.chosen == {"w": 1} for f in by_recall.folds)
    assert by_recall.held_out["headline"].mean == 1.0
