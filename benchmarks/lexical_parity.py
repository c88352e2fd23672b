"""Lexical parity: FTS5 BM25 (SQLite record store) vs sparse vectors with server IDF (Qdrant record store).

Lexical-only retrieval — no embedder, no fusion — through the two record stores' own
``lexical_search``, on the same documents with the same session context window: what phase B
(server mode) gives up or gains before dense fusion hides it. Every corpus is one user of one store
(IDF is collection-wide in both, as in the product). Qdrant runs in local mode (pure Python):
its index and query times say nothing about a server.

Usage:
    python -m benchmarks.lexical_parity --dataset locomo --dataset madial:zh --dataset madial:en \
        --dataset longmemeval --window 2 --json artifacts/lexical_parity.json --markdown artifacts/lexical_parity.md
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchmarks.datasets import load_task
from benchmarks.datasets.base import RetrievalTask
from benchmarks.evaluation import evaluate
from benchmarks.runner import default_depth
from hello_memory.language.text import lexical_tokens
from hello_memory.models import MemoryItem, MemoryType
from hello_memory.stores.records.base import RecordStore, RecordWrite
from hello_memory.stores.records.qdrant import QdrantRecordStore
from hello_memory.stores.records.sqlite import SQLiteRecordStore
from hello_memory.stores.sparse import LexicalEncoder
from hello_memory.testing.record_lexical import top_k_overlap

_EPOCH = datetime(2023, 1, 1, tzinfo=timezone.utc)
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@dataclass
class StoreRun:
    """One store's lexical-only results on one task."""

    store: str
    metrics: dict[str, dict[str, float]] = field(default_factory=dict)  # level -> metric -> value
    index_seconds: float = 0.0
    query_seconds_median: float = 0.0


@dataclass
class ParityResult:
    """Both stores on one task, and how alike their rankings are."""

    task: str
    window: int
    avg_len: float | None
    docs: int
    queries: int
    runs: list[StoreRun]
    top5_overlap: float
    top1_agreement: float


def _index(store: RecordStore, task: RetrievalTask) -> tuple[dict[str, str], float]:
    """Store every corpus as one user's episodic memories; returns memory id -> doc id and the time."""
    doc_of: dict[str, str] = {}
    start = time.perf_counter()
    for cid, docs in task.corpora.items():
        items = [
            MemoryItem(
                user_id=f"corpus-{cid}",
                memory_type=MemoryType.EPISODIC,
                content=d.text,
                session_id=d.session_id,
                created_at=d.created_at or _EPOCH,
            )
            for d in docs
        ]
        for it, d in zip(items, docs, strict=True):
            doc_of[it.id] = d.doc_id
        for begin in range(0, len(items), 256):
            store.apply([RecordWrite(it) for it in items[begin : begin + 256]])
    return doc_of, time.perf_counter() - start


def _rank(
    store: RecordStore, task: RetrievalTask, doc_of: dict[str, str], depth: int
) -> tuple[dict[str, dict[str, float]], list[float]]:
    scores: dict[str, dict[str, float]] = {}
    times: list[float] = []
    for q in task.queries:
        start = time.perf_counter()
        found = store.lexical_search(f"corpus-{q.corpus_id}", lexical_tokens(q.text), types=None, limit=depth)
        times.append(time.perf_counter() - start)
        scores[q.qid] = {doc_of[m]: s for m, s in found.items()}
    return scores, times


def _metrics(task: RetrievalTask, scores: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    rankings = {qid: sorted(s, key=lambda d: (-s[d], d)) for qid, s in scores.items()}
    return {r.level: dict(r.overall) for r in evaluate(task, rankings)}


def compare(task: RetrievalTask, *, window: int, avg_len: float | None) -> ParityResult:
    """Run both stores on ``task`` and compare."""
    depth = default_depth(task)
    runs, all_scores = [], []
    with tempfile.TemporaryDirectory() as tmp:
        sqlite = SQLiteRecordStore(Path(tmp) / "records.db", context_window=window)
        qdrant = QdrantRecordStore(
            ":memory:",
            context_window=window,
            lexical=None if avg_len is None else LexicalEncoder(avg_len=avg_len),
        )
        for name, store in (("sqlite-fts5-bm25", sqlite), ("qdrant-sparse-idf (local mode)", qdrant)):
            doc_of, seconds = _index(store, task)
            scores, times = _rank(store, task, doc_of, depth)
            all_scores.append(scores)
            runs.append(StoreRun(name, _metrics(task, scores), seconds, statistics.median(times)))
            store.close()
    a, b = all_scores
    return ParityResult(
        task.name,
        window,
        avg_len,
        sum(len(d) for d in task.corpora.values()),
        len(task.queries),
        runs,
        statistics.mean(top_k_overlap(a[q], b[q], 5) for q in a),
        statistics.mean(top_k_overlap(a[q], b[q], 1) for q in a),
    )


def to_markdown(results: Sequence[ParityResult]) -> str:
    """One table row per task and store."""
    lines = [
        "| task | window | avg_len | store | level | recall@10 | hit@10 | MRR | top-5 overlap | top-1 agree |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        for run in r.runs:
            for level, m in run.metrics.items():
                lines.append(
                    f"| {r.task} | {r.window} | {r.avg_len or 'default'} | {run.store} | {level} | "
                    f"{m.get('recall@10', 0):.3f} | {m.get('hit@10', 0):.3f} | {m.get('mrr', 0):.3f} | "
                    f"{r.top5_overlap:.3f} | {r.top1_agreement:.3f} |"
                )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.lexical_parity", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--dataset", action="append", required=True, metavar="NAME[:LANG]")
    p.add_argument(
        "--data", type=Path, default=DATA, help="folder holding the datasets (default ../shared/data)"
    )
    p.add_argument("--window", type=int, default=2, help="session context window (Settings default: 2)")
    p.add_argument(
        "--avg-len",
        type=float,
        action="append",
        help="sparse BM25 avg_len (repeatable; default: the store's)",
    )
    p.add_argument("--limit-queries", type=int)
    p.add_argument("--json", type=Path, required=True)
    p.add_argument("--markdown", type=Path)
    args = p.parse_args(argv)
    results = []
    for spec in args.dataset:
        name, _, lang = spec.partition(":")
        task = load_task(name, args.data / name, lang=lang or "zh").limited(args.limit_queries)
        for avg_len in args.avg_len or [None]:
            results.append(compare(task, window=args.window, avg_len=avg_len))
            print(to_markdown(results[-1:]), flush=True)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    payload: list[dict[str, Any]] = [asdict(r) for r in results]
    args.json.write_text(json.dumps(payload, indent=2), encoding="utf-8")
    if args.markdown:
        args.markdown.write_text(to_markdown(results), encoding="utf-8")


if __name__ == "__main__":
    main()
