"""Turns at an embedding engine: query work first, passage work first come, first served.

A search embeds one short query; an add may embed a 200,000-character text (over a hundred forward
passes of 512 tokens). When both waited for one lock per call, a search waited for the whole text
(issue 27). :class:`Lanes` gives the two kinds of work separate turns:

* passage work takes a turn per bounded step (one round of forward passes), not per call, and
  passage turns are served in arrival order, so another user's short add waits for one step of a
  long one, never for all of it;
* a query never waits for passage work when the engine may run both at once (``overlap=True``:
  the in-process e5 engines, whose sessions are thread-safe); otherwise (an engine that must run
  alone) it waits for the current step only, ahead of every passage turn still waiting;
* queries take turns among themselves in arrival order (each already uses every core), and while
  any query runs or waits no new passage step starts.

Example:
    >>> lanes = Lanes()
    >>> with lanes.hold("passage"):
    ...     with lanes.hold("query"):  # does not wait for the passage step
    ...         lanes.busy()
    ('query', 'passage')
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar

J = TypeVar("J")
R = TypeVar("R")
PASSAGE_NICE = 10  # a nice-10 thread gets ~1/9 of a core beside a nice-0 one (CFS weights 110 vs 1024)


class Lanes:
    """Who runs on an engine next (see the module docstring).

    Args:
        overlap: a query may run while a passage step runs (the engine is thread-safe and
            a query's wait for a step would cost more than sharing the cores for a moment).
    """

    def __init__(self, *, overlap: bool = True) -> None:
        self._overlap = overlap
        self._cond = threading.Condition()
        self._query = False  # a query holds its turn
        self._passage = False  # a passage step holds its turn
        self._queries: deque[object] = deque()  # turns waiting, in arrival order
        self._passages: deque[object] = deque()

    @contextmanager
    def hold(self, kind: str) -> Iterator[None]:
        """A turn for ``kind`` work (``"query"``, anything else is passage work) while the block runs."""
        query = kind == "query"
        if query:
            self._take_query()
        else:
            self._take_passage()
        try:
            yield
        finally:
            with self._cond:
                if query:
                    self._query = False
                else:
                    self._passage = False
                self._cond.notify_all()

    def busy(self) -> tuple[str, ...]:
        """The kinds of work holding a turn now (``"query"``, ``"passage"``), for tests and logs."""
        with self._cond:
            return tuple(k for k, held in (("query", self._query), ("passage", self._passage)) if held)

    def waiting(self) -> int:
        """Turns waiting now, of either kind."""
        with self._cond:
            return len(self._queries) + len(self._passages)

    def _take_query(self) -> None:
        with self._cond:
            self._wait_in(self._queries, lambda: not self._query and (self._overlap or not self._passage))
            self._query = True

    def _take_passage(self) -> None:
        with self._cond:
            self._wait_in(self._passages, lambda: not (self._passage or self._query or self._queries))
            self._passage = True

    def _wait_in(self, line: deque[object], free: Callable[[], bool]) -> None:
        """Wait (holding the condition) in ``line`` until first in it and ``free()``, then leave it."""
        turn = object()
        line.append(turn)
        try:
            self._cond.wait_for(lambda: line[0] is turn and free())
        except BaseException:
            line.remove(turn)
            self._cond.notify_all()
            raise
        line.popleft()


class Steps:
    """Runs an engine's jobs (forward passes) in steps of one job per thread, each step in its turn.

    A query running beside a passage step shares the cores with it; the passage lane's threads
    therefore run at a lower scheduling priority (``passage_nice``, Linux, where it is a per-thread
    attribute), so that the operating system gives a query the cores first; alone, passage work
    loses nothing by it (figures: BENCHMARKS.md, "Fairness").

    Args:
        threads: worker threads per lane; a step is at most this many jobs.
        blas: a ``threadpoolctl.ThreadpoolController`` when BLAS must be held to one thread while
            jobs run (the limit is process-wide: the first call in sets it, the last one out
            restores it), else ``None``.
        lanes: the turns; default :class:`Lanes` with queries beside passage steps.
        passage_nice: how much nicer (lower priority) the passage lane's threads are (0: as the caller).
    """

    def __init__(
        self, threads: int, *, blas: Any = None, lanes: Lanes | None = None, passage_nice: int = PASSAGE_NICE
    ) -> None:
        self.threads = max(1, threads)
        self.lanes = lanes or Lanes(overlap=True)
        self.passage_nice = passage_nice
        self._blas = blas
        self._blas_users = 0
        self._blas_limit: Any = None
        self._pools: dict[bool, ThreadPoolExecutor] = {}  # per lane: a query never queues behind passage jobs
        self._lock = threading.Lock()

    def run(self, forward: Callable[..., R], jobs: Sequence[J], *, parallel: bool, query: bool) -> list[R]:
        """``forward(job)`` of every job, in order: on the lane's threads when ``parallel`` (and
        there is more than one job), else in the calling thread (a lone job with ``alone=True``)."""
        parallel = parallel and self.threads > 1 and len(jobs) > 1
        step = self.threads if parallel else 1
        results: list[R] = []
        with self._blas_limited():
            for start in range(0, len(jobs), step):
                part = jobs[start : start + step]
                with self.lanes.hold("query" if query else "passage"):
                    if parallel:
                        results.extend(self._pool(query).map(forward, part))
                    else:  # one job runs alone: the ONNX backend gives it more threads
                        results.extend(forward(job, alone=len(jobs) == 1) for job in part)
        return results

    def _pool(self, query: bool) -> ThreadPoolExecutor:
        with self._lock:
            pool = self._pools.get(query)
            if pool is None:
                name = "e5-query" if query else "e5-passage"
                nice = 0 if query else self.passage_nice
                pool = self._pools[query] = ThreadPoolExecutor(
                    self.threads, thread_name_prefix=name, initializer=lower_priority, initargs=(nice,)
                )
            return pool

    @contextmanager
    def _blas_limited(self) -> Iterator[None]:
        if self._blas is None:
            yield
            return
        with self._lock:
            if self._blas_users == 0:
                self._blas_limit = self._blas.limit(limits=1, user_api="blas")
            self._blas_users += 1
        try:
            yield
        finally:
            with self._lock:
                self._blas_users -= 1
                if self._blas_users == 0:
                    self._blas_limit.restore_original_limits()
                    self._blas_limit = None


def lower_priority(nice: int) -> None:
    """Make the calling thread ``nice`` steps nicer (Linux only: elsewhere the whole process would be).

    Failure (a sandbox refusing it) leaves the priority as it was.
    """
    if nice <= 0 or not sys.platform.startswith("linux"):
        return
    tid = threading.get_native_id()
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + nice))
