"""Cross-validated settings: choose every swept setting on K−1 folds, report the held-out fold.

``python -m benchmarks.retrieval --folds K --system hello_memory ...`` splits a task's queries into
K folds by corpus (LoCoMo conversations, MADial users, LongMemEval_S questions) or, for a task with
one corpus (the pooled LongMemEval), by question. For each fold, the settings in :data:`SWEEP` are
chosen on the other folds' queries by one pass of coordinate ascent from the defaults (each setting
in turn takes the value that scores best with the ones chosen before it; a value replaces the
current one only if it scores strictly better), and the fold's own queries are scored with them.
Every query is held out exactly once; the pooled held-out scores are the cross-validated estimate.

Selection objective: the task's headline metric on answerable queries, or the one ``--metric`` names
(``recall@10``; ``session:all@10`` for a session-level metric of LongMemEval). The relevance floor
(``objective="no_answer"``) is chosen differently: the value with the highest no-answer rate on the
training folds' unanswerable queries among those whose headline metric is within
:data:`MAX_FLOOR_COST` of the floor switched off altogether (every ``no_answer`` setting at its
``off`` value; on a task without unanswerable queries, by the headline metric alone).

For every setting that switches a feature off at one value (``off``), the report also gives the
held-out effect of the feature: each fold's chosen configuration against the same configuration
with the feature off, on that fold's queries (paired; interval as :mod:`benchmarks.stats`).

One index serves every configuration: query-time settings are swapped in place
(``HelloMemorySystem.configure``); an index-time one re-opens the stores, which rebuild their
lexical documents without embedding anything again.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmarks.datasets.base import RetrievalTask
from benchmarks.evaluation import KS, NO_ANSWER_LEVEL, evaluate
from benchmarks.report import headline_metric
from benchmarks.stats import Estimate, estimate

logger = logging.getLogger(__name__)

MAX_FLOOR_COST = 0.01  # the floor may cost at most one point of the headline metric


@dataclass(frozen=True, slots=True)
class Setting:
    """One swept setting: its values, the value that turns its feature off, and how it is chosen."""

    name: str
    values: tuple[Any, ...]
    off: Any = None
    objective: str = "headline"  # or "no_answer" (the relevance floor)


SWEEP: tuple[Setting, ...] = (
    Setting("lexical_context_window", (0, 1, 2, 3), off=0),
    Setting("dense_weight", (0.4, 0.5, 0.6, 0.7, 0.8)),
    Setting("candidate_multiplier", (3, 5, 10)),
    Setting("participant_weight", (0.0, 0.1, 0.2), off=0.0),
    Setting("time_weight", (0.0, 0.15, 0.3, 0.45), off=0.0),
    Setting("adjacency_weight", (0.0, 0.5, 0.9), off=0.0),
    Setting("floor_scope", ("question", "memory"), off="memory"),
    Setting("floor_cosine", (0.0, 0.78, 0.8, 0.82, 0.84), off=0.0, objective="no_answer"),
    Setting("floor_lexical", (0.2, 0.35, 0.5), objective="no_answer"),
)

Config = tuple[tuple[str, Any], ...]
Scores = dict[str, float]  # query id -> the metric


def parse_sweep(specs: Sequence[str]) -> tuple[Setting, ...]:
    """``NAME=v1,v2,...`` options (``--sweep``) as settings; a known name keeps its ``off`` and objective.

    Example:
        >>> parse_sweep(["time_weight=0,0.3"])
        (Setting(name='time_weight', values=(0, 0.3), off=0.0, objective='headline'),)
    """
    known = {s.name: s for s in SWEEP}
    out = []
    for spec in specs:
        name, sep, values = spec.partition("=")
        if not sep or not values:
            raise ValueError(f"--sweep takes NAME=v1,v2,..., not {spec!r}")
        parsed = tuple(_number(v) for v in values.split(","))
        base = known.get(name.strip(), Setting(name.strip(), ()))
        out.append(Setting(base.name, parsed, base.off, base.objective))
    return tuple(out)


def _number(text: str) -> Any:
    text = text.strip()
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def make_folds(task: RetrievalTask, k: int, by: str | None = None, seed: int = 0) -> tuple[list[list[str]], str]:
    """Query ids per fold, and what was split: ``"corpus"`` (whole corpora) or ``"query"``.

    ``by=None`` splits by corpus when at least two corpora hold queries (``k`` is then at most their
    number), else by query. Groups are shuffled with ``seed`` and dealt round-robin.
    """
    corpora = sorted({q.corpus_id for q in task.queries})
    by = by or ("corpus" if len(corpora) >= 2 else "query")
    if by not in ("corpus", "query"):
        raise ValueError(f"fold by 'corpus' or 'query', not {by!r}")
    groups = corpora if by == "corpus" else sorted(q.qid for q in task.queries)
    k = min(k, len(groups))
    if k < 2:
        raise ValueError(f"cross-validation needs at least 2 folds; {task.name} has {len(groups)} {by} group(s)")
    random.Random(seed).shuffle(groups)
    fold_of = {g: i % k for i, g in enumerate(groups)}
    folds: list[list[str]] = [[] for _ in range(k)]
    for q in task.queries:
        folds[fold_of[q.corpus_id if by == "corpus" else q.qid]].append(q.qid)
    return folds, by


@dataclass
class Evaluator:
    """Per-query scores of configurations of one indexed system (each configuration run once).

    ``run(config)`` must return every query's ranking under that configuration.
    """

    task: RetrievalTask
    run: Callable[[dict[str, Any]], Mapping[str, Sequence[str]]]
    ks: tuple[int, ...] = KS
    metric: str | None = None  # ``NAME`` or ``LEVEL:NAME``; default: the task's headline metric
    cache: dict[Config, tuple[Scores, Scores]] = field(default_factory=dict)
    seconds: float = 0.0

    def scores(self, config: Mapping[str, Any]) -> tuple[Scores, Scores]:
        """``(headline per answerable query, no_answer per unanswerable query)``."""
        key: Config = tuple(sorted(config.items()))
        if key not in self.cache:
            start = time.perf_counter()
            reports = evaluate(self.task, self.run(dict(key)), self.ks)
            level_name, metric = metric_level(self.metric or headline_metric(self.task))
            unit = next((r for r in reports if r.level == level_name), reports[0]) if level_name else reports[0]
            head = {q: m[metric] for q, m in unit.per_query.items()}
            level = next((r for r in reports if r.level == NO_ANSWER_LEVEL), None)
            none = {q: m["no_answer"] for q, m in level.per_query.items()} if level else {}
            self.cache[key] = (head, none)
            self.seconds += time.perf_counter() - start
            logger.info("config %s: %s %.4f (%.0f s)", dict(key), metric, _mean(head.values()),
                        time.perf_counter() - start)  # fmt: skip
        return self.cache[key]


def metric_level(spec: str) -> tuple[str | None, str]:
    """``"session:all@10"`` → ``("session", "all@10")``; a bare name is the task's own unit level.

    Example:
        >>> metric_level("session:all@10"), metric_level("recall@10")
        (('session', 'all@10'), (None, 'recall@10'))
    """
    level, sep, name = spec.rpartition(":")
    return (level if sep else None), name


def _mean(values: Any) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


def _on(scores: Scores, qids: set[str]) -> float:
    return _mean(v for q, v in scores.items() if q in qids)


def choose(
    evaluator: Evaluator, sweep: Sequence[Setting], defaults: Mapping[str, Any], train: set[str]
) -> dict[str, Any]:
    """Coordinate ascent over ``sweep`` from ``defaults``, scored on the ``train`` queries."""
    chosen = dict(defaults)
    for setting in sweep:
        def score(value: Any, s: Setting = setting) -> tuple[float, float]:
            head, none = evaluator.scores({**chosen, s.name: value})
            return _on(head, train), _on(none, train)

        results = {v: score(v) for v in dict.fromkeys((chosen[setting.name], *setting.values))}
        current = chosen[setting.name]
        if setting.objective == "no_answer" and any(q in train for q in evaluator.scores(chosen)[1]):
            # the cost is counted against the floor switched off altogether, not against this setting alone
            off = {s.name: s.off for s in sweep if s.objective == "no_answer" and s.off is not None}
            limit = _on(evaluator.scores({**chosen, **off})[0], train) - MAX_FLOOR_COST
            allowed = {v: r for v, r in results.items() if r[0] >= limit}
            best = max(allowed, key=lambda v: allowed[v][1], default=current)
            if current not in allowed or allowed[best][1] > allowed[current][1] + 1e-9:
                chosen[setting.name] = best
        else:
            best = max(results, key=lambda v: results[v][0])
            if results[best][0] > results[current][0] + 1e-9:
                chosen[setting.name] = best
    return chosen


@dataclass
class FoldResult:
    """One fold: what its training folds chose and how its own queries scored."""

    fold: int
    n_train: int
    n_test: int
    chosen: dict[str, Any]
    train_headline: float
    test_headline: float
    test_no_answer: float | None


def crossvalidate(
    evaluator: Evaluator,
    sweep: Sequence[Setting],
    defaults: Mapping[str, Any],
    folds: Sequence[Sequence[str]],
) -> tuple[list[FoldResult], dict[str, dict[str, Any]]]:
    """Per-fold results and, per query, the configuration chosen without it."""
    results, chosen_for = [], {}
    every = {q for f in folds for q in f}
    for i, fold in enumerate(folds):
        test = set(fold)
        train = every - test
        chosen = choose(evaluator, sweep, defaults, train)
        head, none = evaluator.scores(chosen)
        held_none = [v for q, v in none.items() if q in test]
        results.append(FoldResult(
            i, len(train), len(test), chosen, _on(head, train), _on(head, test),
            _mean(held_none) if held_none else None,
        ))  # fmt: skip
        chosen_for.update({q: chosen for q in test})
    return results, chosen_for


def held_out(evaluator: Evaluator, chosen_for: Mapping[str, Mapping[str, Any]]) -> tuple[Scores, Scores]:
    """Every query's scores under the configuration chosen without it."""
    head: Scores = {}
    none: Scores = {}
    for qid, config in chosen_for.items():
        h, n = evaluator.scores(config)
        if qid in h:
            head[qid] = h[qid]
        if qid in n:
            none[qid] = n[qid]
    return head, none


