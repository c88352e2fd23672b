"""Queries first: passage work starts its next piece only when no query embedding is running.

A search waits for one query embedding (milliseconds); an add may embed a 200,000-character text
(seconds of forward passes). Both run at once on the same cores — queries never wait for anything
here — but each piece of passage work (one forward pass, ≤ one 512-token window per thread) first
waits until the queries running now have finished, so a query shares the cores with at most the
pieces already under way; and while searches are coming in, passage work of every caller together
runs on one thread fewer than the model's, leaving a core for them (:meth:`QueryFirst.passage`:
two users adding long texts share those threads instead of taking one each). The wait is bounded
(:data:`MAX_YIELD_S`): a stream of queries slows passage work, never stops it. Nothing here changes
a thread's priority or a library's thread count: it only decides when this process's own passage
work starts its next piece.

Example:
    >>> gate = QueryFirst()
    >>> with gate.query():
    ...     gate.running()
    1
    >>> gate.before_passage()  # no query running: returns at once
    >>> with gate.passage(threads=2):  # a piece of passage work on one of the model's 2 threads
    ...     pass
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

MAX_YIELD_S = 0.25  # the longest a piece of passage work waits for queries before it starts anyway
RECENT_S = 1.0  # queries within this long ago count as a search load: passage work leaves them a core


class QueryFirst:
    """Counts the query embeddings running; passage work waits for them between its pieces."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._queries = 0
        self._last_query = -float("inf")  # monotonic time the last query embedding ended
        self._passages = 0  # pieces of passage work running now, every caller's

    @contextmanager
    def query(self) -> Iterator[None]:
        """Mark a query embedding as running while the block runs (it never waits)."""
        with self._cond:
            self._queries += 1
        try:
            yield
        finally:
            with self._cond:
                self._queries -= 1
                self._last_query = time.monotonic()
                if not self._queries:
                    self._cond.notify_all()

    def before_passage(self) -> None:
        """Wait (at most :data:`MAX_YIELD_S`) until no query embedding is running."""
        deadline = time.monotonic() + MAX_YIELD_S
        with self._cond:
            while self._queries and (left := deadline - time.monotonic()) > 0:
                self._cond.wait(left)

    @contextmanager
    def passage(self, threads: int) -> Iterator[None]:
        """Run one piece of passage work: after the running queries (:meth:`before_passage`), and,
        while searches come in, only when fewer than :meth:`passage_workers` pieces of any caller's
        passage work are running (it waits for one of them to end: a piece is one forward pass)."""
        self.before_passage()
        with self._cond:
            while self._passages >= self.passage_workers(threads):
                self._cond.wait(MAX_YIELD_S)  # re-read: searches may have stopped meanwhile
            self._passages += 1
        try:
            yield
        finally:
            with self._cond:
                self._passages -= 1
                self._cond.notify_all()

    def passage_workers(self, threads: int) -> int:
        """Worker threads passage work may use for its next step: all ``threads``, or one fewer (at
        least one) while searches embed queries (one ran within :data:`RECENT_S`), so that a query
        finds a core free instead of sharing every core with passage work."""
        with self._cond:
            searching = self._queries > 0 or time.monotonic() - self._last_query < RECENT_S
        return max(1, threads - 1) if searching else threads

    def running(self) -> int:
        """Query embeddings running now."""
        with self._cond:
            return self._queries
