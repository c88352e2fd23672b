"""Judge-free retrieval benchmark: several systems side by side on one dataset.

Usage:
    python -m benchmarks.retrieval --dataset locomo --data ../shared/data/locomo \
        --system bm25 --system dense --json artifacts/locomo.json --markdown artifacts/locomo.md

Datasets: locomo, longmemeval (``--split oracle|s``, ``--roles user|both``), madial (``--lang zh|en``),
docs_qa. Systems: see :data:`benchmarks.systems.SYSTEMS`; options as ``NAME:key=value``.
``--folds K`` cross-validates the product's swept settings instead (:mod:`benchmarks.crossval`):

    python -m benchmarks.retrieval --dataset locomo --system hello_memory --folds 5 \
        --embed-cache /tmp/e5-cache --json artifacts/locomo-cv.json --markdown artifacts/locomo-cv.md
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks.datasets import DATASETS, RetrievalTask, load_task
from benchmarks.evaluation import KS
from benchmarks.misses import ranking_records
from benchmarks.report import plot_recall, to_json, to_markdown
from benchmarks.runner import SystemRun, default_depth, run_system
from benchmarks.systems import SYSTEMS, SystemContext, SystemUnavailableError, build_system

logger = logging.getLogger("benchmarks.retrieval")


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.retrieval", description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", required=True, choices=DATASETS)
    p.add_argument("--data", type=Path, help="dataset file or directory (default ../shared/data/<dataset>)")
    p.add_argument(
        "--split",
        metavar="NAME",
        help="split file to read from a --data directory: locomo_NAME.json, qa_NAME.json, "
        "MADial-Bench-LANG-dialogue-NAME.json (default dev); longmemeval: oracle (pooled, default), s, "
        "or longmemeval_NAME.json[.gz]",
    )
    p.add_argument("--lang", default="zh", choices=("zh", "en"), help="madial language")
    p.add_argument(
        "--roles",
        default="user",
        choices=("user", "both"),
        help="longmemeval: index user turns only (default) or user and assistant turns",
    )
    p.add_argument(
        "--system",
        action="append",
        required=True,
        metavar="NAME[:k=v,...]",
        help=f"repeatable; one of {sorted(SYSTEMS)}",
    )
    p.add_argument(
        "--chunk-chars",
        type=int,
        metavar="N",
        help="docs_qa: fixed chunk size for systems that do not chunk (default 1000)",
    )
    p.add_argument("--limit-queries", type=int, metavar="N", help="evaluate only the first N queries")
    p.add_argument(
        "--off-topic",
        action="store_true",
        help="also ask every corpus the off-topic questions of benchmarks.datasets.offtopic (unanswerable)",
    )
    p.add_argument("--depth", type=int, help="results requested per query (default max k, x5 for sessions)")
    p.add_argument("--embed-cache", type=Path, help="directory for an e5 embedding cache (skews index time)")
    p.add_argument(
        "--folds",
        type=int,
        metavar="K",
        help="cross-validate the swept settings of one hello_memory system over K folds (benchmarks.crossval)",
    )
    p.add_argument(
        "--fold-by",
        choices=("corpus", "query"),
        help="what --folds splits: corpora (conversations, users; default when there are two or more) or queries",
    )
    p.add_argument(
        "--sweep",
        action="append",
        default=[],
        metavar="NAME=v1,v2,...",
        help="with --folds: sweep only these settings over these values "
        "(repeatable; default: benchmarks.crossval.SWEEP)",
    )
    p.add_argument(
        "--metric",
        metavar="[LEVEL:]NAME",
        help="with --folds: the metric settings are chosen and reported by (default the task's headline: "
        "hit@5 for LongMemEval and docs_qa, else recall@10), e.g. recall@10 or session:all@10",
    )
    p.add_argument("--json", type=Path, required=True, metavar="OUT")
    p.add_argument("--markdown", type=Path, metavar="OUT.md")
    p.add_argument(
        "--rankings",
        type=Path,
        metavar="OUT.jsonl",
        help="every query's ranking, one JSON line per system and query (read by benchmarks.misses)",
    )
    p.add_argument("--plot", type=Path, metavar="OUT.png", help="recall@k curves (needs matplotlib)")
    p.add_argument("-v", "--verbose", action="store_true")
    return p


def run_systems(
    specs: Sequence[str], task: RetrievalTask, *, depth: int, context: SystemContext
) -> tuple[list[SystemRun], dict[str, str]]:
    """Run each system in turn (closing it afterwards).

    A system that is unavailable, or that fails while indexing or searching, is reported under
    ``skipped`` with the reason, so one broken adapter does not lose the other systems' numbers.
    """
    runs: list[SystemRun] = []
    skipped: dict[str, str] = {}
    for spec in specs:
        try:
            system = build_system(spec, documents=task.chunk_chars is not None, context=context)
        except SystemUnavailableError as e:
            print(f"skipping {spec}: {e}", file=sys.stderr)
            skipped[spec] = str(e)
            continue
        try:
            runs.append(run_system(spec, system, task, depth=depth))
        except Exception as e:  # report it and keep the other systems. results
            logger.exception("%s failed", spec)
            skipped[spec] = f"failed: {type(e).__name__}: {e}"
        finally:
            system.close()
    return runs, skipped


def _configure_logging(level: int) -> None:
    # The level goes on the handler too: bm25s sets its own logger to DEBUG at import, and its
    # records would otherwise reach a root handler that has no level of its own.
    handler = logging.StreamHandler()
    handler.setLevel(level)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logging.basicConfig(level=level, handlers=[handler])


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    _configure_logging(logging.INFO if args.verbose else logging.WARNING)
    data = args.data or Path("../shared/data") / args.dataset
    try:
        task = load_task(args.dataset, data, split=args.split, lang=args.lang, roles=args.roles)
    except (FileNotFoundError, ValueError) as e:
        parser.error(str(e))
    task = task.limited(args.limit_queries)
    if args.off_topic:
        from benchmarks.datasets.offtopic import with_off_topic

        task = with_off_topic(task)
    if args.chunk_chars and task.chunk_chars:
        task = dataclasses.replace(task, chunk_chars=args.chunk_chars)
    depth = args.depth or default_depth(task)
    if args.folds:
        return _crossval(parser, args, task, depth)
    runs, skipped = run_systems(
        args.system, task, depth=depth, context=SystemContext(embed_cache=args.embed_cache)
    )
    meta = {
        "dataset": args.dataset,
        "data": str(data),
        "split": args.split,
        "lang": args.lang,
        "ks": list(KS),
        "depth": depth,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(to_json(task, runs, meta, skipped), indent=2, ensure_ascii=False) + "\n")
    if args.rankings:
        args.rankings.parent.mkdir(parents=True, exist_ok=True)
        with args.rankings.open("w", encoding="utf-8") as fh:
            for run in runs:
                for record in ranking_records(task, run.spec, run.rankings):
                    fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    markdown = to_markdown(task, runs, skipped)
    print(markdown)
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(markdown, encoding="utf-8")
    if args.plot and runs:
        plot_recall(task, runs, args.plot)
    return 0 if runs else 1


def _crossval(parser: argparse.ArgumentParser, args: argparse.Namespace, task: RetrievalTask, depth: int) -> int:
    from benchmarks.crossval import SWEEP, parse_sweep
    from benchmarks.crossval_report import crossval_json, crossval_markdown, crossval_system, scores_json

    if len(args.system) != 1:
        parser.error("--folds takes exactly one --system (hello_memory with its options)")
    try:
        sweep = parse_sweep(args.sweep) if args.sweep else SWEEP
        cv, meta = crossval_system(
            args.system[0], task, depth=depth, k=args.folds, context=SystemContext(embed_cache=args.embed_cache),
            sweep=sweep, fold_by=args.fold_by, metric=args.metric,
        )  # fmt: skip
    except ValueError as e:
        parser.error(str(e))
    meta = {"dataset": args.dataset, "data": str(args.data), "split": args.split, "lang": args.lang,
            "roles": args.roles, "depth": depth, **meta}  # fmt: skip
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(crossval_json(cv, meta), indent=2, ensure_ascii=False) + "\n")
    scores = args.json.with_suffix(".scores.json")  # every configuration's per-query scores
    scores.write_text(json.dumps(scores_json(cv), ensure_ascii=False) + "\n")
    markdown = crossval_markdown(cv, meta)
    print(markdown)
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(markdown, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
