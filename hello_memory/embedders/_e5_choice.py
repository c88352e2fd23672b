"""Which in-process e5 engine embeds passages fastest on this processor: measured once, then cached.

The two in-process engines give the same vectors (cosine ≥ 0.9997) but their speed depends on the
CPU: ONNX Runtime's int8 kernels are fastest where the processor has 8-bit dot-product instructions
(VNNI), numpy's float32 BLAS can embed batches faster where it has not (BENCHMARKS.md, "The e5
engine on any CPU"). Queries are not chosen here: ONNX Runtime embeds a query fastest on every
processor measured (2-3× numpy), and a search waits for exactly one (the embedder's "Roles").

``engine="auto"`` therefore measures the passage workload — one batch of memory-sized passages in
both scripts — on both engines, alternating them, and keeps the one that spends the least **CPU
time** on it (the least over rounds). CPU time, not elapsed time: other processes on a busy machine
stretch the elapsed time of both engines unevenly (a verdict taken under load once chose the engine
that is 3× slower for queries), but not the CPU time each spends; the least of several rounds drops
a round a cache miss or a descheduling slowed. The verdict is cached per processor (model name and
flags), thread count and engine code (:mod:`hello_memory.embedders._e5_cache`), so only the first
process on a machine pays for it (about two seconds).

Example:
    >>> fake = {"onnx": Timing(passages_per_s=60.0, query_ms=10.0),
    ...         "numpy": Timing(passages_per_s=90.0, query_ms=30.0)}
    >>> winner(fake)
    'numpy'
"""

from __future__ import annotations

import json
import logging
import os
import platform
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from hello_memory.embedders import _e5_cache

logger = logging.getLogger(__name__)

CANDIDATES = ("onnx", "numpy")
ROUNDS = 3
# The workload: memory-sized texts in both scripts the product serves, as one batch, and queries one
# at a time (a search embeds one query).
PASSAGES = [
    f"Memory {i}: went hiking with my sister by the lake; we talked about her new job in Berlin."
    if i % 2
    else f"第{i}条记忆：周末和朋友去公园散步，聊了很多关于工作和学习的事情。"
    for i in range(24)
]
QUERIES = ["What did I do with my sister?", "周末去哪里了？", "Where does she work now?"] * 2


@dataclass(frozen=True, slots=True)
class Timing:
    """One engine's speed on the workload: passages per CPU-second (one batch) and a query's CPU time."""

    passages_per_s: float
    query_ms: float


def winner(timings: Mapping[str, Timing]) -> str:
    """The engine that embeds the most passages per CPU-second (ties: the first candidate)."""
    return min(timings, key=lambda e: (-timings[e].passages_per_s, CANDIDATES.index(e)))


def measure(models: Mapping[str, Any], rounds: int = ROUNDS) -> dict[str, Timing]:
    """CPU time of every loaded engine on the workload (this process's, all of its threads), engines
    alternating within each round; the least of the rounds."""
    clock = time.process_time
    passage_s: dict[str, list[float]] = {e: [] for e in models}
    query_s: dict[str, list[float]] = {e: [] for e in models}
    for model in models.values():  # a first call warms each engine (thread pools, caches)
        model.query(QUERIES[:1])
        model.passage(PASSAGES[:2])
    for _ in range(rounds):
        for engine, model in models.items():
            start = clock()
            model.passage(PASSAGES)
            passage_s[engine].append(clock() - start)
            for q in QUERIES:
                start = clock()
                model.query([q])
                query_s[engine].append(clock() - start)
    return {
        e: Timing(len(PASSAGES) / max(min(passage_s[e]), 1e-9), 1000.0 * statistics.median(query_s[e]))
        for e in models
    }


def processor() -> dict[str, Any]:
    """What the verdict depends on: the CPU model and instruction-set flags, and usable cores."""
    model, flags = platform.processor() or platform.machine(), ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip().lower()
                if key == "model name":
                    model = value.strip()
                elif key in ("flags", "features") and not flags:
                    flags = " ".join(sorted(value.split()))
    except OSError:  # not Linux: the platform strings key the verdict
        pass
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return {"model": model, "flags": flags, "machine": platform.machine(), "cpus": cpus}


def choose(
    load: Callable[[str], Any],
    *,
    threads: int | None,
    variant: str,
    cache_dir: Any = _e5_cache.DEFAULT,
) -> tuple[str, Any]:
    """The fastest in-process engine here, and its loaded model when it was loaded to measure it.

    Args:
        load: builds a model of an engine (``"onnx"``, ``"numpy"``); an engine that cannot load
            (ONNX Runtime missing) is left out, and an ``ImportError``/``OSError`` of the last one
            propagates.
        threads: the embedder's thread setting (part of the cache key).
        variant: the weights (part of the cache key).
        cache_dir: where the verdict is cached; ``None`` measures every time.

    Returns:
        ``(engine, model)``: ``model`` is ``None`` when the verdict came from the cache (the caller
        loads the engine).
    """
    from hello_memory.embedders import _e5_local, _e5_onnx

    cpu = processor()
    inputs: dict[str, Any] = {
        "processor": cpu,
        "threads": threads,
        "variant": variant,
        "code": [_e5_cache.source_digest(m) for m in (_e5_local, _e5_onnx)],
        "candidates": CANDIDATES,
        "rule": "passages per CPU-second",  # a verdict of the earlier rule (elapsed time) is not reused
    }
    loaded: dict[str, Any] = {}

    def verdict() -> bytes:
        failures: list[BaseException] = []
        for engine in CANDIDATES:
            try:
                loaded[engine] = load(engine)
            except (ImportError, OSError) as e:
                logger.info("e5 engine %s cannot load here (%s); not a candidate", engine, e)
                failures.append(e)
        if not loaded:
            raise failures[-1]
        timings = measure(loaded) if len(loaded) > 1 else {}
        chosen = winner(timings) if timings else next(iter(loaded))
        logger.info(
            "e5 engine %s chosen for %s: %s", chosen, cpu["model"],
            {e: asdict(t) for e, t in timings.items()},
        )  # fmt: skip
        return json.dumps({"engine": chosen, "timings": {e: asdict(t) for e, t in timings.items()}}).encode()

    raw = _e5_cache.cached("e5-engine", inputs, verdict, directory=cache_dir)
    try:
        engine = json.loads(raw)["engine"]
    except (ValueError, KeyError, TypeError):
        engine = None
    if engine not in CANDIDATES:  # a cache entry from elsewhere: measure again, uncached
        engine = json.loads(verdict())["engine"]
    return engine, loaded.get(engine)
