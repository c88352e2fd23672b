"""Run one retrieval system over a task: index every corpus, answer every query, time both."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from benchmarks.chunking import fixed_chunks
from benchmarks.datasets.base import Doc, RetrievalTask
from benchmarks.evaluation import KS, LevelReport, evaluate
from benchmarks.systems.base import RetrievalSystem

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class SystemRun:
    """Rankings, timings and metric reports of one system on one task."""

    spec: str
    config: dict[str, Any]
    rankings: dict[str, list[str]] = field(default_factory=dict)
    index_seconds: float = 0.0
    query_seconds: list[float] = field(default_factory=list)
    indexed_docs: int = 0
    reports: list[LevelReport] = field(default_factory=list)


def corpus_docs(task: RetrievalTask, docs: list[Doc], system: RetrievalSystem) -> list[Doc]:
    """The docs to index: fixed chunks of whole documents unless the system chunks itself."""
    if task.chunk_chars and not system.handles_documents:
        return fixed_chunks(docs, task.chunk_chars)
    return docs


def default_depth(task: RetrievalTask, ks: tuple[int, ...] = KS) -> int:
    """How many results to ask for: max k, or 5x that when sessions are ranked from turns."""
    return max(ks) * (5 if task.has_sessions else 1)


def index_task(system: RetrievalSystem, task: RetrievalTask) -> tuple[int, float]:
    """Index every corpus that has queries; returns ``(docs indexed, seconds)``."""
    used = {q.corpus_id for q in task.queries}
    docs_indexed, seconds = 0, 0.0
    for cid, docs in task.corpora.items():
        if cid not in used:
            continue
        chunks = corpus_docs(task, docs, system)
        start = time.perf_counter()
        system.index(cid, chunks)
        seconds += time.perf_counter() - start
        docs_indexed += len(chunks)
    return docs_indexed, seconds


def run_system(
    spec: str, system: RetrievalSystem, task: RetrievalTask, *, depth: int, ks: tuple[int, ...] = KS
) -> SystemRun:
    """Index every corpus that has queries, search every query with ``depth`` results, evaluate."""
    run = SystemRun(spec, system.config())
    run.indexed_docs, run.index_seconds = index_task(system, task)
    logger.info("%s: indexed %d docs in %.1fs", spec, run.indexed_docs, run.index_seconds)
    for q in task.queries:
        start = time.perf_counter()
        run.rankings[q.qid] = system.search(q.corpus_id, q, depth)
        run.query_seconds.append(time.perf_counter() - start)
    run.reports = evaluate(task, run.rankings, ks)
    return run
