"""What an open memory keeps in process beside its stores: queued upkeep, batches being written.

Plain data with locks of their own and no imports from the core, so the core can hold them.

Example:
    >>> from datetime import datetime, timezone
    >>> upkeep = Upkeep()
    >>> upkeep.accessed("alice", ["m1", "m2"], datetime.now(timezone.utc))
    >>> upkeep.queued()
    2
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime

STEP = 256  # memories per write step under the lock (BENCHMARKS.md, "Concurrency"): tens of milliseconds
MAX_QUEUED = 100_000  # access counts waiting for the lock; older ones are dropped beyond it


class Upkeep:
    """Writes that reads queue: access counts and users whose expired working memories to delete."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards the queue only
        self._accesses: deque[tuple[str, list[str], datetime]] = deque()
        self._queued = 0
        self._dropped = 0
        self._expire: set[str] = set()

    def accessed(self, user_id: str, ids: list[str], at: datetime) -> None:
        """Queue one access of each of ``user_id``'s memories ``ids`` at ``at``."""
        if not ids:
            return
        with self._lock:
            self._accesses.append((user_id, list(ids), at))
            self._queued += len(ids)
            while self._queued > MAX_QUEUED and self._accesses:
                _, dropped, _ = self._accesses.popleft()
                self._queued -= len(dropped)
                self._dropped += len(dropped)

    def expire(self, user_id: str) -> None:
        """Queue the deletion of ``user_id``'s working memories past their TTL."""
        with self._lock:
            self._expire.add(user_id)

    def queued(self) -> int:
        """Access counts waiting to be written."""
        with self._lock:
            return self._queued

    def take(self) -> tuple[list[tuple[str, list[str], datetime]], set[str], int]:
        """Everything queued, emptying the queue: accesses, users to expire, access counts dropped."""
        with self._lock:
            accesses, self._accesses, self._queued = list(self._accesses), deque(), 0
            expire, self._expire = self._expire, set()
            dropped, self._dropped = self._dropped, 0
        return accesses, expire, dropped



class RunningBatches:
    """The batches this process is writing in steps now (:mod:`.batches`): recovery leaves them alone."""

    def __init__(self) -> None:
        self._ids: set[str] = set()
        self._lock = threading.Lock()

    def __contains__(self, batch: object) -> bool:
        with self._lock:
            return batch in self._ids

    @contextmanager
    def running(self, batch: str) -> Iterator[None]:
        """``batch`` counts as running while the block runs."""
        with self._lock:
            self._ids.add(batch)
        try:
            yield
        finally:
            with self._lock:
                self._ids.discard(batch)
