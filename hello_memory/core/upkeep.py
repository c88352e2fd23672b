"""Bookkeeping that reads owe the store, written without making a read wait for a writer.

A read never takes the write lock (DESIGN §2, "Concurrency"), but two things it finds are writes:
the accesses it counts (``access_count``, ``last_accessed_at``) and the working memories it finds
past their TTL (which are deleted). They are queued here instead. Right after the read, if no
writer holds the lock, the read writes them itself (a few milliseconds); otherwise the next write
step or read that finds the lock free does. The read's own answer never depends on them: expired
working memories are left out of every read whether or not they were deleted yet.

The queue is bounded (:data:`MAX_QUEUED` accesses): under a writer that holds the lock step after
step for minutes, the oldest access counts are dropped — they are statistics, best effort by
contract (a warning says how many).

Example:
    >>> from datetime import datetime, timezone
    >>> upkeep = Upkeep()
    >>> upkeep.accessed("alice", ["m1", "m2"], datetime.now(timezone.utc))
    >>> upkeep.queued()
    2
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from datetime import datetime
from typing import TYPE_CHECKING

from hello_memory.errors import StoreError

if TYPE_CHECKING:
    from hello_memory.core import MemoryCore

logger = logging.getLogger(__name__)
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


def run(core: MemoryCore) -> None:
    """Write what reads queued; the caller holds ``core.lock`` (a bounded step: one transaction per
    user and time, and one expiry scan per user)."""
    from hello_memory.core import working

    accesses, expire, dropped = core.upkeep.take()
    if dropped:
        logger.warning("%d access counts were not recorded (the write lock was busy for long)", dropped)
    for user_id, ids, at in accesses:
        try:
            core.records.record_access(user_id, ids, at)
        except StoreError as e:  # a full disk, a server that refuses the write: statistics only
            logger.warning("access counts not updated: %s", e)
    for user_id in expire:
        working.expire_working(core, user_id)


def after_read(core: MemoryCore) -> None:
    """Write what reads queued if no writer holds the lock now; otherwise leave it queued."""
    if not core.lock.acquire(blocking=False):
        return
    try:
        run(core)
    finally:
        core.lock.release()
