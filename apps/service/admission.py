"""Who may start work on the service now: per-user write slots, and retried adds joining their first try.

Slots. Embedding is what a service has least of: one 200,000-character memory keeps both cores of
a small machine busy for 20 s. A user (or a knowledge base) may have ``user_writes`` writes running
at once; one more is refused at once with HTTP 429 and ``Retry-After``. It has done nothing, so any
client may send it again (``RemoteMemory`` does, after ``Retry-After``). A slot is held until the
write *ends*, not until its request times out: a write that outlives its request (504) still
counts, so retries of timed-out writes cannot pile up work.

Joining. An add names its ids (``RemoteMemory`` always sends them). A retry of an add whose first
try is still running — its request timed out and the client sent it again — starts nothing: it
waits for the first try and answers its result, or its error. Only the same call joins: the key
is the user and the whole request body.

Example:
    >>> slots = WriteSlots(per_user=1, retry_after=2)
    >>> release = slots.take("user 'bob'")
    >>> try:
    ...     slots.take("user 'bob'")
    ... except HTTPException as e:
    ...     e.status_code, e.headers
    (429, {'Retry-After': '2'})
    >>> release(); slots.running("user 'bob'")
    0
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from typing import Any

from starlette.exceptions import HTTPException


class WriteSlots:
    """At most ``per_user`` writes running per owner (a user or a knowledge base); thread-safe."""

    def __init__(self, per_user: int, retry_after: int) -> None:
        self.per_user = per_user
        self.retry_after = retry_after
        self._running: Counter[str] = Counter()
        self._lock = threading.Lock()

    def take(self, owner: str) -> Callable[[], None]:
        """A slot of ``owner`` and the function that gives it back (once; later calls do nothing).

        Raises:
            HTTPException: 429 with ``Retry-After`` when ``owner`` has every slot taken.
        """
        with self._lock:
            running = self._running[owner]
            if running >= self.per_user:
                writes = "write" if running == 1 else "writes"
                raise HTTPException(
                    429,
                    f"{owner} has {running} {writes} running on this service (its limit, "
                    f"HELLO_MEMORY_SERVICE_USER_WRITES); retry after {self.retry_after} s, or wait for them",
                    headers={"Retry-After": str(self.retry_after)},
                )
            self._running[owner] += 1
        given_back = threading.Event()

        def release() -> None:
            with self._lock:
                if given_back.is_set():
                    return
                given_back.set()
                self._running[owner] -= 1
                if not self._running[owner]:
                    del self._running[owner]

        return release

    def running(self, owner: str) -> int:
        """Writes of ``owner`` running now."""
        with self._lock:
            return self._running[owner]


class InFlight:
    """Writes running now by key, so that the same call sent again waits for the first one."""

    def __init__(self) -> None:
        self._calls: dict[Hashable, Future[Any]] = {}
        self._lock = threading.Lock()

    def find(self, key: Hashable) -> Future[Any] | None:
        """The outcome of the running write of ``key``, if there is one."""
        with self._lock:
            return self._calls.get(key)

    def enter(self, key: Hashable) -> tuple[Future[Any], bool]:
        """The outcome to await for ``key``, and whether the caller is the first (and runs the write)."""
        with self._lock:
            found = self._calls.get(key)
            if found is not None:
                return found, False
            future: Future[Any] = Future()
            future.set_running_or_notify_cancel()  # a joiner that gives up cannot cancel the write
            self._calls[key] = future
            return future, True

    def leave(self, key: Hashable, future: Future[Any]) -> None:
        """The write of ``key`` has ended: later calls start anew (and find it stored)."""
        with self._lock:
            if self._calls.get(key) is future:
                del self._calls[key]


class Ticket:
    """What one operation holds until it ends: a write slot and its in-flight entry (either optional).

    The operation ends in its worker thread (:meth:`start`, then :meth:`finish`), or, when its
    request gave up before a thread picked it up, never runs (:meth:`abandon`). Either way the
    slot is given back and joiners get an outcome exactly once.
    """

    def __init__(self) -> None:
        self.release: Callable[[], None] | None = None
        self._entry: tuple[InFlight, Hashable, Future[Any]] | None = None
        self._state = "new"
        self._lock = threading.Lock()

    def join(self, inflight: InFlight, key: Hashable, future: Future[Any]) -> None:
        """Tell joiners of ``key`` this operation's outcome."""
        self._entry = (inflight, key, future)

    def start(self) -> bool:
        """In the worker thread, before the operation: ``False`` if its request already gave up."""
        with self._lock:
            if self._state != "new":
                return False
            self._state = "running"
            return True

    def abandon(self, error: BaseException) -> None:
        """The request gave up: if the operation has not started, it never will; settle it now."""
        with self._lock:
            if self._state != "new":
                return
            self._state = "abandoned"
        self.finish(error=error)

    def finish(self, result: Any = None, error: BaseException | None = None) -> None:
        """Give the slot back, then hand the outcome to joiners."""
        if self.release is not None:
            self.release()
        if self._entry is not None:
            inflight, key, future = self._entry
            inflight.leave(key, future)
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(result)
