"""Store reads that run beside a search's query embedding.

A search embeds its query (milliseconds of ONNX work that releases the GIL) before it asks the
vector index; the lexical index needs only the query's words, so its read can run on another thread
meanwhile instead of after. :func:`start` hands a call to a small shared pool and returns a function
that gives its result; when no worker picked the call up by then (the pool busy with other searches,
or a forked child whose pool threads did not survive the fork) the caller runs it itself, so the
result never waits on the pool and nothing runs twice.

The worker does not take the memory's lock: it runs while the calling search holds it, so it reads
what the search would have read.

Example:
    >>> result = start(lambda: 6 * 7)
    >>> result()
    42
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
WORKERS = 4  # searches of one process that can overlap their lexical read at once; more run it inline

_pool: ThreadPoolExecutor | None = None
_pool_pid = 0
_pool_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _pool, _pool_pid
    with _pool_lock:
        if _pool is None or _pool_pid != os.getpid():  # a forked child gets a pool of its own
            _pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="hello-memory-beside")
            _pool_pid = os.getpid()
        return _pool


def start(call: Callable[[], T]) -> Callable[[], T]:
    """Run ``call`` on a worker thread; the returned function gives its result (or raises its error)."""
    try:
        future = _executor().submit(call)
    except RuntimeError:  # the interpreter is shutting down: no new threads
        return call

    def result() -> T:
        if future.cancel():  # not picked up yet: run it here rather than wait for a worker
            return call()
        return future.result()

    return result
