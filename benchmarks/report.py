"""JSON, Markdown and PNG views of a retrieval benchmark run."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.chunking import parse_span_id
from benchmarks.datasets.base import Match, RetrievalTask
from benchmarks.evaluation import NO_ANSWER_LEVEL, LevelReport
from benchmarks.runner import SystemRun
from benchmarks.stats import Estimate, metric_estimate

logger = logging.getLogger(__name__)

UNIT_COLUMNS = (
    "recall@1",
    "recall@5",
    "recall@10",
    "recall@20",
    "hit@1",
    "hit@5",
    "hit@10",
    "ndcg@10",
    "mrr",
)
SESSION_COLUMNS = ("hit@1", "hit@5", "hit@10", "all@5", "all@10", "recall@10", "ndcg@5", "ndcg@10", "mrr")
NO_ANSWER_COLUMNS = ("no_answer", "results")
INTERVAL_NOTE = (
    "95 % bootstrap intervals (2,000 resamples) over {scheme}; development split: every figure is "
    "in-sample for settings chosen on it (held-out estimates: --folds)"
)


def headline_metric(task: RetrievalTask) -> str:
    """The metric the product targets on this task: hit@5 for docs and LongMemEval, else recall@10."""
    return "hit@5" if task.match is Match.SPAN or task.has_sessions else "recall@10"


def _percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else 0.0


def timing(run: SystemRun) -> dict[str, float]:
    """Index seconds and query latency percentiles in milliseconds."""
    ms = [s * 1000 for s in run.query_seconds]
    return {
        "index_seconds": round(run.index_seconds, 3),
        "query_ms_p50": round(_percentile(ms, 50), 2),
        "query_ms_p95": round(_percentile(ms, 95), 2),
    }


def mean_result_chars(run: SystemRun, k: int = 5) -> float | None:
    """Mean length of the top-``k`` retrieved spans (span tasks; ``None`` when ids are not spans).

    Hit rates on span tasks grow with chunk size, so results are only comparable with it.
    """
    spans = [parse_span_id(r) for ranked in run.rankings.values() for r in ranked[:k]]
    sizes = [s[2] - s[1] for s in spans if s is not None]
    return round(sum(sizes) / len(sizes), 1) if sizes else None


def _level_json(report: LevelReport) -> dict[str, Any]:
    data = asdict(report)
    data.pop("level")
    data.pop("per_query")
    return data


def _level(run: SystemRun, level: str) -> LevelReport | None:
    return next((r for r in run.reports if r.level == level), None)


def intervals(task: RetrievalTask, run: SystemRun) -> dict[str, Estimate]:
    """The headline metric (answerable queries) and the no-answer rate, each with its interval."""
    corpus_of = {q.qid: q.corpus_id for q in task.queries}
    out: dict[str, Estimate] = {}
    if run.reports and run.reports[0].per_query:
        out[headline_metric(task)] = metric_estimate(run.reports[0].per_query, headline_metric(task), corpus_of)
        out["empty"] = metric_estimate(run.reports[0].per_query, "empty", corpus_of)
    unanswerable = _level(run, NO_ANSWER_LEVEL)
    if unanswerable is not None and unanswerable.per_query:
        out["no_answer"] = metric_estimate(unanswerable.per_query, "no_answer", corpus_of)
    return out


def to_json(
    task: RetrievalTask, runs: Sequence[SystemRun], meta: dict[str, Any], skipped: dict[str, str]
) -> dict[str, Any]:
    """The whole run as a JSON-serialisable dict."""
    return {
        **meta,
        "task": task.name,
        "unit": task.unit,
        "headline": headline_metric(task),
        "n_queries": len(task.queries),
        "n_corpora": len(task.corpora),
        "n_docs": sum(len(d) for d in task.corpora.values()),
        "chunk_chars": task.chunk_chars,
        "notes": list(task.notes),
        "systems": {
            run.spec: {
                "config": run.config,
                "indexed_docs": run.indexed_docs,
                "mean_result_chars": mean_result_chars(run) if task.match is Match.SPAN else None,
                **timing(run),
                "intervals": {k: e.as_json() for k, e in intervals(task, run).items()},
                "levels": {r.level: _level_json(r) for r in run.reports},
            }
            for run in runs
        },
        "skipped": skipped,
    }


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _level_table(level: str, runs: Sequence[SystemRun], with_timing: bool) -> list[str]:
    columns = {"session": SESSION_COLUMNS, NO_ANSWER_LEVEL: NO_ANSWER_COLUMNS}.get(level, UNIT_COLUMNS)
    header = ["system", "n", *columns] + (["index s", "query p50 ms", "p95 ms"] if with_timing else [])
    rows = []
    for run in runs:
        rep = next((r for r in run.reports if r.level == level), None)
        if rep is None:
            continue
        t = timing(run)
        row = [run.spec, str(rep.n_queries), *(f"{rep.overall.get(c, 0.0):.3f}" for c in columns)]
        if with_timing:
            row += [f"{t['index_seconds']:.1f}", f"{t['query_ms_p50']:.2f}", f"{t['query_ms_p95']:.2f}"]
        rows.append(row)
    return [f"**{level} level**", "", *_table(header, rows), ""]


def _category_table(task: RetrievalTask, runs: Sequence[SystemRun]) -> list[str]:
    metric = headline_metric(task)
    first = runs[0].reports[0]
    cats = sorted(first.by_category)
    if not cats:
        return []
    header = ["system", *(f"{c} (n={first.category_counts[c]})" for c in cats), "overall"]
    rows = [
        [
            run.spec,
            *(f"{run.reports[0].by_category[c].get(metric, 0.0):.3f}" for c in cats),
            f"{run.reports[0].overall.get(metric, 0.0):.3f}",
        ]
        for run in runs
    ]
    return [f"**{metric} by category ({first.level} level)**", "", *_table(header, rows), ""]


def _interval_table(task: RetrievalTask, runs: Sequence[SystemRun]) -> list[str]:
    metric = headline_metric(task)
    rows, schemes = [], set()
    for run in runs:
        est = intervals(task, run)
        if metric not in est:
            continue
        schemes.add(est[metric].scheme)
        no_answer = est.get("no_answer")
        rows.append([
            run.spec,
            est[metric].text(),
            f"{est['empty'].mean:.3f}",
            no_answer.text() if no_answer else "—",
        ])  # fmt: skip
    if not rows:
        return []
    header = ["system", f"{metric} (answerable)", "empty (answerable)", "no-answer rate (unanswerable)"]
    note = INTERVAL_NOTE.format(scheme=" / ".join(sorted(schemes)))
    return [f"**{metric} with intervals** ({note})", "", *_table(header, rows), ""]


def to_markdown(task: RetrievalTask, runs: Sequence[SystemRun], skipped: dict[str, str]) -> str:
    """Tables: one per level (metrics + timing on the first), then the headline metric by category."""
    lines = [
        f"### Retrieval: {task.name} ({len(task.queries)} queries, "
        f"{sum(len(d) for d in task.corpora.values())} docs"
        f" in {len(task.corpora)} corpora)",
        "",
    ]
    if runs:
        levels = [r.level for r in runs[0].reports]
        lines += _interval_table(task, runs)
        for i, level in enumerate(levels):
            lines += _level_table(level, runs, with_timing=i == 0)
        lines += _category_table(task, runs)
    if task.match is Match.SPAN:
        sizes = ", ".join(f"{r.spec} {mean_result_chars(r)}" for r in runs)
        lines.append(f"- mean characters of the top-5 retrieved spans (hit rates grow with it): {sizes}")
    lines += [f"- note: {n}" for n in task.notes]
    lines += [f"- skipped {spec}: {why}" for spec, why in skipped.items()]
    return "\n".join(lines).rstrip() + "\n"


def plot_recall(task: RetrievalTask, runs: Sequence[SystemRun], out: Path) -> bool:
    """Write recall@k (hit@k for span tasks) curves per system; False when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        logger.warning("matplotlib is not installed (pip install matplotlib); no plot written")
        return False
    metric = "hit" if task.match is Match.SPAN else "recall"
    fig, ax = plt.subplots(figsize=(6, 4))
    for run in runs:
        overall = run.reports[0].overall
        ks = sorted(int(key.split("@")[1]) for key in overall if key.startswith(f"{metric}@"))
        ax.plot(ks, [overall[f"{metric}@{k}"] for k in ks], marker="o", label=run.spec)
    ax.set(xlabel="k", ylabel=f"{metric}@k", title=f"{task.name}: {metric}@k", ylim=(0, 1))
    ax.set_xticks(
        sorted({int(key.split("@")[1]) for run in runs for key in run.reports[0].overall if "@" in key})
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return True
