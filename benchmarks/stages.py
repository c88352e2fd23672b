"""Where a search's time goes: a per-stage clock around the stores of an open memory (issue 25).

Benchmark-side instrumentation only: :func:`clocked` swaps the memory's core for one whose stores,
embedder and two retrieval steps report to a :class:`StageClock`; nothing in the product knows.
Stages are *exclusive*: a stage called inside another (the lexical evidence inside fusion and the
floor) is charged to itself, not to its caller, so the stages of one search add up to its total.
Only the thread of the search being timed is clocked (a search runs all its stages in its own
thread); calls from other threads meanwhile run untimed.

Example:
    >>> from hello_memory import MemoryManager, Settings          # doctest: +SKIP
    >>> mm = MemoryManager(Settings(home="/tmp/m", embedder="tfidf"))  # doctest: +SKIP
    >>> with clocked(mm) as clock:                                 # doctest: +SKIP
    ...     with clock.search():
    ...         mm.search("tea", limit=10)
    >>> clock.table()                                              # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

# (core attribute, method) -> stage name; a method not listed is not timed (it falls into "other").
STORE_STAGES: dict[tuple[str, str], str] = {
    ("embedder", "embed"): "query embedding",
    ("dense", "search"): "dense ANN",
    ("records", "lexical_search"): "lexical",
    ("records", "score_rows"): "score rows",
    ("dense", "similarities"): "fill dense (exact cosines)",
    ("records", "lexical_evidence"): "lexical evidence (floor)",
    ("records", "previous_in_session"): "conversation rows",
    ("records", "contents"): "conversation rows",
    ("records", "read"): "read hits",
    ("records", "record_access"): "access count",
}
GRAPH_STAGE = "graph"
# retrieval's own steps (module functions, looked up by name at call time)
STEP_STAGES = {"_relevance": "fusion + floor", "_score": "tier scores"}
STAGES = [
    "query embedding",
    "dense ANN",
    "lexical",
    GRAPH_STAGE,
    "score rows",
    "fill dense (exact cosines)",
    "fusion + floor",
    "lexical evidence (floor)",
    "conversation rows",
    "tier scores",
    "read hits",
    "access count",
    "other",
]
EXCLUSIVE = list(STAGES)  # these add up to a search's total


class StageClock:
    """Exclusive time per stage, per search."""

    def __init__(self) -> None:
        self.searches: list[dict[str, float]] = []
        self._current: dict[str, float] | None = None
        self._children: list[float] = []  # time spent in timed callees, per open frame
        self._owner = 0  # the thread of the search being timed

    @contextlib.contextmanager
    def search(self) -> Iterator[None]:
        """Time one search: its stages, and what is left of its total as ``other``."""
        self._current, self._children = {}, [0.0]
        self._owner = threading.get_ident()
        t0 = time.perf_counter()
        try:
            yield
        finally:
            total = time.perf_counter() - t0
            spent = dict(self._current)
            spent["other"] = max(0.0, total - sum(spent.values()))
            spent["total"] = total
            self.searches.append(spent)
            self._current = None

    def wrap(self, stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` charging its exclusive time to ``stage`` while a search is being timed."""

        def timed(*args: Any, **kwargs: Any) -> Any:
            if self._current is None:
                return fn(*args, **kwargs)
            if threading.get_ident() != self._owner:
                return fn(*args, **kwargs)
            self._children.append(0.0)
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - t0
                inner = self._children.pop()
                self._children[-1] += elapsed
                self._current[stage] = self._current.get(stage, 0.0) + elapsed - inner

        return timed

    def summary(self) -> dict[str, dict[str, float]]:
        """Per stage: median and p95 in ms over the timed searches, and its share of the median total."""
        out: dict[str, dict[str, float]] = {}
        if not self.searches:
            return out
        total = float(np.median([s["total"] for s in self.searches]))
        for stage in [*STAGES, "total"]:
            xs = np.array([s.get(stage, 0.0) for s in self.searches])
            med = float(np.median(xs))
            out[stage] = {
                "p50_ms": round(med * 1000, 3),
                "p95_ms": round(float(np.percentile(xs, 95)) * 1000, 3),
                "mean_ms": round(float(xs.mean()) * 1000, 3),
                "share": round(float(xs.mean()) / float(np.mean([s["total"] for s in self.searches])), 3)
                if total
                else 0.0,
            }
        return out


class _Timed:
    """Forwards every attribute to ``inner``; the methods named in ``stages`` report to ``clock``."""

    def __init__(self, inner: Any, clock: StageClock, stages: dict[str, str], default: str | None = None) -> None:
        self._inner, self._clock, self._stages, self._default = inner, clock, stages, default

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        stage = self._stages.get(name, self._default)
        if stage is None or not callable(value):
            return value
        return self._clock.wrap(stage, value)


@contextlib.contextmanager
def clocked(manager: Any) -> Iterator[StageClock]:
    """Time the stages of ``manager``'s searches (a :class:`~hello_memory.MemoryManager`) inside the block."""
    from hello_memory.core import retrieval

    clock = StageClock()
    core = manager.core
    per_store: dict[str, dict[str, str]] = {}
    for (attr, method), stage in STORE_STAGES.items():
        per_store.setdefault(attr, {})[method] = stage
    timed = {attr: _Timed(getattr(core, attr), clock, methods) for attr, methods in per_store.items()}
    timed["graph"] = _Timed(core.graph, clock, {}, default=GRAPH_STAGE)
    saved = {name: getattr(retrieval, name) for name in STEP_STAGES}
    manager.core = dataclasses.replace(core, **timed)
    for name, stage in STEP_STAGES.items():
        setattr(retrieval, name, clock.wrap(stage, saved[name]))
    try:
        yield clock
    finally:
        manager.core = core
        for name, fn in saved.items():
            setattr(retrieval, name, fn)


def to_markdown(rows: dict[str, dict[str, dict[str, float]]]) -> str:
    """One column per measured corpus (label → :meth:`StageClock.summary`): p50 / p95 ms per stage."""
    labels = list(rows)
    lines = ["| stage | " + " | ".join(f"{label} p50 / p95 ms (share)" for label in labels) + " |"]
    lines.append("|---" * (len(labels) + 1) + "|")
    for stage in [*STAGES, "total"]:
        cells = []
        for label in labels:
            s = rows[label].get(stage, {})
            cells.append(f"{s.get('p50_ms', 0):.2f} / {s.get('p95_ms', 0):.2f} ({100 * s.get('share', 0):.0f} %)")
        lines.append(f"| {stage} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
