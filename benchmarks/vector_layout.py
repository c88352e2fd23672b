"""Mapped vs compact vector layouts on a large collection, the Edge shard alone (issue 25 §5).

Usage::

    # a copy of a kept scale store's memory collection in another layout (then its HNSW graph)
    python -m benchmarks.vector_layout convert --home /tmp/scale/keep/e5-1x1000000 --out /tmp/q1m/compact \\
        --layout compact
    # searches of one shard in a fresh process: RSS, latency cold / again / new queries, scores vs exact
    python -m benchmarks.vector_layout search --shard /tmp/q1m/compact --queries 300 --cold \\
        [--exact-from /tmp/q1m/plain]

``convert`` reads every point (vector and payload) of ``HOME/vectors/memories/shard`` into a new
shard made with :func:`hello_memory.stores.vectors.edge_engine.vector_params` (``mapped`` or
``compact``) and the product's payload indexes, then builds its graph in process. ``search`` asks
the user's filtered nearest 50 (ids and scores, as the product asks) for ``--queries`` e5 query
vectors of :mod:`benchmarks.speed`'s queries (embedded once, cached next to the shard), with the
product's search parameters for the
layout; ``--cold`` evicts the shard's files from the page cache first (``posix_fadvise``). Three
passes: the queries (first touch), the same again, and as many new ones. With ``--exact-from``,
the top-10 scores are compared with exact search on that (mapped) shard.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.scale import QUERY_SEED, _load
from benchmarks.serving import memory_status
from benchmarks.speed import percentiles, synthetic_texts

USER = "user00000"


def convert(home: Path, out: Path, layout: str) -> dict[str, float]:
    """Copy the memory collection of ``home`` into a new shard at ``out`` in ``layout``; build its graph."""
    import qdrant_edge as qe

    from hello_memory.stores.vectors.edge_engine import ensure_indexes, vector_params

    source = qe.EdgeShard.load(str(home / "vectors" / "memories" / "shard"))
    dimension = int(json.loads((home / "vectors" / "memories" / "collection.json").read_text())["dimension"])
    config = qe.EdgeConfig(
        vectors=vector_params(dimension, layout == "compact"),
        optimizers=qe.EdgeOptimizersConfig(indexing_threshold=1),
    )
    target = qe.EdgeShard.create(str(out), config)
    ensure_indexes(target)
    t0, offset, n = time.perf_counter(), None, 0
    while True:
        page, offset = source.scroll(
            qe.ScrollRequest(offset=offset, limit=2000, with_payload=True, with_vector=True)
        )
        target.update(
            qe.UpdateOperation.upsert_points(
                [qe.Point(r.id, r.vector, r.payload) for r in page if r.vector is not None]
            )
        )
        n += len(page)
        if offset is None or not page:
            break
    source.close()
    copied = time.perf_counter() - t0
    t0 = time.perf_counter()
    target.optimize()
    target.flush()
    target.close()
    return {"points": n, "copy_s": round(copied, 1), "build_s": round(time.perf_counter() - t0, 1)}


def _queries(shard: Path, seed: int, n: int) -> np.ndarray:
    cache = shard.parent / f"queries-{seed}-{n}.npy"
    if cache.exists():
        return np.load(cache)
    from hello_memory import Settings
    from hello_memory.embedders.factory import make_embedder

    vectors = np.asarray(
        make_embedder(Settings(embedder="e5")).embed(synthetic_texts(n, seed=seed), kind="query")
    )
    np.save(cache, vectors)
    return vectors


def _evict(path: Path) -> None:
    for root, _, files in os.walk(path):
        for name in files:
            fd = os.open(os.path.join(root, name), os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def search(shard: Path, queries: int, cold: bool, exact_from: Path | None) -> dict[str, Any]:
    """One shard's searches in this process (see the module docstring)."""
    import qdrant_edge as qe

    from hello_memory.stores.vectors.edge_engine import search_params
    from hello_memory.stores.vectors.rules import CollectionMeta

    first, new = _queries(shard, QUERY_SEED, queries), _queries(shard, QUERY_SEED + 1, queries)
    if cold:
        _evict(shard)
    t0 = time.perf_counter()
    edge = qe.EdgeShard.load(str(shard))
    report: dict[str, Any] = {"shard": str(shard), "cold": cold, "open_s": round(time.perf_counter() - t0, 2)}
    report["after_open"] = memory_status()
    compact = bool(list(shard.glob("segments/*/vector_storage/quantized.data")))
    params = search_params(CollectionMeta(first.shape[1], "", compact))
    where = qe.Filter(must=[qe.FieldCondition("user_id", match=qe.MatchValue(USER))])
    scores: list[list[float]] = []
    for label, vectors in (("first", first), ("again", first), ("new", new)):
        times = []
        for v in vectors:
            request = qe.QueryRequest(
                50, query=qe.Query.Nearest(v.tolist()), filter=where, with_payload=False, params=params
            )
            t = time.perf_counter()
            hits = edge.query(request)
            times.append(time.perf_counter() - t)
            if label == "first":
                scores.append([h.score for h in hits[:10]])
        report[label] = percentiles(times)
    report["after_searches"], report["layout"], report["load_avg"] = (
        memory_status(),
        "compact" if compact else "mapped",
        _load(),
    )
    edge.close()
    if exact_from is not None:
        exact = qe.EdgeShard.load(str(exact_from))
        gaps = []
        for v, got in zip(first, scores, strict=True):
            request = qe.QueryRequest(
                10, query=qe.Query.Nearest(v.tolist()), filter=where, params=qe.SearchParams(exact=True)
            )
            gaps.append(np.abs(np.array(got) - np.array([h.score for h in exact.query(request)])))
        exact.close()
        report["top10_equal_share"] = round(float(np.mean([np.mean(g < 1e-4) for g in gaps])), 3)
        report["top10_mean_gap"] = round(float(np.mean([g.mean() for g in gaps])), 5)
    return report


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("convert")
    c.add_argument("--home", type=Path, required=True)
    c.add_argument("--out", type=Path, required=True)
    c.add_argument("--layout", choices=["mapped", "compact"], default="compact")
    s = sub.add_parser("search")
    s.add_argument("--shard", type=Path, required=True)
    s.add_argument("--queries", type=int, default=300)
    s.add_argument("--cold", action="store_true")
    s.add_argument("--exact-from", type=Path)
    args = ap.parse_args(argv)
    if args.command == "convert":
        report: dict[str, Any] = convert(args.home, args.out, args.layout)
    else:
        report = search(args.shard, args.queries, args.cold, args.exact_from)
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
