"""Run ``--folds`` for one system and render the result as JSON and Markdown (see :mod:`benchmarks.crossval`)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from benchmarks.crossval import SWEEP, CrossValidation, Setting, run_crossval
from benchmarks.datasets.base import RetrievalTask
from benchmarks.runner import index_task
from benchmarks.stats import Estimate
from benchmarks.systems import SystemContext, build_system


def setting_defaults(system: Any, sweep: Sequence[Setting]) -> dict[str, Any]:
    """The product's value of every swept setting under the system's own settings."""
    settings = system._settings()
    out = {}
    for s in sweep:
        value = getattr(settings, s.name)
        if s.name == "floor_lexical" and value is None:  # the calibrated value, the same in every script
            from hello_memory.core.calibration import LEXICAL

            value = LEXICAL
        # floor_cosine stays None: the embedder's calibrated floor for each query's script
        out[s.name] = value
    return out


def crossval_system(
    spec: str,
    task: RetrievalTask,
    *,
    depth: int,
    k: int,
    context: SystemContext,
    sweep: Sequence[Setting] = SWEEP,
    fold_by: str | None = None,
    metric: str | None = None,
) -> tuple[CrossValidation, dict[str, Any]]:
    """Index ``task`` once with ``spec`` (a ``hello_memory`` system) and cross-validate ``sweep``."""
    system: Any = build_system(spec, documents=task.chunk_chars is not None, context=context)
    if not hasattr(system, "configure"):
        system.close()
        raise ValueError(f"--folds needs a system whose settings can change between runs (hello_memory), not {spec}")
    try:
        start = time.perf_counter()
        docs, _ = index_task(system, task)
        index_seconds = time.perf_counter() - start
        defaults = setting_defaults(system, sweep)

        def run(config: dict[str, Any]) -> dict[str, list[str]]:
            system.configure(config)
            return {q.qid: system.search(q.corpus_id, q, depth) for q in task.queries}

        result = run_crossval(task, run, defaults, k=k, sweep=sweep, fold_by=fold_by, metric=metric)
        meta = {"system": spec, "config": system.config(), "indexed_docs": docs,
                "index_seconds": round(index_seconds, 1), "defaults": defaults}  # fmt: skip
        return result, meta
    finally:
        system.close()


def _est(e: Estimate | None) -> Any:
    return e.as_json() if e is not None else None


def crossval_json(cv: CrossValidation, meta: Mapping[str, Any]) -> dict[str, Any]:
    """The whole cross-validation as a JSON-serialisable dict."""
    return {
        **meta,
        "task": cv.task,
        "metric": cv.metric,
        "fold_by": cv.fold_by,
        "sweep": cv.sweep,
        "default_in_sample": {k: _est(v) for k, v in cv.default.items()},
        "in_sample_best": {"config": cv.in_sample_best, "headline": round(cv.in_sample_best_headline, 4)},
        "held_out": {k: _est(v) for k, v in cv.held_out.items()},
        "folds": [asdict(f) for f in cv.folds],
        "effects": {
            name: {k: ({**v, "delta": _est(v["delta"])} if isinstance(v, dict) else v) for k, v in eff.items()}
            for name, eff in cv.effects.items()
        },
        "configs_run": cv.configs_run,
        "search_seconds": round(cv.seconds, 1),
    }


def scores_json(cv: CrossValidation) -> dict[str, Any]:
    """Every configuration run and its per-query scores (for paired comparisons afterwards)."""
    configs = [{"config": dict(key), "headline": head, "no_answer": none} for key, (head, none) in cv.scores.items()]
    return {"task": cv.task, "metric": cv.metric, "corpus_of": cv.corpus_of, "configs": configs}


def _fmt(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def crossval_markdown(cv: CrossValidation, meta: Mapping[str, Any]) -> str:
    """Tables: estimates, what each fold chose, and each feature's held-out effect."""
    scheme = cv.held_out["headline"].scheme
    lines = [
        f"### Cross-validation: {cv.task}, {len(cv.folds)} folds by {cv.fold_by} ({meta.get('system')})",
        "",
        f"95 % bootstrap intervals over {scheme}. In-sample: the current defaults, scored on the queries "
        "they were tuned on. Held-out: each query scored with the settings chosen on the other folds.",
        "",
        "| estimate | " + cv.metric + " (answerable) | no-answer rate (unanswerable) |",
        "|---|---|---|",
    ]
    for label, ests in (("defaults, in-sample", cv.default), ("cross-validated (held-out)", cv.held_out)):
        na = ests.get("no_answer")
        lines.append(f"| {label} | {ests['headline'].text()} | {na.text() if na else '—'} |")
    best = ", ".join(f"{k}={_fmt(v)}" for k, v in cv.in_sample_best.items())
    lines += ["", f"Best on all queries (in-sample, optimistic): {cv.metric} {cv.in_sample_best_headline:.3f} "
              f"with {best}.", ""]  # fmt: skip
    names = list(cv.folds[0].chosen) if cv.folds else []
    tail = f" | train {cv.metric} | held-out {cv.metric} | held-out no-answer |"
    lines += ["| fold | n test | " + " | ".join(names) + tail, "|" + "---|" * (len(names) + 5)]
    for f in cv.folds:
        rate = "—" if f.test_no_answer is None else f"{f.test_no_answer:.3f}"
        lines.append(f"| {f.fold} | {f.n_test} | " + " | ".join(_fmt(f.chosen[n]) for n in names)
                     + f" | {f.train_headline:.3f} | {f.test_headline:.3f} | {rate} |")  # fmt: skip
    if cv.effects:
        lines += ["", "Held-out effect of each feature (its fold's choice against the same settings with it off; "
                  "paired interval):", "",
                  f"| feature | Δ {cv.metric} [95 %] | folds helped / hurt | Δ no-answer [95 %] |",
                  "|---|---|---|---|"]  # fmt: skip
        for name, eff in cv.effects.items():
            head = eff["headline"]
            na = eff.get("no_answer")
            lines.append(f"| {name} | {head['delta'].text()} | {head['folds_helped']} / {head['folds_hurt']} "
                         f"of {head['folds']} | {na['delta'].text() if na else '—'} |")  # fmt: skip
    lines += ["", f"- {cv.configs_run} configurations run, {cv.seconds:.0f} s of search; "
              f"indexing {meta.get('index_seconds')} s ({meta.get('indexed_docs')} docs)"]  # fmt: skip
    return "\n".join(lines) + "\n"