def ablate(
    evaluator: Evaluator, setting: Setting, chosen_for: Mapping[str, Mapping[str, Any]]
) -> tuple[Scores, Scores]:
    """Every query's scores under its fold's chosen configuration with ``setting`` switched off."""
    return held_out(evaluator, {q: {**c, setting.name: setting.off} for q, c in chosen_for.items()})


@dataclass
class CrossValidation:
    """Everything :func:`run_crossval` measured, ready for JSON and Markdown."""

    task: str
    metric: str
    fold_by: str
    folds: list[FoldResult]
    default: dict[str, Estimate]
    in_sample_best: dict[str, Any]
    in_sample_best_headline: float
    held_out: dict[str, Estimate]
    effects: dict[str, dict[str, Any]]
    configs_run: int
    seconds: float
    sweep: list[dict[str, Any]]
    scores: dict[Config, tuple[Scores, Scores]] = field(default_factory=dict, repr=False)
    corpus_of: dict[str, str] = field(default_factory=dict, repr=False)


def _estimates(head: Scores, none: Scores, corpus_of: Mapping[str, str]) -> dict[str, Estimate]:
    out = {}
    for key, scores in (("headline", head), ("no_answer", none)):
        if scores:
            qids = sorted(scores)
            out[key] = estimate([scores[q] for q in qids], [corpus_of[q] for q in qids])
    return out


