"""Can the HNSW graph be built while the store keeps serving? A probe on qdrant-edge alone (issue 25 §4).

Usage::

    python -m benchmarks.hnsw_swap_probe [--points 20000]

``EdgeShard.optimize()`` holds the GIL for the whole build, so in one process every thread stops
(the probe measures it first: a Python thread that ticks every 10 ms, and searches, during an
in-process build). Then the design it suggests: flush, copy the shard directory, build the graph
in a child process on the copy while this process keeps searching and writing the live shard,
then close the live shard, put the built copy in its place, reload it, and replay the points
written during the build. The probe reports search latency during each build, the point count
after the replay, and the search time before and after. Nothing here is product code.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from typing import Any

import numpy as np
import qdrant_edge as qe

DIM = 384


def _shard(path: str, points: int, rng: np.random.Generator) -> Any:
    shard = qe.EdgeShard.create(path, qe.EdgeConfig(vectors=qe.EdgeVectorParams(size=DIM, distance=qe.Distance.Cosine)))
    for _ in range(0, points, 1000):
        shard.update(qe.UpdateOperation.upsert_points([_point(rng) for _ in range(1000)]))
    shard.flush()
    return shard


def _point(rng: np.random.Generator) -> Any:
    return qe.Point(str(uuid.uuid4()), rng.standard_normal(DIM).astype(np.float32).tolist(), {"u": "a"})


def _search_ms(shard: Any, q: list[float]) -> float:
    start = time.perf_counter()
    shard.query(qe.QueryRequest(query=qe.Query.Nearest(q), limit=10))
    return (time.perf_counter() - start) * 1000


def in_process(points: int, root: str, rng: np.random.Generator) -> dict[str, Any]:
    """Build in this process while a thread ticks: how long the other threads stand still."""
    shard = _shard(os.path.join(root, "inproc"), points, rng)
    ticks: list[float] = []
    stop = threading.Event()

    def tick() -> None:
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.01)

    thread = threading.Thread(target=tick)
    thread.start()
    time.sleep(0.2)
    start = time.perf_counter()
    shard.optimize()
    end = time.perf_counter()
    stop.set()
    thread.join()
    shard.close()
    during = [t for t in ticks if start <= t <= end]
    return {"build_s": round(end - start, 1), "ticks_during": len(during), "ticks_expected": int((end - start) / 0.01)}


def child_and_swap(points: int, root: str, rng: np.random.Generator) -> dict[str, Any]:
    """Build on a copy in a child process, keep serving, then swap and replay."""
    live, copy = os.path.join(root, "live"), os.path.join(root, "copy")
    shard = _shard(live, points, rng)
    q = rng.standard_normal(DIM).astype(np.float32).tolist()
    before = statistics.median(_search_ms(shard, q) for _ in range(50))
    shutil.copytree(live, copy)
    script = f"import qdrant_edge as qe; s = qe.EdgeShard.load({copy!r}); s.optimize(); s.flush(); s.close()"
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-c", script])
    during: list[float] = []
    written: list[str] = []
    while child.poll() is None:
        during.append(_search_ms(shard, q))
        p = _point(rng)
        shard.update(qe.UpdateOperation.upsert_points([p]))
        written.append(p.id)
        time.sleep(0.005)
    build = time.perf_counter() - start
    replay = shard.retrieve(written, True, True)
    shard.close()
    shutil.rmtree(live)
    os.replace(copy, live)
    built = qe.EdgeShard.load(live)
    built.update(qe.UpdateOperation.upsert_points([qe.Point(r.id, r.vector, r.payload) for r in replay]))
    after = statistics.median(_search_ms(built, q) for _ in range(50))
    count = built.count(qe.CountRequest(exact=True))
    indexed = built.info().indexed_vectors_count
    built.close()
    return {
        "build_s": round(build, 1),
        "searches_during": len(during),
        "search_during_p50_ms": round(statistics.median(during), 2),
        "search_during_max_ms": round(max(during), 1),
        "written_during": len(written),
        "count_after_replay": count,
        "count_expected": points + len(written),
        "indexed_vectors": indexed,
        "search_before_ms": round(before, 2),
        "search_after_ms": round(after, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--points", type=int, default=20000)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as root:
        print("in process:", in_process(args.points, root, rng), flush=True)
        print("child process + swap:", child_and_swap(args.points, root, rng), flush=True)
    print(f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