def _effect(
    on: Scores, off: Scores, folds: Sequence[Sequence[str]], corpus_of: Mapping[str, str]
) -> dict[str, Any]:
    qids = sorted(on)
    est = estimate([on[q] for q in qids], [corpus_of[q] for q in qids], baseline=[off[q] for q in qids])
    deltas = [_on(on, set(f)) - _on(off, set(f)) for f in folds if any(q in on for q in f)]
    return {
        "delta": est,
        "folds_helped": sum(d > 1e-9 for d in deltas),
        "folds_hurt": sum(d < -1e-9 for d in deltas),
        "folds": len(deltas),
    }


def run_crossval(
    task: RetrievalTask,
    run: Callable[[dict[str, Any]], Mapping[str, Sequence[str]]],
    defaults: Mapping[str, Any],
    *,
    k: int,
    sweep: Sequence[Setting] = SWEEP,
    fold_by: str | None = None,
    metric: str | None = None,
) -> CrossValidation:
    """Cross-validate ``sweep`` on ``task``; ``run(config)`` ranks every query under ``config``."""
    folds, by = make_folds(task, k, fold_by)
    evaluator = Evaluator(task, run, metric=metric)
    corpus_of = {q.qid: q.corpus_id for q in task.queries}
    base = {s.name: defaults[s.name] for s in sweep}
    default_scores = evaluator.scores(base)
    results, chosen_for = crossvalidate(evaluator, sweep, base, folds)
    everyone = {q.qid for q in task.queries}
    best = choose(evaluator, sweep, base, everyone)
    head, none = held_out(evaluator, chosen_for)
    effects = {}
    for setting in sweep:
        if setting.off is None:
            continue
        off_head, off_none = ablate(evaluator, setting, chosen_for)
        effects[setting.name] = {
            "headline": _effect(head, off_head, folds, corpus_of),
            **({"no_answer": _effect(none, off_none, folds, corpus_of)} if none else {}),
            "chosen": [r.chosen[setting.name] for r in results],
        }
    return CrossValidation(
        task.name, metric or headline_metric(task), by, results, _estimates(*default_scores, corpus_of), best,
        _on(evaluator.scores(best)[0], everyone), _estimates(head, none, corpus_of), effects,
        len(evaluator.cache), evaluator.seconds,
        [{"name": s.name, "values": list(s.values), "off": s.off, "objective": s.objective} for s in sweep],
        evaluator.cache, corpus_of,
    )  # fmt: skip
